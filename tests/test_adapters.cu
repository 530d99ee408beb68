// The kernel adapters (launch, transform, map, reduce, copy, fill) and shaped views, with exact
// transfer counts. Every body runs on the host and on the cuda backend, except those that launch a
// raw __global__ kernel, which skip themselves on the host backend.
#include "support/functors.hpp"
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include "../examples/transpose_kernels.cuh"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cuda/std/functional>

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;

namespace {

constexpr std::size_t n = 5000;

// --- functors (namespace scope: nvcc cannot place device lambdas in a TEST body) ----------------

using smartarray::test::Add;
struct Axpy {
  SMARTARRAY_HOST_DEVICE float operator()(float a, float x, float y) const { return a * x + y; }
};
struct TwicePlusOne {
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return x * 2 + 1; }
};
struct Mixed {
  SMARTARRAY_HOST_DEVICE double operator()(int i, float x) const { return i * 0.5 + x; }
};
struct Square {
  sa::DeviceView<float> v;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { v[i] = v[i] * v[i]; }
};

/// Reads a column-major matrix through a reshape done in device code.
struct ReadFOrder {
  sa::DeviceView<const float> flat;
  sa::DeviceView<float> out;
  std::size_t rows;
  std::size_t cols;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const {
    const auto m = sa::reshape(flat, sa::f_order, rows, cols);
    out[i] = m(i / cols, i % cols);  // out is the same matrix in C order
  }
};

/// out = transpose(in) through mdspans, one element per index (runs on both backends).
template <typename Layout>
struct TransposeOp {
  sa::ShapedView<const float, 2, Layout> in;
  sa::ShapedView<float, 2, Layout> out;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t r = i / in.extent(1);
    const std::size_t c = i % in.extent(1);
    out(c, r) = in(r, c);
  }
};

// --- kernels (raw __global__: cuda backend only) -------------------------------------------------

__global__ void axpy_kernel(float a, sa::DeviceView<const float> x, sa::DeviceView<float> y) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < y.size();
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    y[i] = a * x[i] + y[i];
  }
}

__global__ void fill_kernel(sa::DeviceView<float> out, float value) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < out.size();
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = value;
  }
}

__global__ void pointer_kernel(const float* in, float* inout, std::size_t count) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    inout[i] += in[i];
  }
}

__global__ void span_kernel(cuda::std::span<const float> in, cuda::std::span<float> out) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < out.size();
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i] * 2;
  }
}

/// Sums each block's slice in dynamic shared memory (exercises the shared_bytes overload).
__global__ void block_sum_kernel(sa::DeviceView<const float> in, sa::DeviceView<float> sums) {
  extern __shared__ float partial[];
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < in.size() ? in[i] : 0.0F;
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0;
    for (unsigned k = 0; k < blockDim.x; ++k) sum += partial[k];
    sums[blockIdx.x] = sum;
  }
}

/// Every parameter kind that launch understands, for the deduction tests.
__global__ void intents_kernel(sa::DeviceView<const float> read, sa::DeviceView<float> read_write,
                               sa::DeviceView<float> discarded, const float* read_pointer,
                               float* read_write_pointer, float scalar) {
  (void)read, (void)read_write, (void)discarded, (void)read_pointer, (void)read_write_pointer,
      (void)scalar;
}

__global__ void in_out_kernel(sa::DeviceView<const float> in, sa::DeviceView<float> out) {
  (void)in, (void)out;
}

__global__ void shaped_kernel(sa::ShapedView<const float, 2> in,
                              sa::ShapedView<float, 3, sa::FLayout> out) {
  (void)in, (void)out;
}

// A raw __global__ kernel cannot run on the host backend (GTEST_SKIP must be in the test body).
#define SKIP_ON_HOST_BACKEND()                                                  \
  if (sa::test::on_host_backend()) GTEST_SKIP() << "a raw __global__ kernel needs the cuda backend"

smartarray::source_location where_of(const sa::GridDim& grid) { return grid.where(); }
smartarray::source_location where_of(const sa::StreamAt& stream) { return stream.where(); }

std::vector<float> added(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

/// Element-wise comparison within float rounding: nvcc contracts a * x + y into one fused
/// multiply-add, so device results may differ from the host's in the last bit.
void expect_close(const std::vector<float>& got, const std::vector<float>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], expected[i], 1e-5F * std::max(1.0F, std::fabs(expected[i]))) << "at " << i;
  }
}

