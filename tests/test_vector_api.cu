// The std::vector interface of SmartArray<T>: the member types, construction, assignment, element
// access, iteration, capacity and comparisons, each against std::vector and with the residency it
// leaves (exact transfer counts). The modifiers that append, truncate, insert and erase are in
// test_vector_modifiers.cu, the errors in test_vector_bad_input.cu and no_init arrays in
// test_vector_no_init.cu. Every body runs on the host backend and on the cuda backend.
#include <gtest/gtest.h>

#include <compare>
#include <cstddef>
#include <iterator>
#include <limits>
#include <list>
#include <numeric>
#include <ranges>
#include <smartarray/smartarray.hpp>
#include <span>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/device_ops.cuh"
#include "support/test_support.hpp"
#include "support/vector_arrays.cuh"

namespace sa = smartarray;
using sa::Access;
using sa::Side;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_value;
using sa::test::random_values;
using sa::test::scale_on_device;
using sa::test::scaled;
using sa::test::vectors::both_valid;
using sa::test::vectors::device_read_transfers;
using sa::test::vectors::device_written;
using sa::test::vectors::input_range;

namespace {

constexpr std::size_t n = 1000;

}  // namespace

// --- member types
// ---------------------------------------------------------------------------------

TEST(VectorApi, MemberTypesMatchStdVector) {
  using A = SmartArray<double>;
  static_assert(std::is_same_v<A::value_type, double>);
  static_assert(std::is_same_v<A::size_type, std::size_t>);
  static_assert(std::is_same_v<A::difference_type, std::ptrdiff_t>);
  static_assert(std::is_same_v<A::reference, double&>);
  static_assert(std::is_same_v<A::const_reference, const double&>);
  static_assert(std::is_same_v<A::pointer, double*>);
  static_assert(std::is_same_v<A::const_pointer, const double*>);
  static_assert(std::is_same_v<A::allocator_type, sa::Allocator<double>>);
  static_assert(std::is_same_v<A::iterator, sa::HostIterator<double>>);
  static_assert(std::is_same_v<A::const_iterator, sa::HostIterator<const double>>);
  static_assert(std::contiguous_iterator<A::iterator>);
  static_assert(std::contiguous_iterator<A::const_iterator>);
  static_assert(std::is_convertible_v<A::iterator, A::const_iterator>);
  static_assert(!std::is_convertible_v<A::const_iterator, A::iterator>);
  static_assert(!std::is_convertible_v<A::iterator, double*>);
  static_assert(std::is_same_v<A::reverse_iterator, std::reverse_iterator<A::iterator>>);
  static_assert(
      std::is_same_v<A::const_reverse_iterator, std::reverse_iterator<A::const_iterator>>);
  static_assert(std::ranges::contiguous_range<A>);
  static_assert(std::ranges::sized_range<A>);
  static_assert(std::ranges::contiguous_range<const A>);
  static_assert(std::is_nothrow_move_constructible_v<A>);
  static_assert(std::is_nothrow_move_assignable_v<A>);
  static_assert(std::is_nothrow_swappable_v<A>);
  EXPECT_EQ(A::max_size(),
            std::size_t(std::numeric_limits<std::ptrdiff_t>::max()) / sizeof(double));
}

// --- construction
// ---------------------------------------------------------------------------------

TEST(VectorApi, DefaultConstructedIsEmpty) {
  const sa::ExpectTransfers expect({});
  SmartArray<float> a;
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.size(), 0U);
  EXPECT_EQ(a.capacity(), 0U);
  EXPECT_EQ(a.begin(), a.end());
  EXPECT_EQ(a.cbegin(), a.cend());
  EXPECT_EQ(a.rbegin(), a.rend());
}

TEST(VectorApi, CountConstructorsFillAndAreHostValid) {
  const SmartArray<int> zeros(n);
  EXPECT_EQ(zeros.size(), n);
  EXPECT_EQ(zeros.capacity(), n);
  EXPECT_EQ(host_copy(zeros), std::vector<int>(n));
  const int value = random_value<int>();
  const SmartArray<int> filled(n, value);
  EXPECT_EQ(host_copy(filled), std::vector<int>(n, value));
  EXPECT_TRUE(filled.is_valid(Side::host));
  EXPECT_FALSE(filled.is_valid(Side::device));
  EXPECT_EQ(filled.transfer_stats(), sa::TransferStats{});
}

