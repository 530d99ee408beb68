// The memory layer against CUDA's own allocators, each baseline measured in the same run:
// - BM_*Pair: the latency of one allocate + free pair at 400 KiB, 16 MiB and 256 MiB;
// - BM_RandomAllocations*: RMM's random_allocations workload (1,000 and 10,000 allocations, sizes
//   uniform up to 1 MiB and up to 64 MiB, 73% allocate / 27% free, at most 16,000 MiB live);
// - BM_StreamTemporaries*: 4 streams x 4 kernels, each kernel with a temporary buffer.
// Our benchmarks report `speedup_vs_<baseline>` counters: the baseline's mean time over ours.
#include <smartarray/runtime/detail/cuda_check.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/upstream_resources.hpp>
#include <smartarray/runtime/runtime.hpp>
#include <smartarray/runtime/stream.hpp>

#include "bench_main.hpp"

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;

namespace {

constexpr std::size_t kib = std::size_t{1} << 10;
constexpr std::size_t mib = std::size_t{1} << 20;

bool on_cuda() { return sa::backend() == sa::BackendKind::cuda; }

/// Skips the benchmark unless the cuda backend is active; true when skipped.
bool skip_without_cuda(benchmark::State& state) {
  if (on_cuda()) return false;
  state.SkipWithError("needs the cuda backend");
  return true;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Mean seconds per call of `body`, over at least 3 calls and 0.2 s.
double mean_seconds(const std::function<void()>& body) {
  body();  // warm-up
  const auto start = Clock::now();
  std::size_t calls = 0;
  do {
    body();
    ++calls;
  } while (calls < 3 || seconds_since(start) < 0.2);
  return seconds_since(start) / static_cast<double>(calls);
}

/// The mean of a baseline, measured once per key in this run and shared by every benchmark.
double baseline_seconds(const std::string& key, const std::function<void()>& body) {
  static std::mutex mutex;
  static std::map<std::string, double> measured;
  const std::lock_guard lock(mutex);
  const auto found = measured.find(key);
  if (found != measured.end()) return found->second;
  return measured.emplace(key, mean_seconds(body)).first->second;
}

/// Lets the driver's pool keep its memory between calls, as RMM's async resource does: the
/// strongest cudaMallocAsync baseline.
void keep_async_pool_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    int device = 0;
    SMARTARRAY_CUDA_TRY(cudaGetDevice(&device), "query the current device");
    cudaMemPool_t pool = nullptr;
    SMARTARRAY_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device), "get the default memory pool");
    std::uint64_t threshold = UINT64_MAX;
    SMARTARRAY_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                        "set the release threshold of the default memory pool");
  });
}

/// An owned CUDA stream for the baselines and kernels (also forgotten by every pool).
class CudaStream {
 public:
  CudaStream() {
    SMARTARRAY_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                        "create a stream");
  }
  ~CudaStream() {
    try {
      sa::forget_stream(stream_);  // drains it; no pool or array names it from now on
    } catch (const std::exception& error) {
      std::cerr << "bench_pool: draining a stream failed: " << error.what() << "\n";
    }
    SMARTARRAY_CUDA_LOG(cudaStreamDestroy(stream_), "destroy a benchmark stream");
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  [[nodiscard]] cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// cudaMallocAsync / cudaFreeAsync as a MemoryResource, so that workloads run unchanged on it.
class CudaAsyncResource final : public sa::MemoryResource {
 public:
  CudaAsyncResource() { keep_async_pool_memory(); }
  [[nodiscard]] sa::MemoryKind kind() const noexcept override { return sa::MemoryKind::device; }

 private:
  void* do_allocate(sa::StreamRef stream, std::size_t bytes, std::size_t, bool host) override {
    void* ptr = nullptr;
    SMARTARRAY_CUDA_TRY(cudaMallocAsync(&ptr, bytes, stream.cuda_stream()), "cudaMallocAsync of ",
                        bytes, " bytes");
    if (host) SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream.cuda_stream()), "synchronize");
    return ptr;
  }
  void do_deallocate(sa::StreamRef stream, void* ptr, std::size_t, std::size_t,
                     bool) noexcept override {
    SMARTARRAY_CUDA_LOG(cudaFreeAsync(ptr, stream.cuda_stream()), "cudaFreeAsync");
  }
};