SmartArray<float> poisoned(std::size_t count) {
  SmartArray<float> a(count);
  sa::test::poison(a.data(), a.size());
  return a;
}

}  // namespace

// --- transform and map -------------------------------------------------------------------------

TEST(Transform, IntoOutCopiesEachInputInOnceAndNothingIntoTheOutput) {
  const auto va = random_values<float>(n);
  const auto vb = random_values<float>(n);
  SmartArray<float> a(va), b(vb);
  SmartArray<float> c = poisoned(n);
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0, .h2d_bytes = 2 * n * sizeof(float)});
    sa::transform(sa::out(c), Add{}, a, b);
  }
  EXPECT_EQ(c.transfer_stats().h2d_count, 0U);
  EXPECT_FALSE(c.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(sa::Side::device));
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::transform(sa::out(c), Add{}, a, b);
  }
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(host_copy(c), added(va, vb));
  }
}

TEST(Transform, PlainOutputIsDiscardedLikeOut) {
  const auto va = random_values<float>(n);
  SmartArray<float> a(va);
  SmartArray<float> c = poisoned(n);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0});
    sa::transform(c, TwicePlusOne{}, a);
  }
  EXPECT_EQ(host_copy(c), sa::test::scaled(va));
}

TEST(Transform, ScalarsBroadcastAndATrailingStreamIsUsed) {
  sa::Stream stream;
  const auto vx = random_values<float>(n);
  const auto vy = random_values<float>(n);
  const float alpha = sa::test::random_value<float>();
  SmartArray<float> x(vx), y(vy);
  SmartArray<float> z = poisoned(n);
  sa::transform(sa::out(z), Axpy{}, alpha, x, y, stream);
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = alpha * vx[i] + vy[i];
  expect_close(host_copy(z), expected);
}

TEST(Transform, InPlaceReadsTheOutputBeforeOverwritingIt) {
  const auto va = random_values<float>(n);
  SmartArray<float> a(va);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0});
    sa::transform(a, TwicePlusOne{}, a);
  }
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  EXPECT_EQ(host_copy(a), sa::test::scaled(va));
}

TEST(Transform, TakesDeviceViewsAsOperandsAndOutput) {
  const auto va = random_values<float>(n);
  const auto vb = random_values<float>(n);
  SmartArray<float> a(va), b(vb);
  SmartArray<float> c = poisoned(n);
  const sa::DeviceView<float> output = c.device_view(Access::discard);
  sa::transform(output, Add{}, std::as_const(a).device_view(), std::as_const(b).device_view());
  EXPECT_EQ(host_copy(c), added(va, vb));
}

TEST(Transform, WaitsForWorkOnAnotherStreamWithoutBlockingTheHost) {
  sa::Stream producer, consumer;
  const auto va = random_values<float>(n);
  SmartArray<float> a(va);
  SmartArray<float> c = poisoned(n);
  sa::test::scale_on_device(a, producer);
  sa::transform(sa::out(c), TwicePlusOne{}, a, consumer);
  EXPECT_EQ(host_copy(c), sa::test::scaled(sa::test::scaled(va)));
}

TEST(Transform, SizeMismatchNamesBothSizesAndAcquiresNothing) {
  SmartArray<float> a(random_values<float>(n)), b(random_values<float>(n - 1));
  SmartArray<float> c(n);
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  try {
    sa::transform(sa::out(c), Add{}, a, b);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("operand 2 has " + std::to_string(n - 1)), std::string::npos) << message;
    EXPECT_NE(message.find("the output has " + std::to_string(n)), std::string::npos) << message;
  }
  EXPECT_TRUE(c.is_valid(sa::Side::host));
  EXPECT_FALSE(a.is_valid(sa::Side::device));
}

TEST(Map, ReturnsANewArrayValidOnTheDeviceOnly) {
  sa::Stream stream;
  const auto va = random_values<float>(n);
  const auto vb = random_values<float>(n);
  SmartArray<float> a(va), b(vb);
  SmartArray<float> c;
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0});
    c = sa::map(Add{}, a, b, stream);
  }
  EXPECT_EQ(c.size(), n);
  EXPECT_FALSE(c.is_valid(sa::Side::host));
  EXPECT_TRUE(c.is_valid(sa::Side::device));
  {
    sa::ExpectTransfers expect({.d2h = 1});
    EXPECT_EQ(host_copy(c), added(va, vb));
  }
}