TEST(VectorApi, IteratorRangeConstructorsTakeEveryIteratorCategory) {
  const auto values = random_values<int>(n);
  const SmartArray<int> from_contiguous(values.begin(), values.end());
  EXPECT_EQ(host_copy(from_contiguous), values);
  EXPECT_EQ(from_contiguous.capacity(), n);
  const std::list<int> list(values.begin(), values.end());
  const SmartArray<int> from_forward(list.begin(), list.end());
  EXPECT_EQ(host_copy(from_forward), values);
  std::istringstream in;
  const auto [first, last] = input_range(in, values);
  const SmartArray<int> from_input(first, last);
  EXPECT_EQ(host_copy(from_input), values);
  const SmartArray deduced(list.begin(), list.end());  // CTAD
  static_assert(std::is_same_v<decltype(deduced), const SmartArray<int>>);
  EXPECT_EQ(host_copy(deduced), values);
  const SmartArray<double> converted(values.begin(), values.end());
  EXPECT_EQ(host_copy(converted), std::vector<double>(values.begin(), values.end()));
}

TEST(VectorApi, InitializerListSpanAndVectorConstructors) {
  const SmartArray<float> list{1.5F, -2.5F, 3.25F};
  EXPECT_EQ(host_copy(list), (std::vector<float>{1.5F, -2.5F, 3.25F}));
  const SmartArray deduced{4, 5, 6};
  static_assert(std::is_same_v<decltype(deduced), const SmartArray<int>>);
  EXPECT_EQ(host_copy(deduced), (std::vector<int>{4, 5, 6}));
  const auto values = random_values<float>(n);
  EXPECT_EQ(host_copy(SmartArray<float>(std::span<const float>(values))), values);
  EXPECT_EQ(host_copy(SmartArray<float>(values)), values);
  const SmartArray<float> one{7.5F};  // a list of one element, as for std::vector
  EXPECT_EQ(one.size(), 1U);
}

TEST(VectorApi, CopyConstructorCopiesEachSideItsValidPart) {
  // Host valid for all n + k, device valid for the first n: each side copies only what it holds.
  const auto values = random_values<float>(n);
  SmartArray<float> a = both_valid(values);
  a.push_back(1.5F);
  const SmartArray<float> copy(a);
  EXPECT_EQ(copy.transfer_stats().d2d_count, 1U);
  EXPECT_EQ(copy.transfer_stats().d2d_bytes, n * sizeof(float));
  EXPECT_TRUE(copy.is_valid(Side::host));
  EXPECT_FALSE(copy.is_valid(Side::device));
  const sa::TransferStats read = device_read_transfers(copy);
  EXPECT_EQ(read.h2d_count, 1U);
  EXPECT_EQ(read.h2d_bytes, sizeof(float));
  auto expected = values;
  expected.push_back(1.5F);
  EXPECT_EQ(host_copy(copy), expected);
  EXPECT_EQ(host_copy(a), expected);
}

TEST(VectorApi, MoveConstructorTakesTheStateInConstantTime) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = device_written(values);
  const sa::ExpectTransfers expect({});
  SmartArray<float> b(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the contract says so
  EXPECT_EQ(b.size(), n);
  EXPECT_FALSE(b.is_valid(Side::host));
  EXPECT_TRUE(b.is_valid(Side::device));
}

// --- assignment
// -----------------------------------------------------------------------------------

TEST(VectorApi, CopyAssignmentCopiesValidDataAndCountsItOnTheTarget) {
  const auto values = random_values<float>(n);
  const SmartArray<float> source = device_written(values);
  SmartArray<float> target(random_values<float>(3));
  target = source;
  EXPECT_EQ(target.transfer_stats().d2d_count, 1U);
  EXPECT_EQ(target.transfer_stats().d2d_bytes, n * sizeof(float));
  EXPECT_FALSE(target.is_valid(Side::host));
  EXPECT_EQ(host_copy(target), scaled(values));
  EXPECT_EQ(host_copy(source), scaled(values));
}

TEST(VectorApi, SelfAssignmentChangesNothing) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = both_valid(values);
  const sa::ExpectTransfers expect({});
  const SmartArray<float>& alias = a;
  a = alias;
  EXPECT_TRUE(a.is_valid(Side::host));
  EXPECT_TRUE(a.is_valid(Side::device));
  SmartArray<float>& same = a;
  a = std::move(same);
  EXPECT_EQ(a.size(), n);
  a.assign(a.cbegin(), a.cend());
  EXPECT_EQ(host_copy(a), values);
}

TEST(VectorApi, MoveAssignmentTakesTheState) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = device_written(values);
  SmartArray<float> b(random_values<float>(5));
  {
    const sa::ExpectTransfers expect({});
    b = std::move(a);
  }
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(host_copy(b), scaled(values));
}