// --- alloc + free pair latency ------------------------------------------------------------------

void cuda_malloc_pair(std::size_t bytes) {
  void* ptr = nullptr;
  SMARTARRAY_CUDA_TRY(cudaMalloc(&ptr, bytes), "cudaMalloc of ", bytes, " bytes");
  SMARTARRAY_CUDA_TRY(cudaFree(ptr), "cudaFree");
}

void cuda_malloc_async_pair(std::size_t bytes, cudaStream_t stream) {
  void* ptr = nullptr;
  SMARTARRAY_CUDA_TRY(cudaMallocAsync(&ptr, bytes, stream), "cudaMallocAsync of ", bytes, " bytes");
  SMARTARRAY_CUDA_TRY(cudaFreeAsync(ptr, stream), "cudaFreeAsync");
}

void cuda_malloc_host_pair(std::size_t bytes) {
  void* ptr = nullptr;
  SMARTARRAY_CUDA_TRY(cudaMallocHost(&ptr, bytes), "cudaMallocHost of ", bytes, " bytes");
  SMARTARRAY_CUDA_TRY(cudaFreeHost(ptr), "cudaFreeHost");
}

void BM_CudaMallocPair(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) cuda_malloc_pair(bytes);
  SMARTARRAY_CUDA_TRY(cudaDeviceSynchronize(), "synchronize");
}

void BM_CudaMallocAsyncPair(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  keep_async_pool_memory();
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const CudaStream stream;
  cuda_malloc_async_pair(bytes, stream.get());
  for (auto _ : state) cuda_malloc_async_pair(bytes, stream.get());
  SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream.get()), "synchronize");
}

void BM_CudaMallocHostPair(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) cuda_malloc_host_pair(bytes);
}

/// Times `pair` (one allocate + free) warm, and compares it with the device baselines.
void run_device_pair(benchmark::State& state, sa::MemoryResource& mr, sa::StreamRef stream) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  mr.deallocate(stream, mr.allocate(stream, bytes), bytes);  // warm: the block is in the pool
  const auto start = Clock::now();
  for (auto _ : state) {
    void* ptr = mr.allocate(stream, bytes);
    benchmark::DoNotOptimize(ptr);
    mr.deallocate(stream, ptr, bytes);
  }
  const double ours = seconds_since(start) / static_cast<double>(state.iterations());
  sa::synchronize(stream);
  if (!on_cuda()) return;
  const CudaStream baseline_stream;
  const std::string size = std::to_string(bytes);
  state.counters["speedup_vs_cudaMalloc"] =
      baseline_seconds("cudaMalloc/" + size, [&] { cuda_malloc_pair(bytes); }) / ours;
  keep_async_pool_memory();
  state.counters["speedup_vs_cudaMallocAsync"] =
      baseline_seconds("cudaMallocAsync/" + size,
                       [&] { cuda_malloc_async_pair(bytes, baseline_stream.get()); }) /
      ours;
}

/// Times a warm host-writer pair (allocate_sync + deallocate_sync) against cudaMallocHost.
void run_pinned_pair(benchmark::State& state, sa::MemoryResource& mr) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  mr.deallocate_sync(mr.allocate_sync(bytes), bytes);
  const auto start = Clock::now();
  for (auto _ : state) {
    void* ptr = mr.allocate_sync(bytes);
    benchmark::DoNotOptimize(ptr);
    mr.deallocate_sync(ptr, bytes);
  }
  const double ours = seconds_since(start) / static_cast<double>(state.iterations());
  if (!on_cuda()) return;
  state.counters["speedup_vs_cudaMallocHost"] =
      baseline_seconds("cudaMallocHost/" + std::to_string(bytes),
                       [&] { cuda_malloc_host_pair(bytes); }) /
      ours;
}

