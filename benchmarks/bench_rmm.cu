// SmartArray device storage from an RMM pool against smartarray's own pool, in the same run (built
// by the rmm preset against librmm).
//
// - BM_RmmAllocateFreePair/bytes: one sample makes and destroys 100 device-only SmartArrays
//   (`sa::device_array`) of that size, one at a time: each is one allocate + free pair of its
//   device storage, plus what the array itself costs. The contenders alternate inside every
//   iteration, all warm:
//   - sa: storage from the default device resource (smartarray's pool);
//   - rmm: from a `CcclDeviceResource` over `rmm::mr::pool_memory_resource`, every pair a pair of
//     RMM's pool;
//   - rmm_pooled: from a smartarray `PoolResource` whose chunks come from that
//     `CcclDeviceResource`: RMM's pool holds the memory, smartarray's pool carves it;
//   - raw_sa and raw_rmm: one allocate + deallocate pair of smartarray's pool and of RMM's pool
//     themselves, without an array, to show what each allocator costs alone.
//   Counters: <contender>_ns per pair (medians over the samples), rmm_vs_sa = rmm_ns / sa_ns and
//   rmm_pooled_vs_sa = rmm_pooled_ns / sa_ns (target: at most 1.10).
//
// Needs the cuda backend and reports an error on the host backend.
#include <smartarray/interop/cccl_resource.hpp>
#include <smartarray/smartarray.hpp>

#include "bench_main.hpp"
#include "bench_support.cuh"

#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <vector>

namespace sa = smartarray;

namespace {

using sa::bench::Clock;
using sa::bench::median;

double nanos_since(Clock::time_point start) {
  return sa::bench::micros_since(start) * 1e3;
}

constexpr int pairs_per_sample = 100;

/// Nanoseconds per pair: `pairs_per_sample` device-only arrays of `n` floats made and destroyed.
double sample(std::size_t n, sa::StreamRef stream, const sa::ArrayOptions& options) {
  const auto start = Clock::now();
  for (int i = 0; i < pairs_per_sample; ++i) {
    sa::SmartArray<float> a = sa::device_array<float>(n, stream, options);
    benchmark::DoNotOptimize(a);
  }
  return nanos_since(start) / pairs_per_sample;
}

/// Nanoseconds per allocate + deallocate pair of `resource` itself.
template <class Allocate, class Deallocate>
double raw_sample(Allocate&& allocate, Deallocate&& deallocate) {
  const auto start = Clock::now();
  for (int i = 0; i < pairs_per_sample; ++i) {
    void* p = allocate();
    benchmark::DoNotOptimize(p);
    deallocate(p);
  }
  return nanos_since(start) / pairs_per_sample;
}

void BM_RmmAllocateFreePair(benchmark::State& state) {
  if (!sa::bench::need_cuda(state)) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::size_t n = bytes / sizeof(float);
  rmm::mr::pool_memory_resource rmm_pool(rmm::mr::cuda_memory_resource{}, std::size_t{1} << 30);
  sa::interop::CcclDeviceResource from_rmm{rmm_pool};
  sa::PoolOptions options;
  options.name = "pool over RMM";
  sa::PoolResource pooled(from_rmm, options);
  const sa::ArrayOptions own{};
  const sa::ArrayOptions over_rmm{.device_resource = &from_rmm};
  const sa::ArrayOptions pooled_over_rmm{.device_resource = &pooled};
  sa::Stream stream;
  const cuda::stream_ref on{static_cast<cudaStream_t>(stream.ref().handle())};
  sa::MemoryResource& sa_pool = sa::default_device_resource();
  const auto raw_sa = [&] {
    return raw_sample([&] { return sa_pool.allocate(stream, bytes); },
                      [&](void* p) { sa_pool.deallocate(stream, p, bytes); });
  };
  const auto raw_rmm = [&] {
    return raw_sample([&] { return rmm_pool.allocate(on, bytes, 256); },
                      [&](void* p) { rmm_pool.deallocate(on, p, bytes, 256); });
  };
  // Warm every pool.
  (void)sample(n, stream, own);
  (void)sample(n, stream, over_rmm);
  (void)sample(n, stream, pooled_over_rmm);
  std::vector<double> sa_ns, rmm_ns, pooled_ns, raw_sa_ns, raw_rmm_ns;
  for (auto _ : state) {
    sa_ns.push_back(sample(n, stream, own));
    const double rmm = sample(n, stream, over_rmm);
    rmm_ns.push_back(rmm);
    state.SetIterationTime(rmm * pairs_per_sample * 1e-9);
    pooled_ns.push_back(sample(n, stream, pooled_over_rmm));
    raw_sa_ns.push_back(raw_sa());
    raw_rmm_ns.push_back(raw_rmm());
  }
  stream.synchronize();
  state.counters["sa_ns"] = median(sa_ns);
  state.counters["rmm_ns"] = median(rmm_ns);
  state.counters["rmm_pooled_ns"] = median(pooled_ns);
  state.counters["raw_sa_ns"] = median(raw_sa_ns);
  state.counters["raw_rmm_ns"] = median(raw_rmm_ns);
  state.counters["rmm_vs_sa"] = median(rmm_ns) / median(sa_ns);
  state.counters["rmm_pooled_vs_sa"] = median(pooled_ns) / median(sa_ns);
}
BENCHMARK(BM_RmmAllocateFreePair)
    ->Arg(std::size_t{400} << 10)
    ->Arg(std::size_t{16} << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

SMARTARRAY_BENCHMARK_MAIN()
