// The headline benchmark: SmartArray against naive copies, expert explicit copies, Unified Memory
// (with and without prefetch), mapped memory and Thrust, on the same workloads in one run.
//
// Every timed iteration is one "call" of the workload, bracketed by CUDA events on an idle stream
// (so the host overhead of each contender is inside the measurement) and synchronized at its end.
// On the host backend, the host clock brackets the call and a synchronize instead.
// Names are BM_<workload>/<contender>/<n>; scripts/bench_report.py turns the JSON into
// docs/benchmarks.md with ratios against explicit and naive. Every run checks the contender's
// results against a host reference, and the smartarray contender's copies per call against the
// residency contract; a failed check fails the run and the exit status.
//
// naive, explicit and smartarray run on both backends: their hand-written calls go through `Raw`,
// which is the CUDA runtime itself on the cuda backend. managed, mapped and Thrust need CUDA and
// are skipped on the host backend. `--demo` is the README demo: a short run of add, chain10 and
// iterative, printed as one table per workload (see main).
#include <smartarray/smartarray.hpp>
#include <smartarray/detail/cuda_check.hpp>

#include "bench_main.hpp"
#include "bench_support.cuh"

#include <benchmark/benchmark.h>
#include <cub/device/device_reduce.cuh>
#include <cuda/std/array>
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/host_vector.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/transform.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;

namespace {

using sa::bench::CallTimer;
using sa::bench::need_cuda;
using sa::bench::prefetch_managed;
using sa::bench::PrefetchTo;
using sa::bench::random_floats;
using sa::bench::Raw;

enum class Contender { naive, explicit_copies, smartarray, managed_prefetch, managed, mapped, thrust };

/// Managed and mapped memory and Thrust are CUDA itself; the host backend does not emulate them.
bool cuda_only(Contender who) {
  return who != Contender::naive && who != Contender::explicit_copies &&
         who != Contender::smartarray;
}

// --- checks ----------------------------------------------------------------------------------

/// Runs that failed a check: main's exit status.
int failed_runs = 0;

void fail(benchmark::State& state, const std::string& why) {
  ++failed_runs;
  state.SkipWithError(("FAILED: " + why).c_str());
}

/// Compares results with the host reference `expected(i)`, within `tolerance` relative to
/// max(1, |expected|).
template <typename Expected>
void check(benchmark::State& state, std::span<const float> got, Expected expected,
           double tolerance) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = expected(i);
    if (std::fabs(static_cast<double>(got[i]) - e) > tolerance * std::fmax(1.0, std::fabs(e))) {
      char line[160];
      std::snprintf(line, sizeof line, "result %zu is %.9g, host reference %.9g", i,
                    static_cast<double>(got[i]), e);
      fail(state, line);
      return;
    }
  }
}

/// Publishes the smartarray contender's copies per timed call, and fails the run when they are not
/// the ones the residency contract promises.
void expect_transfers(benchmark::State& state, const CallTimer& timer, std::uint64_t h2d,
                      std::uint64_t d2h) {
  const sa::TransferStats& made = timer.timed_transfers();
  const auto timed = static_cast<std::uint64_t>(state.iterations());
  state.counters["h2d_per_call"] = static_cast<double>(made.h2d_count) / static_cast<double>(timed);
  state.counters["d2h_per_call"] = static_cast<double>(made.d2h_count) / static_cast<double>(timed);
  if (made.h2d_count != h2d * timed || made.d2h_count != d2h * timed) {
    fail(state, "expected " + std::to_string(h2d) + " H2D and " + std::to_string(d2h) +
                    " D2H per call; smartarray made " + made.to_string() + " in " +
                    std::to_string(timed) + " timed calls");
  }
}

// --- elementwise workloads -------------------------------------------------------------------

struct Add {
  static constexpr int inputs = 2;
  static constexpr double tolerance = 1e-6;
  SMARTARRAY_HOST_DEVICE float operator()(const cuda::std::array<const float*, 2>& in,
                                          std::size_t i) const {
    return in[0][i] + in[1][i];
  }
};

struct Gaussian {
  static constexpr int inputs = 1;
  static constexpr double tolerance = 1e-5;  // host and device expf differ by a few ulps
  float mean = 0.25F;
  float sigma = 1.5F;
  SMARTARRAY_HOST_DEVICE float operator()(const cuda::std::array<const float*, 1>& in,
                                          std::size_t i) const {
    const float z = (in[0][i] - mean) / sigma;
    return expf(-0.5F * z * z) / (sigma * 2.5066282746310002F);
  }
};

SMARTARRAY_HOST_DEVICE float polar_distance(float r1, float t1, float r2, float t2) {
  return sqrtf(r1 * r1 + r2 * r2 - 2.0F * r1 * r2 * cosf(t1 - t2));
}

