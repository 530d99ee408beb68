// Memory modes against hand-written CUDA code. Each timed iteration is one "call": the host writes
// the data, the device runs 1 kernel (data touched once) or 10 kernels (data reused), and the host
// reads the result. Calls are bracketed by CUDA events on an idle stream, so the host work of each
// contender is inside the measurement.
//
// Names are BM_modes_<once|reuse10>/<contender>/<n>. Contenders: the four SmartArray modes
// (managed with its prefetching acquires), managed memory on demand (hand-written, no prefetch),
// and hand-written cudaMemcpy code from pageable and from pinned memory. The targets
// (benchmarks/targets.json): explicit within 1.05x of pinned_memcpy; pageable at least 2x faster
// than pageable_memcpy at 1.6e7; managed (prefetch) at least 2x faster than managed_on_demand.
#include <smartarray/smartarray.hpp>
#include <smartarray/memory/memory_mode.hpp>
#include <smartarray/runtime/detail/cuda_check.hpp>

#include "bench_main.hpp"
#include "bench_support.cuh"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;

namespace {

using sa::bench::CallTimer;
using sa::bench::need_cuda;
using sa::bench::random_floats;

__global__ void scale_kernel(float* data, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    data[i] = data[i] * 0.5F + 1.0F;
  }
}

constexpr int block = 256;
int grid_for(std::size_t n) {
  return static_cast<int>(std::min<std::size_t>((n + block - 1) / block, 4096));
}

void launch_scale(float* data, std::size_t n, cudaStream_t stream) {
  scale_kernel<<<grid_for(n), block, 0, stream>>>(data, n);
  SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch scale_kernel on ", n, " floats");
}

/// Times one call per iteration (see CallTimer) and labels the run with its size and kernels.
template <typename Call>
void time_calls(benchmark::State& state, cudaStream_t stream, Call&& call, std::size_t n,
                int kernels) {
  CallTimer timer(stream);
  timer.run(state, call, n * sizeof(float) * 2);
  state.counters["kernels"] = kernels;
  state.counters["elements"] = static_cast<double>(n);
}

enum class Contender { explicit_mode, managed_prefetch, mapped, pageable, managed_on_demand,
                       pageable_memcpy, pinned_memcpy };

/// One SmartArray in `mode`: host write, `kernels` kernels, host read.
void smartarray_call(benchmark::State& state, sa::MemoryMode mode, int kernels) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::vector<float> source = random_floats(n);
  sa::Stream stream;
  const auto cuda_stream = static_cast<cudaStream_t>(stream.ref().handle());
  sa::SmartArray<float> a(n, sa::ArrayOptions{.mode = mode});
  float sink = 0;
  time_calls(state, cuda_stream, [&] {
    const auto host = a.host_view(Access::discard);
    std::copy(source.begin(), source.end(), host.begin());
    for (int k = 0; k < kernels; ++k) {
      launch_scale(a.device_view(Access::read_write, stream).data(), n, cuda_stream);
    }
    const auto result = a.host_view(Access::read, stream.ref());
    sink += result[n - 1];
  }, n, kernels);
  benchmark::DoNotOptimize(sink);
  const sa::TransferStats made = a.transfer_stats();
  const double calls = static_cast<double>(state.iterations() + 1);
  state.counters["h2d_per_call"] = static_cast<double>(made.h2d_count) / calls;
  state.counters["d2h_per_call"] = static_cast<double>(made.d2h_count) / calls;
  state.counters["prefetch_per_call"] = static_cast<double>(made.prefetch_count) / calls;
}

