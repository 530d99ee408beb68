// The chain10 workload of bench_pipelines: a chain of 10 kernels with one host write before and
// one host read after.
#include "pipelines/workloads.cuh"

#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/detail/cuda_check.hpp>

#include "bench_support.cuh"
#include "pipelines/contender.cuh"

#include <benchmark/benchmark.h>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace smartarray::bench::pipelines {
namespace {

constexpr int chain_steps = 10;

/// The factor a of step `step` of the chain.
constexpr float chain_factor(int step) { return 0.001F * static_cast<float>(step + 1); }

/// One kernel of the chain: y = a x + y / 2.
struct ChainStep {
  const float* x;
  float* y;
  float a;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { y[i] = a * x[i] + y[i] * 0.5F; }
};

void launch_chain(const Raw& raw, const float* x, float* y, std::size_t n) {
  for (int k = 0; k < chain_steps; ++k) raw.launch(n, ChainStep{x, y, chain_factor(k)});
}

/// y after `calls` calls of the chain from y0: every step is linear, so y = c x + d y0, with c and
/// d folded here in double.
struct ChainReference {
  double c = 0;
  double d = 1;
  explicit ChainReference(std::int64_t calls) {
    for (std::int64_t call = 0; call < calls; ++call) {
      for (int k = 0; k < chain_steps; ++k) {
        c = static_cast<double>(chain_factor(k)) + 0.5 * c;
        d *= 0.5;
      }
    }
  }
};

/// The base of the chain's contenders: each call writes x on the host, runs the chain on the
/// device and reads y on the host.
class ChainContender : public Contender {
 public:
  using Contender::Contender;

  void set_up(std::size_t n) final {
    n_ = n;
    bytes_ = n * sizeof(float);
    source_ = random_floats(n, 11);
    start_ = random_floats(n, 12);
    result_.resize(n);
    place_inputs();
  }
  /// The host write of x and the host read of y.
  [[nodiscard]] std::size_t bytes_per_call() const override { return 2 * bytes_; }
  void check(Checks& checks) override {
    collect_result();
    benchmark::DoNotOptimize(checksum_);
    const ChainReference reference(checks.calls());
    const auto expected = [&](std::size_t i) {
      return reference.c * static_cast<double>(source_[i]) +
             reference.d * static_cast<double>(start_[i]);
    };
    checks.results(result_, expected, 1e-5);
  }

 protected:
  /// Allocates the contender's buffers and writes the host inputs into them.
  virtual void place_inputs() {}
  /// Copies y after the last call into `result_`.
  virtual void collect_result() = 0;

  std::size_t n_ = 0;
  std::size_t bytes_ = 0;
  std::vector<float> source_;
  std::vector<float> start_;   // y before the first call
  std::vector<float> result_;  // y after the last call
  float checksum_ = 0;
};

/// Every step of the chain allocates, copies x and y in, copies y out and frees.
class Naive final : public ChainContender {
 public:
  using ChainContender::ChainContender;

  void call() override {
    for (int k = 0; k < chain_steps; ++k) {
      float* dx = raw_.allocate_device<float>(n_);
      float* dy = raw_.allocate_device<float>(n_);
      raw_.copy_to_device_async(dx, x_.data(), bytes_);
      raw_.copy_to_device_async(dy, y_.data(), bytes_);
      raw_.launch(n_, ChainStep{dx, dy, chain_factor(k)});
      raw_.copy_to_host_async(y_.data(), dy, bytes_);
      raw_.synchronize();
      raw_.free_device(dx);
      raw_.free_device(dy);
    }
    checksum_ += y_[n_ / 2];
  }
  /// None: unlike the other contenders, the naive chain's runs report no bytes processed.
  [[nodiscard]] std::size_t bytes_per_call() const override { return 0; }

 private:
  void place_inputs() override {
    x_ = source_;
    y_ = start_;
  }
  void collect_result() override { result_ = y_; }

  std::vector<float> x_;
  std::vector<float> y_;
};

/// Pinned and device buffers allocated once: a call copies x in and y out.
class ExplicitCopies final : public ChainContender {
 public:
  using ChainContender::ChainContender;

  void call() override {
    std::memcpy(hx_, source_.data(), bytes_);
    raw_.copy_to_device_async(dx_, hx_, bytes_);
    launch_chain(raw_, dx_, dy_, n_);
    raw_.copy_to_host_async(hy_, dy_, bytes_);
    raw_.synchronize();
    checksum_ += hy_[n_ / 2];
  }
  void tear_down() override {
    for (float* p : {hx_, hy_}) raw_.free_pinned(p);
    for (float* p : {dx_, dy_}) raw_.free_device(p);
  }

 private:
  void place_inputs() override {
    hx_ = raw_.allocate_pinned<float>(n_);
    hy_ = raw_.allocate_pinned<float>(n_);
    dx_ = raw_.allocate_device<float>(n_);
    dy_ = raw_.allocate_device<float>(n_);
    raw_.copy_to_device_async(dy_, start_.data(), bytes_);
    raw_.synchronize();
  }
  void collect_result() override { result_.assign(hy_, hy_ + n_); }

