// The headline benchmark: SmartArray against naive copies, expert explicit copies, Unified Memory
// (with and without prefetch), mapped memory and Thrust, on the same workloads in one run.
//
// Every timed iteration is one "call" of the workload, bracketed by CUDA events on an idle stream
// (so the host overhead of each contender is inside the measurement) and synchronized at its end.
// Names are BM_<workload>/<contender>/<n>; scripts/bench_report.py turns the JSON into
// docs/benchmarks.md with ratios against explicit and naive.
#include <smartarray/smartarray.hpp>
#include <smartarray/detail/cuda_check.hpp>

#include "bench_support.cuh"

#include <benchmark/benchmark.h>
#include <cub/device/device_reduce.cuh>
#include <cuda/std/array>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/host_vector.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/transform.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

namespace sa = smartarray;
using sa::Access;

namespace {

using sa::bench::CallTimer;
using sa::bench::need_cuda;
using sa::bench::random_floats;

// --- elementwise workloads -------------------------------------------------------------------

struct Add {
  static constexpr int inputs = 2;
  SMARTARRAY_HOST_DEVICE float operator()(const cuda::std::array<const float*, 2>& in,
                                          std::size_t i) const {
    return in[0][i] + in[1][i];
  }
};

struct Gaussian {
  static constexpr int inputs = 1;
  float mean = 0.25F;
  float sigma = 1.5F;
  SMARTARRAY_HOST_DEVICE float operator()(const cuda::std::array<const float*, 1>& in,
                                          std::size_t i) const {
    const float z = (in[0][i] - mean) / sigma;
    return expf(-0.5F * z * z) / (sigma * 2.5066282746310002F);
  }
};

__device__ float polar_distance(float r1, float t1, float r2, float t2) {
  return sqrtf(r1 * r1 + r2 * r2 - 2.0F * r1 * r2 * cosf(t1 - t2));
}

struct Polar {
  static constexpr int inputs = 4;
  __device__ float operator()(const cuda::std::array<const float*, 4>& in, std::size_t i) const {
    return polar_distance(in[0][i], in[1][i], in[2][i], in[3][i]);
  }
};

template <typename Op, int K>
__global__ void elementwise_kernel(cuda::std::array<const float*, K> in, float* out, std::size_t n,
                                   Op op) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = op(in, i);
  }
}

unsigned blocks_for(std::size_t n) {
  const std::size_t wanted = (n + 255) / 256;
  const std::size_t full = static_cast<std::size_t>(sa::device_properties().multiprocessor_count) * 32;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, full)));
}

template <typename Op>
void launch_elementwise(const cuda::std::array<const float*, Op::inputs>& in, float* out,
                        std::size_t n, cudaStream_t stream) {
  elementwise_kernel<Op, Op::inputs><<<blocks_for(n), 256, 0, stream>>>(in, out, n, Op{});
  SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch an elementwise kernel over ", n, " elements");
}

enum class Contender { naive, explicit_copies, smartarray, managed_prefetch, managed, mapped, thrust };