struct Polar {
  static constexpr int inputs = 4;
  // Near r1 = r2 and t1 = t2 the root's argument is a small difference of terms up to 8, rounded
  // (and cosf evaluated) differently on host and device: some 2^-19 apart, whose roots differ by
  // up to sqrt(2^-19) = 1.4e-3.
  static constexpr double tolerance = 4e-3;
  SMARTARRAY_HOST_DEVICE float operator()(const cuda::std::array<const float*, 4>& in,
                                          std::size_t i) const {
    return polar_distance(in[0][i], in[1][i], in[2][i], in[3][i]);
  }
};

/// The kernel body of an elementwise workload: out[i] = op(in, i).
template <typename Op>
struct Elementwise {
  cuda::std::array<const float*, Op::inputs> in;
  float* out;
  Op op;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { out[i] = op(in, i); }
};

template <typename Op>
void launch_elementwise(const Raw& raw, const cuda::std::array<const float*, Op::inputs>& in,
                        float* out, std::size_t n) {
  raw.launch(n, Elementwise<Op>{in, out, Op{}});
}

/// One elementwise call with inputs written once by the host and results that stay on the device.
template <typename Op>
void elementwise(benchmark::State& state, Contender who) {
  if (cuda_only(who) && !need_cuda(state)) return;
  constexpr int K = Op::inputs;
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::size_t bytes = n * sizeof(float);
  sa::Stream owner;
  const cudaStream_t stream = owner.ref().cuda_stream();
  const Raw raw(owner);
  CallTimer timer(owner);
  std::vector<std::vector<float>> host_inputs;
  for (int k = 0; k < K; ++k) host_inputs.push_back(random_floats(n, 7 + k));
  std::vector<float> result(n);  // the last call's output, checked at the end

  switch (who) {
    case Contender::naive: {
      timer.run(state, [&] {
        cuda::std::array<const float*, K> in{};
        std::array<float*, K> dev{};
        for (int k = 0; k < K; ++k) {
          dev[k] = raw.allocate_device<float>(n);
          raw.copy_to_device_async(dev[k], host_inputs[k].data(), bytes);
          in[k] = dev[k];
        }
        float* d_out = raw.allocate_device<float>(n);
        launch_elementwise<Op>(raw, in, d_out, n);
        raw.copy_to_host_async(result.data(), d_out, bytes);
        raw.synchronize();
        for (float* p : dev) raw.free_device(p);
        raw.free_device(d_out);
      });
      break;
    }
    case Contender::explicit_copies: {
      std::array<float*, K + 1> dev{};
      for (auto& p : dev) p = raw.allocate_device<float>(n);
      cuda::std::array<const float*, K> in{};
      for (int k = 0; k < K; ++k) {
        raw.copy_to_device_async(dev[k], host_inputs[k].data(), bytes);
        in[k] = dev[k];
      }
      raw.synchronize();
      timer.run(state, [&] { launch_elementwise<Op>(raw, in, dev[K], n); });
      raw.copy_to_host_async(result.data(), dev[K], bytes);
      raw.synchronize();
      for (float* p : dev) raw.free_device(p);
      break;
    }
    case Contender::smartarray: {
      std::vector<sa::SmartArray<float>> inputs;
      for (int k = 0; k < K; ++k) inputs.emplace_back(host_inputs[k]);
      sa::SmartArray<float> out(n);
      timer.run(state, [&] {
        cuda::std::array<const float*, K> in{};
        for (int k = 0; k < K; ++k) in[k] = std::as_const(inputs[k]).device_view(owner).data();
        launch_elementwise<Op>(raw, in, out.device_view(Access::discard, owner).data(), n);
      });
      expect_transfers(state, timer, 0, 0);
      const auto host = std::as_const(out).host_view();
      result.assign(host.begin(), host.end());
      break;
    }
    case Contender::managed_prefetch:
    case Contender::managed: {
      std::array<float*, K + 1> mem{};
      for (auto& p : mem) SMARTARRAY_CUDA_TRY(cudaMallocManaged(&p, bytes), "managed buffer");
      cuda::std::array<const float*, K> in{};
      for (int k = 0; k < K; ++k) {
        std::memcpy(mem[k], host_inputs[k].data(), bytes);
        in[k] = mem[k];
      }
      const bool prefetch = who == Contender::managed_prefetch;
      timer.run(state, [&] {
        if (prefetch) {
          for (float* p : mem) {
            prefetch_managed(p, bytes, PrefetchTo::device, stream, "prefetch");
          }
        }
        launch_elementwise<Op>(raw, in, mem[K], n);
      });
      result.assign(mem[K], mem[K] + n);
      for (float* p : mem) SMARTARRAY_CUDA_TRY(cudaFree(p), "managed free");
      break;
    }
    case Contender::mapped: {
      std::array<float*, K + 1> host{};
      cuda::std::array<const float*, K> in{};
      float* out = nullptr;
      for (int k = 0; k <= K; ++k) {
        SMARTARRAY_CUDA_TRY(cudaHostAlloc(&host[k], bytes, cudaHostAllocMapped), "mapped buffer");
        float* device_ptr = nullptr;
        SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&device_ptr, host[k], 0), "mapped pointer");
        if (k < K) {
          std::memcpy(host[k], host_inputs[k].data(), bytes);
          in[k] = device_ptr;
        } else {
          out = device_ptr;
        }
      }
      timer.run(state, [&] { launch_elementwise<Op>(raw, in, out, n); });
      result.assign(host[K], host[K] + n);
      for (float* p : host) SMARTARRAY_CUDA_TRY(cudaFreeHost(p), "mapped free");
      break;
    }
    case Contender::thrust: {
      std::vector<thrust::device_vector<float>> inputs;
      for (int k = 0; k < K; ++k) inputs.emplace_back(host_inputs[k].begin(), host_inputs[k].end());
      thrust::device_vector<float> out(n);
      const auto policy = thrust::cuda::par_nosync.on(stream);
      timer.run(state, [&] {
        if constexpr (K == 1) {
          thrust::transform(policy, inputs[0].begin(), inputs[0].end(), out.begin(),
                            [] __device__(float x) {
                              return Gaussian{}(cuda::std::array<const float*, 1>{&x}, 0);
                            });
        } else if constexpr (K == 2) {
          thrust::transform(policy, inputs[0].begin(), inputs[0].end(), inputs[1].begin(),
                            out.begin(), [] __device__(float a, float b) { return a + b; });
        } else {
          auto first = thrust::make_zip_iterator(inputs[0].begin(), inputs[1].begin(),
                                                 inputs[2].begin(), inputs[3].begin());
          thrust::transform(policy, first, first + static_cast<std::ptrdiff_t>(n), out.begin(),
                            [] __device__(thrust::tuple<float, float, float, float> t) {
                              return polar_distance(thrust::get<0>(t), thrust::get<1>(t),
                                                    thrust::get<2>(t), thrust::get<3>(t));
                            });
        }
      });
      thrust::copy(out.begin(), out.end(), result.begin());
      break;
    }
  }
  cuda::std::array<const float*, K> host_in{};
  for (int k = 0; k < K; ++k) host_in[k] = host_inputs[k].data();
  check(state, result, [&](std::size_t i) { return static_cast<double>(Op{}(host_in, i)); },
        Op::tolerance);
}

