// The elementwise workloads of bench_pipelines (add, gaussian, polar): one kernel over inputs that
// the host wrote once, with results that stay on the device.
#include "pipelines/workloads.cuh"

#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/detail/cuda_check.hpp>

#include "bench_support.cuh"
#include "pipelines/contender.cuh"

#include <cuda/std/array>
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace smartarray::bench::pipelines {
namespace {

struct Add {
  static constexpr int inputs = 2;
  static constexpr double tolerance = 1e-6;
  SMARTARRAY_HOST_DEVICE float operator()(const cuda::std::array<const float*, 2>& in,
                                          std::size_t i) const {
    return in[0][i] + in[1][i];
  }
};

struct Gaussian {
  static constexpr int inputs = 1;
  static constexpr double tolerance = 1e-5;  // host and device expf differ by a few ulps
  float mean = 0.25F;
  float sigma = 1.5F;
  SMARTARRAY_HOST_DEVICE float operator()(const cuda::std::array<const float*, 1>& in,
                                          std::size_t i) const {
    const float z = (in[0][i] - mean) / sigma;
    return expf(-0.5F * z * z) / (sigma * 2.5066282746310002F);
  }
};

SMARTARRAY_HOST_DEVICE float polar_distance(float r1, float t1, float r2, float t2) {
  return sqrtf(r1 * r1 + r2 * r2 - 2.0F * r1 * r2 * cosf(t1 - t2));
}

struct Polar {
  static constexpr int inputs = 4;
  // Near r1 = r2 and t1 = t2 the root's argument is a small difference of terms up to 8, rounded
  // (and cosf evaluated) differently on host and device: some 2^-19 apart, whose roots differ by
  // up to sqrt(2^-19) = 1.4e-3.
  static constexpr double tolerance = 4e-3;
  SMARTARRAY_HOST_DEVICE float operator()(const cuda::std::array<const float*, 4>& in,
                                          std::size_t i) const {
    return polar_distance(in[0][i], in[1][i], in[2][i], in[3][i]);
  }
};

/// The kernel body of an elementwise workload: out[i] = op(in, i).
template <typename Op>
struct Elementwise {
  cuda::std::array<const float*, Op::inputs> in;
  float* out;
  Op op;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { out[i] = op(in, i); }
};

template <typename Op>
void launch_elementwise(const Raw& raw, const cuda::std::array<const float*, Op::inputs>& in,
                        float* out, std::size_t n) {
  raw.launch(n, Elementwise<Op>{in, out, Op{}});
}

/// Checks `result` against `Op` evaluated on the host over `inputs`.
template <typename Op>
void check_elementwise(Checks& checks, const std::vector<std::vector<float>>& inputs,
                       std::span<const float> result) {
  cuda::std::array<const float*, Op::inputs> host_in{};
  for (int k = 0; k < Op::inputs; ++k) host_in[k] = inputs[k].data();
  checks.results(result, [&](std::size_t i) { return static_cast<double>(Op{}(host_in, i)); },
                 Op::tolerance);
}

/// The base of the contenders of one elementwise call, with inputs written once by the host and
/// results that stay on the device.
class ElementwiseContender : public Contender {
 public:
  /// Works on `stream`, with the inputs and the host reference of `Op`.
  template <typename Op>
  ElementwiseContender(StreamRef stream, std::type_identity<Op> /*op*/)
      : Contender(stream), inputs_(Op::inputs), check_result_(check_elementwise<Op>) {}

  void set_up(std::size_t n) final {
    n_ = n;
    bytes_ = n * sizeof(float);
    for (int k = 0; k < inputs_; ++k) host_inputs_.push_back(random_floats(n, 7 + k));
    result_.resize(n);
    place_inputs();
  }
  void check(Checks& checks) override {
    collect_result();
    check_result_(checks, host_inputs_, result_);
  }

 protected:
  /// Allocates the contender's buffers and writes the host inputs into them.
  virtual void place_inputs() {}
  /// Copies the last call's output into `result_`, where `call` did not write it.
  virtual void collect_result() {}

  std::size_t n_ = 0;
  std::size_t bytes_ = 0;
  std::vector<std::vector<float>> host_inputs_;
  std::vector<float> result_;  // the last call's output, checked at the end

 private:
  int inputs_;
  void (*check_result_)(Checks&, const std::vector<std::vector<float>>&, std::span<const float>);
};

/// Every call allocates, copies the inputs in, launches, copies the result out and frees.
template <typename Op>
class Naive final : public ElementwiseContender {
 public:
  static constexpr int K = Op::inputs;
  explicit Naive(StreamRef stream) : ElementwiseContender(stream, std::type_identity<Op>{}) {}

  void call() override {
    cuda::std::array<const float*, K> in{};
    std::array<float*, K> dev{};
    for (int k = 0; k < K; ++k) {
      dev[k] = raw_.allocate_device<float>(n_);
      raw_.copy_to_device_async(dev[k], host_inputs_[k].data(), bytes_);
      in[k] = dev[k];
    }
    float* d_out = raw_.allocate_device<float>(n_);
    launch_elementwise<Op>(raw_, in, d_out, n_);
    raw_.copy_to_host_async(result_.data(), d_out, bytes_);
    raw_.synchronize();
    for (float* p : dev) raw_.free_device(p);
    raw_.free_device(d_out);
  }
};

/// Device buffers filled once before timing: a call is the launch alone.
template <typename Op>
class ExplicitCopies final : public ElementwiseContender {
 public:
  static constexpr int K = Op::inputs;
  explicit ExplicitCopies(StreamRef stream)
      : ElementwiseContender(stream, std::type_identity<Op>{}) {}

  void call() override { launch_elementwise<Op>(raw_, in_, dev_[K], n_); }
  void tear_down() override {
    for (float* p : dev_) raw_.free_device(p);
  }

 private:
  void place_inputs() override {
    for (auto& p : dev_) p = raw_.allocate_device<float>(n_);
    for (int k = 0; k < K; ++k) {
      raw_.copy_to_device_async(dev_[k], host_inputs_[k].data(), bytes_);
      in_[k] = dev_[k];
    }
    raw_.synchronize();
  }
  void collect_result() override {
    raw_.copy_to_host_async(result_.data(), dev_[K], bytes_);
    raw_.synchronize();
  }

  std::array<float*, K + 1> dev_{};
  cuda::std::array<const float*, K> in_{};
};

/// SmartArrays whose device copies stay valid: a call copies nothing.
template <typename Op>
class WithSmartArray final : public ElementwiseContender {
 public:
  static constexpr int K = Op::inputs;
  explicit WithSmartArray(StreamRef stream)
      : ElementwiseContender(stream, std::type_identity<Op>{}) {}

  void call() override {
    cuda::std::array<const float*, K> in{};
    for (int k = 0; k < K; ++k) in[k] = std::as_const(inputs_[k]).device_view(stream_).data();
    launch_elementwise<Op>(raw_, in, out_.device_view(Access::discard, stream_).data(), n_);
  }
  void check(Checks& checks) override {
    checks.transfers(0, 0);
    ElementwiseContender::check(checks);
  }

 private:
  void place_inputs() override {
    for (int k = 0; k < K; ++k) inputs_.emplace_back(host_inputs_[k]);
    out_ = SmartArray<float>(n_);
  }
  void collect_result() override {
    const auto host = std::as_const(out_).host_view();
    result_.assign(host.begin(), host.end());
  }

  std::vector<SmartArray<float>> inputs_;
  SmartArray<float> out_;
};

/// Managed memory; managed_prefetch prefetches every buffer to the device in each call.
template <typename Op>
class Managed final : public ElementwiseContender {
 public:
  static constexpr int K = Op::inputs;
  Managed(StreamRef stream, ContenderKind kind)
      : ElementwiseContender(stream, std::type_identity<Op>{}),
        prefetch_(kind == ContenderKind::managed_prefetch) {}

  void call() override {
    if (prefetch_) {
      for (float* p : mem_) {
        prefetch_managed(p, bytes_, PrefetchTo::device, stream_.cuda_stream(), "prefetch");
      }
    }
    launch_elementwise<Op>(raw_, in_, mem_[K], n_);
  }
  void tear_down() override {
    for (float* p : mem_) SMARTARRAY_CUDA_TRY(cudaFree(p), "managed free");
  }

 private:
  void place_inputs() override {
    for (auto& p : mem_) SMARTARRAY_CUDA_TRY(cudaMallocManaged(&p, bytes_), "managed buffer");
    for (int k = 0; k < K; ++k) {
      std::memcpy(mem_[k], host_inputs_[k].data(), bytes_);
      in_[k] = mem_[k];
    }
  }
  void collect_result() override { result_.assign(mem_[K], mem_[K] + n_); }

  bool prefetch_;
  std::array<float*, K + 1> mem_{};
  cuda::std::array<const float*, K> in_{};
};

/// Mapped host memory, which the kernel reads and writes over the bus.
template <typename Op>
class Mapped final : public ElementwiseContender {
 public:
  static constexpr int K = Op::inputs;
  explicit Mapped(StreamRef stream) : ElementwiseContender(stream, std::type_identity<Op>{}) {}

  void call() override { launch_elementwise<Op>(raw_, in_, out_, n_); }
  void tear_down() override {
    for (float* p : host_) SMARTARRAY_CUDA_TRY(cudaFreeHost(p), "mapped free");
  }

 private:
  void place_inputs() override {
    for (int k = 0; k <= K; ++k) {
      SMARTARRAY_CUDA_TRY(cudaHostAlloc(&host_[k], bytes_, cudaHostAllocMapped), "mapped buffer");
      float* device_ptr = nullptr;
      SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&device_ptr, host_[k], 0), "mapped pointer");
      if (k < K) {
        std::memcpy(host_[k], host_inputs_[k].data(), bytes_);
        in_[k] = device_ptr;
      } else {
        out_ = device_ptr;
      }
    }
  }
  void collect_result() override { result_.assign(host_[K], host_[K] + n_); }

  std::array<float*, K + 1> host_{};
  cuda::std::array<const float*, K> in_{};
  float* out_ = nullptr;
};