TEST(VectorApi, AssignOverwritesOnTheHostWithoutCopying) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = device_written(values);  // host stale: nothing may come back
  const float value = random_value<float>();
  {
    const sa::ExpectTransfers expect({});
    a.assign(2 * n, value);  // growth drops the old contents instead of moving them
  }
  EXPECT_TRUE(a.is_valid(Side::host));
  EXPECT_FALSE(a.is_valid(Side::device));
  EXPECT_EQ(a.capacity(), 2 * n);
  EXPECT_EQ(host_copy(a), std::vector<float>(2 * n, value));

  const auto more = random_values<float>(n / 2);
  scale_on_device(a);
  {
    const sa::ExpectTransfers expect({});
    a.assign(more.begin(), more.end());
  }
  EXPECT_EQ(host_copy(a), more);
  std::list<float> list(values.begin(), values.end());
  a.assign(list.begin(), list.end());
  EXPECT_EQ(host_copy(a), values);
  a.assign({2.5F, 3.5F});
  EXPECT_EQ(host_copy(a), (std::vector<float>{2.5F, 3.5F}));
  a = {4.5F};
  EXPECT_EQ(host_copy(a), std::vector<float>{4.5F});
  std::istringstream in;
  const auto [first, last] = input_range(in, more);
  a.assign(first, last);
  EXPECT_EQ(host_copy(a), more);
}

TEST(VectorApi, AssignFromItsOwnElements) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  a.assign(a.cbegin() + 10, a.cend() - 5);
  EXPECT_EQ(host_copy(a), std::vector<float>(values.begin() + 10, values.end() - 5));
  a.assign(3, a[1]);
  EXPECT_EQ(host_copy(a), std::vector<float>(3, values[11]));
}

TEST(VectorApi, SwapExchangesContentsAndResidency) {
  const auto x = random_values<float>(n);
  const auto y = random_values<float>(n / 2);
  SmartArray<float> a = device_written(x);
  SmartArray<float> b(y);
  const sa::ExpectTransfers expect({});
  a.swap(b);
  EXPECT_TRUE(a.is_valid(Side::host));
  EXPECT_FALSE(b.is_valid(Side::host));
  swap(a, b);  // the non-member, found by argument-dependent lookup
  EXPECT_EQ(a.size(), n);
  std::swap(a, b);
  EXPECT_EQ(a.size(), n / 2);
  EXPECT_EQ(host_copy(a), y);
  EXPECT_EQ(b.size(), n);
  EXPECT_FALSE(b.is_valid(Side::host));
}

// --- element access
// -------------------------------------------------------------------------------

TEST(VectorApi, ElementAccessReadsAndWrites) {
  auto values = random_values<int>(n);
  SmartArray<int> a(values);
  const SmartArray<int>& ca = a;
  EXPECT_EQ(ca[5], values[5]);
  EXPECT_EQ(ca.at(6), values[6]);
  EXPECT_EQ(ca.front(), values.front());
  EXPECT_EQ(ca.back(), values.back());
  EXPECT_EQ(ca.data()[7], values[7]);
  a[5] = 11;
  a.at(6) = 12;
  a.front() = 13;
  a.back() = 14;
  a.data()[7] = 15;
  values[5] = 11;
  values[6] = 12;
  values.front() = 13;
  values.back() = 14;
  values[7] = 15;
  EXPECT_EQ(host_copy(a), values);
}

TEST(VectorApi, ConstAccessKeepsTheDeviceCopyAndMutableAccessMarksTheHost) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = device_written(values);
  {
    const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(std::as_const(a)[3], scaled(values)[3]);
    EXPECT_EQ(std::as_const(a).at(4), scaled(values)[4]);
    EXPECT_EQ(std::as_const(a).back(), scaled(values).back());
  }
  EXPECT_TRUE(a.is_valid(Side::device));
  {
    const sa::ExpectTransfers expect({});
    a[3] = 1.5F;
  }
  EXPECT_FALSE(a.is_valid(Side::device));
}

TEST(VectorApi, IteratorsArePlainPointersInBothDirections) {
  const auto values = random_values<int>(n);
  SmartArray<int> a(values);
  EXPECT_EQ(a.end() - a.begin(), static_cast<std::ptrdiff_t>(n));
  EXPECT_EQ(std::vector<int>(a.cbegin(), a.cend()), values);
  EXPECT_EQ(std::vector<int>(a.rbegin(), a.rend()),
            std::vector<int>(values.rbegin(), values.rend()));
  EXPECT_EQ(std::vector<int>(a.crbegin(), a.crend()),
            std::vector<int>(values.rbegin(), values.rend()));
  const SmartArray<int>& ca = a;
  EXPECT_EQ(std::vector<int>(ca.begin(), ca.end()), values);
  EXPECT_EQ(std::vector<int>(ca.rbegin(), ca.rend()),
            std::vector<int>(values.rbegin(), values.rend()));
  *a.rbegin() = 9;
  EXPECT_EQ(std::as_const(a).back(), 9);
  std::ranges::sort(a);
  EXPECT_TRUE(std::ranges::is_sorted(std::as_const(a)));
}