// --- a chain of 10 kernels with one host write before and one host read after ---------------

constexpr int chain_steps = 10;

/// The factor a of step `step` of the chain.
constexpr float chain_factor(int step) { return 0.001F * static_cast<float>(step + 1); }

/// One kernel of the chain: y = a x + y / 2.
struct ChainStep {
  const float* x;
  float* y;
  float a;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { y[i] = a * x[i] + y[i] * 0.5F; }
};

void launch_chain(const Raw& raw, const float* x, float* y, std::size_t n) {
  for (int k = 0; k < chain_steps; ++k) raw.launch(n, ChainStep{x, y, chain_factor(k)});
}

/// y after `calls` calls of the chain from y0: every step is linear, so y = c x + d y0, with c and
/// d folded here in double.
struct ChainReference {
  double c = 0;
  double d = 1;
  explicit ChainReference(std::int64_t calls) {
    for (std::int64_t call = 0; call < calls; ++call) {
      for (int k = 0; k < chain_steps; ++k) {
        c = static_cast<double>(chain_factor(k)) + 0.5 * c;
        d *= 0.5;
      }
    }
  }
};

void chain(benchmark::State& state, Contender who) {
  if (cuda_only(who) && !need_cuda(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::size_t bytes = n * sizeof(float);
  sa::Stream owner;
  const cudaStream_t stream = owner.ref().cuda_stream();
  const Raw raw(owner);
  CallTimer timer(owner);
  const std::vector<float> source = random_floats(n, 11);
  const std::vector<float> start = random_floats(n, 12);  // y before the first call
  std::vector<float> result(n);                            // y after the last call
  float checksum = 0;

  switch (who) {
    case Contender::naive: {
      std::vector<float> x = source, y = start;
      timer.run(state, [&] {
        for (int k = 0; k < chain_steps; ++k) {
          float* dx = raw.allocate_device<float>(n);
          float* dy = raw.allocate_device<float>(n);
          raw.copy_to_device_async(dx, x.data(), bytes);
          raw.copy_to_device_async(dy, y.data(), bytes);
          raw.launch(n, ChainStep{dx, dy, chain_factor(k)});
          raw.copy_to_host_async(y.data(), dy, bytes);
          raw.synchronize();
          raw.free_device(dx);
          raw.free_device(dy);
        }
        checksum += y[n / 2];
      });
      result = y;
      break;
    }
    case Contender::explicit_copies: {
      float* hx = raw.allocate_pinned<float>(n);
      float* hy = raw.allocate_pinned<float>(n);
      float* dx = raw.allocate_device<float>(n);
      float* dy = raw.allocate_device<float>(n);
      raw.copy_to_device_async(dy, start.data(), bytes);
      raw.synchronize();
      timer.run(state, [&] {
        std::memcpy(hx, source.data(), bytes);
        raw.copy_to_device_async(dx, hx, bytes);
        launch_chain(raw, dx, dy, n);
        raw.copy_to_host_async(hy, dy, bytes);
        raw.synchronize();
        checksum += hy[n / 2];
      }, 2 * bytes);
      result.assign(hy, hy + n);
      for (float* p : {hx, hy}) raw.free_pinned(p);
      for (float* p : {dx, dy}) raw.free_device(p);
      break;
    }
    case Contender::smartarray: {
      sa::SmartArray<float> x(n), y(start);
      timer.run(state, [&] {
        auto host_x = x.host_view(Access::discard);
        std::memcpy(host_x.data(), source.data(), bytes);
        launch_chain(raw, std::as_const(x).device_view(owner).data(),
                     y.device_view(Access::read_write, owner).data(), n);
        checksum += std::as_const(y)[n / 2];
      }, 2 * bytes);
      expect_transfers(state, timer, 1, 1);
      const auto host = std::as_const(y).host_view();
      result.assign(host.begin(), host.end());
      break;
    }
    case Contender::managed_prefetch:
    case Contender::managed: {
      float *x = nullptr, *y = nullptr;
      SMARTARRAY_CUDA_TRY(cudaMallocManaged(&x, bytes), "managed x");
      SMARTARRAY_CUDA_TRY(cudaMallocManaged(&y, bytes), "managed y");
      std::copy(start.begin(), start.end(), y);
      const bool prefetch = who == Contender::managed_prefetch;
      timer.run(state, [&] {
        std::memcpy(x, source.data(), bytes);
        if (prefetch) {
          prefetch_managed(x, bytes, PrefetchTo::device, stream, "prefetch x");
          prefetch_managed(y, bytes, PrefetchTo::device, stream, "prefetch y");
        }
        launch_chain(raw, x, y, n);
        if (prefetch) {
          prefetch_managed(y, bytes, PrefetchTo::host, stream, "prefetch y back");
        }
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "managed sync");
        checksum += y[n / 2];
      }, 2 * bytes);
      result.assign(y, y + n);
      for (float* p : {x, y}) SMARTARRAY_CUDA_TRY(cudaFree(p), "free");
      break;
    }
    case Contender::mapped: {
      float *hx = nullptr, *hy = nullptr, *dx = nullptr, *dy = nullptr;
      SMARTARRAY_CUDA_TRY(cudaHostAlloc(&hx, bytes, cudaHostAllocMapped), "mapped x");
      SMARTARRAY_CUDA_TRY(cudaHostAlloc(&hy, bytes, cudaHostAllocMapped), "mapped y");
      SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&dx, hx, 0), "mapped x pointer");
      SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&dy, hy, 0), "mapped y pointer");
      std::copy(start.begin(), start.end(), hy);
      timer.run(state, [&] {
        std::memcpy(hx, source.data(), bytes);
        launch_chain(raw, dx, dy, n);
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "mapped sync");
        checksum += hy[n / 2];
      }, 2 * bytes);
      result.assign(hy, hy + n);
      for (float* p : {hx, hy}) SMARTARRAY_CUDA_TRY(cudaFreeHost(p), "free");
      break;
    }
    case Contender::thrust: {
      thrust::host_vector<float> hx(source.begin(), source.end());
      thrust::device_vector<float> dx(n), dy(start.begin(), start.end());
      thrust::host_vector<float> hy(n);
      timer.run(state, [&] {
        dx = hx;
        launch_chain(raw, thrust::raw_pointer_cast(dx.data()), thrust::raw_pointer_cast(dy.data()),
                     n);
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "thrust sync");
        hy = dy;
        checksum += hy[n / 2];
      }, 2 * bytes);
      result.assign(hy.begin(), hy.end());
      break;
    }
  }
  benchmark::DoNotOptimize(checksum);
  const ChainReference reference(timer.calls());
  const auto expected = [&](std::size_t i) {
    return reference.c * static_cast<double>(source[i]) +
           reference.d * static_cast<double>(start[i]);
  };
  check(state, result, expected, 1e-5);
}

