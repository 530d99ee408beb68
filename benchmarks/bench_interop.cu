// Another library's allocation that needs smartarray to evict, against what the same memory costs
// when nothing needs evicting, in the same run.
//
// - BM_EvictingAllocation/arrays:N: a pool of exactly N arrays of 4 MiB, all device copies clean
//   (host-valid too). One sample allocates N x 4 MiB from the pool, as PyTorch's and CuPy's
//   allocators of smartarray do (`sa.torch_allocator()`, `sa.cupy_allocator()`): the pool's
//   out-of-memory chain evicts the N copies and returns their merged block. The baseline sample,
//   interleaved with it, is the baseline: a plain allocation of that size on a free device
//   (cudaMalloc, which a fresh PyTorch caching allocator calls) plus N SmartArray device frees
//   (destroying N device-only arrays of 4 MiB). Setup and cleanup are outside both samples.
//   Counters: evicting_us, plain_us (cudaMalloc), frees_us, and ratio = evicting / (plain +
//   frees) (target: at most 1.2).
//
// Needs the cuda backend and reports an error on the host backend.
#include <smartarray/runtime/detail/cuda_check.hpp>
#include <smartarray/smartarray.hpp>

#include "bench_main.hpp"
#include "bench_support.cuh"

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <vector>

namespace sa = smartarray;

namespace {

using sa::bench::Clock;
using sa::bench::median;
using sa::bench::micros_since;

constexpr std::size_t array_bytes = std::size_t{4} << 20;
constexpr std::size_t array_floats = array_bytes / sizeof(float);

void BM_EvictingAllocation(benchmark::State& state) {
  if (!sa::bench::need_cuda(state)) return;
  const auto arrays = static_cast<std::size_t>(state.range(0));
  const std::size_t bytes = arrays * array_bytes;
  sa::DeviceMemoryResource device;
  sa::PoolOptions options;
  options.initial_size = bytes;
  options.chunk_size = bytes;
  options.max_chunk_size = bytes;
  options.maximum_size = bytes;
  options.name = "bench pool";
  sa::PoolResource pool(device, options);
  const sa::ArrayOptions in_pool{.device_resource = &pool};
  const std::vector<float> values = sa::bench::random_floats(array_floats);
  sa::Stream stream;
  std::vector<double> evicting_us, plain_us, frees_us;
  for (auto _ : state) {
    // Evicting: N clean copies fill the pool; the allocation drops them all.
    {
      std::vector<sa::SmartArray<float>> clean;
      clean.reserve(arrays);
      for (std::size_t i = 0; i < arrays; ++i) {
        clean.emplace_back(values, in_pool);
        (void)clean.back().device_view(stream);
      }
      stream.synchronize();
      const auto start = Clock::now();
      void* block = pool.allocate(stream, bytes);
      const double evicting = micros_since(start);
      evicting_us.push_back(evicting);
      state.SetIterationTime(evicting * 1e-6);
      for (const auto& a : clean) {
        if (a.is_valid(sa::Side::device)) state.SkipWithError("a clean copy was not evicted");
      }
      pool.deallocate(stream, block, bytes);
    }
    // Baseline: a plain allocation on a free device, and N device frees of SmartArrays.
    {
      auto start = Clock::now();
      void* plain = nullptr;
      SMARTARRAY_CUDA_TRY(cudaMalloc(&plain, bytes), "cudaMalloc of ", bytes, " bytes");
      plain_us.push_back(micros_since(start));
      SMARTARRAY_CUDA_TRY(cudaFree(plain), "cudaFree");
      std::vector<sa::SmartArray<float>> device_only;
      device_only.reserve(arrays);
      for (std::size_t i = 0; i < arrays; ++i) {
        device_only.push_back(sa::device_array<float>(array_floats, stream, in_pool));
      }
      stream.synchronize();
      start = Clock::now();
      device_only.clear();
      frees_us.push_back(micros_since(start));
    }
    stream.synchronize();
  }
  const double baseline = median(plain_us) + median(frees_us);
  state.counters["evicting_us"] = median(evicting_us);
  state.counters["plain_us"] = median(plain_us);
  state.counters["frees_us"] = median(frees_us);
  state.counters["ratio"] = median(evicting_us) / baseline;
}
BENCHMARK(BM_EvictingAllocation)
    ->ArgName("arrays")
    ->Arg(1)
    ->Arg(16)
    ->Arg(64)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

SMARTARRAY_BENCHMARK_MAIN()
