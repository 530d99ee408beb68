// The kernel adapters (launch, transform, map, reduce, copy, fill) on slices, with exact transfer
// counts: a slice moves only the bytes of its range that a side lacks, and a write marks only its
// range stale on the other side. Every body runs on the host and on the cuda backend, except those
// that launch a raw __global__ kernel, which skip themselves on the host backend.
#include "support/functors.hpp"
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cuda/std/functional>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;

namespace {

constexpr std::size_t n = 4000;

// --- functors (namespace scope: nvcc cannot place device lambdas in a TEST body) ----------------

using smartarray::test::Add;
struct TwicePlusOne {
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return x * 2 + 1; }
};
struct Half {
  SMARTARRAY_HOST_DEVICE double operator()(int i) const { return i * 0.5; }
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

SmartArray<float> poisoned(std::size_t count) {
  SmartArray<float> a(count);
  sa::test::poison(a.data(), a.size());
  return a;
}

/// The elements [first, first + count) of `values`.
template <typename T>
std::vector<T> part(const std::vector<T>& values, std::size_t first, std::size_t count) {
  return {values.begin() + static_cast<std::ptrdiff_t>(first),
          values.begin() + static_cast<std::ptrdiff_t>(first + count)};
}

/// The host elements of a slice, read through a const host view.
template <typename T>
std::vector<std::remove_const_t<T>> host_copy(sa::Slice<T> s) {
  const sa::Slice<const std::remove_const_t<T>> read = s;
  const auto view = read.host_view();
  return {view.begin(), view.end()};
}

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

// --- transform and map -------------------------------------------------------------------------

TEST(SliceTransform, ReadsOnlyTheBytesOfTheSliceThatTheDeviceLacks) {
  constexpr std::size_t size = std::size_t{1} << 16;
  constexpr std::size_t middle = size / 2;
  auto values = random_values<float>(size);
  SmartArray<float> a(values);
  (void)std::as_const(a).device_view();  // valid on both sides
  // Ten elements in the middle, and ten near the start that the transform below does not read.
  for (const std::size_t at : {middle, std::size_t{5}}) {
    const auto written = random_values<float>(10);
    {
      // The host already holds these elements: nothing comes back, and only they become stale on
      // the device.
      sa::ExpectTransfers expect({});
      const auto view = a.slice(at, 10).host_view(Access::read_write);
      std::copy(written.begin(), written.end(), view.begin());
    }
    std::copy(written.begin(), written.end(), values.begin() + static_cast<std::ptrdiff_t>(at));
  }
  EXPECT_FALSE(a.is_valid(sa::Side::device));
  constexpr std::size_t first = middle - 100, count = 1000;
  SmartArray<float> c = poisoned(count);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = 10 * sizeof(float)});
    sa::transform(sa::out(c), TwicePlusOne{}, a.slice(first, count));
  }
  EXPECT_EQ(a.transfer_stats().h2d_bytes, size * sizeof(float) + 10 * sizeof(float));
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_FALSE(a.is_valid(sa::Side::device));  // the elements near the start are still stale
  EXPECT_EQ(c.transfer_stats().h2d_count, 0U);
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = count * sizeof(float)});
    EXPECT_EQ(host_copy(c), sa::test::scaled(part(values, first, count)));
  }
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = 10 * sizeof(float)});
    (void)std::as_const(a).device_view();
  }
  EXPECT_TRUE(a.is_valid(sa::Side::device));
}