// --- an iterative loop whose host reads one scalar (a reduction) every iteration ------------

/// One relaxation step towards 0.5: x = 0.999 x + 0.0005.
struct Relax {
  static constexpr float keep = 0.999F;
  static constexpr float add = 0.0005F;
  float* x;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { x[i] = keep * x[i] + add; }
};

/// The host backend's reduction, launched on one item: out[0] = in[0] + ... + in[n-1], summed in
/// double. (Host and device: for_each_index compiles its kernel under nvcc, though the cuda
/// backend reduces with CUB.)
struct SerialSum {
  const float* in;
  float* out;
  std::size_t n;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t) const {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += static_cast<double>(in[i]);
    *out = static_cast<float>(sum);
  }
};

/// The sum that the host reads after `calls` calls from x0: x = keep^calls x0 + b, where b folds
/// the additions, in double.
double iterative_reference(const std::vector<float>& x0, std::int64_t calls) {
  double scale = 1;
  double offset = 0;
  for (std::int64_t call = 0; call < calls; ++call) {
    scale *= static_cast<double>(Relax::keep);
    offset = static_cast<double>(Relax::keep) * offset + static_cast<double>(Relax::add);
  }
  const double total = std::accumulate(x0.begin(), x0.end(), 0.0);
  return scale * total + offset * static_cast<double>(x0.size());
}

