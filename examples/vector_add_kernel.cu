// Elementwise addition as a hand-written grid-stride kernel: Numba's `@cuda.jit` add_kernel with
// `cuda.grid(1)` and `cuda.gridsize(1)`, launched through smartarray's launch, which reads each
// array's access intent from the kernel's parameter types. Needs the cuda backend.
//
//   vector_add_kernel [--quick]
#include "example_support.hpp"

#include <smartarray/smartarray.hpp>

#include <cstdio>
#include <random>
#include <utility>
#include <vector>

namespace sa = smartarray;

namespace {

/// x and y are read-only views (acquired for read), out is writable (bound with out(): discard).
__global__ void add_kernel(sa::DeviceView<const float> x, sa::DeviceView<const float> y,
                           sa::DeviceView<float> out) {
  const std::size_t start = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = start; i < out.size(); i += stride) out[i] = x[i] + y[i];
}

}  // namespace

int main(int argc, char** argv) {
  if (example::raw_kernels_unavailable()) return example::skipped;
  example::print_backend();
  const std::size_t n = example::quick(argc, argv) ? 100'000 : 10'000'000;

  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-100.0F, 100.0F);
  std::vector<float> x0(n), y0(n), reference(n);
  for (auto& v : x0) v = dist(rng);
  for (auto& v : y0) v = dist(rng);
  for (std::size_t i = 0; i < n; ++i) reference[i] = x0[i] + y0[i];

  sa::Stream stream;
  sa::SmartArray<float> x(x0), y(y0), out(n);
  // A grid-stride loop needs only enough blocks to fill the device.
  const unsigned block = 256;
  const unsigned blocks = static_cast<unsigned>(sa::device_properties().multiprocessor_count) * 8;

  bool ok = true;
  auto before = sa::global_transfer_stats();
  sa::launch(add_kernel, blocks, block, stream, x, y, sa::out(out));
  ok &= example::transfers_are("launch(add_kernel, x, y, out(out))",
                               sa::global_transfer_stats() - before, 2, 0);
  before = sa::global_transfer_stats();
  ok &= example::matches("out = x + y", std::as_const(out).host_view(), reference);
  ok &= example::transfers_are("reading out on the host", sa::global_transfer_stats() - before, 0,
                               1);
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