TEST(SliceTransform, IntoASliceOverwritesOnlyItsRange) {
  const auto va = random_values<float>(2 * n);
  const auto vb = random_values<float>(3 * n);
  const auto vc = random_values<float>(3 * n);
  const SmartArray<float> a(va);
  SmartArray<float> b(vb), c(vc);
  {
    // The operands' ranges come in, each one copy; the output's range is discarded.
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0, .h2d_bytes = 2 * n * sizeof(float)});
    sa::transform(c.slice(n, n), Add{}, a.slice(n, n), b.slice(2 * n, n));
  }
  EXPECT_EQ(c.transfer_stats().h2d_count, 0U);
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_FALSE(c.is_valid(sa::Side::host));
  std::vector<float> expected = vc;
  for (std::size_t i = 0; i < n; ++i) expected[n + i] = va[n + i] + vb[2 * n + i];
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(host_copy(c), expected);
  }
  // out(s) means the same: discarded, nothing copied in; a second run copies nothing at all.
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::transform(sa::out(c.slice(n, n)), Add{}, a.slice(n, n), b.slice(2 * n, n));
  }
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(host_copy(c), expected);
  }
}

TEST(SliceTransform, ASliceOfTheOutputsArrayMakesItReadWrite) {
  const auto values = random_values<float>(2 * n);
  SmartArray<float> a(values);
  {
    // Same range: the operand's copy in is all the output needs.
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = n * sizeof(float)});
    sa::transform(a.slice(0, n), TwicePlusOne{}, a.slice(0, n));
  }
  auto expected = values;
  for (std::size_t i = 0; i < n; ++i) expected[i] = values[i] * 2 + 1;
  EXPECT_EQ(host_copy(a), expected);
  SmartArray<float> b(values);
  {
    // Another range of the same array: the output is read_write, so its range comes in too.
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0, .h2d_bytes = 2 * n * sizeof(float)});
    sa::transform(sa::out(b.slice(0, n)), TwicePlusOne{}, b.slice(n, n));
  }
  expected = values;
  for (std::size_t i = 0; i < n; ++i) expected[i] = values[n + i] * 2 + 1;
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(host_copy(b), expected);
  }
}

TEST(SliceTransform, SizesAreTheSlicesCounts) {
  SmartArray<float> a(random_values<float>(n)), b(random_values<float>(n));
  SmartArray<float> c(n);
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  try {
    sa::transform(c.slice(0, 10), Add{}, a.slice(0, 10), b.slice(5, 9));
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("operand 2 has 9 elements"), std::string::npos) << message;
    EXPECT_NE(message.find("the output has 10"), std::string::npos) << message;
  }
  try {
    (void)sa::map(Add{}, a.slice(0, 12), b);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("operand 2 has " + std::to_string(n)), std::string::npos) << message;
    EXPECT_NE(message.find("has 12"), std::string::npos) << message;
  }
  EXPECT_FALSE(a.is_valid(sa::Side::device));
}

TEST(SliceMap, ReturnsAnArrayOfTheSlicesSizeValidOnTheDeviceOnly) {
  sa::Stream stream;
  const auto va = random_values<float>(3 * n);
  const auto vb = random_values<float>(n);
  const SmartArray<float> a(va);
  SmartArray<float> b(vb);
  SmartArray<float> c;
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0, .h2d_bytes = 2 * n * sizeof(float)});
    c = sa::map(Add{}, a.slice(2 * n, n), b, stream);
  }
  EXPECT_EQ(c.size(), n);
  EXPECT_FALSE(c.is_valid(sa::Side::host));
  EXPECT_TRUE(c.is_valid(sa::Side::device));
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = va[2 * n + i] + vb[i];
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(host_copy(c), expected);
  }
  const auto vi = random_values<int>(2 * n);
  SmartArray<int> i(vi);
  const auto halves = sa::map(Half{}, i.slice(n / 2, 10).slice(3, 5));
  static_assert(std::is_same_v<std::remove_const_t<decltype(halves)>, SmartArray<double>>);
  const auto got = host_copy(halves);
  ASSERT_EQ(got.size(), 5U);
  for (std::size_t k = 0; k < 5; ++k) EXPECT_EQ(got[k], vi[n / 2 + 3 + k] * 0.5) << k;
}

// --- reduce --------------------------------------------------------------------------------------