TEST(Map, ResultTypeIsTheFunctorsAndScalarsBroadcast) {
  const auto vi = random_values<int>(n);
  const float shift = sa::test::random_value<float>();
  SmartArray<int> i(vi);
  auto r = sa::map(Mixed{}, i, shift);
  static_assert(std::is_same_v<decltype(r), SmartArray<double>>);
  const auto got = host_copy(r);
  for (std::size_t k = 0; k < n; ++k) ASSERT_EQ(got[k], vi[k] * 0.5 + shift) << k;
}

TEST(Map, SizeMismatchThrowsAndAcquiresNothing) {
  SmartArray<float> a(random_values<float>(10)), b(random_values<float>(12));
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  try {
    (void)sa::map(Add{}, a, b);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("operand 2 has 12 elements"), std::string::npos) << message;
    EXPECT_NE(message.find("has 10"), std::string::npos) << message;
  }
}

TEST(Map, ResultTakesNoHostMemoryUntilTheHostReadsIt) {
  sa::Stream stream;
  const auto va = random_values<float>(n);
  const auto vb = random_values<float>(n);
  const SmartArray<float> a(va), b(vb);
  (void)a.device_view(stream);
  (void)b.device_view(stream);
  const sa::MemoryStats host_before = sa::default_pinned_resource().stats();
  SmartArray<float> c;
  {
    // Inputs already on the device, the result written there with discard intent: no copy, and
    // no host buffer allocated or written.
    sa::ExpectTransfers expect({});
    c = sa::map(Add{}, a, b, stream);
  }
  EXPECT_EQ(sa::default_pinned_resource().stats().total_count, host_before.total_count);
  EXPECT_EQ(sa::default_pinned_resource().stats().current_bytes, host_before.current_bytes);
  EXPECT_EQ(c.capacity(), n);
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(host_copy(c), added(va, vb));
  }
  EXPECT_EQ(sa::default_pinned_resource().stats().total_count, host_before.total_count + 1);
}

TEST(Map, ResultIsAnArrayLikeAnyOther) {
  const auto va = random_values<float>(n);
  SmartArray<float> a(va);
  SmartArray<float> c = sa::map(TwicePlusOne{}, a);
  // Written on the host before it was ever read there: nothing comes back.
  {
    sa::ExpectTransfers expect({});
    c.assign(va.begin(), va.end());
  }
  EXPECT_TRUE(c.is_valid(sa::Side::host));
  EXPECT_FALSE(c.is_valid(sa::Side::device));
  c = sa::map(TwicePlusOne{}, a);
  {
    // An append to the device-valid result: the host copy is made for the tail only.
    sa::ExpectTransfers expect({});
    c.push_back(1.5F);
  }
  auto expected = sa::test::scaled(va);
  expected.push_back(1.5F);
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(host_copy(c), expected);
  }
}

// --- launch: access intents from the kernel's parameter types ----------------------------------

TEST(Launch, TheGridArgumentRecordsTheCallSiteForTheTrace) {
  const auto where = where_of(8);
  EXPECT_EQ(where.line(), static_cast<std::uint_least32_t>(__LINE__ - 1));
  EXPECT_NE(std::string(where.file_name()).find("test_adapters.cu"), std::string::npos);
}

TEST(Launch, TheStreamArgumentOfBindKernelArgsRecordsTheCallSite) {
  const sa::Stream stream;
  for (const auto& where : {where_of(stream), where_of(stream.ref()), where_of({})}) {
    EXPECT_EQ(where.line(), static_cast<std::uint_least32_t>(__LINE__ - 1));
    EXPECT_NE(std::string(where.file_name()).find("test_adapters.cu"), std::string::npos);
  }
  EXPECT_EQ(sa::StreamAt(stream).stream(), stream.ref());
}

