// bench_stream's hand-written reductions: the one-pass dot kernel, the products for CUB's
// transform iterator, the host backend's serial stand-in, and `Reductions` (CUB's Sum of one
// float array) for BM_reduce. Included by bench_stream.cu only: like the rest of that binary, it
// defines its names in an unnamed namespace.
#pragma once

#include <smartarray/smartarray.hpp>
#include <smartarray/runtime/detail/cuda_check.hpp>

#include "bench_support.cuh"
#include "stream_data.cuh"
#include "stream_kernels.cuh"

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

namespace sa = smartarray;
using sa::SmartArray;
using sa::bench::Raw;

namespace {

// --- BM_stream/dot: the one-pass kernel and the serial stand-in ----------------------------------

constexpr unsigned dot_block = 256;

/// The best hand-written dot product: one pass over a grid that fills the device, 16-byte loads,
/// each block's partial folded by the last block to finish (CUDA's threadFenceReduction sample),
/// which leaves `arrived` at 0 for the next call.
template <typename T>
__global__ void __launch_bounds__(dot_block)
    dot_one_pass_kernel(const T* a, const T* b, std::size_t n, T* partials, unsigned* arrived,
                        T* result) {
  constexpr unsigned lanes = Vector16<T>::lanes;
  const std::size_t vectors = n / lanes;
  const std::size_t stride = std::size_t{gridDim.x} * dot_block;
  const std::size_t first = std::size_t{blockIdx.x} * dot_block + threadIdx.x;
  T sum = 0;
#pragma unroll 4
  for (std::size_t j = first; j < vectors; j += stride) {
    const Vector16<T> x = load16(a, j);
    const Vector16<T> y = load16(b, j);
    for (unsigned k = 0; k < lanes; ++k) sum += x.lane[k] * y.lane[k];
  }
  for (std::size_t i = vectors * lanes + first; i < n; i += stride) sum += a[i] * b[i];
  using BlockReduce = cub::BlockReduce<T, dot_block>;
  __shared__ typename BlockReduce::TempStorage scratch;
  __shared__ bool last;
  const T block_sum = BlockReduce(scratch).Sum(sum);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = block_sum;
    __threadfence();
    last = atomicAdd(arrived, 1U) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  T total = 0;
  for (unsigned k = threadIdx.x; k < gridDim.x; k += dot_block) total += __ldcg(&partials[k]);
  __syncthreads();  // the block reduce's scratch is used again
  total = BlockReduce(scratch).Sum(total);
  if (threadIdx.x == 0) {
    *result = total;
    *arrived = 0;
  }
}

/// a[i] b[i], for CUB's transform iterator.
template <typename T>
struct Product {
  const T* a;
  const T* b;
  SMARTARRAY_HOST_DEVICE T operator()(std::size_t i) const { return a[i] * b[i]; }
};

/// The host backend's stand-in for the hand-written reductions: out[0] = init + x[0] y[0] + ...
/// (or + x[0] + ... without y), launched on one item.
template <typename T>
struct SerialSum {
  const T* x;
  const T* y;
  std::size_t n;
  T* out;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t) const {
    T sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += y != nullptr ? x[i] * y[i] : x[i];
    *out = sum;
  }
};

// --- BM_reduce: CUB's Sum ------------------------------------------------------------------------

/// The reductions of one float array: smartarray's call and CUB's Sum with its temporary storage
/// allocated once.
class Reductions {
 public:
  Reductions(std::size_t n, sa::StreamRef stream)
      : n_(n), stream_(stream), raw_(stream), a_(device_values<float>(n, 1, raw_, stream)),
        in_(a_.device_view(stream).data()) {
    if (raw_.cuda()) {
      SMARTARRAY_CUDA_TRY(cub::DeviceReduce::Sum(nullptr, temp_bytes_, in_,
                                                 static_cast<float*>(nullptr), static_cast<int>(n),
                                                 stream.cuda_stream()),
                          "size CUB's temporary storage");
    }
    temp_ = raw_.allocate_device<std::byte>(std::max<std::size_t>(temp_bytes_, 1));
    out_ = raw_.allocate_device<float>(1);
    host_ = raw_.allocate_pinned<float>(1);
  }
  ~Reductions() {
    raw_.free_device(temp_);
    raw_.free_device(out_);
    raw_.free_pinned(host_);
  }
  Reductions(const Reductions&) = delete;
  Reductions& operator=(const Reductions&) = delete;

  [[nodiscard]] const SmartArray<float>& array() const noexcept { return a_; }

  /// Enqueues CUB's Sum into device memory (a serial loop on the host backend).
  void cub_sum() {
    if (raw_.cuda()) {
      std::size_t bytes = temp_bytes_;
      SMARTARRAY_CUDA_TRY(cub::DeviceReduce::Sum(temp_, bytes, in_, out_, static_cast<int>(n_),
                                                 stream_.cuda_stream()),
                          "CUB's Sum");
    } else {
      raw_.launch(1, SerialSum<float>{in_, nullptr, n_, out_});
    }
  }
  /// CUB's Sum, a 4-byte copy into pinned memory and a synchronize: the value on the host.
  float cub_sum_to_host() {
    cub_sum();
    raw_.copy_to_host_async(host_, out_, sizeof(float));
    raw_.synchronize();
    return *host_;
  }

 private:
  std::size_t n_;
  sa::StreamRef stream_;
  Raw raw_;
  SmartArray<float> a_;
  const float* in_;
  std::size_t temp_bytes_ = 0;
  std::byte* temp_ = nullptr;
  float* out_ = nullptr;
  float* host_ = nullptr;
};

}  // namespace