void BM_DevicePoolPair(benchmark::State& state) {
  const sa::Stream stream;  // forgotten by every pool when destroyed
  sa::DeviceMemoryResource upstream;
  sa::PoolResource pool(upstream);
  run_device_pair(state, pool, stream);
}

void BM_DefaultDeviceResourcePair(benchmark::State& state) {
  const sa::Stream stream;  // forgotten by every pool when destroyed
  run_device_pair(state, sa::device_resource(), stream);
}

void BM_PinnedPoolPair(benchmark::State& state) {
  sa::PinnedMemoryResource upstream;
  sa::PoolResource pool(upstream);
  run_pinned_pair(state, pool);
}

void BM_DefaultPinnedResourcePair(benchmark::State& state) {
  run_pinned_pair(state, sa::pinned_resource());
}

void pair_sizes(sa::bench::Benchmark* b) {
  for (const std::size_t bytes : {400 * kib, 16 * mib, 256 * mib}) {
    b->Arg(static_cast<std::int64_t>(bytes));
  }
  b->UseRealTime()->Repetitions(5)->ReportAggregatesOnly(true);
}

BENCHMARK(BM_DevicePoolPair)->Apply(pair_sizes);
BENCHMARK(BM_DefaultDeviceResourcePair)->Apply(pair_sizes);
BENCHMARK(BM_CudaMallocPair)->Apply(pair_sizes);
BENCHMARK(BM_CudaMallocAsyncPair)->Apply(pair_sizes);
BENCHMARK(BM_PinnedPoolPair)->Apply(pair_sizes);
BENCHMARK(BM_DefaultPinnedResourcePair)->Apply(pair_sizes);
BENCHMARK(BM_CudaMallocHostPair)->Apply(pair_sizes);

// --- RMM's random_allocations -------------------------------------------------------------------

/// One step of the workload: allocate `value` bytes, or free the live allocation at `value`.
struct Operation {
  bool allocate;
  std::size_t value;
};

/// RMM's random_allocations sequence, generated once with a fixed seed so that every resource
/// replays exactly the same requests and the generator stays out of the timing.
std::vector<Operation> random_allocations(std::size_t count, std::size_t max_bytes) {
  constexpr std::size_t max_usage = 16000 * mib;
  constexpr int allocate_percent = 73;
  std::mt19937_64 rng(20240917);
  std::uniform_int_distribution<std::size_t> size_of(1, max_bytes);
  std::uniform_int_distribution<int> percent(0, 99);
  std::vector<std::size_t> live;
  std::size_t usage = 0;
  std::size_t allocated = 0;
  std::vector<Operation> operations;
  for (std::size_t step = 0; step < 2 * count; ++step) {
    const std::size_t bytes = size_of(rng);
    const bool allocate = live.empty() || (percent(rng) < allocate_percent && allocated < count &&
                                           usage + bytes < max_usage);
    if (allocate) {
      operations.push_back({true, bytes});
      live.push_back(bytes);
      usage += bytes;
      ++allocated;
      continue;
    }
    const std::size_t index = rng() % live.size();
    operations.push_back({false, index});
    usage -= live[index];
    live[index] = live.back();
    live.pop_back();
  }
  return operations;
}

/// Replays `operations` on `mr`, then frees what is still live.
void replay(sa::MemoryResource& mr, sa::StreamRef stream,
            const std::vector<Operation>& operations) {
  std::vector<std::pair<void*, std::size_t>> live;
  live.reserve(operations.size());
  for (const Operation& operation : operations) {
    if (operation.allocate) {
      live.emplace_back(mr.allocate(stream, operation.value), operation.value);
      continue;
    }
    const auto [ptr, bytes] = live[operation.value];
    live[operation.value] = live.back();
    live.pop_back();
    mr.deallocate(stream, ptr, bytes);
  }
  for (const auto& [ptr, bytes] : live) mr.deallocate(stream, ptr, bytes);
}