void iterative(benchmark::State& state, Contender who) {
  if (cuda_only(who) && !need_cuda(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::size_t bytes = n * sizeof(float);
  sa::Stream owner;
  const cudaStream_t stream = owner.ref().cuda_stream();
  const Raw raw(owner);
  CallTimer timer(owner);
  const std::vector<float> source = random_floats(n, 13);
  std::size_t temp_bytes = 0;
  if (raw.cuda()) {
    SMARTARRAY_CUDA_TRY(cub::DeviceReduce::Sum(nullptr, temp_bytes,
                                               static_cast<const float*>(nullptr),
                                               static_cast<float*>(nullptr), n, stream),
                        "size the reduction temporary");
  }
  float sum_read = 0;  // the sum the host read in the last call
  auto reduce = [&](const float* in, float* out, void* temp) {
    if (raw.cuda()) {
      SMARTARRAY_CUDA_TRY(cub::DeviceReduce::Sum(temp, temp_bytes, in, out, n, stream), "reduce");
    } else {
      raw.launch(1, SerialSum{in, out, n});
    }
  };

  switch (who) {
    case Contender::naive: {
      std::vector<float> x = source;
      timer.run(state, [&] {
        float* dx = raw.allocate_device<float>(n);
        float* dsum = raw.allocate_device<float>(1);
        std::byte* temp = raw.allocate_device<std::byte>(temp_bytes);
        raw.copy_to_device_async(dx, x.data(), bytes);
        raw.launch(n, Relax{dx});
        reduce(dx, dsum, temp);
        raw.copy_to_host_async(x.data(), dx, bytes);
        raw.copy_to_host_async(&sum_read, dsum, sizeof(float));
        raw.synchronize();
        raw.free_device(dx);
        raw.free_device(dsum);
        raw.free_device(temp);
      });
      break;
    }
    case Contender::explicit_copies: {
      float* dx = raw.allocate_device<float>(n);
      float* dsum = raw.allocate_device<float>(1);
      std::byte* temp = raw.allocate_device<std::byte>(temp_bytes);
      float* hsum = raw.allocate_pinned<float>(1);
      raw.copy_to_device_async(dx, source.data(), bytes);
      raw.synchronize();
      timer.run(state, [&] {
        raw.launch(n, Relax{dx});
        reduce(dx, dsum, temp);
        raw.copy_to_host_async(hsum, dsum, sizeof(float));
        raw.synchronize();
        sum_read = *hsum;
      });
      raw.free_device(dx);
      raw.free_device(dsum);
      raw.free_device(temp);
      raw.free_pinned(hsum);
      break;
    }
    case Contender::smartarray: {
      sa::SmartArray<float> x(source);
      sa::SmartArray<float> sum(1);
      sa::SmartArray<std::byte> temp(temp_bytes);
      timer.run(state, [&] {
        float* dx = x.device_view(Access::read_write, owner).data();
        raw.launch(n, Relax{dx});
        reduce(dx, sum.device_view(Access::discard, owner).data(),
               temp.device_view(Access::discard, owner).data());
        sum_read = std::as_const(sum)[0];
      });
      expect_transfers(state, timer, 0, 1);
      break;
    }
    case Contender::managed_prefetch:
    case Contender::managed: {
      float *x = nullptr, *sum = nullptr;
      void* temp = nullptr;
      SMARTARRAY_CUDA_TRY(cudaMallocManaged(&x, bytes), "managed x");
      SMARTARRAY_CUDA_TRY(cudaMallocManaged(&sum, sizeof(float)), "managed sum");
      SMARTARRAY_CUDA_TRY(cudaMalloc(&temp, temp_bytes), "temp");
      std::memcpy(x, source.data(), bytes);
      const bool prefetch = who == Contender::managed_prefetch;
      timer.run(state, [&] {
        if (prefetch) {
          prefetch_managed(x, bytes, PrefetchTo::device, stream, "prefetch x");
        }
        raw.launch(n, Relax{x});
        reduce(x, sum, temp);
        if (prefetch) {
          prefetch_managed(sum, sizeof(float), PrefetchTo::host, stream, "prefetch sum");
        }
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "sync");
        sum_read = *sum;
      });
      for (void* p : {static_cast<void*>(x), static_cast<void*>(sum), temp}) {
        SMARTARRAY_CUDA_TRY(cudaFree(p), "free");
      }
      break;
    }
    case Contender::mapped: {
      float *hx = nullptr, *hsum = nullptr, *dx = nullptr, *dsum = nullptr;
      void* temp = nullptr;
      SMARTARRAY_CUDA_TRY(cudaHostAlloc(&hx, bytes, cudaHostAllocMapped), "mapped x");
      SMARTARRAY_CUDA_TRY(cudaHostAlloc(&hsum, sizeof(float), cudaHostAllocMapped), "mapped sum");
      SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&dx, hx, 0), "pointer");
      SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&dsum, hsum, 0), "pointer");
      SMARTARRAY_CUDA_TRY(cudaMalloc(&temp, temp_bytes), "temp");
      std::memcpy(hx, source.data(), bytes);
      timer.run(state, [&] {
        raw.launch(n, Relax{dx});
        reduce(dx, dsum, temp);
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "sync");
        sum_read = *hsum;
      });
      for (float* p : {hx, hsum}) SMARTARRAY_CUDA_TRY(cudaFreeHost(p), "free");
      SMARTARRAY_CUDA_TRY(cudaFree(temp), "free");
      break;
    }
    case Contender::thrust: {
      thrust::device_vector<float> x(source.begin(), source.end());
      timer.run(state, [&] {
        raw.launch(n, Relax{thrust::raw_pointer_cast(x.data())});
        sum_read = thrust::reduce(thrust::cuda::par.on(stream), x.begin(), x.end(), 0.0F);
      });
      break;
    }
  }
  benchmark::DoNotOptimize(sum_read);
  // The relaxation's float rounding drifts by at most 1 / (1 - keep) half-ulps: 6e-5 relative.
  const double expected = iterative_reference(source, timer.calls());
  check(state, std::span<const float>(&sum_read, 1), [&](std::size_t) { return expected; }, 1e-4);
}