/// One elementwise call with inputs written once by the host and results that stay on the device.
template <typename Op>
void elementwise(benchmark::State& state, Contender who) {
  if (!need_cuda(state)) return;
  constexpr int K = Op::inputs;
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::size_t bytes = n * sizeof(float);
  sa::Stream owner;
  const cudaStream_t stream = owner.ref().cuda_stream();
  CallTimer timer(stream);
  std::vector<std::vector<float>> host_inputs;
  for (int k = 0; k < K; ++k) host_inputs.push_back(random_floats(n, 7 + k));

  switch (who) {
    case Contender::naive: {
      std::vector<float> out(n);
      timer.run(state, [&] {
        cuda::std::array<const float*, K> in{};
        std::array<float*, K> dev{};
        for (int k = 0; k < K; ++k) {
          SMARTARRAY_CUDA_TRY(cudaMalloc(&dev[k], bytes), "naive input");
          SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(dev[k], host_inputs[k].data(), bytes,
                                              cudaMemcpyHostToDevice, stream), "naive copy in");
          in[k] = dev[k];
        }
        float* d_out = nullptr;
        SMARTARRAY_CUDA_TRY(cudaMalloc(&d_out, bytes), "naive output");
        launch_elementwise<Op>(in, d_out, n, stream);
        SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(out.data(), d_out, bytes, cudaMemcpyDeviceToHost, stream),
                            "naive copy out");
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "naive sync");
        for (float* p : dev) SMARTARRAY_CUDA_TRY(cudaFree(p), "naive free");
        SMARTARRAY_CUDA_TRY(cudaFree(d_out), "naive free");
      });
      break;
    }
    case Contender::explicit_copies: {
      std::array<float*, K + 1> dev{};
      for (auto& p : dev) SMARTARRAY_CUDA_TRY(cudaMalloc(&p, bytes), "explicit buffer");
      cuda::std::array<const float*, K> in{};
      for (int k = 0; k < K; ++k) {
        SMARTARRAY_CUDA_TRY(cudaMemcpy(dev[k], host_inputs[k].data(), bytes, cudaMemcpyHostToDevice),
                            "explicit upload");
        in[k] = dev[k];
      }
      timer.run(state, [&] { launch_elementwise<Op>(in, dev[K], n, stream); });
      for (float* p : dev) SMARTARRAY_CUDA_TRY(cudaFree(p), "explicit free");
      break;
    }
    case Contender::smartarray: {
      std::vector<sa::SmartArray<float>> inputs;
      for (int k = 0; k < K; ++k) inputs.emplace_back(host_inputs[k]);
      sa::SmartArray<float> out(n);
      timer.run(state, [&] {
        cuda::std::array<const float*, K> in{};
        for (int k = 0; k < K; ++k) in[k] = std::as_const(inputs[k]).device_view(owner).data();
        launch_elementwise<Op>(in, out.device_view(Access::discard, owner).data(), n, stream);
      });
      break;
    }
    case Contender::managed_prefetch:
    case Contender::managed: {
      std::array<float*, K + 1> mem{};
      for (auto& p : mem) SMARTARRAY_CUDA_TRY(cudaMallocManaged(&p, bytes), "managed buffer");
      cuda::std::array<const float*, K> in{};
      for (int k = 0; k < K; ++k) {
        std::memcpy(mem[k], host_inputs[k].data(), bytes);
        in[k] = mem[k];
      }
      const bool prefetch = who == Contender::managed_prefetch;
      cudaMemLocation device{cudaMemLocationTypeDevice, sa::device_properties().ordinal};
      timer.run(state, [&] {
        if (prefetch) {
          for (float* p : mem) {
            SMARTARRAY_CUDA_TRY(cudaMemPrefetchAsync(p, bytes, device, 0, stream), "prefetch");
          }
        }
        launch_elementwise<Op>(in, mem[K], n, stream);
      });
      for (float* p : mem) SMARTARRAY_CUDA_TRY(cudaFree(p), "managed free");
      break;
    }
    case Contender::mapped: {
      std::array<float*, K + 1> host{};
      cuda::std::array<const float*, K> in{};
      float* out = nullptr;
      for (int k = 0; k <= K; ++k) {
        SMARTARRAY_CUDA_TRY(cudaHostAlloc(&host[k], bytes, cudaHostAllocMapped), "mapped buffer");
        float* device_ptr = nullptr;
        SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&device_ptr, host[k], 0), "mapped pointer");
        if (k < K) {
          std::memcpy(host[k], host_inputs[k].data(), bytes);
          in[k] = device_ptr;
        } else {
          out = device_ptr;
        }
      }
      timer.run(state, [&] { launch_elementwise<Op>(in, out, n, stream); });
      for (float* p : host) SMARTARRAY_CUDA_TRY(cudaFreeHost(p), "mapped free");
      break;
    }
    case Contender::thrust: {
      std::vector<thrust::device_vector<float>> inputs;
      for (int k = 0; k < K; ++k) inputs.emplace_back(host_inputs[k].begin(), host_inputs[k].end());
      thrust::device_vector<float> out(n);
      const auto policy = thrust::cuda::par_nosync.on(stream);
      timer.run(state, [&] {
        if constexpr (K == 1) {
          thrust::transform(policy, inputs[0].begin(), inputs[0].end(), out.begin(),
                            [] __device__(float x) {
                              return Gaussian{}(cuda::std::array<const float*, 1>{&x}, 0);
                            });
        } else if constexpr (K == 2) {
          thrust::transform(policy, inputs[0].begin(), inputs[0].end(), inputs[1].begin(),
                            out.begin(), [] __device__(float a, float b) { return a + b; });
        } else {
          auto first = thrust::make_zip_iterator(inputs[0].begin(), inputs[1].begin(),
                                                 inputs[2].begin(), inputs[3].begin());
          thrust::transform(policy, first, first + static_cast<std::ptrdiff_t>(n), out.begin(),
                            [] __device__(thrust::tuple<float, float, float, float> t) {
                              return polar_distance(thrust::get<0>(t), thrust::get<1>(t),
                                                    thrust::get<2>(t), thrust::get<3>(t));
                            });
        }
      });
      break;
    }
  }
}