TEST(Launch, BindKernelArgsTakesEachAccessFromTheParameterType) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> read(values), read_write(values), discarded = poisoned(n);
  SmartArray<float> read_pointer(values), read_write_pointer(values);
  std::tuple<sa::DeviceView<const float>, sa::DeviceView<float>, sa::DeviceView<float>,
             const float*, float*, float>
      args;
  {
    sa::ExpectTransfers expect({.h2d = 4, .d2h = 0});
    args = sa::bind_kernel_args(intents_kernel, stream, read, read_write, sa::out(discarded),
                                read_pointer, read_write_pointer, 2.5F);
  }
  EXPECT_EQ(discarded.transfer_stats().h2d_count, 0U);
  // read keeps the host valid; read_write and discard make it stale.
  EXPECT_TRUE(read.is_valid(sa::Side::host));
  EXPECT_FALSE(read_write.is_valid(sa::Side::host));
  EXPECT_FALSE(discarded.is_valid(sa::Side::host));
  EXPECT_TRUE(read_pointer.is_valid(sa::Side::host));
  EXPECT_FALSE(read_write_pointer.is_valid(sa::Side::host));
  for (auto* a : {&read, &read_write, &discarded, &read_pointer, &read_write_pointer}) {
    EXPECT_TRUE(a->is_valid(sa::Side::device));
  }
  EXPECT_EQ(std::get<0>(args).data(), std::as_const(read).device_view(stream).data());
  EXPECT_EQ(std::get<0>(args).size(), n);
  EXPECT_EQ(std::get<2>(args).data(), std::as_const(discarded).device_view(stream).data());
  EXPECT_EQ(std::get<3>(args), std::as_const(read_pointer).device_view(stream).data());
  EXPECT_EQ(std::get<4>(args), std::as_const(read_write_pointer).device_view(stream).data());
  EXPECT_EQ(std::get<5>(args), 2.5F);
}

TEST(Launch, AnArrayPassedAsInputAndThroughOutIsReadFirst) {
  SmartArray<float> a(random_values<float>(n));
  const sa::ExpectTransfers expect({.h2d = 1, .d2h = 0});
  const auto args = sa::bind_kernel_args(in_out_kernel, {}, a, sa::out(a));
  EXPECT_EQ(std::get<0>(args).data(), std::get<1>(args).data());
  EXPECT_FALSE(a.is_valid(sa::Side::host));
}

TEST(Launch, ShapedArgumentsBindToShapedViewParameters) {
  SmartArray<float> in(random_values<float>(12)), out = poisoned(24);
  const sa::ExpectTransfers expect({.h2d = 1, .d2h = 0});
  const auto [m, o] = sa::bind_kernel_args(shaped_kernel, {}, sa::shaped(in, sa::c_order, 3, 4),
                                           sa::shaped(sa::out(out), sa::f_order, 2, 3, 4));
  EXPECT_EQ(m.extent(0), 3U);
  EXPECT_EQ(m.extent(1), 4U);
  EXPECT_EQ(o.extent(2), 4U);
  EXPECT_EQ(o.stride(1), 2U);
  EXPECT_EQ(m.data_handle(), std::as_const(in).device_view().data());
  EXPECT_EQ(out.transfer_stats().h2d_count, 0U);
}

TEST(Launch, ShapedExtentsMustMatchTheArraySize) {
  SmartArray<float> in(random_values<float>(12));
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  try {
    (void)sa::shaped(in, sa::c_order, 5, 3);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("12 elements"), std::string::npos) << message;
    EXPECT_NE(message.find("(5, 3)"), std::string::npos) << message;
    EXPECT_NE(message.find("(15)"), std::string::npos) << message;
  }
}

TEST(Launch, OnTheHostBackendARawKernelThrowsAndAcquiresNothing) {
  if (!sa::test::on_host_backend()) GTEST_SKIP() << "checks the host backend's refusal";
  SmartArray<float> x(random_values<float>(n)), y(random_values<float>(n));
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  try {
    sa::launch(axpy_kernel, 4, 128, {}, 2.0F, x, y);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("needs the cuda backend"), std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(y.is_valid(sa::Side::host));
}

TEST(Launch, DeducedIntentsCopyOnlyWhatTheKernelReads) {
  SKIP_ON_HOST_BACKEND();
  sa::Stream stream;
  const auto vx = random_values<float>(n);
  const auto vy = random_values<float>(n);
  SmartArray<float> x(vx), y(vy);
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0});
    sa::launch(axpy_kernel, 8, 128, stream, 2.0F, x, y);
  }
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::launch(axpy_kernel, 8, 128, stream, 3.0F, x, y);
  }
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = 3.0F * vx[i] + (2.0F * vx[i] + vy[i]);
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1});
    expect_close(host_copy(y), expected);
  }
  EXPECT_TRUE(x.is_valid(sa::Side::host));
}

