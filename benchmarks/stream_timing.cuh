// bench_stream's timing: BatchTimer (device time of back-to-back calls, behind a spin kernel),
// the host clock of a call that returns to the host, and `interleave`, which times every
// contender once per iteration in rotating order. Included by bench_stream.cu only: like the
// rest of that binary, it defines its names in an unnamed namespace.
#pragma once

#include <smartarray/smartarray.hpp>
#include <smartarray/runtime/detail/cuda_check.hpp>

#include "bench_support.cuh"

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;

namespace {

// --- timing --------------------------------------------------------------------------------------

/// Back-to-back calls per timed batch of device work.
constexpr int batch = 8;
/// How long the spin ahead of a batch keeps the device busy: far longer than the host needs to
/// submit the batch's first call.
constexpr unsigned long long spin_ns = 100'000;

/// Keeps the device busy for `nanoseconds`, so that the work queued behind it runs back to back
/// whatever the host's submission time.
__global__ void spin_kernel(unsigned long long nanoseconds) {
  unsigned long long start = 0;
  unsigned long long now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

/// Device time per call of `batch` back-to-back calls: on the cuda backend CUDA events around the
/// batch, queued behind `spin_kernel`; on the host backend the host clock and a synchronize.
class BatchTimer {
 public:
  explicit BatchTimer(sa::StreamRef stream)
      : stream_(stream), cuda_(sa::backend() == sa::BackendKind::cuda) {
    if (!cuda_) return;
    const sa::DeviceGuard on_device(sa::stream_device(stream));
    SMARTARRAY_CUDA_TRY(cudaEventCreate(&start_), "create a timing event");
    SMARTARRAY_CUDA_TRY(cudaEventCreate(&stop_), "create a timing event");
  }
  ~BatchTimer() {
    if (!cuda_) return;
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  BatchTimer(const BatchTimer&) = delete;
  BatchTimer& operator=(const BatchTimer&) = delete;

  /// Seconds per call.
  double operator()(const std::function<void()>& call) {
    if (!cuda_) {
      const auto start = sa::bench::Clock::now();
      for (int k = 0; k < batch; ++k) call();
      sa::synchronize(stream_);
      return sa::bench::micros_since(start) * 1e-6 / batch;
    }
    const cudaStream_t s = stream_.cuda_stream();
    spin_kernel<<<1, 1, 0, s>>>(spin_ns);
    SMARTARRAY_CUDA_TRY(cudaEventRecord(start_, s), "record the start event");
    for (int k = 0; k < batch; ++k) call();
    SMARTARRAY_CUDA_TRY(cudaEventRecord(stop_, s), "record the stop event");
    SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch the spin or a hand-written kernel");
    SMARTARRAY_CUDA_TRY(cudaEventSynchronize(stop_), "wait for the stop event");
    float ms = 0;
    SMARTARRAY_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_), "read the elapsed time");
    return static_cast<double>(ms) * 1e-3 / batch;
  }

 private:
  sa::StreamRef stream_;
  bool cuda_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

/// Seconds of one call that returns with its result on the host (host clock).
double round_trip_seconds(const std::function<void()>& call) {
  const auto start = sa::bench::Clock::now();
  call();
  return sa::bench::micros_since(start) * 1e-6;
}

/// A contender: its name in the counters and one call.
struct Contender {
  std::string name;
  std::function<void()> call;
};

/// Times every contender once per iteration with `time(call)` (seconds per call), in an order that
/// rotates from one iteration to the next, after one untimed warm-up call of each. The first
/// contender's time of `calls` calls is the iteration's manual time. Returns the median seconds
/// per call of each contender.
template <typename Time>
std::vector<double> interleave(benchmark::State& state, const std::vector<Contender>& contenders,
                               Time&& time, int calls) {
  for (const Contender& c : contenders) (void)time(c.call);
  std::vector<std::vector<double>> seconds(contenders.size());
  std::size_t first = 0;
  for (auto _ : state) {
    for (std::size_t k = 0; k < contenders.size(); ++k) {
      const std::size_t c = (first + k) % contenders.size();
      seconds[c].push_back(time(contenders[c].call));
    }
    state.SetIterationTime(seconds[0].back() * calls);
    first = (first + 1) % contenders.size();
  }
  std::vector<double> medians;
  for (auto& samples : seconds) medians.push_back(sa::bench::median(std::move(samples)));
  return medians;
}

double gbps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds * 1e-9 : 0; }

}  // namespace
