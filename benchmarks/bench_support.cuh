// Helpers shared by the GPU benchmarks: skipping where a benchmark needs the cuda backend, input
// data, the raw calls of hand-written contenders on either backend (`Raw`), and timing one call per
// iteration (CUDA events on the cuda backend, the host clock on the host backend).
#pragma once

#include <smartarray/adapters/for_each_index.hpp>
#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/runtime/runtime.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/runtime/detail/cuda_check.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace smartarray::bench {

/// True on the cuda backend; otherwise marks the benchmark skipped.
inline bool need_cuda(benchmark::State& state) {
  if (backend() == BackendKind::cuda) return true;
  state.SkipWithError((std::string("needs the cuda backend (active: ") + to_string(backend()) + ")")
                          .c_str());
  return false;
}

/// The host clock of the samples that benchmarks time themselves.
using Clock = std::chrono::steady_clock;
/// Microseconds since `start`.
inline double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}
/// The median of `samples` (the upper one of an even count); 0 for none.
inline double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples.empty() ? 0 : samples[samples.size() / 2];
}

/// `n` floats in [0.5, 2), reproducible for a given seed.
inline std::vector<float> random_floats(std::size_t n, unsigned seed = 42) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.5F, 2.0F);
  std::vector<float> out(n);
  for (auto& v : out) v = dist(rng);
  return out;
}

/// The kernel of every hand-written element-wise contender on the cuda backend: one thread per
/// item, `f(i)` for item i, no loop. It is the shape of the best hand-written element-wise CUDA
/// (blocks of 256 threads, as many blocks as the items need, 32-bit indices), the baseline that
/// the library's kernels must match; a grid-stride loop over a capped grid is slower on Hopper.
template <typename Index, typename F>
__global__ void one_thread_per_item_kernel(Index n, F f) {
  const Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) f(static_cast<std::size_t>(i));
}

/// Threads per block of the hand-written element-wise kernels.
inline constexpr unsigned hand_block = 256;

/// Enqueues `one_thread_per_item_kernel` over `n` items on `stream`: `ceil(n / 256)` blocks of 256
/// threads, with 32-bit indices while they cover n (64-bit beyond 2^32 items). The caller checks
/// the launch.
template <typename F>
void launch_one_thread_per_item(std::size_t n, F f, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t blocks = (n + hand_block - 1) / hand_block;
  if (n <= std::numeric_limits<std::uint32_t>::max() - hand_block) {
    one_thread_per_item_kernel<std::uint32_t><<<static_cast<unsigned>(blocks), hand_block, 0,
                                                stream>>>(static_cast<std::uint32_t>(n), f);
  } else {
    one_thread_per_item_kernel<std::size_t>
        <<<static_cast<unsigned>(blocks), hand_block, 0, stream>>>(n, f);
  }
}

/// Where `prefetch_managed` moves managed memory.
enum class PrefetchTo { device, host };

/// `cudaMemPrefetchAsync` of `bytes` at `p` on `stream`, as a hand-written contender writes it:
/// CUDA 13 names the target by a cudaMemLocation, CUDA 12 by a device ordinal (cudaCpuDeviceId for
/// the host) and takes no flags.
inline void prefetch_managed(const void* p, std::size_t bytes, PrefetchTo to, cudaStream_t stream,
                             const char* what) {
  const int device = device_properties().ordinal;
#if CUDART_VERSION >= 13000
  const cudaMemLocation location =
      to == PrefetchTo::device ? cudaMemLocation{cudaMemLocationTypeDevice, device}
                               : cudaMemLocation{cudaMemLocationTypeHost, 0};
  SMARTARRAY_CUDA_TRY(cudaMemPrefetchAsync(p, bytes, location, 0, stream), what);
#else
  SMARTARRAY_CUDA_TRY(
      cudaMemPrefetchAsync(p, bytes, to == PrefetchTo::device ? device : cudaCpuDeviceId, stream),
      what);
#endif
}

