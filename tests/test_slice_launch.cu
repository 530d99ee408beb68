// launch and bind_kernel_args on slices: each slice's access comes from the kernel's parameter
// type and moves only its own range (out(s) discards it), slices of slices and shaped slices bind
// their own ranges, and kernels see only their slices; then every adapter given a slice that its
// array no longer holds throws std::out_of_range before anything moves. Every body runs on the
// host and on the cuda backend, except those that launch a raw __global__ kernel, which skip
// themselves on the host backend.
#include "support/slice_helpers.hpp"
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cuda/std/functional>
#include <cuda/std/span>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;
using sa::test::slices::host_copy;
using sa::test::slices::n;
using sa::test::slices::part;
using sa::test::slices::poisoned;
using sa::test::slices::TwicePlusOne;

namespace {

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

__global__ void span_kernel(cuda::std::span<const float> in, cuda::std::span<float> out) {
  (void)in, (void)out;
}

__global__ void shaped_kernel(sa::ShapedView<const float, 2> in,
                              sa::ShapedView<float, 3, sa::FLayout> out) {
  (void)in, (void)out;
}

// A raw __global__ kernel cannot run on the host backend (GTEST_SKIP must be in the test body).
#define SKIP_ON_HOST_BACKEND()                                                  \
  if (sa::test::on_host_backend()) GTEST_SKIP() << "a raw __global__ kernel needs the cuda backend"

// --- checks --------------------------------------------------------------------------------------

/// True when `message` names the range [first, last) and an array of `size` elements.
::testing::AssertionResult names_range(const std::string& message, std::size_t first,
                                       std::size_t last, std::size_t size) {
  const std::string range = "[" + std::to_string(first) + ", " + std::to_string(last) + ")";
  const std::string array = "array of " + std::to_string(size) + " elements";
  if (message.find(range) != std::string::npos && message.find(array) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "\"" << message << "\" does not name " << range << " and the " << array;
}

}  // namespace

// --- launch: access intents from the kernel's parameter types ----------------------------------

TEST(SliceLaunch, OutOfASliceNamesItsArrayAndRange) {
  SmartArray<float> a(random_values<float>(n));
  const auto whole = sa::out(a);
  const auto part_of = sa::out(a.slice(3, 5));
  static_assert(std::is_same_v<std::remove_const_t<decltype(part_of)>, sa::Out<float>>);
  EXPECT_FALSE(whole.slice().has_value());
  EXPECT_EQ(whole.size(), n);
  ASSERT_TRUE(part_of.slice().has_value());
  EXPECT_EQ(part_of.slice()->first(), 3U);
  EXPECT_EQ(part_of.size(), 5U);
  EXPECT_EQ(&part_of.array(), &a);
  a.resize(n + 1);  // out(a) follows the array's size; out(s) keeps the slice's
  EXPECT_EQ(whole.size(), n + 1);
  EXPECT_EQ(part_of.size(), 5U);
}

TEST(SliceLaunch, BindKernelArgsTakesEachSliceAccessFromTheParameterType) {
  sa::Stream stream;
  const auto values = random_values<float>(2 * n);
  SmartArray<float> read(values), read_write(values), discarded = poisoned(2 * n);
  SmartArray<float> read_pointer(values), read_write_pointer(values);
  constexpr std::size_t first = n / 2;
  std::tuple<sa::DeviceView<const float>, sa::DeviceView<float>, sa::DeviceView<float>,
             const float*, float*, float>
      args;
  {
    // Four ranges come in; the one under out() does not. Temporaries are fine: slices are views.
    sa::ExpectTransfers expect({.h2d = 4, .d2h = 0, .h2d_bytes = 4 * n * sizeof(float)});
    args = sa::bind_kernel_args(intents_kernel, stream, std::as_const(read).slice(first, n),
                                read_write.slice(first, n), sa::out(discarded.slice(first, n)),
                                read_pointer.slice(first, n), read_write_pointer.slice(first, n),
                                2.5F);
  }
  EXPECT_EQ(discarded.transfer_stats().h2d_count, 0U);
  // read keeps the host valid; read_write and discard make the slice's range stale there.
  EXPECT_TRUE(read.is_valid(sa::Side::host));
  EXPECT_FALSE(read_write.is_valid(sa::Side::host));
  EXPECT_FALSE(discarded.is_valid(sa::Side::host));
  EXPECT_TRUE(read_pointer.is_valid(sa::Side::host));
  EXPECT_FALSE(read_write_pointer.is_valid(sa::Side::host));
  {
    // Outside the slices the host copies are still valid.
    sa::ExpectTransfers expect({});
    EXPECT_EQ(host_copy(read_write.slice(0, first)), part(values, 0, first));
    EXPECT_EQ(host_copy(read_write_pointer.slice(first + n, first)),
              part(values, first + n, first));
  }
  EXPECT_EQ(std::get<0>(args).size(), n);
  EXPECT_EQ(std::get<2>(args).size(), n);
  EXPECT_EQ(std::get<0>(args).data(), std::as_const(read).slice(first, n).device_view().data());
  EXPECT_EQ(std::get<1>(args).data(),
            std::as_const(read_write).slice(first, n).device_view(stream).data());
  EXPECT_EQ(std::get<2>(args).data(),
            std::as_const(discarded).slice(first, n).device_view(stream).data());
  EXPECT_EQ(std::get<3>(args), std::as_const(read_pointer).device_view(stream).data() + first);
  EXPECT_EQ(std::get<4>(args),
            std::as_const(read_write_pointer).device_view(stream).data() + first);
  EXPECT_EQ(std::get<5>(args), 2.5F);
}

TEST(SliceLaunch, AWritableSliceBoundToAReadOnlyParameterIsRead) {
  const auto values = random_values<float>(n);
  SmartArray<float> in(values), out = poisoned(n);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = 100 * sizeof(float)});
    const auto [x, y] =
        sa::bind_kernel_args(span_kernel, {}, in.slice(200, 100), sa::out(out.slice(0, 100)));
    EXPECT_EQ(x.size(), 100U);
    EXPECT_EQ(y.size(), 100U);
  }
  EXPECT_TRUE(in.is_valid(sa::Side::host));
  EXPECT_EQ(out.transfer_stats().h2d_count, 0U);
}