/// thrust::device_vector and thrust::transform, which does not synchronize (par_nosync).
template <typename Op>
class Thrust final : public ElementwiseContender {
 public:
  static constexpr int K = Op::inputs;
  explicit Thrust(StreamRef stream) : ElementwiseContender(stream, std::type_identity<Op>{}) {}

  void call() override {
    const auto policy = thrust::cuda::par_nosync.on(stream_.cuda_stream());
    if constexpr (K == 1) {
      thrust::transform(policy, inputs_[0].begin(), inputs_[0].end(), out_.begin(),
                        [] __device__(float x) {
                          return Gaussian{}(cuda::std::array<const float*, 1>{&x}, 0);
                        });
    } else if constexpr (K == 2) {
      thrust::transform(policy, inputs_[0].begin(), inputs_[0].end(), inputs_[1].begin(),
                        out_.begin(), [] __device__(float a, float b) { return a + b; });
    } else {
      auto first = thrust::make_zip_iterator(inputs_[0].begin(), inputs_[1].begin(),
                                             inputs_[2].begin(), inputs_[3].begin());
      thrust::transform(policy, first, first + static_cast<std::ptrdiff_t>(n_), out_.begin(),
                        [] __device__(thrust::tuple<float, float, float, float> t) {
                          return polar_distance(thrust::get<0>(t), thrust::get<1>(t),
                                                thrust::get<2>(t), thrust::get<3>(t));
                        });
    }
  }