/**
 * @brief The allocations, copies, waits and kernel launches of hand-written contenders, written
 *        once for both backends.
 *
 * On the cuda backend each call is the CUDA runtime call an expert writes (`cudaMalloc`,
 * `cudaMemcpyAsync`, `cudaStreamSynchronize`, a `<<<>>>` launch) with nothing of the library in
 * between, so these contenders stay the baselines of the published figures. The host backend has no
 * CUDA runtime: there the same calls go through the library's backend seam (whose counters then see
 * them) and `for_each_index`.
 */
class Raw {
 public:
  /// @brief Works on `stream`.
  explicit Raw(StreamRef stream) : stream_(stream), cuda_(backend() == BackendKind::cuda) {}

  /// @brief True on the cuda backend, where the calls are the CUDA runtime's.
  [[nodiscard]] bool cuda() const noexcept { return cuda_; }

  /// @brief `count` elements of device memory.
  template <typename T>
  [[nodiscard]] T* allocate_device(std::size_t count) const {
    const std::size_t bytes = count * sizeof(T);
    if (!cuda_) return static_cast<T*>(detail::runtime().allocate_device(bytes));
    T* ptr = nullptr;
    SMARTARRAY_CUDA_TRY(cudaMalloc(&ptr, bytes), "cudaMalloc of ", bytes, " bytes");
    return ptr;
  }
  /// @brief Frees what `allocate_device` returned.
  void free_device(void* ptr) const {
    if (cuda_) {
      SMARTARRAY_CUDA_TRY(cudaFree(ptr), "cudaFree of ", ptr);
    } else {
      detail::runtime().free_device(ptr);
    }
  }
  /// @brief `count` elements of pinned host memory.
  template <typename T>
  [[nodiscard]] T* allocate_pinned(std::size_t count) const {
    const std::size_t bytes = count * sizeof(T);
    if (!cuda_) return static_cast<T*>(detail::runtime().allocate_pinned(bytes));
    T* ptr = nullptr;
    SMARTARRAY_CUDA_TRY(cudaMallocHost(&ptr, bytes), "cudaMallocHost of ", bytes, " bytes");
    return ptr;
  }
  /// @brief Frees what `allocate_pinned` returned.
  void free_pinned(void* ptr) const {
    if (cuda_) {
      SMARTARRAY_CUDA_TRY(cudaFreeHost(ptr), "cudaFreeHost of ", ptr);
    } else {
      detail::runtime().free_pinned(ptr);
    }
  }
  /// @brief Enqueues a copy of `bytes` from host memory (pinned or pageable) to device memory.
  void copy_to_device_async(void* dst, const void* src, std::size_t bytes) const {
    if (cuda_) {
      SMARTARRAY_CUDA_TRY(
          cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_.cuda_stream()), "copy ",
          bytes, " bytes host to device");
    } else {
      detail::runtime().copy_async(dst, src, bytes, detail::CopyKind::host_to_device, stream_);
    }
  }
  /// @brief Enqueues a copy of `bytes` from device memory to host memory (pinned or pageable).
  void copy_to_host_async(void* dst, const void* src, std::size_t bytes) const {
    if (cuda_) {
      SMARTARRAY_CUDA_TRY(
          cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_.cuda_stream()), "copy ",
          bytes, " bytes device to host");
    } else {
      detail::runtime().copy_async(dst, src, bytes, detail::CopyKind::device_to_host, stream_);
    }
  }
  /// @brief Enqueues a copy of `bytes` from device memory to device memory (`cudaMemcpyAsync`).
  void copy_on_device_async(void* dst, const void* src, std::size_t bytes) const {
    if (cuda_) {
      SMARTARRAY_CUDA_TRY(
          cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_.cuda_stream()),
          "copy ", bytes, " bytes device to device");
    } else {
      detail::runtime().copy_async(dst, src, bytes, detail::CopyKind::device_to_device, stream_);
    }
  }
  /// @brief Blocks the host until the work queued on the stream is done.
  void synchronize() const {
    if (cuda_) {
      SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream_.cuda_stream()), "synchronize the stream");
    } else {
      smartarray::synchronize(stream_);
    }
  }
  /// @brief Enqueues `f(i)` for i in [0, n): one thread per item (`launch_one_thread_per_item`),
  ///        or `for_each_index` on host.
  template <typename F>
  void launch(std::size_t n, F f) const {
    if (cuda_) {
      launch_one_thread_per_item(n, f, stream_.cuda_stream());
      SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch a kernel over ", n, " elements");
    } else {
      for_each_index(n, f, stream_);
    }
  }

 private:
  StreamRef stream_;
  bool cuda_;
};

