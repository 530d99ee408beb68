// Helpers shared by the GPU benchmarks: skipping on the host backend, input data, and timing one
// call per iteration with CUDA events.
#pragma once

#include <smartarray/runtime.hpp>
#include <smartarray/detail/cuda_check.hpp>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <random>
#include <vector>

namespace smartarray::bench {

/// True on the cuda backend; otherwise marks the benchmark skipped.
inline bool need_cuda(benchmark::State& state) {
  if (backend() == BackendKind::cuda) return true;
  state.SkipWithError("needs the cuda backend");
  return false;
}

/// `n` floats in [0.5, 2), reproducible for a given seed.
inline std::vector<float> random_floats(std::size_t n, unsigned seed = 42) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.5F, 2.0F);
  std::vector<float> out(n);
  for (auto& v : out) v = dist(rng);
  return out;
}

/// Times one call per iteration with CUDA events on `stream`, which is idle at the start.
class CallTimer {
 public:
  explicit CallTimer(cudaStream_t stream) : stream_(stream) {
    SMARTARRAY_CUDA_TRY(cudaEventCreate(&start_), "create a timing event");
    SMARTARRAY_CUDA_TRY(cudaEventCreate(&stop_), "create a timing event");
  }
  ~CallTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

  template <typename Call>
  void run(benchmark::State& state, Call&& call, std::size_t bytes_per_call = 0) {
    call();  // warm-up: first-touch allocations, module load
    SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream_), "synchronize after warm-up");
    for (auto _ : state) {
      SMARTARRAY_CUDA_TRY(cudaEventRecord(start_, stream_), "record the start event");
      call();
      SMARTARRAY_CUDA_TRY(cudaEventRecord(stop_, stream_), "record the stop event");
      SMARTARRAY_CUDA_TRY(cudaEventSynchronize(stop_), "wait for the stop event");
      float ms = 0;
      SMARTARRAY_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_), "read the elapsed time");
      state.SetIterationTime(static_cast<double>(ms) / 1e3);
    }
    if (bytes_per_call != 0) {
      state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes_per_call));
    }
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace smartarray::bench