 private:
  void place_inputs() override {
    for (int k = 0; k < K; ++k) {
      inputs_.emplace_back(host_inputs_[k].begin(), host_inputs_[k].end());
    }
    out_ = thrust::device_vector<float>(n_);
  }
  void collect_result() override { thrust::copy(out_.begin(), out_.end(), result_.begin()); }

  std::vector<thrust::device_vector<float>> inputs_;
  thrust::device_vector<float> out_;
};

template <typename Op>
std::unique_ptr<Contender> make_elementwise(ContenderKind kind, StreamRef stream) {
  return make_contender<Naive<Op>, ExplicitCopies<Op>, WithSmartArray<Op>, Managed<Op>,
                        Mapped<Op>, Thrust<Op>>(kind, stream);
}

}  // namespace

std::unique_ptr<Contender> make_add(ContenderKind kind, StreamRef stream) {
  return make_elementwise<Add>(kind, stream);
}

std::unique_ptr<Contender> make_gaussian(ContenderKind kind, StreamRef stream) {
  return make_elementwise<Gaussian>(kind, stream);
}

std::unique_ptr<Contender> make_polar(ContenderKind kind, StreamRef stream) {
  return make_elementwise<Polar>(kind, stream);
}

}  // namespace smartarray::bench::pipelines