// --- a chain of 10 kernels with one host write before and one host read after ---------------

__global__ void chain_step(const float* x, float* y, std::size_t n, float a) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = a * x[i] + y[i] * 0.5F;
  }
}

void launch_chain(const float* x, float* y, std::size_t n, cudaStream_t stream) {
  for (int k = 0; k < 10; ++k) {
    chain_step<<<blocks_for(n), 256, 0, stream>>>(x, y, n, 0.001F * static_cast<float>(k + 1));
    SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch a chain step");
  }
}

void chain(benchmark::State& state, Contender who) {
  if (!need_cuda(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::size_t bytes = n * sizeof(float);
  sa::Stream owner;
  const cudaStream_t stream = owner.ref().cuda_stream();
  CallTimer timer(stream);
  const std::vector<float> source = random_floats(n, 11);
  float checksum = 0;

  switch (who) {
    case Contender::naive: {
      std::vector<float> x = source, y(n, 1.0F);
      timer.run(state, [&] {
        for (int k = 0; k < 10; ++k) {
          float *dx = nullptr, *dy = nullptr;
          SMARTARRAY_CUDA_TRY(cudaMalloc(&dx, bytes), "naive x");
          SMARTARRAY_CUDA_TRY(cudaMalloc(&dy, bytes), "naive y");
          SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(dx, x.data(), bytes, cudaMemcpyHostToDevice, stream), "in");
          SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(dy, y.data(), bytes, cudaMemcpyHostToDevice, stream), "in");
          chain_step<<<blocks_for(n), 256, 0, stream>>>(dx, dy, n, 0.001F * static_cast<float>(k + 1));
          SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch a chain step");
          SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(y.data(), dy, bytes, cudaMemcpyDeviceToHost, stream), "out");
          SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "naive sync");
          SMARTARRAY_CUDA_TRY(cudaFree(dx), "free");
          SMARTARRAY_CUDA_TRY(cudaFree(dy), "free");
        }
        checksum += y[n / 2];
      });
      break;
    }
    case Contender::explicit_copies: {
      float *hx = nullptr, *hy = nullptr, *dx = nullptr, *dy = nullptr;
      SMARTARRAY_CUDA_TRY(cudaMallocHost(&hx, bytes), "pinned x");
      SMARTARRAY_CUDA_TRY(cudaMallocHost(&hy, bytes), "pinned y");
      SMARTARRAY_CUDA_TRY(cudaMalloc(&dx, bytes), "device x");
      SMARTARRAY_CUDA_TRY(cudaMalloc(&dy, bytes), "device y");
      SMARTARRAY_CUDA_TRY(cudaMemset(dy, 0, bytes), "clear y");
      timer.run(state, [&] {
        std::memcpy(hx, source.data(), bytes);
        SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(dx, hx, bytes, cudaMemcpyHostToDevice, stream), "in");
        launch_chain(dx, dy, n, stream);
        SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(hy, dy, bytes, cudaMemcpyDeviceToHost, stream), "out");
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "explicit sync");
        checksum += hy[n / 2];
      }, 2 * bytes);
      for (float* p : {hx, hy}) SMARTARRAY_CUDA_TRY(cudaFreeHost(p), "free");
      for (float* p : {dx, dy}) SMARTARRAY_CUDA_TRY(cudaFree(p), "free");
      break;
    }
    case Contender::smartarray: {
      sa::SmartArray<float> x(n), y(n, 1.0F);
      timer.run(state, [&] {
        auto host_x = x.host_view(Access::discard);
        std::memcpy(host_x.data(), source.data(), bytes);
        launch_chain(std::as_const(x).device_view(owner).data(),
                     y.device_view(Access::read_write, owner).data(), n, stream);
        checksum += std::as_const(y)[n / 2];
      }, 2 * bytes);
      break;
    }
    case Contender::managed_prefetch:
    case Contender::managed: {
      float *x = nullptr, *y = nullptr;
      SMARTARRAY_CUDA_TRY(cudaMallocManaged(&x, bytes), "managed x");
      SMARTARRAY_CUDA_TRY(cudaMallocManaged(&y, bytes), "managed y");
      std::fill_n(y, n, 1.0F);
      const bool prefetch = who == Contender::managed_prefetch;
      const cudaMemLocation device{cudaMemLocationTypeDevice, sa::device_properties().ordinal};
      const cudaMemLocation host{cudaMemLocationTypeHost, 0};
      timer.run(state, [&] {
        std::memcpy(x, source.data(), bytes);
        if (prefetch) {
          SMARTARRAY_CUDA_TRY(cudaMemPrefetchAsync(x, bytes, device, 0, stream), "prefetch x");
          SMARTARRAY_CUDA_TRY(cudaMemPrefetchAsync(y, bytes, device, 0, stream), "prefetch y");
        }
        launch_chain(x, y, n, stream);
        if (prefetch) {
          SMARTARRAY_CUDA_TRY(cudaMemPrefetchAsync(y, bytes, host, 0, stream), "prefetch y back");
        }
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "managed sync");
        checksum += y[n / 2];
      }, 2 * bytes);
      for (float* p : {x, y}) SMARTARRAY_CUDA_TRY(cudaFree(p), "free");
      break;
    }
    case Contender::mapped: {
      float *hx = nullptr, *hy = nullptr, *dx = nullptr, *dy = nullptr;
      SMARTARRAY_CUDA_TRY(cudaHostAlloc(&hx, bytes, cudaHostAllocMapped), "mapped x");
      SMARTARRAY_CUDA_TRY(cudaHostAlloc(&hy, bytes, cudaHostAllocMapped), "mapped y");
      SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&dx, hx, 0), "mapped x pointer");
      SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&dy, hy, 0), "mapped y pointer");
      std::fill_n(hy, n, 1.0F);
      timer.run(state, [&] {
        std::memcpy(hx, source.data(), bytes);
        launch_chain(dx, dy, n, stream);
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "mapped sync");
        checksum += hy[n / 2];
      }, 2 * bytes);
      for (float* p : {hx, hy}) SMARTARRAY_CUDA_TRY(cudaFreeHost(p), "free");
      break;
    }
    case Contender::thrust: {
      thrust::host_vector<float> hx(source.begin(), source.end());
      thrust::device_vector<float> dx(n), dy(n, 1.0F);
      thrust::host_vector<float> hy(n);
      timer.run(state, [&] {
        dx = hx;
        launch_chain(thrust::raw_pointer_cast(dx.data()), thrust::raw_pointer_cast(dy.data()), n,
                     stream);
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "thrust sync");
        hy = dy;
        checksum += hy[n / 2];
      }, 2 * bytes);
      break;
    }
  }
  benchmark::DoNotOptimize(checksum);
}