TEST(Launch, OutCopiesNothingIn) {
  SKIP_ON_HOST_BACKEND();
  SmartArray<float> a = poisoned(n);
  const float value = sa::test::random_value<float>();
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::launch(fill_kernel, 8, 128, {}, sa::out(a), value);
  }
  EXPECT_EQ(host_copy(a), std::vector<float>(n, value));
}

TEST(Launch, PointerAndSpanParameters) {
  SKIP_ON_HOST_BACKEND();
  sa::Stream stream;
  const auto va = random_values<float>(n);
  const auto vb = random_values<float>(n);
  SmartArray<float> a(va), b(vb), c = poisoned(n);
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0});
    sa::launch(pointer_kernel, 8, 128, stream, a, b, n);     // b += a
    sa::launch(span_kernel, 8, 128, stream, b, sa::out(c));  // c = 2 b
  }
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = (vb[i] + va[i]) * 2;
  EXPECT_EQ(host_copy(c), expected);
}

TEST(Launch, SharedMemoryOverload) {
  SKIP_ON_HOST_BACKEND();
  constexpr unsigned block = 128;
  const auto values = random_values<float>(n);
  SmartArray<float> in(values);
  const unsigned blocks = (n + block - 1) / block;
  SmartArray<float> sums = poisoned(blocks);
  sa::launch(block_sum_kernel, blocks, block, block * sizeof(float), {}, in, sa::out(sums));
  const auto got = host_copy(sums);
  for (unsigned b = 0; b < blocks; ++b) {
    float expected = 0;
    for (std::size_t i = b * block; i < std::min<std::size_t>(n, (b + 1) * block); ++i) {
      expected += values[i];
    }
    EXPECT_NEAR(got[b], expected, 1e-3F * std::max(1.0F, std::fabs(expected))) << b;
  }
}

TEST(Launch, ABadConfigurationThrowsCudaError) {
  SKIP_ON_HOST_BACKEND();
  SmartArray<float> a(random_values<float>(n));
  EXPECT_THROW(sa::launch(fill_kernel, 1, 4096, {}, sa::out(a), 1.0F), sa::cuda_error);
  sa::launch(fill_kernel, 1, 128, {}, sa::out(a), 1.0F);  // the error did not stick
  EXPECT_EQ(host_copy(a), std::vector<float>(n, 1.0F));
}

// --- reduce, copy, fill -------------------------------------------------------------------------

TEST(Reduce, ReturnsTheValueWithoutCopyingTheArrayBack) {
  const auto values = random_values<int>(n);
  SmartArray<int> a(values);
  const long long sum = std::accumulate(values.begin(), values.end(), 0LL);
  SmartArray<long long> wide(std::vector<long long>(values.begin(), values.end()));
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 1, .d2h_bytes = sizeof(long long)});
    EXPECT_EQ(sa::reduce(wide, 0LL, cuda::std::plus<long long>{}), sum);
  }
  EXPECT_EQ(wide.transfer_stats().d2h_count, 0U);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 1, .d2h_bytes = sizeof(int)});
    EXPECT_EQ(sa::reduce(a, 0, sa::test::Maximum<int>{}),
              *std::max_element(values.begin(), values.end()));
  }
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = sizeof(int)});
    EXPECT_EQ(sa::reduce(a, std::numeric_limits<int>::max(), sa::test::Minimum<int>{}),
              *std::min_element(values.begin(), values.end()));
  }
  EXPECT_EQ(a.transfer_stats().d2h_count, 0U);
}

TEST(Reduce, FloatSumMatchesWithinRounding) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  const double expected = std::accumulate(values.begin(), values.end(), 0.0);
  double magnitude = 0;
  for (float v : values) magnitude += std::fabs(v);
  const float init = 1.5F;
  EXPECT_NEAR(sa::reduce(a, init, cuda::std::plus<float>{}), expected + init, 1e-5 * magnitude);
}

