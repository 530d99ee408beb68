// The kernel adapters against hand-written CUDA, each baseline in the same run, ratios in counters.
//
// - BM_LaunchOverhead/arrays:K: host time per sa::launch of an empty kernel taking K SmartArrays
//   (device-resident: every acquire is the fast path) against a bare <<<>>> launch of the same
//   kernel with views acquired once beforehand. Counters: launch_ns and bare_ns per launch,
//   overhead_ns = launch_ns - bare_ns, overhead_per_array_ns. Targets: overhead under 1000 ns,
//   under 300 ns per array.
// - BM_TransformVsKernel/n: c = a + b through sa::transform against the hand-written kernel of one
//   thread per element (ceil(n / 256) blocks of 256 threads, a 32-bit index), both CUDA-event
//   timed over batches of back-to-back calls. transform_us, kernel_us and
//   ratio = transform / kernel are device times: each batch is queued behind a spinning kernel, so
//   the calls run back to back whatever the host's submission time. Target: ratio under 1.05.
//   transform_submit_us, kernel_submit_us and ratio_submit time the same batches from an idle
//   GPU, where a call costs the larger of its kernel time and its host submission time.
// - BM_Transpose<Layout>: 4096 x 4096 floats, shared-memory tiled against naive, CUDA-event timed.
//   Counters: naive_us, tiled_us, speedup = naive / tiled, and each one's GB/s.
//
// An iteration is one timed batch of the adapter under test (its manual time); the counters are
// per call. Every benchmark needs the cuda backend and reports an error on the host backend.
#include "../examples/transpose_kernels.cuh"

#include <smartarray/smartarray.hpp>

#include "bench_main.hpp"

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sa = smartarray;
using sa::Access;