void BM_RandomAllocationsPool(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  const std::size_t max_bytes = static_cast<std::size_t>(state.range(1)) * mib;
  if (max_bytes > mib && skip_without_cuda(state)) return;  // 16 GB of emulated memory otherwise
  const std::vector<Operation> operations = random_allocations(count, max_bytes);
  const sa::Stream stream;  // forgotten by every pool when destroyed
  sa::DeviceMemoryResource upstream;
  sa::PoolResource pool(upstream);
  replay(pool, stream, operations);  // warm: the pool holds what the workload needs
  const auto start = Clock::now();
  for (auto _ : state) replay(pool, stream, operations);
  const double ours = seconds_since(start) / static_cast<double>(state.iterations());
  sa::synchronize(stream);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(operations.size()));
  state.counters["allocations"] = static_cast<double>(count);
  state.counters["reserved_MiB"] = static_cast<double>(pool.reserved_bytes()) / mib;
  if (!on_cuda()) return;
  const CudaStream baseline_stream;
  CudaAsyncResource async;
  state.counters["speedup_vs_cudaMallocAsync"] =
      baseline_seconds("random/" + std::to_string(count) + "/" + std::to_string(max_bytes),
                       [&] { replay(async, sa::StreamRef{baseline_stream.get()}, operations); }) /
      ours;
}

void BM_RandomAllocationsCudaMallocAsync(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  const auto count = static_cast<std::size_t>(state.range(0));
  const std::size_t max_bytes = static_cast<std::size_t>(state.range(1)) * mib;
  const std::vector<Operation> operations = random_allocations(count, max_bytes);
  CudaAsyncResource async;
  const CudaStream stream;
  replay(async, sa::StreamRef{stream.get()}, operations);
  for (auto _ : state) replay(async, sa::StreamRef{stream.get()}, operations);
  SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream.get()), "synchronize");
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(operations.size()));
  state.counters["allocations"] = static_cast<double>(count);
}

void random_allocation_shapes(sa::bench::Benchmark* b) {
  for (const std::int64_t count : {1000, 10000}) {
    for (const std::int64_t max_mib : {1, 64}) b->Args({count, max_mib});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_RandomAllocationsPool)->Apply(random_allocation_shapes);
BENCHMARK(BM_RandomAllocationsCudaMallocAsync)->Apply(random_allocation_shapes);

// --- 4 streams x 4 kernels, each with a temporary -----------------------------------------------

constexpr int stream_count = 4;
constexpr int kernels_per_stream = 4;
constexpr std::size_t temporary_bytes = 8 * mib;

__global__ void fill_temporary(float* out, std::size_t n, float value) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = value + static_cast<float>(i);
  }
}