TEST(Reduce, OfADeviceWrittenArrayCopiesNothingButTheResult) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  sa::test::scale_on_device(a);
  const auto scaled = sa::test::scaled(values);
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = sizeof(float)});
  EXPECT_EQ(sa::reduce(a, -1e30F, sa::test::Maximum<float>{}, stream),
            *std::max_element(scaled.begin(), scaled.end()));
  EXPECT_FALSE(a.is_valid(sa::Side::host));
}

TEST(Reduce, AsyncLeavesTheResultOnTheDevice) {
  const auto values = random_values<int>(n);
  SmartArray<int> a(values);
  SmartArray<int> result;
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0});
    result = sa::reduce_async(a, 0, sa::test::Maximum<int>{});
  }
  EXPECT_FALSE(result.is_valid(sa::Side::host));
  EXPECT_EQ(std::as_const(result)[0], *std::max_element(values.begin(), values.end()));
}

TEST(Reduce, AsyncResultTakesNoHostMemoryUntilRead) {
  const auto values = random_values<int>(n);
  const SmartArray<int> a(values);
  (void)a.device_view();
  const sa::MemoryStats host_before = sa::default_pinned_resource().stats();
  SmartArray<int> result;
  {
    sa::ExpectTransfers expect({});
    result = sa::reduce_async(a, 0, sa::test::Maximum<int>{});
  }
  EXPECT_EQ(sa::default_pinned_resource().stats().total_count, host_before.total_count);
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = sizeof(int)});
    EXPECT_EQ(std::as_const(result)[0], *std::max_element(values.begin(), values.end()));
  }
  EXPECT_EQ(sa::default_pinned_resource().stats().total_count, host_before.total_count + 1);
}

TEST(Reduce, AsyncInputMayBeDestroyedBeforeTheResultIsRead) {
  const auto values = random_values<int>(n);
  const int expected = *std::max_element(values.begin(), values.end());
  sa::Stream stream;
  auto a = std::make_optional<SmartArray<int>>(values);
  std::promise<void> release = sa::test::gate(stream);  // the reduction runs after the destruction
  SmartArray<int> result;
  {
    sa::ExpectTransfers expect({.h2d = 1});
    result = sa::reduce_async(*a, 0, sa::test::Maximum<int>{}, stream);
    a.reset();
  }
  release.set_value();
  sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = sizeof(int)});
  EXPECT_EQ(std::as_const(result)[0], expected);
}

TEST(Reduce, OfAnEmptyArrayIsInitAndTouchesNothing) {
  const SmartArray<float> empty;
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  EXPECT_EQ(sa::reduce(empty, 4.25F, cuda::std::plus<float>{}), 4.25F);
}

TEST(Copy, IsOneDeviceToDeviceCopyIntoADiscardedDestination) {
  const auto values = random_values<float>(n);
  SmartArray<float> src(values);
  SmartArray<float> dst = poisoned(n);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .d2d = 1, .d2d_bytes = n * sizeof(float)});
    sa::copy(dst, src);
  }
  EXPECT_EQ(dst.transfer_stats().h2d_count, 0U);
  EXPECT_EQ(dst.transfer_stats().d2d_count, 1U);  // counted on the destination, once
  EXPECT_EQ(dst.transfer_stats().d2d_bytes, n * sizeof(float));
  EXPECT_EQ(src.transfer_stats().d2d_count, 0U);
  EXPECT_FALSE(dst.is_valid(sa::Side::host));
  EXPECT_TRUE(src.is_valid(sa::Side::host));
  EXPECT_EQ(host_copy(dst), values);
}

TEST(Copy, SizeMismatchNamesBothSizesAndAcquiresNothing) {
  SmartArray<float> src(random_values<float>(7)), dst(9);
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0, .d2d = 0});
  try {
    sa::copy(dst, src);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("copy of 7 elements into an array of 9"), std::string::npos) << message;
  }
}

TEST(Fill, DiscardsAndWritesEveryElement) {
  SmartArray<int> a(random_values<int>(n));
  const int value = sa::test::random_value<int>();
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::fill(a, value);
  }
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  EXPECT_EQ(host_copy(a), std::vector<int>(n, value));
}

// --- a chain of ten device operations ----------------------------------------------------------