// --- an iterative loop whose host reads one scalar (a reduction) every iteration ------------

__global__ void relax(float* x, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    x[i] = 0.999F * x[i] + 0.0005F;
  }
}

void iterative(benchmark::State& state, Contender who) {
  if (!need_cuda(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::size_t bytes = n * sizeof(float);
  sa::Stream owner;
  const cudaStream_t stream = owner.ref().cuda_stream();
  CallTimer timer(stream);
  const std::vector<float> source = random_floats(n, 13);
  std::size_t temp_bytes = 0;
  SMARTARRAY_CUDA_TRY(cub::DeviceReduce::Sum(nullptr, temp_bytes, static_cast<const float*>(nullptr),
                                             static_cast<float*>(nullptr), n, stream),
                      "size the reduction temporary");
  float checksum = 0;
  auto reduce = [&](const float* in, float* out, void* temp) {
    SMARTARRAY_CUDA_TRY(cub::DeviceReduce::Sum(temp, temp_bytes, in, out, n, stream), "reduce");
  };
  auto relax_on = [&](float* x) {
    relax<<<blocks_for(n), 256, 0, stream>>>(x, n);
    SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch relax");
  };

  switch (who) {
    case Contender::naive: {
      std::vector<float> x = source;
      float sum = 0;
      timer.run(state, [&] {
        float *dx = nullptr, *dsum = nullptr;
        void* temp = nullptr;
        SMARTARRAY_CUDA_TRY(cudaMalloc(&dx, bytes), "naive x");
        SMARTARRAY_CUDA_TRY(cudaMalloc(&dsum, sizeof(float)), "naive sum");
        SMARTARRAY_CUDA_TRY(cudaMalloc(&temp, temp_bytes), "naive temp");
        SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(dx, x.data(), bytes, cudaMemcpyHostToDevice, stream), "in");
        relax_on(dx);
        reduce(dx, dsum, temp);
        SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(x.data(), dx, bytes, cudaMemcpyDeviceToHost, stream), "out");
        SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(&sum, dsum, sizeof(float), cudaMemcpyDeviceToHost, stream), "sum");
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "naive sync");
        for (void* p : {static_cast<void*>(dx), static_cast<void*>(dsum), temp}) {
          SMARTARRAY_CUDA_TRY(cudaFree(p), "free");
        }
        checksum += sum;
      });
      break;
    }
    case Contender::explicit_copies: {
      float *dx = nullptr, *dsum = nullptr, *hsum = nullptr;
      void* temp = nullptr;
      SMARTARRAY_CUDA_TRY(cudaMalloc(&dx, bytes), "x");
      SMARTARRAY_CUDA_TRY(cudaMalloc(&dsum, sizeof(float)), "sum");
      SMARTARRAY_CUDA_TRY(cudaMalloc(&temp, temp_bytes), "temp");
      SMARTARRAY_CUDA_TRY(cudaMallocHost(&hsum, sizeof(float)), "pinned sum");
      SMARTARRAY_CUDA_TRY(cudaMemcpy(dx, source.data(), bytes, cudaMemcpyHostToDevice), "upload");
      timer.run(state, [&] {
        relax_on(dx);
        reduce(dx, dsum, temp);
        SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(hsum, dsum, sizeof(float), cudaMemcpyDeviceToHost, stream), "sum");
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "sync");
        checksum += *hsum;
      });
      for (void* p : {static_cast<void*>(dx), static_cast<void*>(dsum), temp}) {
        SMARTARRAY_CUDA_TRY(cudaFree(p), "free");
      }
      SMARTARRAY_CUDA_TRY(cudaFreeHost(hsum), "free");
      break;
    }
    case Contender::smartarray: {
      sa::SmartArray<float> x(source);
      sa::SmartArray<float> sum(1);
      sa::SmartArray<std::byte> temp(temp_bytes);
      timer.run(state, [&] {
        float* dx = x.device_view(Access::read_write, owner).data();
        relax_on(dx);
        reduce(dx, sum.device_view(Access::discard, owner).data(),
               temp.device_view(Access::discard, owner).data());
        checksum += std::as_const(sum)[0];
      });
      break;
    }
    case Contender::managed_prefetch:
    case Contender::managed: {
      float *x = nullptr, *sum = nullptr;
      void* temp = nullptr;
      SMARTARRAY_CUDA_TRY(cudaMallocManaged(&x, bytes), "managed x");
      SMARTARRAY_CUDA_TRY(cudaMallocManaged(&sum, sizeof(float)), "managed sum");
      SMARTARRAY_CUDA_TRY(cudaMalloc(&temp, temp_bytes), "temp");
      std::memcpy(x, source.data(), bytes);
      const bool prefetch = who == Contender::managed_prefetch;
      const cudaMemLocation device{cudaMemLocationTypeDevice, sa::device_properties().ordinal};
      const cudaMemLocation host{cudaMemLocationTypeHost, 0};
      timer.run(state, [&] {
        if (prefetch) {
          SMARTARRAY_CUDA_TRY(cudaMemPrefetchAsync(x, bytes, device, 0, stream), "prefetch x");
        }
        relax_on(x);
        reduce(x, sum, temp);
        if (prefetch) {
          SMARTARRAY_CUDA_TRY(cudaMemPrefetchAsync(sum, sizeof(float), host, 0, stream), "prefetch sum");
        }
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "sync");
        checksum += *sum;
      });
      for (void* p : {static_cast<void*>(x), static_cast<void*>(sum), temp}) {
        SMARTARRAY_CUDA_TRY(cudaFree(p), "free");
      }
      break;
    }
    case Contender::mapped: {
      float *hx = nullptr, *hsum = nullptr, *dx = nullptr, *dsum = nullptr;
      void* temp = nullptr;
      SMARTARRAY_CUDA_TRY(cudaHostAlloc(&hx, bytes, cudaHostAllocMapped), "mapped x");
      SMARTARRAY_CUDA_TRY(cudaHostAlloc(&hsum, sizeof(float), cudaHostAllocMapped), "mapped sum");
      SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&dx, hx, 0), "pointer");
      SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&dsum, hsum, 0), "pointer");
      SMARTARRAY_CUDA_TRY(cudaMalloc(&temp, temp_bytes), "temp");
      std::memcpy(hx, source.data(), bytes);
      timer.run(state, [&] {
        relax_on(dx);
        reduce(dx, dsum, temp);
        SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "sync");
        checksum += *hsum;
      });
      for (float* p : {hx, hsum}) SMARTARRAY_CUDA_TRY(cudaFreeHost(p), "free");
      SMARTARRAY_CUDA_TRY(cudaFree(temp), "free");
      break;
    }
    case Contender::thrust: {
      thrust::device_vector<float> x(source.begin(), source.end());
      timer.run(state, [&] {
        relax_on(thrust::raw_pointer_cast(x.data()));
        checksum += thrust::reduce(thrust::cuda::par.on(stream), x.begin(), x.end(), 0.0F);
      });
      break;
    }
  }
  benchmark::DoNotOptimize(checksum);
}