TEST(SliceReduce, FoldsOnlyTheSliceAndCopiesInOnlyWhatTheDeviceLacks) {
  const auto values = random_values<int>(n);
  SmartArray<int> a(values);
  const auto max_of = [&](std::size_t first, std::size_t count) {
    return *std::max_element(values.begin() + static_cast<std::ptrdiff_t>(first),
                             values.begin() + static_cast<std::ptrdiff_t>(first + count));
  };
  {
    sa::ExpectTransfers expect(
        {.h2d = 1, .d2h = 1, .h2d_bytes = 1000 * sizeof(int), .d2h_bytes = sizeof(int)});
    EXPECT_EQ(sa::reduce(a.slice(100, 1000), 0, sa::test::Maximum<int>{}), max_of(100, 1000));
  }
  {
    // [500, 1100) is on the device already: only [1100, 1500) comes in.
    sa::ExpectTransfers expect(
        {.h2d = 1, .d2h = 1, .h2d_bytes = 400 * sizeof(int), .d2h_bytes = sizeof(int)});
    EXPECT_EQ(sa::reduce(std::as_const(a).slice(500, 1000), 0, sa::test::Maximum<int>{}),
              max_of(500, 1000));
  }
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_EQ(a.transfer_stats().d2h_count, 0U);
  SmartArray<long long> wide(std::vector<long long>(values.begin(), values.end()));
  const long long sum = std::accumulate(values.begin() + 10, values.begin() + 30, 7LL);
  SmartArray<long long> result;
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = 20 * sizeof(long long)});
    result = sa::reduce_async(wide.slice(10, 20), 7LL, cuda::std::plus<long long>{});
  }
  EXPECT_FALSE(result.is_valid(sa::Side::host));
  EXPECT_EQ(std::as_const(result)[0], sum);
}

TEST(SliceReduce, OfAnEmptySliceIsInitAndTouchesNothing) {
  SmartArray<float> a(random_values<float>(n));
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  EXPECT_EQ(sa::reduce(a.slice(n, 0), 4.25F, cuda::std::plus<float>{}), 4.25F);
  EXPECT_FALSE(a.is_valid(sa::Side::device));
}

// --- copy ----------------------------------------------------------------------------------------

TEST(SliceCopy, AcceptsAnyMixOfArraysAndSlices) {
  const auto vs = random_values<float>(3 * n);
  const auto vd = random_values<float>(3 * n);
  const SmartArray<float> src(vs);
  SmartArray<float> dst(vd);
  SmartArray<float> whole = poisoned(n);
  auto expected = vd;
  {
    // slice into slice: one copy in of the source's range, one device-to-device copy of it.
    sa::ExpectTransfers expect({.h2d = 1,
                                .d2h = 0,
                                .d2d = 1,
                                .h2d_bytes = n * sizeof(float),
                                .d2d_bytes = n * sizeof(float)});
    sa::copy(dst.slice(n, n), src.slice(2 * n, n));
  }
  std::copy(vs.begin() + 2 * n, vs.end(), expected.begin() + n);
  EXPECT_EQ(dst.transfer_stats().d2d_count, 1U);  // counted on the destination's array, once
  EXPECT_EQ(dst.transfer_stats().h2d_count, 0U);
  EXPECT_EQ(src.transfer_stats().d2d_count, 0U);
  {
    // slice into array: the source's range is on the device already.
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0, .d2d = 1, .d2d_bytes = n * sizeof(float)});
    sa::copy(whole, src.slice(2 * n, n));
  }
  EXPECT_FALSE(whole.is_valid(sa::Side::host));
  EXPECT_EQ(whole.transfer_stats().d2d_count, 1U);
  {
    // array into slice: the whole array is on the device already.
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0, .d2d = 1, .d2d_bytes = n * sizeof(float)});
    sa::copy(dst.slice(0, n), whole);
  }
  std::copy(vs.begin() + 2 * n, vs.end(), expected.begin());
  {
    // two ranges of one array: only the source's range is on the device already.
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0, .d2d = 1, .d2d_bytes = 10 * sizeof(float)});
    sa::copy(dst.slice(2 * n, 10), std::as_const(dst).slice(n + 5, 10));
  }
  std::copy(vs.begin() + 2 * n + 5, vs.begin() + 2 * n + 15, expected.begin() + 2 * n);
  EXPECT_EQ(dst.transfer_stats().d2d_count, 3U);
  EXPECT_TRUE(src.is_valid(sa::Side::host));
  {
    // The host copy of the destination is stale in the written ranges only: [0, 2n + 10), one
    // copy.
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = (2 * n + 10) * sizeof(float)});
    EXPECT_EQ(host_copy(dst), expected);
  }
  EXPECT_EQ(host_copy(whole), part(vs, 2 * n, n));
}