/// Hand-written managed memory with no prefetch: pages migrate on demand.
void managed_on_demand_call(benchmark::State& state, int kernels) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::vector<float> source = random_floats(n);
  cudaStream_t stream = nullptr;
  SMARTARRAY_CUDA_TRY(cudaStreamCreate(&stream), "create a stream");
  float* data = nullptr;
  SMARTARRAY_CUDA_TRY(cudaMallocManaged(&data, n * sizeof(float)), "allocate ", n * sizeof(float),
                      " managed bytes");
  float sink = 0;
  time_calls(state, stream, [&] {
    std::memcpy(data, source.data(), n * sizeof(float));
    for (int k = 0; k < kernels; ++k) launch_scale(data, n, stream);
    SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "wait for the kernels");
    sink += data[n - 1];
  }, n, kernels);
  benchmark::DoNotOptimize(sink);
  cudaFree(data);
  cudaStreamDestroy(stream);
}

/// Hand-written cudaMemcpy from `host` (pageable or pinned) through a cudaMalloc buffer.
void memcpy_call(benchmark::State& state, bool pinned, int kernels) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::size_t bytes = n * sizeof(float);
  const std::vector<float> source = random_floats(n);
  cudaStream_t stream = nullptr;
  SMARTARRAY_CUDA_TRY(cudaStreamCreate(&stream), "create a stream");
  std::vector<float> pageable;
  float* host = nullptr;
  if (pinned) {
    SMARTARRAY_CUDA_TRY(cudaMallocHost(&host, bytes), "allocate ", bytes, " pinned bytes");
  } else {
    pageable.resize(n);
    host = pageable.data();
  }
  float* device = nullptr;
  SMARTARRAY_CUDA_TRY(cudaMalloc(&device, bytes), "allocate ", bytes, " device bytes");
  float sink = 0;
  time_calls(state, stream, [&] {
    std::memcpy(host, source.data(), bytes);
    SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream),
                        "upload ", bytes, " bytes");
    for (int k = 0; k < kernels; ++k) launch_scale(device, n, stream);
    SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream),
                        "download ", bytes, " bytes");
    SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "wait for the download");
    sink += host[n - 1];
  }, n, kernels);
  benchmark::DoNotOptimize(sink);
  cudaFree(device);
  if (pinned) cudaFreeHost(host);
  cudaStreamDestroy(stream);
}

void run(benchmark::State& state, Contender who, int kernels) {
  if (!need_cuda(state)) return;
  switch (who) {
    case Contender::explicit_mode:
      smartarray_call(state, sa::MemoryMode::explicit_copy, kernels);
      break;
    case Contender::managed_prefetch:
      smartarray_call(state, sa::MemoryMode::managed, kernels);
      break;
    case Contender::mapped: smartarray_call(state, sa::MemoryMode::mapped, kernels); break;
    case Contender::pageable: smartarray_call(state, sa::MemoryMode::pageable, kernels); break;
    case Contender::managed_on_demand: managed_on_demand_call(state, kernels); break;
    case Contender::pageable_memcpy: memcpy_call(state, false, kernels); break;
    case Contender::pinned_memcpy: memcpy_call(state, true, kernels); break;
  }
}

const std::pair<const char*, Contender> contenders[] = {
    {"explicit", Contender::explicit_mode},
    {"managed_prefetch", Contender::managed_prefetch},
    {"managed_on_demand", Contender::managed_on_demand},
    {"mapped", Contender::mapped},
    {"pageable", Contender::pageable},
    {"pageable_memcpy", Contender::pageable_memcpy},
    {"pinned_memcpy", Contender::pinned_memcpy},
};

void register_all() {
  for (const auto& [workload, kernels] : {std::pair{"once", 1}, std::pair{"reuse10", 10}}) {
    for (const auto& [name, who] : contenders) {
      auto* b = benchmark::RegisterBenchmark(
          (std::string("BM_modes_") + workload + "/" + name).c_str(),
          [who = who, kernels = kernels](benchmark::State& s) { run(s, who, kernels); });
      for (const std::int64_t n : {100'000, 1'000'000, 16'000'000}) b->Arg(n);
      b->UseManualTime()->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return sa::bench::run_main(argc, argv, register_all); }
