// Graphs: a captured pipeline replayed through sa::Graph against the same pipeline run eagerly and
// against a hand-written CUDA graph of the same kernels on raw pointers, in the same run.
//
// - BM_Chain10/n: ten axpy steps (y = 3 x + y) on n elements. Each sample is one pipeline plus a
//   stream synchronize, wall clock; the contenders alternate (eager, replay, hand-written graph)
//   inside every iteration. Counters are medians over the samples: eager_us, replay_us, hand_us,
//   replay_vs_hand = replay / hand (target: at most 1.05) and speedup_vs_eager = eager / replay
//   (target: at least 3 at n = 1e5). Every contender's y is checked against the others at the end.
// - BM_GraphLaunchOverhead/arrays:K: host time of Graph::launch (no synchronize) for a graph of one
//   kernel that takes K device-resident arrays, for the same graph of one array, and of
//   cudaGraphLaunch of the K-array kernel's hand-written graph, interleaved. Counters: launch_ns,
//   one_array_ns, bare_ns, overhead_ns = launch_ns - bare_ns, and per_array_ns =
//   (launch_ns - one_array_ns) / (K - 1) (target: under 100 ns).
// - BM_Iterative/n: ten relaxation sweeps followed by a sum that the host reads, eager against the
//   same block captured once and replayed. Counters: eager_us, replay_us, speedup_vs_eager, per
//   block of ten sweeps and one read.
//
// Every benchmark needs the cuda backend and reports an error on the host backend.
#include <smartarray/smartarray.hpp>

#include "bench_main.hpp"
#include "bench_support.cuh"

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using u32 = std::uint32_t;

namespace {

using sa::bench::Clock;
using sa::bench::median;
using sa::bench::micros_since;

std::vector<u32> random_u32(std::size_t n, u32 salt) {
  std::vector<u32> values(n);
  u32 state = 0x9e3779b9U ^ salt;
  for (u32& value : values) {
    state = state * 1664525U + 1013904223U;
    value = state >> 3;
  }
  return values;
}

std::vector<u32> to_vector(const sa::SmartArray<u32>& a) {
  const auto view = a.host_view();
  return {view.begin(), view.end()};
}

int failed_runs = 0;

struct Axpy {
  u32 a;
  __host__ __device__ u32 operator()(u32 x, u32 y) const { return a * x + y; }
};

/// The hand-written kernel's body on raw pointers, launched one thread per element
/// (bench_support.cuh's `launch_one_thread_per_item`).
struct RawAxpy {
  u32 a;
  const u32* x;
  u32* y;
  __device__ void operator()(std::size_t i) const { y[i] = a * x[i] + y[i]; }
};

/// A hand-captured CUDA graph, instantiated; `record` enqueues its work on the stream.
class HandGraph {
 public:
  template <typename Record>
  HandGraph(cudaStream_t stream, Record record) {
    SMARTARRAY_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                        "begin the hand-written capture");
    record();
    cudaGraph_t graph = nullptr;
    SMARTARRAY_CUDA_TRY(cudaStreamEndCapture(stream, &graph), "end the hand-written capture");
    SMARTARRAY_CUDA_TRY(cudaGraphInstantiate(&exec_, graph, 0), "instantiate it");
    SMARTARRAY_CUDA_TRY(cudaGraphDestroy(graph), "destroy the captured graph");
  }
  ~HandGraph() { cudaGraphExecDestroy(exec_); }
  HandGraph(const HandGraph&) = delete;
  HandGraph& operator=(const HandGraph&) = delete;
  void launch(cudaStream_t stream) {
    SMARTARRAY_CUDA_TRY(cudaGraphLaunch(exec_, stream), "launch the hand-written graph");
  }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

/// Raw device memory holding `values`.
class RawArray {
 public:
  explicit RawArray(const std::vector<u32>& values) : n_(values.size()) {
    SMARTARRAY_CUDA_TRY(cudaMalloc(&data_, n_ * sizeof(u32)), "allocate a raw array");
    SMARTARRAY_CUDA_TRY(cudaMemcpy(data_, values.data(), n_ * sizeof(u32), cudaMemcpyDefault),
                        "upload a raw array");
  }
  ~RawArray() { cudaFree(data_); }
  RawArray(const RawArray&) = delete;
  RawArray& operator=(const RawArray&) = delete;
  [[nodiscard]] u32* get() const noexcept { return data_; }
  [[nodiscard]] std::vector<u32> download() const {
    std::vector<u32> values(n_);
    SMARTARRAY_CUDA_TRY(cudaMemcpy(values.data(), data_, n_ * sizeof(u32), cudaMemcpyDefault),
                        "download a raw array");
    return values;
  }