// --- migration bandwidth: a host-written array read once on the device ----------------------

enum class Transfer { smartarray, pinned_memcpy, pageable_memcpy };

void bandwidth(benchmark::State& state, Transfer how) {
  if (!need_cuda(state)) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  sa::Stream owner;
  const cudaStream_t stream = owner.ref().cuda_stream();
  cudaEvent_t start = nullptr, stop = nullptr;
  SMARTARRAY_CUDA_TRY(cudaEventCreate(&start), "event");
  SMARTARRAY_CUDA_TRY(cudaEventCreate(&stop), "event");
  void* device = nullptr;
  void* host = nullptr;
  std::vector<std::byte> pageable;
  sa::SmartArray<std::byte> array(bytes, std::byte{1});
  if (how == Transfer::pinned_memcpy) SMARTARRAY_CUDA_TRY(cudaMallocHost(&host, bytes), "pinned");
  if (how == Transfer::pageable_memcpy) {
    pageable.assign(bytes, std::byte{1});
    host = pageable.data();
  }
  if (how != Transfer::smartarray) SMARTARRAY_CUDA_TRY(cudaMalloc(&device, bytes), "device");
  (void)std::as_const(array).device_view(owner);  // the device buffer exists before timing
  for (auto _ : state) {
    if (how == Transfer::smartarray) {
      array.host_view(Access::read_write)[0] = std::byte{2};  // the host wrote: device is stale
    }
    SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "idle stream");
    SMARTARRAY_CUDA_TRY(cudaEventRecord(start, stream), "start");
    if (how == Transfer::smartarray) {
      benchmark::DoNotOptimize(std::as_const(array).device_view(owner).data());
    } else {
      SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream), "copy");
    }
    SMARTARRAY_CUDA_TRY(cudaEventRecord(stop, stream), "stop");
    SMARTARRAY_CUDA_TRY(cudaEventSynchronize(stop), "wait");
    float ms = 0;
    SMARTARRAY_CUDA_TRY(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    state.SetIterationTime(static_cast<double>(ms) / 1e3);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  if (how == Transfer::pinned_memcpy) SMARTARRAY_CUDA_TRY(cudaFreeHost(host), "free");
  if (device != nullptr) SMARTARRAY_CUDA_TRY(cudaFree(device), "free");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

// --- registration --------------------------------------------------------------------------

const std::pair<const char*, Contender> contenders[] = {
    {"naive", Contender::naive},
    {"explicit", Contender::explicit_copies},
    {"smartarray", Contender::smartarray},
    {"managed_prefetch", Contender::managed_prefetch},
    {"managed", Contender::managed},
    {"mapped", Contender::mapped},
    {"thrust", Contender::thrust},
};

/// The sizes each workload runs at, by workload; a workload with none is left out.
using Sizes = std::map<std::string, std::vector<std::int64_t>>;

/// The published run.
const Sizes full_sizes{{"add", {100'000, 1'000'000, 16'000'000}},
                       {"gaussian", {1'000'000}},
                       {"polar", {1'000'000}},
                       {"chain10", {1'000'000, 16'000'000}},
                       {"iterative", {1'000'000}},
                       {"bandwidth", {4 << 10, 1 << 20, 16 << 20, 256 << 20}}};
/// The README demo (--demo).
const Sizes demo_sizes{
    {"add", {100'000, 1'000'000}}, {"chain10", {1'000'000}}, {"iterative", {1'000'000}}};
/// The demo's CTest run (--demo --quick).
const Sizes quick_sizes{
    {"add", {10'000, 100'000}}, {"chain10", {100'000}}, {"iterative", {100'000}}};

void register_all(const Sizes& sizes) {
  auto add = [&](const std::string& workload, const std::string& contender, auto fn) {
    const auto it = sizes.find(workload);
    if (it == sizes.end()) return;
    auto* b = benchmark::RegisterBenchmark(("BM_" + workload + "/" + contender).c_str(), fn);
    for (auto n : it->second) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  };
  for (const auto& [name, who] : contenders) {
    add("add", name, [who = who](benchmark::State& s) { elementwise<Add>(s, who); });
    add("gaussian", name, [who = who](benchmark::State& s) { elementwise<Gaussian>(s, who); });
    add("polar", name, [who = who](benchmark::State& s) { elementwise<Polar>(s, who); });
    add("chain10", name, [who = who](benchmark::State& s) { chain(s, who); });
    add("iterative", name, [who = who](benchmark::State& s) { iterative(s, who); });
  }
  const std::pair<const char*, Transfer> transfers[] = {{"smartarray", Transfer::smartarray},
                                                        {"pinned_memcpy", Transfer::pinned_memcpy},
                                                        {"pageable_memcpy", Transfer::pageable_memcpy}};
  for (const auto& [name, how] : transfers) {
    add("bandwidth", name, [how = how](benchmark::State& s) { bandwidth(s, how); });
  }
}

// --- the README demo: a short run, printed as one table per workload -------------------------

const std::pair<const char*, const char*> demo_workloads[] = {
    {"add", "c = a + b; the host wrote a and b once, c stays on the device"},
    {"chain10", "the host writes x, 10 kernels y = a x + y / 2, the host reads y"},
    {"iterative", "a relaxation kernel and a sum; the host reads the sum every call"},
};

using Run = benchmark::BenchmarkReporter::Run;
/// The runs of one workload at one size, by contender.
using Row = std::map<std::string, const Run*>;

std::string format(const char* spec, double value) {
  char text[32];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

/// 1000000 as "1,000,000".
std::string with_commas(std::int64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

/// The measured run of `who`, or null when it failed or did not run.
const Run* measured(const Row& row, const std::string& who) {
  const auto it = row.find(who);
  return it == row.end() || sa::bench::skipped(*it->second) ? nullptr : it->second;
}

double microseconds(const Run& run) {
  return run.GetAdjustedRealTime() * 1e6 / benchmark::GetTimeUnitMultiplier(run.time_unit);
}

std::string ratio(const Row& row, const std::string& a, const std::string& b, const char* spec) {
  const Run* x = measured(row, a);
  const Run* y = measured(row, b);
  return x != nullptr && y != nullptr ? format(spec, microseconds(*x) / microseconds(*y)) : "-";
}

/// The cells of one table row: n, each column's time, the ratios, smartarray's copies per call.
std::vector<std::string> cells(std::int64_t n, const Row& row,
                               const std::vector<std::string>& columns) {
  std::vector<std::string> out{with_commas(n)};
  for (const std::string& who : columns) {
    const Run* run = measured(row, who);
    out.push_back(run != nullptr ? format("%.1f", microseconds(*run))
                  : row.contains(who) ? "FAILED"
                                      : "-");
  }
  out.push_back(ratio(row, "smartarray", "explicit", "%.3fx"));
  out.push_back(ratio(row, "naive", "smartarray", "%.1fx"));
  const Run* smart = measured(row, "smartarray");
  for (const char* counter : {"h2d_per_call", "d2h_per_call"}) {
    out.push_back(smart != nullptr ? format("%g", smart->counters.at(counter).value) : "-");
  }
  return out;
}

void add_once(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

/// Prints `rows` (the first is the header) as right-aligned columns.
void print_columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      std::printf(c == 0 ? "%*s" : "  %*s", static_cast<int>(widths[c]), row[c].c_str());
    }
    std::printf("\n");
  }
}

/// Collects the runs of the demo instead of printing them as they come.
class DemoReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context& /*context*/) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Iteration) runs_.push_back(run);
    }
  }

  /// Prints one table per workload, then the contenders that did not run and the failed checks.
  void print() const {
    std::map<std::pair<std::string, std::int64_t>, Row> rows;  // by workload and n
    std::vector<std::string> ran;                               // contenders that ran
    std::map<std::string, std::vector<std::string>> not_run;    // contenders, by reason
    std::vector<std::string> failures;
    for (const Run& run : runs_) {
      const std::string& name = run.run_name.function_name;  // BM_<workload>/<contender>
      const std::size_t slash = name.find('/');
      const std::string who = name.substr(slash + 1);
      rows[{name.substr(3, slash - 3), std::stoll(run.run_name.args)}][who] = &run;
      const bool skipped = sa::bench::skipped(run);
      const std::string& message = sa::bench::skip_message(run);
      const bool failed = skipped && message.starts_with("FAILED");
      if (skipped && !failed) {
        add_once(not_run[message], who);
        continue;
      }
      add_once(ran, who);
      if (failed) failures.push_back(run.benchmark_name() + ": " + message);
    }
    std::vector<std::string> columns;  // in the order of the published tables
    for (const auto& [who, _] : contenders) {
      if (std::find(ran.begin(), ran.end(), who) != ran.end()) columns.emplace_back(who);
    }
    for (const auto& [workload, what] : demo_workloads) {
      std::vector<std::vector<std::string>> table{{"n"}};
      table[0].insert(table[0].end(), columns.begin(), columns.end());
      table[0].insert(table[0].end(),
                      {"smartarray/explicit", "naive/smartarray", "H2D/call", "D2H/call"});
      for (const auto& [key, row] : rows) {
        if (key.first == workload) table.push_back(cells(key.second, row, columns));
      }
      if (table.size() == 1) continue;
      std::printf("\n%s: %s\n", workload, what);
      print_columns(table);
    }
    std::printf("\n");
    for (const auto& [reason, who] : not_run) {
      std::string names;
      for (const std::string& w : who) names += (names.empty() ? "" : ", ") + w;
      std::printf("not run, %s: %s\n", reason.c_str(), names.c_str());
    }
    for (const std::string& failure : failures) std::printf("%s\n", failure.c_str());
    if (failures.empty()) {
      std::printf("all results match the host reference; smartarray made the copies it promises\n");
    }
  }

 private:
  std::vector<Run> runs_;
};

void print_demo_header() {
  std::printf("bench_pipelines --demo: a short run of the headline benchmark "
              "(docs/benchmarks.md)\n");
  std::printf("backend: %s, device: %s\n", sa::to_string(sa::backend()),
              sa::device_properties().name.c_str());
  if (sa::backend() == sa::BackendKind::host) {
    std::printf("note: these are CPU times of the host backend's emulated device, not GPU times\n");
  }
  std::printf("each time is the mean of one call in microseconds (%s);\n",
              sa::backend() == sa::BackendKind::cuda
                  ? "CUDA events on an idle stream, synchronized per call"
                  : "the host clock around the call and a synchronize");
  std::printf("H2D/call and D2H/call are the smartarray contender's copies per call\n");
  std::fflush(stdout);
}

/// True when `flag` is among the arguments.
bool given(int argc, char** argv, const char* flag) {
  return std::any_of(argv + 1, argv + argc,
                     [&](const char* arg) { return std::strcmp(arg, flag) == 0; });
}

}  // namespace

/// bench_pipelines [Google Benchmark flags]: the published run.
/// bench_pipelines --demo [--quick] [flags]: the README demo, printed as tables (--quick: smaller
/// sizes and runs, for CTest).
/// Exits non-zero when a run fails its checks.
int main(int argc, char** argv) {
  const bool demo = given(argc, argv, "--demo");
  const bool quick = demo && given(argc, argv, "--quick");
  char min_time[] = "--benchmark_min_time=0.05";
  char quick_min_time[] = "--benchmark_min_time=0.01";
  std::vector<char*> args{argv[0]};
  if (demo) args.push_back(quick ? quick_min_time : min_time);  // flags given later override it
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!(demo && arg == "--demo") && !(quick && arg == "--quick")) args.push_back(argv[i]);
  }
  if (!sa::bench::initialize(args)) return 1;
  sa::bench::add_provenance();
  if (demo) {
    register_all(quick ? quick_sizes : demo_sizes);
    print_demo_header();
    DemoReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    reporter.print();
  } else {
    register_all(full_sizes);
    benchmark::RunSpecifiedBenchmarks();
  }
  benchmark::Shutdown();
  return failed_runs == 0 ? 0 : 1;
}