TEST(Chain, TenKernelsCopyEachInputInOnceAndTheResultOutOnce) {
  sa::Stream stream;
  const auto vx = random_values<float>(n);
  const auto vy = random_values<float>(n);
  SmartArray<float> x(vx), y(vy);
  SmartArray<float> t(n), u(n), w(n), result = poisoned(n);
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) {
    float rt = vx[i] * 2 + 1;      // 1
    float ru = rt + vy[i];         // 2
    ru = ru * 2 + 1;               // 3
    float rw = 0.25F;              // 4
    rw = 0.5F * ru + rw;           // 5
    rt = rw;                       // 6
    rt = rt * rt;                  // 7
    ru = rt + vx[i];               // 8
    float rr = 3.0F * ru + vy[i];  // 9
    rr = rr + rr;                  // 10
    expected[i] = rr;
  }
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 1, .d2d = 1});
    sa::transform(sa::out(t), TwicePlusOne{}, x, stream);                              // 1
    sa::transform(sa::out(u), Add{}, t, y, stream);                                    // 2
    sa::transform(u, TwicePlusOne{}, u, stream);                                       // 3
    sa::fill(w, 0.25F, stream);                                                        // 4
    sa::transform(w, Axpy{}, 0.5F, u, w, stream);                                      // 5
    sa::copy(t, w, stream);                                                            // 6
    sa::for_each_index(n, Square{t.device_view(Access::read_write, stream)}, stream);  // 7
    sa::transform(sa::out(u), Add{}, t, x, stream);                                    // 8
    sa::transform(sa::out(result), Axpy{}, 3.0F, u, y, stream);                        // 9
    sa::transform(result, Add{}, result, result, stream);                              // 10
    expect_close(host_copy(result), expected);
  }
  EXPECT_EQ(x.transfer_stats().h2d_count, 1U);
  EXPECT_EQ(y.transfer_stats().h2d_count, 1U);
  EXPECT_EQ(result.transfer_stats().d2h_count, 1U);
  for (const auto* a : {&t, &u, &w}) {
    EXPECT_EQ(a->transfer_stats().h2d_count + a->transfer_stats().d2h_count, 0U);
  }
}

// --- shaped views -------------------------------------------------------------------------------

TEST(ShapedView, CAndFOrderIndexHostMemory) {
  SmartArray<float> a(random_values<float>(12));
  const auto flat = a.host_view(Access::read);
  const auto c = sa::reshape(flat, sa::c_order, 3, 4);
  const auto f = sa::reshape(flat, sa::f_order, 3, 4);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      EXPECT_EQ(c(i, j), flat[i * 4 + j]);
      EXPECT_EQ(f(i, j), flat[j * 3 + i]);
    }
  }
  EXPECT_TRUE(sa::is_c_contiguous(c));
  EXPECT_FALSE(sa::is_f_contiguous(c));
  EXPECT_TRUE(sa::is_f_contiguous(f));
  EXPECT_FALSE(sa::is_c_contiguous(f));
  EXPECT_EQ(sa::ravel(c).data(), flat.data());
  EXPECT_EQ(sa::ravel(f).size(), 12U);
  const auto again = sa::reshape(c, sa::c_order, 2, 2, 3);
  EXPECT_EQ(again(1, 0, 2), flat[6 + 2]);
  const auto column = sa::reshape(flat, sa::c_order, 12, 1);
  EXPECT_TRUE(sa::is_c_contiguous(column) && sa::is_f_contiguous(column));
  static_assert(std::is_trivially_copyable_v<sa::ShapedView<const float, 3, sa::FLayout>>);
}

TEST(ShapedView, StridedViewsReportTheirContiguity) {
  std::vector<float> storage(24);
  using Strided = cuda::std::layout_stride;
  using Extents = cuda::std::dextents<std::size_t, 2>;
  const cuda::std::array<std::size_t, 2> c_strides{4, 1}, gap_strides{8, 1};
  const cuda::std::mdspan<float, Extents, Strided> dense(
      storage.data(), Strided::mapping<Extents>(Extents(3, 4), c_strides));
  const cuda::std::mdspan<float, Extents, Strided> every_other_row(
      storage.data(), Strided::mapping<Extents>(Extents(3, 4), gap_strides));
  EXPECT_TRUE(sa::is_c_contiguous(dense));
  EXPECT_FALSE(sa::is_f_contiguous(dense));
  EXPECT_FALSE(sa::is_c_contiguous(every_other_row));
  EXPECT_FALSE(sa::is_f_contiguous(every_other_row));
  EXPECT_THROW((void)sa::ravel(every_other_row), sa::logic_error);
}