// --- migration bandwidth: a host-written array read once on the device ----------------------

enum class Transfer { smartarray, pinned_memcpy, pageable_memcpy };

void bandwidth(benchmark::State& state, Transfer how) {
  if (!need_cuda(state)) return;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  sa::Stream owner;
  const cudaStream_t stream = owner.ref().cuda_stream();
  cudaEvent_t start = nullptr, stop = nullptr;
  SMARTARRAY_CUDA_TRY(cudaEventCreate(&start), "event");
  SMARTARRAY_CUDA_TRY(cudaEventCreate(&stop), "event");
  void* device = nullptr;
  void* host = nullptr;
  std::vector<std::byte> pageable;
  sa::SmartArray<std::byte> array(bytes, std::byte{1});
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
      SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream), "copy");
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

// --- registration --------------------------------------------------------------------------

const std::pair<const char*, Contender> contenders[] = {
    {"naive", Contender::naive},
    {"explicit", Contender::explicit_copies},
    {"smartarray", Contender::smartarray},
    {"managed_prefetch", Contender::managed_prefetch},
    {"managed", Contender::managed},
    {"mapped", Contender::mapped},
    {"thrust", Contender::thrust},
};

void register_all() {
  auto add = [](const std::string& name, auto fn, std::initializer_list<std::int64_t> sizes) {
    auto* b = benchmark::RegisterBenchmark(name.c_str(), fn);
    for (auto n : sizes) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  };
  for (const auto& [name, who] : contenders) {
    add(std::string("BM_add/") + name, [who = who](benchmark::State& s) { elementwise<Add>(s, who); },
        {100'000, 1'000'000, 16'000'000});
    add(std::string("BM_gaussian/") + name,
        [who = who](benchmark::State& s) { elementwise<Gaussian>(s, who); }, {1'000'000});
    add(std::string("BM_polar/") + name,
        [who = who](benchmark::State& s) { elementwise<Polar>(s, who); }, {1'000'000});
    add(std::string("BM_chain10/") + name, [who = who](benchmark::State& s) { chain(s, who); },
        {1'000'000, 16'000'000});
    add(std::string("BM_iterative/") + name,
        [who = who](benchmark::State& s) { iterative(s, who); }, {1'000'000});
  }
  const std::pair<const char*, Transfer> transfers[] = {{"smartarray", Transfer::smartarray},
                                                        {"pinned_memcpy", Transfer::pinned_memcpy},
                                                        {"pageable_memcpy", Transfer::pageable_memcpy}};
  for (const auto& [name, how] : transfers) {
    add(std::string("BM_bandwidth/") + name, [how = how](benchmark::State& s) { bandwidth(s, how); },
        {4 << 10, 1 << 20, 16 << 20, 256 << 20});
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