/// Four streams, fenced by events so that CUDA events time the whole pipeline.
class Pipeline {
 public:
  Pipeline() {
    SMARTARRAY_CUDA_TRY(cudaEventCreate(&start_), "create an event");
    SMARTARRAY_CUDA_TRY(cudaEventCreate(&stop_), "create an event");
    for (cudaEvent_t& done : done_) {
      SMARTARRAY_CUDA_TRY(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
                          "create an event");
    }
  }
  ~Pipeline() {
    SMARTARRAY_CUDA_LOG(cudaEventDestroy(start_), "destroy an event");
    SMARTARRAY_CUDA_LOG(cudaEventDestroy(stop_), "destroy an event");
    for (cudaEvent_t done : done_) SMARTARRAY_CUDA_LOG(cudaEventDestroy(done), "destroy an event");
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  /// Runs 4 x 4 kernels, each on a temporary from `mr`; the seconds between the fences.
  double run(sa::MemoryResource& mr) {
    const cudaStream_t first = streams_[0].get();
    SMARTARRAY_CUDA_TRY(cudaEventRecord(start_, first), "record the start");
    for (int s = 1; s < stream_count; ++s) {
      SMARTARRAY_CUDA_TRY(cudaStreamWaitEvent(streams_[s].get(), start_, 0), "fence");
    }
    constexpr std::size_t n = temporary_bytes / sizeof(float);
    for (int k = 0; k < kernels_per_stream; ++k) {
      for (const CudaStream& stream : streams_) {
        const sa::StreamRef ref{stream.get()};
        auto* temporary = static_cast<float*>(mr.allocate(ref, temporary_bytes));
        fill_temporary<<<264, 256, 0, stream.get()>>>(temporary, n, static_cast<float>(k));
        SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch fill_temporary");
        mr.deallocate(ref, temporary, temporary_bytes);
      }
    }
    for (int s = 1; s < stream_count; ++s) {
      SMARTARRAY_CUDA_TRY(cudaEventRecord(done_[s], streams_[s].get()), "record the end");
      SMARTARRAY_CUDA_TRY(cudaStreamWaitEvent(first, done_[s], 0), "join");
    }
    SMARTARRAY_CUDA_TRY(cudaEventRecord(stop_, first), "record the stop");
    SMARTARRAY_CUDA_TRY(cudaEventSynchronize(stop_), "wait for the stop");
    float milliseconds = 0;
    SMARTARRAY_CUDA_TRY(cudaEventElapsedTime(&milliseconds, start_, stop_), "elapsed time");
    return milliseconds / 1000.0;
  }

 private:
  std::array<CudaStream, stream_count> streams_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  std::array<cudaEvent_t, stream_count> done_{};
};

/// Our pool: prewarmed (holding a temporary per stream from the start) or cold (a new pool in every
/// iteration, so that its growth is inside the timing).
void BM_StreamTemporariesPool(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  const bool prewarmed = state.range(0) != 0;
  sa::DeviceMemoryResource upstream;
  sa::PoolOptions options;
  options.initial_size = prewarmed ? stream_count * temporary_bytes : 0;
  Pipeline pipeline;
  std::unique_ptr<sa::PoolResource> pool = std::make_unique<sa::PoolResource>(upstream, options);
  double total = 0;
  for (auto _ : state) {
    if (!prewarmed) pool = std::make_unique<sa::PoolResource>(upstream, options);
    const double seconds = pipeline.run(*pool);
    state.SetIterationTime(seconds);
    total += seconds;
  }
  state.counters["upstream_allocations"] = static_cast<double>(pool->upstream_allocation_count());
  Pipeline baseline_pipeline;
  CudaAsyncResource async;
  state.counters["speedup_vs_cudaMallocAsync"] =
      baseline_seconds("pipeline/cudaMallocAsync", [&] { (void)baseline_pipeline.run(async); }) /
      (total / static_cast<double>(state.iterations()));
}

void BM_StreamTemporariesCudaMallocAsync(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  Pipeline pipeline;
  CudaAsyncResource async;
  (void)pipeline.run(async);
  for (auto _ : state) state.SetIterationTime(pipeline.run(async));
}

void BM_StreamTemporariesCudaMalloc(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  Pipeline pipeline;
  sa::DeviceMemoryResource raw;  // cudaMalloc, and a stream wait + cudaFree per temporary
  for (auto _ : state) state.SetIterationTime(pipeline.run(raw));
}

BENCHMARK(BM_StreamTemporariesPool)
    ->ArgName("prewarmed")
    ->Arg(1)
    ->Arg(0)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StreamTemporariesCudaMallocAsync)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StreamTemporariesCudaMalloc)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

SMARTARRAY_BENCHMARK_MAIN()