TEST(ShapedView, ErrorsNameTheSizeAndTheExtents) {
  SmartArray<float> a(random_values<float>(12));
  try {
    (void)sa::reshape(a.device_view(Access::read), sa::c_order, 3, 5);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("reshape of 12 elements to extents (3, 5)"), std::string::npos)
        << message;
    EXPECT_NE(message.find("(15)"), std::string::npos) << message;
  }
  const auto c = sa::reshape(a.host_view(Access::read), sa::c_order, 3, 4);
  try {
    (void)sa::reshape(c, sa::f_order, 4, 3);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("would need a copy"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)sa::reshape(a.host_view(Access::read), sa::f_order, 0, 12), sa::logic_error);
}

TEST(ShapedView, ReshapeWorksInDeviceCode) {
  constexpr std::size_t rows = 37, cols = 23;
  const auto values = random_values<float>(rows * cols);
  SmartArray<float> f_matrix(values);
  SmartArray<float> c_matrix = poisoned(rows * cols);
  sa::for_each_index(rows * cols, ReadFOrder{std::as_const(f_matrix).device_view(),
                                             c_matrix.device_view(Access::discard), rows, cols});
  const auto got = host_copy(c_matrix);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) ASSERT_EQ(got[i * cols + j], values[j * rows + i]);
  }
}

template <typename Layout>
void check_transpose_through_for_each_index(std::size_t rows, std::size_t cols) {
  const auto values = random_values<float>(rows * cols);
  SmartArray<float> in(values);
  SmartArray<float> out = poisoned(rows * cols);
  const sa::ExpectTransfers expect({.h2d = 1, .d2h = 1});
  const TransposeOp<Layout> op{sa::reshape(std::as_const(in).device_view(), Layout{}, rows, cols),
                               sa::reshape(out.device_view(Access::discard), Layout{}, cols, rows)};
  sa::for_each_index(rows * cols, op);
  const auto got = host_copy(out);
  const auto host_in = sa::reshape(std::span<const float>(values), Layout{}, rows, cols);
  const auto host_out = sa::reshape(std::span<const float>(got), Layout{}, cols, rows);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      ASSERT_EQ(host_out(j, i), host_in(i, j)) << i << "," << j;
    }
  }
}

TEST(ShapedView, TransposeMatchesTheHostReferenceInCAndFOrder) {
  check_transpose_through_for_each_index<sa::CLayout>(64, 48);
  check_transpose_through_for_each_index<sa::FLayout>(64, 48);
}

template <typename Layout>
void check_transpose_kernels(std::size_t rows, std::size_t cols) {
  const auto values = random_values<float>(rows * cols);
  SmartArray<float> in(values);
  const auto host_in = sa::reshape(std::span<const float>(values), Layout{}, rows, cols);
  for (auto* kernel : {&transpose::transpose_naive<Layout>, &transpose::transpose_tiled<Layout>}) {
    SmartArray<float> out = poisoned(rows * cols);
    {
      sa::ExpectTransfers expect({.h2d = kernel == &transpose::transpose_naive<Layout> ? 1U : 0U});
      transpose::run<Layout>(kernel, in, out, rows, cols, {});
    }
    const auto got = host_copy(out);
    const auto host_out = sa::reshape(std::span<const float>(got), Layout{}, cols, rows);
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        ASSERT_EQ(host_out(j, i), host_in(i, j)) << i << "," << j;
      }
    }
  }
}

TEST(ShapedView, TransposeKernelsMatchTheHostReferenceInCAndFOrder) {
  SKIP_ON_HOST_BACKEND();
  check_transpose_kernels<sa::CLayout>(1024, 1024);
  check_transpose_kernels<sa::FLayout>(1024, 1024);
  check_transpose_kernels<sa::CLayout>(100, 37);  // partial tiles
  check_transpose_kernels<sa::FLayout>(100, 37);
}
