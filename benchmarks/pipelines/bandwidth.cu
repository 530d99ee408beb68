// The bandwidth workload of bench_pipelines: migration bandwidth, a host-written array read once
// on the device. It times only the transfer, with CUDA events around it, so it needs the cuda
// backend and is not one of the seven contenders' workloads.
#include "pipelines/workloads.cuh"

#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/runtime/detail/cuda_check.hpp>

#include "bench_support.cuh"

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace smartarray::bench::pipelines {

void bandwidth(benchmark::State& state, Transfer how) {
  if (!need_cuda(state)) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  Stream owner;
  const cudaStream_t stream = owner.ref().cuda_stream();
  cudaEvent_t start = nullptr, stop = nullptr;
  SMARTARRAY_CUDA_TRY(cudaEventCreate(&start), "event");
  SMARTARRAY_CUDA_TRY(cudaEventCreate(&stop), "event");
  void* device = nullptr;
  void* host = nullptr;
  std::vector<std::byte> pageable;
  SmartArray<std::byte> array(bytes, std::byte{1});
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
      SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream),
                          "copy");
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

}  // namespace smartarray::bench::pipelines