TEST(SliceCopy, OntoItselfDoesNothing) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0, .d2d = 0});
  sa::copy(a.slice(10, 100), std::as_const(a).slice(10, 100));
  sa::copy(a, a.slice(0, n));
  sa::copy(a.slice(0, n), a);
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_FALSE(a.is_valid(sa::Side::device));
  EXPECT_EQ(host_copy(a), values);
}

TEST(SliceCopy, OverlappingRangesOfOneArrayThrowAndAcquireNothing) {
  SmartArray<float> a(random_values<float>(n));
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0, .d2d = 0});
  try {
    sa::copy(a.slice(5, 10), a.slice(0, 10));
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("[0, 10) of an array onto its elements [5, 15)"), std::string::npos)
        << message;
  }
  EXPECT_FALSE(a.is_valid(sa::Side::device));
}

TEST(SliceCopy, SizeMismatchNamesBothSizesAndAcquiresNothing) {
  SmartArray<float> src(random_values<float>(n)), dst(random_values<float>(n));
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0, .d2d = 0});
  try {
    sa::copy(dst.slice(0, 9), src.slice(0, 7));
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("copy of 7 elements into a slice of 9"), std::string::npos) << message;
  }
  try {
    sa::copy(dst, src.slice(0, 7));
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("copy of 7 elements into an array of " + std::to_string(n)),
              std::string::npos)
        << message;
  }
}

// --- fill ----------------------------------------------------------------------------------------

TEST(SliceFill, WritesOnlyTheSliceAndTheRestKeepsItsValuesAndValidity) {
  const auto values = random_values<int>(n);
  const int value = sa::test::random_value<int>();
  SmartArray<int> a(values);
  (void)std::as_const(a).device_view();  // valid on both sides
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::fill(a.slice(1000, 500), value);
  }
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(sa::Side::device));
  {
    // Outside the slice the host copy is still valid.
    sa::ExpectTransfers expect({});
    EXPECT_EQ(host_copy(a.slice(0, 1000)), part(values, 0, 1000));
    EXPECT_EQ(host_copy(a.slice(1500, n - 1500)), part(values, 1500, n - 1500));
  }
  auto expected = values;
  std::fill(expected.begin() + 1000, expected.begin() + 1500, value);
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = 500 * sizeof(int)});
    EXPECT_EQ(host_copy(a), expected);
  }
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(sa::Side::device));
}

TEST(SliceFill, OfAHostOnlyArrayLeavesTheRestOnTheHost) {
  const auto values = random_values<float>(n);
  const float value = sa::test::random_value<float>();
  SmartArray<float> a(values);
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::fill(a.slice(n - 10, 10), value);
    sa::fill(a.slice(0, 0), value);  // empty: nothing
  }
  auto expected = values;
  std::fill(expected.end() - 10, expected.end(), value);
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = 10 * sizeof(float)});
    EXPECT_EQ(host_copy(a), expected);
  }
  EXPECT_EQ(a.transfer_stats().h2d_count, 0U);
}

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

TEST(SliceRange, ASliceThatLeavesTheShrunkArrayThrowsOutOfRange) {
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