TEST(VectorApi, MutableIterationMarksTheHostChangedOnce) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = device_written(values);
  {
    // One copy back when begin() is called, then plain pointer writes.
    const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    for (float& x : a) x += 1.0F;
  }
  EXPECT_FALSE(a.is_valid(Side::device));
  {
    const sa::ExpectTransfers expect({.h2d = 1, .h2d_bytes = n * sizeof(float)});
    scale_on_device(a);
  }
  auto expected = scaled(values);
  for (float& x : expected) x += 1.0F;
  EXPECT_EQ(host_copy(a), scaled(expected));
}

TEST(VectorApi, ConstIterationNeverMarksTheHostChanged) {
  const auto values = random_values<float>(n);
  const SmartArray<float> a = both_valid(values);
  const sa::ExpectTransfers expect({});
  float sum = 0;
  for (const float& x : a) sum += x;
  sum += std::accumulate(a.cbegin(), a.cend(), 0.0F);
  sum += std::accumulate(a.crbegin(), a.crend(), 0.0F);
  EXPECT_NE(sum, 0.0F);
  EXPECT_TRUE(a.is_valid(Side::device));
  EXPECT_EQ(device_read_transfers(a), sa::TransferStats{});
}

// --- capacity
// -------------------------------------------------------------------------------------

TEST(VectorApi, ReserveAndShrinkToFitKeepContentsAndResidency) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = both_valid(values);
  {
    const sa::ExpectTransfers expect({});
    a.reserve(4 * n);
    a.reserve(n);  // never shrinks
  }
  EXPECT_EQ(a.capacity(), 4 * n);
  EXPECT_TRUE(a.is_valid(Side::device));
  EXPECT_TRUE(a.is_valid(Side::host));
  a.pop_back();
  {
    const sa::ExpectTransfers expect({});
    a.shrink_to_fit();
  }
  EXPECT_EQ(a.capacity(), n - 1);
  EXPECT_TRUE(a.is_valid(Side::device));
  EXPECT_EQ(host_copy(a), std::vector<float>(values.begin(), values.end() - 1));
}

TEST(VectorApi, ReallocationMovesOnlyTheValidHostPart) {
  // Host valid only for an appended tail: growing the host buffer keeps the tail, and the stale
  // prefix comes from the device when the host reads it.
  const auto values = random_values<float>(n);
  SmartArray<float> a = device_written(values);
  const auto tail = random_values<float>(3 * n);
  {
    const sa::ExpectTransfers expect({});
    for (float x : tail) a.push_back(x);
    a.shrink_to_fit();
  }
  auto expected = scaled(values);
  expected.insert(expected.end(), tail.begin(), tail.end());
  const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
  EXPECT_EQ(host_copy(a), expected);
}

// --- comparisons
// -------------------------------------------------------------------------------------

TEST(VectorApi, ComparisonsFollowStdVector) {
  const auto x = random_values<int>(50);
  auto y = x;
  y[30] += 1;
  auto shorter = x;
  shorter.pop_back();
  const SmartArray<int> a(x), b(y), c(shorter), d(x);
  EXPECT_TRUE(a == d);
  EXPECT_FALSE(a != d);
  EXPECT_TRUE(a != b);
  EXPECT_EQ(a < b, x < y);
  EXPECT_EQ(a > b, x > y);
  EXPECT_EQ(a <= c, x <= shorter);
  EXPECT_EQ(a >= c, x >= shorter);
  EXPECT_EQ(a <=> b, x <=> y);
  EXPECT_EQ(c <=> a, shorter <=> x);
  EXPECT_EQ(a <=> d, std::strong_ordering::equal);
  static_assert(std::is_same_v<decltype(a <=> b), std::strong_ordering>);
  static_assert(
      std::is_same_v<decltype(SmartArray<float>{} <=> SmartArray<float>{}), std::partial_ordering>);
  const SmartArray<float> nan{std::numeric_limits<float>::quiet_NaN()};
  EXPECT_FALSE(nan == nan);
  EXPECT_EQ(nan <=> nan, std::partial_ordering::unordered);
}

TEST(VectorApi, ComparisonsReadTheHostOnlyWhenTheyMust) {
  const auto values = random_values<float>(n);
  const SmartArray<float> a = device_written(values);
  SmartArray<float> shorter = device_written(values);
  shorter.pop_back();
  {
    const sa::ExpectTransfers expect({});
    EXPECT_FALSE(a == shorter);  // sizes differ: no data needed
  }
  {
    const sa::ExpectTransfers expect({.d2h = 2});
    EXPECT_EQ(a <=> shorter, std::partial_ordering::greater);
  }
  EXPECT_TRUE(a.is_valid(Side::device));
  EXPECT_TRUE(shorter.is_valid(Side::device));
}