TEST(SliceLaunch, ASliceOfASliceBindsItsOwnRange) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  const sa::Slice<float> outer = a.slice(100, 1000);
  const sa::Slice<float> inner = outer.slice(10, 20);
  EXPECT_EQ(inner.first(), 110U);
  EXPECT_EQ(inner.size(), 20U);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = 20 * sizeof(float)});
    const auto [in, out] =
        sa::bind_kernel_args(in_out_kernel, {}, inner, sa::out(outer.slice(500, 20)));
    EXPECT_EQ(in.size(), 20U);
    EXPECT_EQ(out.data(), in.data() + 490);
  }
  EXPECT_EQ(host_copy(outer.slice(10, 20)), part(values, 110, 20));
}

TEST(SliceLaunch, ASliceAsInputAndThroughOutIsReadFirst) {
  SmartArray<float> a(random_values<float>(n));
  const sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = 50 * sizeof(float)});
  const auto args =
      sa::bind_kernel_args(in_out_kernel, {}, a.slice(7, 50), sa::out(a.slice(7, 50)));
  EXPECT_EQ(std::get<0>(args).data(), std::get<1>(args).data());
  EXPECT_FALSE(a.is_valid(sa::Side::host));
}

TEST(SliceLaunch, ShapedSlicesBindToShapedViewParameters) {
  SmartArray<float> in(random_values<float>(100)), out = poisoned(100);
  const sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = 12 * sizeof(float)});
  const auto [m, o] =
      sa::bind_kernel_args(shaped_kernel, {}, sa::shaped(in.slice(20, 12), sa::c_order, 3, 4),
                           sa::shaped(sa::out(out.slice(50, 24)), sa::f_order, 2, 3, 4));
  EXPECT_EQ(m.extent(0), 3U);
  EXPECT_EQ(m.extent(1), 4U);
  EXPECT_EQ(o.extent(2), 4U);
  EXPECT_EQ(o.stride(1), 2U);
  EXPECT_EQ(m.data_handle(), std::as_const(in).slice(20, 12).device_view().data());
  EXPECT_EQ(out.transfer_stats().h2d_count, 0U);
  EXPECT_THROW((void)sa::shaped(in.slice(0, 12), sa::c_order, 5, 3), sa::logic_error);
}

TEST(SliceLaunch, KernelsSeeOnlyTheirSlices) {
  SKIP_ON_HOST_BACKEND();
  sa::Stream stream;
  const auto vx = random_values<float>(2 * n);
  const auto vy = random_values<float>(2 * n);
  const float value = sa::test::random_value<float>();
  SmartArray<float> x(vx), y(vy);
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0, .h2d_bytes = 2 * n * sizeof(float)});
    sa::launch(axpy_kernel, 8, 128, stream, 2.0F, std::as_const(x).slice(n, n), y.slice(0, n));
  }
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::launch(fill_kernel, 8, 128, stream, sa::out(y.slice(n, n)), value);
  }
  EXPECT_TRUE(x.is_valid(sa::Side::host));
  std::vector<float> expected(2 * n, value);
  for (std::size_t i = 0; i < n; ++i) expected[i] = 2.0F * vx[n + i] + vy[i];
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = 2 * n * sizeof(float)});
  const auto got = host_copy(y);
  for (std::size_t i = 0; i < 2 * n; ++i) {
    ASSERT_NEAR(got[i], expected[i], 1e-5F * std::max(1.0F, std::fabs(expected[i]))) << "at " << i;
  }
}

// --- a slice that the array no longer holds ------------------------------------------------------

TEST(SliceAdapterRange, ASliceThatLeavesTheShrunkArrayThrowsOutOfRange) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  const sa::Slice<float> tail = a.slice(n - 10, 10);
  a.resize(n - 5);
  SmartArray<float> c = poisoned(10);
  const auto unwritten = host_copy(c);
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0, .d2d = 0});
  const auto expect_out_of_range = [&](const auto& call) {
    try {
      call();
      ADD_FAILURE() << "expected std::out_of_range";
    } catch (const std::out_of_range& error) {
      EXPECT_TRUE(names_range(error.what(), n - 10, n, n - 5));
    }
  };
  expect_out_of_range([&] { sa::transform(sa::out(c), TwicePlusOne{}, tail); });
  expect_out_of_range([&] { sa::transform(tail, TwicePlusOne{}, c.slice(0, 10)); });
  expect_out_of_range([&] { (void)sa::map(TwicePlusOne{}, tail); });
  expect_out_of_range([&] { (void)sa::reduce(tail, 0.0F, cuda::std::plus<float>{}); });
  expect_out_of_range([&] { sa::copy(c, tail); });
  expect_out_of_range([&] { sa::fill(tail, 1.5F); });
  expect_out_of_range([&] { (void)sa::bind_kernel_args(in_out_kernel, {}, c, tail); });
  expect_out_of_range([&] { (void)sa::bind_kernel_args(in_out_kernel, {}, c, sa::out(tail)); });
  EXPECT_EQ(host_copy(c), unwritten);
  EXPECT_EQ(host_copy(a), part(values, 0, n - 5));
}