  float *hx_ = nullptr, *hy_ = nullptr, *dx_ = nullptr, *dy_ = nullptr;
};

/// The host writes x and reads y through SmartArrays: one H2D and one D2H per call.
class WithSmartArray final : public ChainContender {
 public:
  using ChainContender::ChainContender;

  void call() override {
    auto host_x = x_.host_view(Access::discard);
    std::memcpy(host_x.data(), source_.data(), bytes_);
    launch_chain(raw_, std::as_const(x_).device_view(stream_).data(),
                 y_.device_view(Access::read_write, stream_).data(), n_);
    checksum_ += std::as_const(y_)[n_ / 2];
  }
  void check(Checks& checks) override {
    checks.transfers(1, 1);
    ChainContender::check(checks);
  }

 private:
  void place_inputs() override {
    x_ = SmartArray<float>(n_);
    y_ = SmartArray<float>(start_);
  }
  void collect_result() override {
    const auto host = std::as_const(y_).host_view();
    result_.assign(host.begin(), host.end());
  }

  SmartArray<float> x_;
  SmartArray<float> y_;
};

/// Managed x and y; managed_prefetch prefetches both to the device and y back to the host.
class Managed final : public ChainContender {
 public:
  Managed(StreamRef stream, ContenderKind kind)
      : ChainContender(stream), prefetch_(kind == ContenderKind::managed_prefetch) {}

  void call() override {
    const cudaStream_t stream = stream_.cuda_stream();
    std::memcpy(x_, source_.data(), bytes_);
    if (prefetch_) {
      prefetch_managed(x_, bytes_, PrefetchTo::device, stream, "prefetch x");
      prefetch_managed(y_, bytes_, PrefetchTo::device, stream, "prefetch y");
    }
    launch_chain(raw_, x_, y_, n_);
    if (prefetch_) {
      prefetch_managed(y_, bytes_, PrefetchTo::host, stream, "prefetch y back");
    }
    SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream), "managed sync");
    checksum_ += y_[n_ / 2];
  }
  void tear_down() override {
    for (float* p : {x_, y_}) SMARTARRAY_CUDA_TRY(cudaFree(p), "free");
  }

 private:
  void place_inputs() override {
    SMARTARRAY_CUDA_TRY(cudaMallocManaged(&x_, bytes_), "managed x");
    SMARTARRAY_CUDA_TRY(cudaMallocManaged(&y_, bytes_), "managed y");
    std::copy(start_.begin(), start_.end(), y_);
  }
  void collect_result() override { result_.assign(y_, y_ + n_); }

  bool prefetch_;
  float *x_ = nullptr, *y_ = nullptr;
};

/// Mapped host x and y, which the kernels read and write over the bus.
class Mapped final : public ChainContender {
 public:
  using ChainContender::ChainContender;

  void call() override {
    std::memcpy(hx_, source_.data(), bytes_);
    launch_chain(raw_, dx_, dy_, n_);
    SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream_.cuda_stream()), "mapped sync");
    checksum_ += hy_[n_ / 2];
  }
  void tear_down() override {
    for (float* p : {hx_, hy_}) SMARTARRAY_CUDA_TRY(cudaFreeHost(p), "free");
  }

 private:
  void place_inputs() override {
    SMARTARRAY_CUDA_TRY(cudaHostAlloc(&hx_, bytes_, cudaHostAllocMapped), "mapped x");
    SMARTARRAY_CUDA_TRY(cudaHostAlloc(&hy_, bytes_, cudaHostAllocMapped), "mapped y");
    SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&dx_, hx_, 0), "mapped x pointer");
    SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&dy_, hy_, 0), "mapped y pointer");
    std::copy(start_.begin(), start_.end(), hy_);
  }
  void collect_result() override { result_.assign(hy_, hy_ + n_); }

  float *hx_ = nullptr, *hy_ = nullptr, *dx_ = nullptr, *dy_ = nullptr;
};

/// thrust::host_vector and device_vector, assigned to copy x in and y out.
class Thrust final : public ChainContender {
 public:
  using ChainContender::ChainContender;

  void call() override {
    dx_ = hx_;
    launch_chain(raw_, thrust::raw_pointer_cast(dx_.data()), thrust::raw_pointer_cast(dy_.data()),
                 n_);
    SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(stream_.cuda_stream()), "thrust sync");
    hy_ = dy_;
    checksum_ += hy_[n_ / 2];
  }

 private:
  void place_inputs() override {
    hx_ = thrust::host_vector<float>(source_.begin(), source_.end());
    dx_ = thrust::device_vector<float>(n_);
    dy_ = thrust::device_vector<float>(start_.begin(), start_.end());
    hy_ = thrust::host_vector<float>(n_);
  }
  void collect_result() override { result_.assign(hy_.begin(), hy_.end()); }

  thrust::host_vector<float> hx_;
  thrust::device_vector<float> dx_;
  thrust::device_vector<float> dy_;
  thrust::host_vector<float> hy_;
};

}  // namespace

std::unique_ptr<Contender> make_chain(ContenderKind kind, StreamRef stream) {
  return make_contender<Naive, ExplicitCopies, WithSmartArray, Managed, Mapped, Thrust>(kind,
                                                                                        stream);
}

}  // namespace smartarray::bench::pipelines