namespace {

bool skip_without_cuda(benchmark::State& state) {
  if (sa::backend() == sa::BackendKind::cuda) return false;
  state.SkipWithError("needs the cuda backend");
  return true;
}

/// A start and a stop event; elapsed() waits for the stop event.
class EventTimer {
 public:
  EventTimer() {
    SMARTARRAY_CUDA_TRY(cudaEventCreate(&start_), "create a timing event");
    SMARTARRAY_CUDA_TRY(cudaEventCreate(&stop_), "create a timing event");
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(sa::StreamRef s) {
    SMARTARRAY_CUDA_TRY(cudaEventRecord(start_, s.cuda_stream()), "record the start event");
  }
  void stop(sa::StreamRef s) {
    SMARTARRAY_CUDA_TRY(cudaEventRecord(stop_, s.cuda_stream()), "record the stop event");
  }
  /// Seconds between start and stop.
  double elapsed() {
    SMARTARRAY_CUDA_TRY(cudaEventSynchronize(stop_), "wait for the stop event");
    float ms = 0;
    SMARTARRAY_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_), "read the elapsed time");
    return ms * 1e-3;
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

/// Device-resident arrays of random non-zero floats.
std::vector<sa::SmartArray<float>> device_arrays(std::size_t count, std::size_t n,
                                                 sa::StreamRef stream) {
  std::vector<sa::SmartArray<float>> arrays;
  for (std::size_t k = 0; k < count; ++k) {
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = 1.0F + static_cast<float>((i * 7 + k) % 13);
    arrays.emplace_back(values);
    (void)arrays.back().device_view(Access::read_write, stream);
  }
  sa::synchronize(stream);
  return arrays;
}

// --- launch overhead -----------------------------------------------------------------------------

__global__ void empty1(sa::DeviceView<float> a) { (void)a; }
__global__ void empty2(sa::DeviceView<const float> a, sa::DeviceView<float> b) { (void)a, (void)b; }
__global__ void empty4(sa::DeviceView<const float> a, sa::DeviceView<const float> b,
                       sa::DeviceView<float> c, sa::DeviceView<float> d) {
  (void)a, (void)b, (void)c, (void)d;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void BM_LaunchOverhead(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  const auto count = static_cast<std::size_t>(state.range(0));
  constexpr int batch = 100;  // launches per timed batch; far below the launch queue's depth
  sa::Stream stream;
  auto arrays = device_arrays(4, 1 << 10, stream);
  auto& a = arrays[0];
  auto& b = arrays[1];
  auto& c = arrays[2];
  auto& d = arrays[3];
  // The bare baseline acquires once, outside the loop, and checks the launches once per batch.
  const auto va = std::as_const(a).device_view(stream);
  const auto vb = std::as_const(b).device_view(stream);
  const auto wc = c.device_view(Access::read_write, stream);
  const auto wd = d.device_view(Access::read_write, stream);
  const auto wa = a.device_view(Access::read_write, stream);
  const cudaStream_t s = stream.ref().cuda_stream();
  double bare_seconds = 0;
  double launch_seconds = 0;
  for (auto _ : state) {
    auto start = Clock::now();
    for (int k = 0; k < batch; ++k) {
      if (count == 1) empty1<<<1, 32, 0, s>>>(wa);
      if (count == 2) empty2<<<1, 32, 0, s>>>(va, wd);
      if (count == 4) empty4<<<1, 32, 0, s>>>(va, vb, wc, wd);
    }
    bare_seconds += seconds_since(start);
    SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch the bare empty kernels");
    stream.synchronize();

    start = Clock::now();
    for (int k = 0; k < batch; ++k) {
      if (count == 1) sa::launch(empty1, 1, 32, stream, a);
      if (count == 2) sa::launch(empty2, 1, 32, stream, a, d);
      if (count == 4) sa::launch(empty4, 1, 32, stream, a, b, c, d);
    }
    const double elapsed = seconds_since(start);
    launch_seconds += elapsed;
    state.SetIterationTime(elapsed);
    stream.synchronize();
  }
  const double launches = static_cast<double>(state.iterations()) * batch;
  const double launch_ns = launch_seconds / launches * 1e9;
  const double bare_ns = bare_seconds / launches * 1e9;
  state.counters["launch_ns"] = launch_ns;
  state.counters["bare_ns"] = bare_ns;
  state.counters["overhead_ns"] = launch_ns - bare_ns;
  state.counters["overhead_per_array_ns"] = (launch_ns - bare_ns) / static_cast<double>(count);
}
BENCHMARK(BM_LaunchOverhead)->ArgName("arrays")->Arg(1)->Arg(2)->Arg(4)->UseManualTime();

// --- transform against a hand-written kernel -------------------------------------------------

struct Add {
  SMARTARRAY_HOST_DEVICE float operator()(float x, float y) const { return x + y; }
};

/// Keeps the GPU busy for `cycles` clock cycles, so that launches queued behind it run back to back.
__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

/// The baseline: what the best hand-written element-wise CUDA does, one thread per element.
__global__ void add_kernel(const float* a, const float* b, float* c, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

void BM_TransformVsKernel(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  constexpr int batch = 20;  // back-to-back calls per timing, so that launch gaps do not dominate
  sa::Stream stream;
  auto arrays = device_arrays(3, n, stream);
  auto& a = arrays[0];
  auto& b = arrays[1];
  auto& c = arrays[2];
  // The baseline: one thread per element, as many blocks as the elements need.
  constexpr unsigned block = 256;
  const auto blocks = static_cast<unsigned>((n + block - 1) / block);
  const float* pa = std::as_const(a).device_view(stream).data();
  const float* pb = std::as_const(b).device_view(stream).data();
  float* pc = c.device_view(Access::discard, stream).data();
  const cudaStream_t s = stream.ref().cuda_stream();
  EventTimer timer;
  // Seconds per call of a batch; `queued` puts the batch behind a 1 ms spin (far longer than the
  // host needs to submit it).
  const auto per_call = [&](bool queued, const auto& call) {
    if (queued) spin<<<1, 1, 0, s>>>(2'000'000);
    timer.start(stream);
    for (int k = 0; k < batch; ++k) call();
    timer.stop(stream);
    SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch the spin or the hand-written kernel");
    return timer.elapsed() / batch;
  };
  const auto kernel = [&] {
    add_kernel<<<blocks, block, 0, s>>>(pa, pb, pc, static_cast<unsigned>(n));
  };
  const auto adapter = [&] { sa::transform(sa::out(c), Add{}, a, b, stream); };
  double transform_seconds = 0, kernel_seconds = 0;
  double transform_submit_seconds = 0, kernel_submit_seconds = 0;
  for (auto _ : state) {
    kernel_seconds += per_call(true, kernel);
    const double elapsed = per_call(true, adapter);
    transform_seconds += elapsed;
    state.SetIterationTime(elapsed * batch);
    kernel_submit_seconds += per_call(false, kernel);
    transform_submit_seconds += per_call(false, adapter);
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.SetBytesProcessed(state.iterations() * batch *
                          static_cast<std::int64_t>(3 * n * sizeof(float)));
  state.counters["transform_us"] = transform_seconds / iterations * 1e6;
  state.counters["kernel_us"] = kernel_seconds / iterations * 1e6;
  state.counters["ratio"] = transform_seconds / kernel_seconds;
  state.counters["transform_submit_us"] = transform_submit_seconds / iterations * 1e6;
  state.counters["kernel_submit_us"] = kernel_submit_seconds / iterations * 1e6;
  state.counters["ratio_submit"] = transform_submit_seconds / kernel_submit_seconds;
}
BENCHMARK(BM_TransformVsKernel)->Arg(100'000)->Arg(1'000'000)->Arg(16'000'000)->UseManualTime();

// --- map against transform into an existing output ----------------------------------------------

/// `results[k] = map(Add{}, a, b)` against `transform(out(c), Add{}, a, b)` into an existing
/// output: wall time per call, host submission and device work together (map's cost used to be on
/// the host: the pinned allocation and zero fill of a result that was only written on the device).
/// The results of a batch are dropped in the next one, so each call also pays the free of an old
/// result, as a program that drops each result does. Target: ratio within 1.10 from 1e6 on.
void BM_MapVsTransform(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  constexpr int batch = 20;
  sa::Stream stream;
  auto arrays = device_arrays(3, n, stream);
  const auto& a = arrays[0];
  const auto& b = arrays[1];
  auto& c = arrays[2];
  std::vector<sa::SmartArray<float>> results(batch);
  const auto per_call = [&](const auto& call) {
    sa::synchronize(stream);
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < batch; ++k) call(k);
    sa::synchronize(stream);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / batch;
  };
  const auto transform = [&](int) { sa::transform(sa::out(c), Add{}, a, b, stream); };
  const auto map = [&](int k) { results[k] = sa::map(Add{}, a, b, stream); };
  (void)per_call(map);  // the pool grows once for the results
  double map_seconds = 0;
  double transform_seconds = 0;
  for (auto _ : state) {
    transform_seconds += per_call(transform);
    const double elapsed = per_call(map);
    map_seconds += elapsed;
    state.SetIterationTime(elapsed * batch);
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["map_us"] = map_seconds / iterations * 1e6;
  state.counters["transform_us"] = transform_seconds / iterations * 1e6;
  state.counters["ratio"] = map_seconds / transform_seconds;
}
BENCHMARK(BM_MapVsTransform)->Arg(1'000'000)->Arg(16'000'000)->UseManualTime();

// --- transpose: tiled against naive --------------------------------------------------------------

template <typename Layout>
void BM_Transpose(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  constexpr std::size_t rows = 4096;
  constexpr std::size_t cols = 4096;
  constexpr int batch = 10;
  sa::Stream stream;
  auto arrays = device_arrays(2, rows * cols, stream);
  const auto& in = arrays[0];
  auto& out = arrays[1];
  EventTimer timer;
  double naive_seconds = 0;
  double tiled_seconds = 0;
  for (auto _ : state) {
    timer.start(stream);
    for (int k = 0; k < batch; ++k) {
      transpose::run<Layout>(transpose::transpose_naive<Layout>, in, out, rows, cols, stream);
    }
    timer.stop(stream);
    naive_seconds += timer.elapsed() / batch;

    timer.start(stream);
    for (int k = 0; k < batch; ++k) {
      transpose::run<Layout>(transpose::transpose_tiled<Layout>, in, out, rows, cols, stream);
    }
    timer.stop(stream);
    const double elapsed = timer.elapsed();
    tiled_seconds += elapsed / batch;
    state.SetIterationTime(elapsed);
  }
  const auto iterations = static_cast<double>(state.iterations());
  const double bytes = 2.0 * rows * cols * sizeof(float);
  state.SetBytesProcessed(state.iterations() * batch * static_cast<std::int64_t>(bytes));
  state.counters["naive_us"] = naive_seconds / iterations * 1e6;
  state.counters["tiled_us"] = tiled_seconds / iterations * 1e6;
  state.counters["speedup"] = naive_seconds / tiled_seconds;
  state.counters["naive_GBps"] = bytes * iterations / naive_seconds * 1e-9;
  state.counters["tiled_GBps"] = bytes * iterations / tiled_seconds * 1e-9;
}
BENCHMARK_TEMPLATE(BM_Transpose, sa::CLayout)->Name("BM_Transpose/C")->UseManualTime();
BENCHMARK_TEMPLATE(BM_Transpose, sa::FLayout)->Name("BM_Transpose/F")->UseManualTime();

}  // namespace

SMARTARRAY_BENCHMARK_MAIN()
