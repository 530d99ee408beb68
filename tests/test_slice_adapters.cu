// The element-wise adapters (transform, map, reduce, copy, fill) on slices, with exact transfer
// counts: a slice moves only the bytes of its range that a side lacks, and a write marks only its
// range stale on the other side. launch on slices, and slices that their array no longer holds,
// are in test_slice_launch.cu. Every body runs on the host and on the cuda backend.
#include "support/functors.hpp"
#include "support/slice_helpers.hpp"
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cuda/std/functional>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;
using sa::test::slices::host_copy;
using sa::test::slices::n;
using sa::test::slices::part;
using sa::test::slices::poisoned;
using sa::test::slices::TwicePlusOne;

namespace {

// --- functors (namespace scope: nvcc cannot place device lambdas in a TEST body) ----------------

using smartarray::test::Add;
struct Half {
  SMARTARRAY_HOST_DEVICE double operator()(int i) const { return i * 0.5; }
};

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