/**
 * @brief Times one call per iteration. On the cuda backend, with CUDA events on `stream`, which is
 *        idle at the start (made on the stream's device, where CUDA records them); on the host
 *        backend, whose device is CPU threads, with the host clock around the call and a
 *        synchronize of `stream`.
 */
class CallTimer {
 public:
  explicit CallTimer(StreamRef stream) : stream_(stream), cuda_(backend() == BackendKind::cuda) {
    if (!cuda_) return;
    const DeviceGuard on_device(stream_device(stream));
    SMARTARRAY_CUDA_TRY(cudaEventCreate(&start_), "create a timing event");
    SMARTARRAY_CUDA_TRY(cudaEventCreate(&stop_), "create a timing event");
  }
  ~CallTimer() {
    if (!cuda_) return;
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

  /// @brief One warm-up call, then one timed call per iteration.
  template <typename Call>
  void run(benchmark::State& state, Call&& call, std::size_t bytes_per_call = 0) {
    run(state, [] {}, call, bytes_per_call);
  }
  /// @brief As above, with `prepare` run before each call (and the warm-up), untimed.
  template <typename Prepare, typename Call>
  void run(benchmark::State& state, Prepare&& prepare, Call&& call, std::size_t bytes_per_call) {
    prepare();
    call();  // warm-up: first-touch allocations, module load
    synchronize_stream();
    const TransferStats before = global_transfer_stats();
    for (auto _ : state) {
      prepare();
      state.SetIterationTime(cuda_ ? seconds_on_device(call) : seconds_on_host(call));
    }
    timed_transfers_ = global_transfer_stats() - before;
    calls_ = state.iterations() + 1;
    if (bytes_per_call != 0) {
      state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes_per_call));
    }
  }

  /// @brief The calls `run` made, the warm-up included.
  [[nodiscard]] std::int64_t calls() const noexcept { return calls_; }
  /// @brief The copies counted by the library (all of them on the host backend, only its own on
  ///        cuda) during the timed calls.
  [[nodiscard]] const TransferStats& timed_transfers() const noexcept { return timed_transfers_; }

 private:
  void synchronize_stream() {
    if (cuda_) {
      SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream_.cuda_stream()), "synchronize the warm-up");
    } else {
      smartarray::synchronize(stream_);
    }
  }

  template <typename Call>
  double seconds_on_device(Call& call) {
    SMARTARRAY_CUDA_TRY(cudaEventRecord(start_, stream_.cuda_stream()), "record the start event");
    call();
    SMARTARRAY_CUDA_TRY(cudaEventRecord(stop_, stream_.cuda_stream()), "record the stop event");
    SMARTARRAY_CUDA_TRY(cudaEventSynchronize(stop_), "wait for the stop event");
    float ms = 0;
    SMARTARRAY_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_), "read the elapsed time");
    return static_cast<double>(ms) / 1e3;
  }

  template <typename Call>
  double seconds_on_host(Call& call) {
    const auto start = std::chrono::steady_clock::now();
    call();
    smartarray::synchronize(stream_);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  StreamRef stream_;
  bool cuda_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  TransferStats timed_transfers_;
  std::int64_t calls_ = 0;
};

}  // namespace smartarray::bench
