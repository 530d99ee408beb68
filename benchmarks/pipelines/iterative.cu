// The iterative workload of bench_pipelines: a loop whose host reads one scalar (a reduction)
// every iteration.
#include "pipelines/workloads.cuh"

#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/detail/cuda_check.hpp>

#include "bench_support.cuh"
#include "pipelines/contender.cuh"

#include <benchmark/benchmark.h>
#include <cub/device/device_reduce.cuh>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/reduce.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

namespace smartarray::bench::pipelines {
namespace {

/// One relaxation step towards 0.5: x = 0.999 x + 0.0005.
struct Relax {
  static constexpr float keep = 0.999F;
  static constexpr float add = 0.0005F;
  float* x;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { x[i] = keep * x[i] + add; }
};

/// The host backend's reduction, launched on one item: out[0] = in[0] + ... + in[n-1], summed in
/// double. (Host and device: for_each_index compiles its kernel under nvcc, though the cuda
/// backend reduces with CUB.)
struct SerialSum {
  const float* in;
  float* out;
  std::size_t n;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t) const {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += static_cast<double>(in[i]);
    *out = static_cast<float>(sum);
  }
};

/// The sum that the host reads after `calls` calls from x0: x = keep^calls x0 + b, where b folds
/// the additions, in double.
double iterative_reference(const std::vector<float>& x0, std::int64_t calls) {
  double scale = 1;
  double offset = 0;
  for (std::int64_t call = 0; call < calls; ++call) {
    scale *= static_cast<double>(Relax::keep);
    offset = static_cast<double>(Relax::keep) * offset + static_cast<double>(Relax::add);
  }
  const double total = std::accumulate(x0.begin(), x0.end(), 0.0);
  return scale * total + offset * static_cast<double>(x0.size());
}

/// The base of the iterative workload's contenders: each call relaxes x on the device, sums it
/// and reads the sum on the host.
class IterativeContender : public Contender {
 public:
  using Contender::Contender;

  void set_up(std::size_t n) final {
    n_ = n;
    bytes_ = n * sizeof(float);
    source_ = random_floats(n, 13);
    if (raw_.cuda()) {
      SMARTARRAY_CUDA_TRY(
          cub::DeviceReduce::Sum(nullptr, temp_bytes_, static_cast<const float*>(nullptr),
                                 static_cast<float*>(nullptr), n, stream_.cuda_stream()),
          "size the reduction temporary");
    }
    place_inputs();
  }
  void check(Checks& checks) override {
    benchmark::DoNotOptimize(sum_read_);
    // The relaxation's float rounding drifts by at most 1 / (1 - keep) half-ulps: 6e-5 relative.
    const double expected = iterative_reference(source_, checks.calls());
    checks.results(std::span<const float>(&sum_read_, 1), [&](std::size_t) { return expected; },
                   1e-4);
  }

 protected:
  /// Allocates the contender's buffers and writes x before the first call into them.
  virtual void place_inputs() {}

  /// Enqueues out[0] = in[0] + ... + in[n-1]: CUB with `temp` on the cuda backend, SerialSum on
  /// the host backend.
  void reduce(const float* in, float* out, void* temp) {
    if (raw_.cuda()) {
      SMARTARRAY_CUDA_TRY(
          cub::DeviceReduce::Sum(temp, temp_bytes_, in, out, n_, stream_.cuda_stream()), "reduce");
    } else {
      raw_.launch(1, SerialSum{in, out, n_});
    }
  }

  std::size_t n_ = 0;
  std::size_t bytes_ = 0;
  std::vector<float> source_;
  std::size_t temp_bytes_ = 0;
  float sum_read_ = 0;  // the sum the host read in the last call
};

/// Every call allocates, copies x in, relaxes and sums, copies x and the sum out and frees.
class Naive final : public IterativeContender {
 public:
  using IterativeContender::IterativeContender;

  void call() override {
    float* dx = raw_.allocate_device<float>(n_);
    float* dsum = raw_.allocate_device<float>(1);
    std::byte* temp = raw_.allocate_device<std::byte>(temp_bytes_);
    raw_.copy_to_device_async(dx, x_.data(), bytes_);
    raw_.launch(n_, Relax{dx});
    reduce(dx, dsum, temp);
    raw_.copy_to_host_async(x_.data(), dx, bytes_);
    raw_.copy_to_host_async(&sum_read_, dsum, sizeof(float));
    raw_.synchronize();
    raw_.free_device(dx);
    raw_.free_device(dsum);
    raw_.free_device(temp);
  }

 private:
  void place_inputs() override { x_ = source_; }

  std::vector<float> x_;
};

/// x stays on the device; a call copies only the sum out, into pinned memory.
class ExplicitCopies final : public IterativeContender {
 public:
  using IterativeContender::IterativeContender;

  void call() override {
    raw_.launch(n_, Relax{dx_});
    reduce(dx_, dsum_, temp_);
    raw_.copy_to_host_async(hsum_, dsum_, sizeof(float));
    raw_.synchronize();
    sum_read_ = *hsum_;
  }
  void tear_down() override {
    raw_.free_device(dx_);
    raw_.free_device(dsum_);
    raw_.free_device(temp_);
    raw_.free_pinned(hsum_);
  }