 private:
  u32* data_ = nullptr;
  std::size_t n_ = 0;
};

// --- chain10 -------------------------------------------------------------------------------------

void chain10(sa::SmartArray<u32>& y, const sa::SmartArray<u32>& x, sa::StreamRef s) {
  for (int k = 0; k < 10; ++k) sa::transform(y, Axpy{3}, x, y, s);
}

void BM_Chain10(benchmark::State& state) {
  if (!sa::bench::need_cuda(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto xs = random_u32(n, 1);
  const auto ys = random_u32(n, 2);
  sa::Stream stream;
  const cudaStream_t s = stream.ref().cuda_stream();
  sa::SmartArray<u32> eager_x(xs), eager_y(ys), x(xs), y(ys);
  sa::Graph graph = sa::capture(stream, [&](sa::StreamRef on) { chain10(y, x, on); });
  RawArray raw_x(xs), raw_y(ys);
  HandGraph hand(s, [&] {
    for (int k = 0; k < 10; ++k) {
      sa::bench::launch_one_thread_per_item(n, RawAxpy{3, raw_x.get(), raw_y.get()}, s);
    }
  });
  // Warm up: the first replay uploads x and y, the eager chain too.
  chain10(eager_y, eager_x, stream);
  graph.launch(stream);
  hand.launch(s);
  stream.synchronize();
  std::vector<double> eager_us, replay_us, hand_us;
  for (auto _ : state) {
    auto start = Clock::now();
    chain10(eager_y, eager_x, stream);
    stream.synchronize();
    eager_us.push_back(micros_since(start));

    start = Clock::now();
    graph.launch(stream);
    stream.synchronize();
    const double replay = micros_since(start);
    replay_us.push_back(replay);
    state.SetIterationTime(replay * 1e-6);

    start = Clock::now();
    hand.launch(s);
    stream.synchronize();
    hand_us.push_back(micros_since(start));
  }
  const auto expected = raw_y.download();
  if (to_vector(eager_y) != expected || to_vector(y) != expected) {
    ++failed_runs;
    state.SkipWithError("the contenders' results differ");
    return;
  }
  state.counters["eager_us"] = median(eager_us);
  state.counters["replay_us"] = median(replay_us);
  state.counters["hand_us"] = median(hand_us);
  state.counters["replay_vs_hand"] = median(replay_us) / median(hand_us);
  state.counters["speedup_vs_eager"] = median(eager_us) / median(replay_us);
}

// --- launch overhead -----------------------------------------------------------------------------

constexpr int max_arrays = 16;
struct Views {
  std::array<sa::DeviceView<u32>, max_arrays> views;
  int count;
};
/// One kernel that touches the first element of each view.
__global__ void touch_kernel(Views v) {
  if (threadIdx.x < static_cast<unsigned>(v.count)) v.views[threadIdx.x][0] += 1;
}

/// A graph of one kernel that touches `arrays` (device-resident), captured on `stream`.
sa::Graph touch_graph(std::vector<sa::SmartArray<u32>>& arrays, sa::StreamRef stream) {
  return sa::capture(stream, [&](sa::StreamRef on) {
    Views views{{}, static_cast<int>(arrays.size())};
    for (std::size_t k = 0; k < arrays.size(); ++k) {
      views.views[k] = arrays[k].device_view(Access::read_write, on);
    }
    touch_kernel<<<1, 32, 0, on.cuda_stream()>>>(views);
  });
}

void BM_GraphLaunchOverhead(benchmark::State& state) {
  if (!sa::bench::need_cuda(state)) return;
  const auto count = static_cast<std::size_t>(state.range(0));
  constexpr int batch = 100;
  sa::Stream stream;
  const cudaStream_t s = stream.ref().cuda_stream();
  std::vector<sa::SmartArray<u32>> one;
  std::vector<sa::SmartArray<u32>> arrays;
  one.emplace_back(random_u32(1024, 99));
  for (std::size_t k = 0; k < count; ++k) arrays.emplace_back(random_u32(1024, static_cast<u32>(k)));
  sa::Graph graph_one = touch_graph(one, stream);
  sa::Graph graph = touch_graph(arrays, stream);
  Views raw{{}, static_cast<int>(count)};
  for (std::size_t k = 0; k < count; ++k) raw.views[k] = arrays[k].device_view(Access::read_write, stream);
  HandGraph hand(s, [&] { touch_kernel<<<1, 32, 0, s>>>(raw); });
  graph_one.launch(stream);
  graph.launch(stream);
  stream.synchronize();
  double launch_us = 0;
  double one_us = 0;
  double bare_us = 0;
  // Host time of `batch` launches, then a synchronize outside the timed region.
  const auto timed = [&](auto&& launch) {
    const auto start = Clock::now();
    for (int b = 0; b < batch; ++b) launch();
    const double elapsed = micros_since(start);
    stream.synchronize();
    return elapsed;
  };
  for (auto _ : state) {
    bare_us += timed([&] { hand.launch(s); });
    one_us += timed([&] { graph_one.launch(stream); });
    const double elapsed = timed([&] { graph.launch(stream); });
    launch_us += elapsed;
    state.SetIterationTime(elapsed * 1e-6);
  }
  const double launches = static_cast<double>(state.iterations()) * batch;
  state.counters["launch_ns"] = launch_us / launches * 1e3;
  state.counters["one_array_ns"] = one_us / launches * 1e3;
  state.counters["bare_ns"] = bare_us / launches * 1e3;
  state.counters["overhead_ns"] = (launch_us - bare_us) / launches * 1e3;
  if (count > 1) {
    state.counters["per_array_ns"] =
        (launch_us - one_us) / launches * 1e3 / static_cast<double>(count - 1);
  }
}

// --- iterative -----------------------------------------------------------------------------------

/// One sweep: out[i] = (in[i - 1] + 2 in[i] + in[i + 1]) / 4, the ends kept.
struct Relax {
  sa::DeviceView<const u32> in;
  sa::DeviceView<u32> out;
  __host__ __device__ void operator()(std::size_t i) const {
    const std::size_t n = in.size();
    out[i] = i == 0 || i + 1 == n ? in[i] : (in[i - 1] + 2 * in[i] + in[i + 1]) / 4;
  }
};
struct Plus {
  __host__ __device__ u32 operator()(u32 a, u32 b) const { return a + b; }
};

/// Ten sweeps between a and b (ending in a), then the sum of a into `sum`.
void relax_block(sa::SmartArray<u32>& a, sa::SmartArray<u32>& b, sa::SmartArray<u32>& sum,
                 sa::StreamRef s) {
  for (int k = 0; k < 5; ++k) {
    sa::for_each_index(a.size(), Relax{std::as_const(a).device_view(s), b.device_view(Access::discard, s)}, s);
    sa::for_each_index(a.size(), Relax{std::as_const(b).device_view(s), a.device_view(Access::discard, s)}, s);
  }
  sum = sa::reduce_async(a, 0U, Plus{}, s);
}

void BM_Iterative(benchmark::State& state) {
  if (!sa::bench::need_cuda(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto initial = random_u32(n, 3);
  sa::Stream stream;
  sa::SmartArray<u32> ea(initial), eb(n, 0U), esum;
  sa::SmartArray<u32> a(initial), b(n, 0U), sum;
  sa::Graph graph = sa::capture(stream, [&](sa::StreamRef on) { relax_block(a, b, sum, on); });
  relax_block(ea, eb, esum, stream);
  graph.launch(stream);
  u32 checksum_eager = std::as_const(esum)[0];
  u32 checksum_replay = std::as_const(sum)[0];
  std::vector<double> eager_us, replay_us;
  for (auto _ : state) {
    auto start = Clock::now();
    relax_block(ea, eb, esum, stream);
    checksum_eager += std::as_const(esum)[0];
    eager_us.push_back(micros_since(start));

    start = Clock::now();
    graph.launch(stream);
    checksum_replay += std::as_const(sum)[0];
    const double replay = micros_since(start);
    replay_us.push_back(replay);
    state.SetIterationTime(replay * 1e-6);
  }
  if (checksum_eager != checksum_replay || to_vector(ea) != to_vector(a)) {
    ++failed_runs;
    state.SkipWithError("the eager and replayed results differ");
    return;
  }
  state.counters["eager_us"] = median(eager_us);
  state.counters["replay_us"] = median(replay_us);
  state.counters["speedup_vs_eager"] = median(eager_us) / median(replay_us);
}

void register_benchmarks(bool quick) {
  const std::vector<std::int64_t> sizes =
      quick ? std::vector<std::int64_t>{10'000} : std::vector<std::int64_t>{10'000, 100'000, 1'000'000};
  auto* chain = benchmark::RegisterBenchmark("BM_Chain10", BM_Chain10);
  for (const std::int64_t n : sizes) chain->Arg(n);
  chain->UseManualTime()->Unit(benchmark::kMicrosecond);
  auto* overhead = benchmark::RegisterBenchmark("BM_GraphLaunchOverhead", BM_GraphLaunchOverhead);
  overhead->ArgName("arrays")->Arg(2)->Arg(4)->Arg(8)->Arg(16);
  overhead->UseManualTime()->Unit(benchmark::kMicrosecond);
  auto* iterative = benchmark::RegisterBenchmark("BM_Iterative", BM_Iterative);
  iterative->Arg(quick ? 10'000 : 1'000'000)->UseManualTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  return sa::bench::run_main(argc, argv, register_benchmarks, &failed_runs);
}
