// A chain of kernels over SmartArrays, next to the same work written with hand-made explicit copies
// and with naive copy-every-call code. It prints the backend, the device, each contender's transfer
// counts and times, and checks every result against a host reference.
//
//   pipeline [--quick] [--n N] [--steps K]
//
// Each step runs y = a * x + y, then z = y * y; after the chain the host reads z once.
#include <smartarray/smartarray.hpp>
// The hand-written contenders allocate and copy through the library's backend interface, so that
// they run on the host backend too.
#include <smartarray/runtime/detail/runtime.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace sa = smartarray;
using sa::Access;

namespace {

struct Result {
  const char* name;
  sa::TransferStats transfers;
  double milliseconds;
  std::vector<float> z;
};

/// Runs `body` once to warm up, then times `repeats` runs; transfers are those of one run.
Result measure(const char* name, int repeats, const std::function<std::vector<float>()>& body) {
  (void)body();
  const auto before = sa::global_transfer_stats();
  std::vector<float> z = body();
  const auto transfers = sa::global_transfer_stats() - before;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) z = body();
  const auto stop = std::chrono::steady_clock::now();
  const double ms = std::chrono::duration<double, std::milli>(stop - start).count() / repeats;
  return {name, transfers, ms, std::move(z)};
}

void axpy(float a, sa::DeviceView<const float> x, sa::DeviceView<float> y, sa::StreamRef s) {
  sa::for_each_index(y.size(), [=] SMARTARRAY_HOST_DEVICE(std::size_t i) { y[i] = a * x[i] + y[i]; },
                     s);
}
void square(sa::DeviceView<const float> y, sa::DeviceView<float> z, sa::StreamRef s) {
  sa::for_each_index(z.size(), [=] SMARTARRAY_HOST_DEVICE(std::size_t i) { z[i] = y[i] * y[i]; },
                     s);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 1 << 20;
  int steps = 10;
  int repeats = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      n = 1 << 14;
      repeats = 3;
    } else if (std::strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
      n = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    }
  }
  const char* wanted = std::getenv("SMARTARRAY_BACKEND");
  if (wanted != nullptr && std::strcmp(wanted, "cuda") == 0 && !sa::cuda_device_available()) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }

  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(0.5F, 1.5F);
  std::vector<float> x0(n), y0(n);
  for (auto& v : x0) v = dist(rng);
  for (auto& v : y0) v = dist(rng);
  const float a = 0.001F;

  // Host reference.
  std::vector<float> reference(n);
  for (std::size_t i = 0; i < n; ++i) {
    float y = y0[i], z = 0;
    for (int k = 0; k < steps; ++k) {
      y = a * x0[i] + y;
      z = y * y;
    }
    reference[i] = z;
  }

  sa::Stream stream;
  auto& rt = sa::detail::runtime();
  const std::size_t bytes = n * sizeof(float);

  // SmartArray: data moves when it must, and only then.
  const Result smart = measure("SmartArray", repeats, [&] {
    sa::SmartArray<float> x(x0), y(y0), z(n);
    for (int k = 0; k < steps; ++k) {
      axpy(a, std::as_const(x).device_view(stream), y.device_view(Access::read_write, stream), stream);
      square(std::as_const(y).device_view(stream), z.device_view(Access::discard, stream), stream);
    }
    auto host = std::as_const(z).host_view();
    return std::vector<float>(host.begin(), host.end());
  });

  // Explicit: what an expert writes by hand: pinned staging and device buffers allocated once,
  // async copies on one stream.
  auto* hx = static_cast<float*>(rt.allocate_pinned(bytes));
  auto* hy = static_cast<float*>(rt.allocate_pinned(bytes));
  auto* hz = static_cast<float*>(rt.allocate_pinned(bytes));
  auto* dx = static_cast<float*>(rt.allocate_device(bytes));
  auto* dy = static_cast<float*>(rt.allocate_device(bytes));
  auto* dz = static_cast<float*>(rt.allocate_device(bytes));
  const Result explicit_copies = measure("explicit", repeats, [&] {
    std::memcpy(hx, x0.data(), bytes);
    std::memcpy(hy, y0.data(), bytes);
    rt.copy_async(dx, hx, bytes, sa::detail::CopyKind::host_to_device, stream);
    rt.copy_async(dy, hy, bytes, sa::detail::CopyKind::host_to_device, stream);
    for (int k = 0; k < steps; ++k) {
      axpy(a, {dx, n}, {dy, n}, stream);
      square({dy, n}, {dz, n}, stream);
    }
    rt.copy_async(hz, dz, bytes, sa::detail::CopyKind::device_to_host, stream);
    rt.synchronize(stream.ref());
    return std::vector<float>(hz, hz + n);
  });

  // Naive: every kernel call allocates, copies its inputs in and its output out, like a ufunc
  // called on host arrays.
  const Result naive = measure("naive", repeats, [&] {
    std::vector<float> x = x0, y = y0, z(n);
    for (int k = 0; k < steps; ++k) {
      auto* nx = static_cast<float*>(rt.allocate_device(bytes));
      auto* ny = static_cast<float*>(rt.allocate_device(bytes));
      rt.copy_async(nx, x.data(), bytes, sa::detail::CopyKind::host_to_device, stream);
      rt.copy_async(ny, y.data(), bytes, sa::detail::CopyKind::host_to_device, stream);
      axpy(a, {nx, n}, {ny, n}, stream);
      rt.copy_async(y.data(), ny, bytes, sa::detail::CopyKind::device_to_host, stream);
      rt.synchronize(stream.ref());
      rt.free_device(nx);
      auto* nz = static_cast<float*>(rt.allocate_device(bytes));
      rt.copy_async(ny, y.data(), bytes, sa::detail::CopyKind::host_to_device, stream);
      square({ny, n}, {nz, n}, stream);
      rt.copy_async(z.data(), nz, bytes, sa::detail::CopyKind::device_to_host, stream);
      rt.synchronize(stream.ref());
      rt.free_device(ny);
      rt.free_device(nz);
    }
    return z;
  });
  for (void* p : {dx, dy, dz}) rt.free_device(p);
  for (void* p : {hx, hy, hz}) rt.free_pinned(p);

  const auto& props = sa::device_properties();
  std::printf("smartarray pipeline demo: %zu floats, %d steps of (y = a*x + y; z = y*y), then one host read\n",
              n, steps);
  std::printf("backend: %s   device: %s\n", sa::to_string(sa::backend()), props.name.c_str());
  if (sa::backend() == sa::BackendKind::host) {
    std::printf("note: host-backend times are CPU times of the emulated device, not GPU times\n");
  }
  std::printf("%-12s %6s %12s %6s %12s %12s %10s\n", "contender", "H2D", "H2D bytes", "D2H",
              "D2H bytes", "time (ms)", "vs explicit");
  bool ok = true;
  for (const Result* r : {&smart, &explicit_copies, &naive}) {
    std::printf("%-12s %6llu %12llu %6llu %12llu %12.3f %9.2fx\n", r->name,
                static_cast<unsigned long long>(r->transfers.h2d_count),
                static_cast<unsigned long long>(r->transfers.h2d_bytes),
                static_cast<unsigned long long>(r->transfers.d2h_count),
                static_cast<unsigned long long>(r->transfers.d2h_bytes), r->milliseconds,
                r->milliseconds / explicit_copies.milliseconds);
    for (std::size_t i = 0; i < n; ++i) {
      if (std::fabs(r->z[i] - reference[i]) > 1e-5F * std::fabs(reference[i])) {
        std::printf("MISMATCH in %s at %zu: %g vs reference %g\n", r->name, i, r->z[i], reference[i]);
        ok = false;
        break;
      }
    }
  }
  // SmartArray must move each input in once and the output out once.
  if (smart.transfers.h2d_count != 2 || smart.transfers.d2h_count != 1) {
    std::printf("UNEXPECTED SmartArray transfers: %s\n", smart.transfers.to_string().c_str());
    ok = false;
  }
  std::printf("%s\n", ok ? "all results match the host reference" : "FAILED");
  return ok ? 0 : 1;
}