 private:
  void place_inputs() override {
    dx_ = raw_.allocate_device<float>(n_);
    dsum_ = raw_.allocate_device<float>(1);
    temp_ = raw_.allocate_device<std::byte>(temp_bytes_);
    hsum_ = raw_.allocate_pinned<float>(1);
    raw_.copy_to_device_async(dx_, source_.data(), bytes_);
    raw_.synchronize();
  }

  float *dx_ = nullptr, *dsum_ = nullptr, *hsum_ = nullptr;
  std::byte* temp_ = nullptr;
};

/// SmartArrays: x stays on the device, and reading the sum is the one D2H per call.
class WithSmartArray final : public IterativeContender {
 public:
  using IterativeContender::IterativeContender;

  void call() override {
    float* dx = x_.device_view(Access::read_write, stream_).data();
    raw_.launch(n_, Relax{dx});
    reduce(dx, sum_.device_view(Access::discard, stream_).data(),
           temp_.device_view(Access::discard, stream_).data());
    sum_read_ = std::as_const(sum_)[0];
  }
  void check(Checks& checks) override {
    checks.transfers(0, 1);
    IterativeContender::check(checks);
  }

 private:
  void place_inputs() override {
    x_ = SmartArray<float>(source_);
    sum_ = SmartArray<float>(1);
    temp_ = SmartArray<std::byte>(temp_bytes_);
  }

  SmartArray<float> x_;
  SmartArray<float> sum_;
  SmartArray<std::byte> temp_;
};

/// Managed x and sum; managed_prefetch prefetches x to the device and the sum back.
class Managed final : public IterativeContender {
 public:
  Managed(StreamRef stream, ContenderKind kind)
      : IterativeContender(stream), prefetch_(kind == ContenderKind::managed_prefetch) {}

  void call() override {
    const cudaStream_t stream = stream_.cuda_stream();
    if (prefetch_) {
      prefetch_managed(x_, bytes_, PrefetchTo::device, stream, "prefetch x");
    }
    raw_.launch(n_, Relax{x_});
    reduce(x_, sum_, temp_);
    if (prefetch_) {
      prefetch_managed(sum_, sizeof(float), PrefetchTo::host, stream, "prefetch sum");
    }
    SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "sync");
    sum_read_ = *sum_;
  }
  void tear_down() override {
    for (void* p : {static_cast<void*>(x_), static_cast<void*>(sum_), temp_}) {
      SMARTARRAY_CUDA_TRY(cudaFree(p), "free");
    }
  }

 private:
  void place_inputs() override {
    SMARTARRAY_CUDA_TRY(cudaMallocManaged(&x_, bytes_), "managed x");
    SMARTARRAY_CUDA_TRY(cudaMallocManaged(&sum_, sizeof(float)), "managed sum");
    SMARTARRAY_CUDA_TRY(cudaMalloc(&temp_, temp_bytes_), "temp");
    std::memcpy(x_, source_.data(), bytes_);
  }

  bool prefetch_;
  float *x_ = nullptr, *sum_ = nullptr;
  void* temp_ = nullptr;
};

/// Mapped host x and sum, which the kernels read and write over the bus.
class Mapped final : public IterativeContender {
 public:
  using IterativeContender::IterativeContender;

  void call() override {
    raw_.launch(n_, Relax{dx_});
    reduce(dx_, dsum_, temp_);
    SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream_.cuda_stream()), "sync");
    sum_read_ = *hsum_;
  }
  void tear_down() override {
    for (float* p : {hx_, hsum_}) SMARTARRAY_CUDA_TRY(cudaFreeHost(p), "free");
    SMARTARRAY_CUDA_TRY(cudaFree(temp_), "free");
  }

 private:
  void place_inputs() override {
    SMARTARRAY_CUDA_TRY(cudaHostAlloc(&hx_, bytes_, cudaHostAllocMapped), "mapped x");
    SMARTARRAY_CUDA_TRY(cudaHostAlloc(&hsum_, sizeof(float), cudaHostAllocMapped), "mapped sum");
    SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&dx_, hx_, 0), "pointer");
    SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&dsum_, hsum_, 0), "pointer");
    SMARTARRAY_CUDA_TRY(cudaMalloc(&temp_, temp_bytes_), "temp");
    std::memcpy(hx_, source_.data(), bytes_);
  }

  float *hx_ = nullptr, *hsum_ = nullptr, *dx_ = nullptr, *dsum_ = nullptr;
  void* temp_ = nullptr;
};

/// A thrust::device_vector x, summed by thrust::reduce, which returns the sum to the host.
class Thrust final : public IterativeContender {
 public:
  using IterativeContender::IterativeContender;

  void call() override {
    raw_.launch(n_, Relax{thrust::raw_pointer_cast(x_.data())});
    sum_read_ =
        thrust::reduce(thrust::cuda::par.on(stream_.cuda_stream()), x_.begin(), x_.end(), 0.0F);
  }

 private:
  void place_inputs() override {
    x_ = thrust::device_vector<float>(source_.begin(), source_.end());
  }

  thrust::device_vector<float> x_;
};

}  // namespace

std::unique_ptr<Contender> make_iterative(ContenderKind kind, StreamRef stream) {
  return make_contender<Naive, ExplicitCopies, WithSmartArray, Managed, Mapped, Thrust>(kind,
                                                                                        stream);
}

}  // namespace smartarray::bench::pipelines
