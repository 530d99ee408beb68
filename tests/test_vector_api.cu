// The std::vector interface of SmartArray<T>: each member and overload against std::vector, the
// residency of each vector operation with exact transfer counts, and the errors std::vector gives.
// Every body runs on the host backend and on the cuda backend.
//
// This binary checks foreign iterators whatever the build type: the debug checks are inline code of
// the header, so turning them on here affects this test alone.
#define SMARTARRAY_DEBUG_CHECKS 1

#include <gtest/gtest.h>

#include <cmath>
#include <compare>
#include <cstddef>
#include <iomanip>
#include <iterator>
#include <limits>
#include <list>
#include <numeric>
#include <random>
#include <ranges>
#include <smartarray/smartarray.hpp>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/device_ops.cuh"
#include "support/test_support.hpp"

namespace sa = smartarray;
using sa::Access;
using sa::Side;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_value;
using sa::test::random_values;
using sa::test::scale_on_device;
using sa::test::scaled;

namespace {

constexpr std::size_t n = 1000;

/// An input-only view of a vector: single pass, no size known in advance.
template <typename T>
std::pair<std::istream_iterator<T>, std::istream_iterator<T>> input_range(std::istringstream& in,
                                                                          const std::vector<T>& v) {
  std::ostringstream out;
  out << std::setprecision(std::numeric_limits<T>::max_digits10);
  for (const T& x : v) out << x << ' ';
  in.str(out.str());
  return {std::istream_iterator<T>(in), std::istream_iterator<T>()};
}

/// An array that is valid on both sides: written on the host, then read on the device.
SmartArray<float> both_valid(const std::vector<float>& values) {
  SmartArray<float> a(values);
  (void)std::as_const(a).device_view();
  return a;
}

/// An array whose only valid copy is on the device (a kernel wrote it).
SmartArray<float> device_written(const std::vector<float>& values) {
  SmartArray<float> a(values);
  scale_on_device(a);
  return a;
}

/// Host storage without the pageable fallback, so that an injected failure reaches the caller.
sa::ArrayOptions strict_host() { return {.host_resource = &sa::pinned_resource()}; }

/// The transfers a device read of `a` makes now, with nothing else running.
sa::TransferStats device_read_transfers(const SmartArray<float>& a) {
  const sa::TransferStats before = a.transfer_stats();
  (void)a.device_view();
  return a.transfer_stats() - before;
}

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

// --- appends and truncations: the residency of the vector operations -----------------------------

TEST(VectorResidency, AppendingKElementsCopiesExactlyKOnTheNextDeviceRead) {
  const auto values = random_values<float>(n);
  for (const std::size_t k : {std::size_t{1}, std::size_t{37}, n}) {
    SmartArray<float> a(values);
    a.reserve(n + k);
    (void)std::as_const(a).device_view();
    const auto tail = random_values<float>(k);
    {
      const sa::ExpectTransfers expect({});
      a.push_back(tail[0]);
      for (std::size_t i = 1; i < k; ++i) a.emplace_back(tail[i]);
    }
    const sa::TransferStats read = device_read_transfers(a);
    EXPECT_EQ(read.h2d_count, 1U) << "k = " << k;
    EXPECT_EQ(read.h2d_bytes, k * sizeof(float)) << "k = " << k;
    EXPECT_EQ(read.d2d_count, 0U) << "k = " << k;
    auto expected = values;
    expected.insert(expected.end(), tail.begin(), tail.end());
    EXPECT_EQ(host_copy(a), expected);
  }
}

TEST(VectorResidency, EveryAppendFormCopiesOnlyTheTail) {
  const auto values = random_values<float>(n);
  const auto tail = random_values<float>(5);
  const float fill = random_value<float>();
  auto expected = values;
  SmartArray<float> a(values);
  a.reserve(2 * n);
  (void)std::as_const(a).device_view();
  {
    const sa::ExpectTransfers expect({});
    a.insert(a.cend(), tail.begin(), tail.end());  // cend(): a read that keeps the device copy
    a.insert(a.cend(), fill);
    a.insert(a.cend(), 2, fill);
    a.insert(a.cend(), {fill, fill});
    a.emplace(a.cend(), fill);
    a.resize(a.size() + 3, fill);
    a.resize(a.size() + 1);
  }
  expected.insert(expected.end(), tail.begin(), tail.end());
  expected.insert(expected.end(), 6, fill);  // insert(x), insert(2, x), insert({x, x}), emplace(x)
  expected.insert(expected.end(), 3, fill);
  expected.push_back(0.0F);
  const sa::TransferStats read = device_read_transfers(a);
  EXPECT_EQ(read.h2d_count, 1U);
  EXPECT_EQ(read.h2d_bytes, (expected.size() - n) * sizeof(float));
  EXPECT_EQ(host_copy(a), expected);
}

TEST(VectorResidency, AppendThatReallocatesMovesOnlyTheValidDevicePrefix) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = both_valid(values);
  ASSERT_EQ(a.capacity(), n);
  a.push_back(2.5F);  // reallocates the host copy; the device buffer is too small now
  const sa::TransferStats read = device_read_transfers(a);
  EXPECT_EQ(read.d2d_count, 1U);
  EXPECT_EQ(read.d2d_bytes, n * sizeof(float));
  EXPECT_EQ(read.h2d_count, 1U);
  EXPECT_EQ(read.h2d_bytes, sizeof(float));
  auto expected = values;
  expected.push_back(2.5F);
  EXPECT_EQ(host_copy(a), expected);
}

TEST(VectorResidency, NonConstEndMarksTheHostChanged) {
  // end() is a mutable iterator like begin(): insert(end(), x) is correct but copies everything.
  SmartArray<float> a = both_valid(random_values<float>(n));
  a.reserve(2 * n);
  a.insert(a.end(), 1.5F);
  const sa::TransferStats read = device_read_transfers(a);
  EXPECT_EQ(read.h2d_bytes, (n + 1) * sizeof(float));
}

TEST(VectorResidency, TruncationsCopyNothingAndKeepTheDevicePrefix) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = both_valid(values);
  {
    const sa::ExpectTransfers expect({});
    a.pop_back();
    a.erase(a.cend() - 3, a.cend());
    a.erase(a.cend() - 1);
    a.resize(n - 10);
  }
  EXPECT_TRUE(a.is_valid(Side::device));
  EXPECT_TRUE(a.is_valid(Side::host));
  EXPECT_EQ(device_read_transfers(a), sa::TransferStats{});
  EXPECT_EQ(host_copy(a), std::vector<float>(values.begin(), values.end() - 10));

  scale_on_device(a);  // host stale: truncation still copies nothing
  {
    const sa::ExpectTransfers expect({});
    a.pop_back();
    a.resize(n / 2);
  }
  {
    const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n / 2 * sizeof(float)});
    EXPECT_EQ(host_copy(a), scaled(std::vector<float>(values.begin(), values.begin() + n / 2)));
  }
  const std::size_t capacity = a.capacity();
  {
    const sa::ExpectTransfers expect({});
    a.clear();
    a.resize(0);
  }
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.capacity(), capacity);
}

TEST(VectorResidency, PopBackThenPushBackWhileAnUploadIsPendingKeepsTheData) {
  // The upload reads the host buffer asynchronously; writing the slot it reads must wait for it.
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  a.reserve(2 * n);
  (void)std::as_const(a).device_view();
  a.pop_back();
  a.pop_back();
  a.push_back(-1.5F);
  a.push_back(-2.5F);
  auto expected = values;
  expected[n - 2] = -1.5F;
  expected[n - 1] = -2.5F;
  SmartArray<float> out(n, -7.0F);
  sa::test::copy_on_device(out, a);
  EXPECT_EQ(host_copy(out), expected);
}

// --- insert and erase
// -----------------------------------------------------------------------------

TEST(VectorApi, InsertOneAtFrontMiddleAndEnd) {
  const auto values = random_values<int>(n);
  for (const std::size_t at : {std::size_t{0}, n / 2, n}) {
    SmartArray<int> a(values);
    std::vector<int> model = values;
    const int x = random_value<int>();
    int y = random_value<int>();
    auto it = a.insert(a.cbegin() + at, x);
    EXPECT_EQ(it - a.cbegin(), static_cast<std::ptrdiff_t>(at));
    EXPECT_EQ(*it, x);
    model.insert(model.begin() + at, x);
    it = a.insert(a.cbegin() + at, std::move(y));
    model.insert(model.begin() + at, y);
    EXPECT_EQ(*it, y);
    it = a.emplace(a.cbegin() + at, 5);
    model.emplace(model.begin() + at, 5);
    EXPECT_EQ(*it, 5);
    EXPECT_EQ(host_copy(a), model) << "at " << at;
  }
}

TEST(VectorApi, InsertCountRangeAndListAtFrontMiddleAndEnd) {
  const auto values = random_values<int>(n);
  const auto extra = random_values<int>(17);
  for (const std::size_t at : {std::size_t{0}, n / 3, n}) {
    SmartArray<int> a(values);
    std::vector<int> model = values;
    auto it = a.insert(a.cbegin() + at, 4, extra[0]);
    EXPECT_EQ(it - a.cbegin(), static_cast<std::ptrdiff_t>(at));
    model.insert(model.begin() + at, 4, extra[0]);
    it = a.insert(a.cbegin() + at, extra.begin(), extra.end());
    EXPECT_EQ(*it, extra.front());
    model.insert(model.begin() + at, extra.begin(), extra.end());
    const std::list<int> list(extra.rbegin(), extra.rend());
    a.insert(a.cbegin() + at, list.begin(), list.end());
    model.insert(model.begin() + at, list.begin(), list.end());
    std::istringstream in;
    const auto [first, last] = input_range(in, extra);
    it = a.insert(a.cbegin() + at, first, last);
    EXPECT_EQ(it - a.cbegin(), static_cast<std::ptrdiff_t>(at));
    model.insert(model.begin() + at, extra.begin(), extra.end());
    it = a.insert(a.cbegin() + at, {extra[1], extra[2]});
    EXPECT_EQ(*it, extra[1]);
    model.insert(model.begin() + at, {extra[1], extra[2]});
    EXPECT_EQ(host_copy(a), model) << "at " << at;
    // Empty insertions return the position and change nothing.
    EXPECT_EQ(a.insert(a.cbegin() + at, 0, 1) - a.cbegin(), static_cast<std::ptrdiff_t>(at));
    EXPECT_EQ(a.insert(a.cbegin() + at, extra.begin(), extra.begin()) - a.cbegin(),
              static_cast<std::ptrdiff_t>(at));
    EXPECT_EQ(a.insert(a.cbegin() + at, std::initializer_list<int>{}) - a.cbegin(),
              static_cast<std::ptrdiff_t>(at));
    EXPECT_EQ(host_copy(a), model);
  }
}

TEST(VectorApi, SelfInsertAtFrontMiddleAndEnd) {
  const auto values = random_values<int>(64);
  for (const bool full : {false, true}) {  // with and without room: growth frees the source
    for (const std::size_t at : {std::size_t{0}, std::size_t{20}, std::size_t{64}}) {
      SmartArray<int> a(values);
      if (!full) a.reserve(1000);
      std::vector<int> model = values;
      const std::vector<int> source(model.begin() + 10, model.begin() + 40);
      auto it = a.insert(a.cbegin() + at, a.cbegin() + 10, a.cbegin() + 40);
      model.insert(model.begin() + at, source.begin(), source.end());
      EXPECT_EQ(it - a.cbegin(), static_cast<std::ptrdiff_t>(at));
      a.shrink_to_fit();
      const int front = model.front();
      a.insert(a.cbegin() + at, a.front());  // a value that lives in the array
      model.insert(model.begin() + at, front);
      a.shrink_to_fit();
      const int back = model.back();
      a.insert(a.cbegin() + at, 3, a.back());
      model.insert(model.begin() + at, 3, back);
      a.emplace(a.cbegin() + at, a[5]);
      model.insert(model.begin() + at, model[5]);
      a.push_back(a[7]);
      model.push_back(model[7]);
      const std::vector<int> whole = model;
      a.insert(a.cbegin() + at, a.cbegin(), a.cend());
      model.insert(model.begin() + at, whole.begin(), whole.end());
      EXPECT_EQ(host_copy(a), model) << "at " << at << (full ? " (full)" : " (room)");
    }
  }
}

TEST(VectorApi, AppendingItsOwnElementWhenFullCopiesItBeforeTheGrowth) {
  const auto values = random_values<int>(n);
  SmartArray<int> a(values);
  std::vector<int> model = values;
  for (std::size_t round = 0; round < 8; ++round) {
    a.shrink_to_fit();  // full: the append reallocates and frees the element it copies
    const std::size_t full = a.capacity();
    ASSERT_EQ(full, a.size());
    const std::size_t i = (round * 37) % a.size();
    if (round % 2 == 0) {
      a.push_back(a[i]);
    } else {
      a.emplace_back(std::as_const(a)[i]);
    }
    model.push_back(model[i]);
    EXPECT_GT(a.capacity(), full) << "round " << round;
    EXPECT_EQ(host_copy(a), model) << "round " << round;
  }
}

TEST(VectorApi, EraseAtFrontMiddleAndEnd) {
  const auto values = random_values<int>(n);
  SmartArray<int> a(values);
  std::vector<int> model = values;
  auto it = a.erase(a.cbegin());
  EXPECT_EQ(it - a.cbegin(), 0);
  model.erase(model.begin());
  it = a.erase(a.cbegin() + 100);
  EXPECT_EQ(*it, model[101]);
  model.erase(model.begin() + 100);
  it = a.erase(a.cbegin() + 10, a.cbegin() + 30);
  EXPECT_EQ(it - a.cbegin(), 10);
  model.erase(model.begin() + 10, model.begin() + 30);
  it = a.erase(a.cend() - 1);
  EXPECT_EQ(it, a.cend());
  model.pop_back();
  it = a.erase(a.cbegin() + 5, a.cbegin() + 5);
  EXPECT_EQ(it - a.cbegin(), 5);
  it = a.erase(a.cbegin() + 500, a.cend());
  EXPECT_EQ(it, a.cend());
  model.erase(model.begin() + 500, model.end());
  EXPECT_EQ(host_copy(a), model);
  a.erase(a.cbegin(), a.cend());
  EXPECT_TRUE(a.empty());
}

TEST(VectorResidency, InsertOrEraseInTheMiddleMakesTheHostWholeOnceAndTheDeviceStale) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = both_valid(values);
  {
    const sa::ExpectTransfers expect({});
    a.insert(a.cbegin() + 10, 1.5F);
    a.erase(a.cbegin() + 20);
  }
  EXPECT_TRUE(a.is_valid(Side::host));
  EXPECT_FALSE(a.is_valid(Side::device));
  EXPECT_EQ(device_read_transfers(a).h2d_bytes, n * sizeof(float));
  auto expected = values;
  expected.insert(expected.begin() + 10, 1.5F);
  expected.erase(expected.begin() + 20);
  EXPECT_EQ(host_copy(a), expected);
}

TEST(VectorResidency, MiddleInsertsAndErasesOnAHostOnlyArrayMatchStdVectorAndCopyNothing) {
  // The host copy is the only valid one: inserts and erases in the middle change nothing else.
  const auto values = random_values<float>(n);
  const auto extra = random_values<float>(64);
  SmartArray<float> a(values);
  a.reserve(n + 64);
  std::vector<float> expected = values;
  std::mt19937 rng(7);
  {
    const sa::ExpectTransfers expect({});
    for (std::size_t i = 0; i < 64; ++i) {
      const std::size_t at = 1 + rng() % (expected.size() - 2);
      if (i % 3 == 2) {
        a.erase(a.cbegin() + static_cast<std::ptrdiff_t>(at));
        expected.erase(expected.begin() + static_cast<std::ptrdiff_t>(at));
      } else {
        a.insert(a.cbegin() + static_cast<std::ptrdiff_t>(at), extra[i]);
        expected.insert(expected.begin() + static_cast<std::ptrdiff_t>(at), extra[i]);
      }
    }
  }
  EXPECT_EQ(host_copy(a), expected);
  EXPECT_EQ(device_read_transfers(a).h2d_bytes, expected.size() * sizeof(float));
  // Now the device copy is valid too: a middle insert makes it stale, and the next read copies all.
  a.insert(a.cbegin() + 5, 9.5F);
  expected.insert(expected.begin() + 5, 9.5F);
  EXPECT_FALSE(a.is_valid(Side::device));
  EXPECT_EQ(device_read_transfers(a).h2d_bytes, expected.size() * sizeof(float));
  EXPECT_EQ(host_copy(a), expected);
}

TEST(VectorResidency, InsertThroughAPositionTakenBeforeADeviceWriteCopiesTheHostOnce) {
  // A position stays valid across device work (nothing reallocates), and the host is stale there:
  // the insert itself brings the host copy back, once.
  const auto values = random_values<float>(n);
  for (const bool full : {false, true}) {
    SmartArray<float> a(values);
    if (!full) a.reserve(2 * n);
    SmartArray<float>::const_iterator base = a.cbegin();
    scale_on_device(a);
    {
      const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
      const auto it = a.insert(base + 7, {1.5F, 2.5F});
      EXPECT_EQ(it[1], 2.5F);
    }
    auto expected = scaled(values);
    expected.insert(expected.begin() + 7, {1.5F, 2.5F});
    EXPECT_FALSE(a.is_valid(Side::device));
    EXPECT_EQ(host_copy(a), expected);

    base = a.cbegin();
    scale_on_device(a);
    {
      const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = (n + 2) * sizeof(float)});
      a.erase(base + 3, base + 5);
    }
    expected = scaled(expected);
    expected.erase(expected.begin() + 3, expected.begin() + 5);
    EXPECT_EQ(host_copy(a), expected);
  }
}

TEST(VectorResidency, AppendWhileTheHostIsStaleThenInsertInTheMiddle) {
  // Host valid only for an appended tail: a middle insert copies just the stale prefix.
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  a.reserve(2 * n);
  const SmartArray<float>::const_iterator base = a.cbegin();
  scale_on_device(a);
  a.push_back(3.5F);
  {
    const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    a.insert(base + 1, 4.5F);
  }
  auto expected = scaled(values);
  expected.push_back(3.5F);
  expected.insert(expected.begin() + 1, 4.5F);
  EXPECT_EQ(host_copy(a), expected);
}

// --- non-member erase, comparisons
// ----------------------------------------------------------------

TEST(VectorApi, EraseAndEraseIfRemoveLikeStdVector) {
  std::vector<int> model = random_values<int>(n);
  for (std::size_t i = 0; i < n; i += 7) model[i] = 42;
  SmartArray<int> a(model);
  EXPECT_EQ(erase(a, 42), std::erase(model, 42));  // ADL finds smartarray::erase
  std::size_t calls = 0;
  const auto odd = [&calls](int x) {
    ++calls;
    return x % 2 != 0;
  };
  const std::size_t size_before = a.size();
  EXPECT_EQ(erase_if(a, odd), std::erase_if(model, [](int x) { return x % 2 != 0; }));
  EXPECT_EQ(calls, size_before);  // once per element, as std::erase_if
  EXPECT_EQ(host_copy(a), model);
  EXPECT_EQ(sa::erase(a, -1), 0U);
}

TEST(VectorResidency, EraseIfWithNoMatchKeepsTheDeviceCopy) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = device_written(values);
  {
    const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(erase_if(a, [](float x) { return x == 0.0F; }), 0U);
  }
  EXPECT_TRUE(a.is_valid(Side::device));
  const float victim = scaled(values)[n / 2];
  {
    const sa::ExpectTransfers expect({});
    EXPECT_GE(erase(a, victim), 1U);
  }
  EXPECT_FALSE(a.is_valid(Side::device));
}

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

TEST(VectorResidency, ComparisonsReadTheHostOnlyWhenTheyMust) {
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

// --- bad input
// ------------------------------------------------------------------------------------

TEST(VectorBadInput, AtThrowsOutOfRange) {
  const auto values = random_values<float>(10);
  SmartArray<float> a(values);
  EXPECT_THROW((void)a.at(10), std::out_of_range);
  EXPECT_THROW((void)std::as_const(a).at(std::numeric_limits<std::size_t>::max()),
               std::out_of_range);
  EXPECT_EQ(host_copy(a), values);
}

TEST(VectorBadInput, SizesPastMaxSizeThrowLengthErrorAndChangeNothing) {
  const auto values = random_values<double>(100);
  SmartArray<double> a(values);
  const std::size_t capacity = a.capacity();
  const std::size_t too_many = SmartArray<double>::max_size() + 1;
  EXPECT_THROW((void)SmartArray<double>(too_many), std::length_error);
  EXPECT_THROW((void)SmartArray<double>(too_many, 1.5), std::length_error);
  EXPECT_THROW(a.reserve(too_many), std::length_error);
  EXPECT_THROW(a.resize(too_many), std::length_error);
  EXPECT_THROW(a.resize(too_many, 2.5), std::length_error);
  EXPECT_THROW(a.assign(too_many, 2.5), std::length_error);
  EXPECT_THROW(a.insert(a.cbegin() + 3, SmartArray<double>::max_size(), 2.5), std::length_error);
  EXPECT_THROW(a.insert(a.cend(), SmartArray<double>::max_size(), 2.5), std::length_error);
  EXPECT_EQ(a.capacity(), capacity);
  EXPECT_EQ(host_copy(a), values);
}

/// A trivially copyable element whose converting constructor throws on NaN.
struct Finite {
  float value = 0;
  Finite() = default;
  explicit Finite(float v) : value(v) {
    if (std::isnan(v)) throw std::invalid_argument("Finite(NaN)");
  }
};
static_assert(std::is_trivially_copyable_v<Finite>);

TEST(VectorBadInput, ThrowingElementConstructorInEmplaceBackChangesNothing) {
  const auto values = random_values<float>(n + 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  SmartArray<Finite> a;
  a.reserve(n + 1);
  for (std::size_t i = 0; i < n; ++i) a.emplace_back(values[i]);
  const std::size_t capacity = a.capacity();
  const auto expect_first = [&](std::size_t count) {
    ASSERT_EQ(a.size(), count);
    EXPECT_EQ(a.capacity(), capacity);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(a[i].value, values[i]) << "element " << i;
  };
  // The capacity holds one more element: the lock-free path.
  EXPECT_THROW(a.emplace_back(nan), std::invalid_argument);
  expect_first(n);
  a.emplace_back(values[n]);
  ASSERT_EQ(a.size(), a.capacity());
  // The array is full: the growth path.
  EXPECT_THROW(a.emplace_back(nan), std::invalid_argument);
  expect_first(n + 1);
}

TEST(VectorBadInput, ForeignIteratorsThrowLogicErrorNamingTheOperation) {
  const auto values = random_values<int>(20);
  SmartArray<int> a(values);
  SmartArray<int> other(values);
  const auto expect_logic_error = [](auto operation, const std::string& name) {
    try {
      operation();
      ADD_FAILURE() << "expected smartarray::logic_error from " << name;
    } catch (const sa::logic_error& error) {
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
    }
  };
  expect_logic_error([&] { a.insert(other.cbegin(), 1); }, "insert");
  expect_logic_error([&] { a.insert(other.cbegin() + 3, 2, 1); }, "insert");
  expect_logic_error([&] { a.insert(other.cend(), values.begin(), values.end()); }, "insert");
  expect_logic_error([&] { a.insert(a.cend() + 1, {1, 2}); }, "insert");
  expect_logic_error([&] { a.emplace(other.cbegin(), 1); }, "emplace");
  expect_logic_error([&] { a.erase(other.cbegin()); }, "erase");
  expect_logic_error([&] { a.erase(a.cend()); }, "erase");
  expect_logic_error([&] { a.erase(a.cbegin() + 5, a.cbegin() + 2); }, "erase");
  expect_logic_error([&] { a.erase(a.cbegin(), other.cend()); }, "erase");
  SmartArray<int> empty;
  expect_logic_error([&] { empty.pop_back(); }, "pop_back");
  EXPECT_EQ(host_copy(a), values);
  EXPECT_EQ(host_copy(other), values);
}

TEST(VectorBadInput, InjectedAllocationFailureDuringGrowthLeavesTheArrayUnchanged) {
  const sa::test::ClearFaults clear;
  const auto values = random_values<float>(n);
  const auto extra = random_values<float>(3);
  using Operation = void (*)(SmartArray<float>&, const std::vector<float>&);
  const std::vector<std::pair<const char*, Operation>> operations = {
      {"push_back", [](SmartArray<float>& a, const std::vector<float>& x) { a.push_back(x[0]); }},
      {"emplace_back",
       [](SmartArray<float>& a, const std::vector<float>& x) { (void)a.emplace_back(x[0]); }},
      {"insert at the end",
       [](SmartArray<float>& a, const std::vector<float>& x) { a.insert(a.cend(), x[0]); }},
      {"insert in the middle",
       [](SmartArray<float>& a, const std::vector<float>& x) { a.insert(a.cbegin() + 5, x[0]); }},
      {"insert a range",
       [](SmartArray<float>& a, const std::vector<float>& x) {
         a.insert(a.cbegin() + 1, x.begin(), x.end());
       }},
      {"insert copies",
       [](SmartArray<float>& a, const std::vector<float>& x) { a.insert(a.cbegin(), 2, x[1]); }},
      {"reserve", [](SmartArray<float>& a, const std::vector<float>&) { a.reserve(2 * n); }},
      {"resize", [](SmartArray<float>& a, const std::vector<float>&) { a.resize(n + 1); }},
      {"resize with a value",
       [](SmartArray<float>& a, const std::vector<float>& x) { a.resize(n + 9, x[2]); }},
      {"assign", [](SmartArray<float>& a, const std::vector<float>& x) { a.assign(2 * n, x[0]); }},
  };
  for (const auto& [name, operation] : operations) {
    for (const bool device_valid : {false, true}) {
      SmartArray<float> a(values, strict_host());
      ASSERT_EQ(a.capacity(), n);
      if (device_valid) (void)std::as_const(a).device_view();
      sa::testing::inject_failure(sa::testing::Fault::allocation, 1);
      EXPECT_THROW(operation(a, extra), std::bad_alloc) << name;
      sa::testing::clear_injected_failures();
      EXPECT_EQ(a.size(), n) << name;
      EXPECT_EQ(a.capacity(), n) << name;
      EXPECT_EQ(a.is_valid(Side::device), device_valid) << name;
      EXPECT_EQ(host_copy(a), values) << name;
      operation(a, extra);  // and it works afterwards
      EXPECT_GT(a.capacity(), n) << name;
    }
  }
}

TEST(VectorBadInput, InjectedCopyFailureDuringAMiddleInsertLeavesTheArrayUnchanged) {
  const sa::test::ClearFaults clear;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  const SmartArray<float>::const_iterator base = a.cbegin();
  scale_on_device(a);
  sa::testing::inject_failure(sa::testing::Fault::copy, 1);
  EXPECT_THROW(a.insert(base + 3, 1.5F), sa::cuda_error);
  sa::testing::inject_failure(sa::testing::Fault::copy, 1);
  EXPECT_THROW(a.erase(base + 3), sa::cuda_error);
  EXPECT_EQ(a.size(), n);
  EXPECT_TRUE(a.is_valid(Side::device));
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST(VectorBadInput, DefaultHostStorageFallsBackToPageableMemory) {
  // The default pinned resource is replaced by pageable memory when it fails (with a notice).
  const sa::test::ClearFaults clear;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  (void)std::as_const(a).device_view();
  sa::testing::inject_failure(sa::testing::Fault::allocation, 1);
  a.push_back(2.5F);
  EXPECT_FALSE(sa::testing::failure_pending(sa::testing::Fault::allocation));
  auto expected = values;
  expected.push_back(2.5F);
  EXPECT_EQ(host_copy(a), expected);
  scale_on_device(a);
  EXPECT_EQ(host_copy(a), scaled(expected));
}

TEST(VectorBadInput, AHostArrayLargerThanMemoryThrowsOutOfMemoryNamingTheBytes) {
  // Neither pinned nor pageable memory can hold 1 TiB: the error names the bytes and the host,
  // as a device allocation's does, and nothing is left allocated.
  constexpr std::size_t tebibyte = std::size_t{1} << 40;
  const sa::MemoryStats before = sa::default_pinned_resource().stats();
  const sa::ExpectTransfers expect({});
  for (const auto mode : {sa::MemoryMode::explicit_copy, sa::MemoryMode::pageable}) {
    try {
      const SmartArray<std::byte> huge(tebibyte, sa::ArrayOptions{.mode = mode});
      ADD_FAILURE() << "expected out_of_memory, got " << huge.size() << " bytes";
    } catch (const sa::out_of_memory& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("host allocation of 1099511627776 bytes"), std::string::npos)
          << message;
      EXPECT_NE(message.find("pageable memory"), std::string::npos) << message;
    }
  }
  EXPECT_EQ(sa::default_pinned_resource().stats().current_bytes, before.current_bytes);
  // The array that would have fallen back still works at a size that fits.
  const auto values = random_values<float>(n);
  EXPECT_EQ(host_copy(SmartArray<float>(values)), values);
}

// --- no_init ----------------------------------------------------------------------------------

TEST(VectorNoInit, TakesNoMemoryAndIsValidNowhere) {
  const sa::MemoryStats host_before = sa::default_pinned_resource().stats();
  const sa::MemoryStats device_before = sa::default_device_resource().stats();
  const sa::ExpectTransfers expect({});
  const SmartArray<float> a(n, sa::no_init);
  EXPECT_EQ(a.size(), n);
  EXPECT_EQ(a.capacity(), n);
  EXPECT_FALSE(a.is_valid(Side::host));
  EXPECT_FALSE(a.is_valid(Side::device));
  const SmartArray<float> copy(a);  // a copy of nothing written holds nothing either
  EXPECT_EQ(copy.size(), n);
  EXPECT_FALSE(copy.is_valid(Side::host));
  EXPECT_EQ(sa::default_pinned_resource().stats().total_count, host_before.total_count);
  EXPECT_EQ(sa::default_device_resource().stats().total_count, device_before.total_count);
  EXPECT_THROW((void)SmartArray<float>(SmartArray<float>::max_size() + 1, sa::no_init),
               std::length_error);
}

TEST(VectorNoInit, DeviceWritesCopyNothingAndTakeNoHostMemory) {
  const float value = random_value<float>();
  for (const Access access : {Access::discard, Access::read_write}) {
    SmartArray<float> a(n, sa::no_init);
    const sa::MemoryStats host_before = sa::default_pinned_resource().stats();
    {
      const sa::ExpectTransfers expect({});
      sa::test::fill_view(a.device_view(access), value);
    }
    EXPECT_EQ(sa::default_pinned_resource().stats().total_count, host_before.total_count);
    EXPECT_TRUE(a.is_valid(Side::device));
    EXPECT_FALSE(a.is_valid(Side::host));
    {
      const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
      EXPECT_EQ(host_copy(a), std::vector<float>(n, value));
    }
  }
}

TEST(VectorNoInit, HostWritesCopyNothingAndTakeNoDeviceMemory) {
  const auto values = random_values<float>(n);
  const sa::MemoryStats device_before = sa::default_device_resource().stats();
  SmartArray<float> a(n, sa::no_init);
  SmartArray<float> b(n, sa::no_init);
  SmartArray<float> c(n, sa::no_init);
  {
    const sa::ExpectTransfers expect({});
    for (std::size_t i = 0; i < n; ++i) a[i] = values[i];  // non-const access: a host write
    const std::span<float> all = b.host_view(Access::discard);
    std::copy(values.begin(), values.end(), all.begin());
    c.assign(values.begin(), values.end());
  }
  EXPECT_EQ(sa::default_device_resource().stats().total_count, device_before.total_count);
  for (const SmartArray<float>* array : {&a, &b, &c}) {
    EXPECT_TRUE(array->is_valid(Side::host));
    EXPECT_FALSE(array->is_valid(Side::device));
    const sa::ExpectTransfers expect({.h2d = 1});
    EXPECT_EQ(host_copy(*array), values);
    (void)array->device_view();
  }
}

TEST(VectorNoInit, AppendsAfterTheUnwrittenElementsAreValidOnTheHost) {
  SmartArray<float> a(n, sa::no_init);
  const float value = random_value<float>();
  {
    const sa::ExpectTransfers expect({});
    a.push_back(value);
  }
  EXPECT_EQ(a.size(), n + 1);
  EXPECT_EQ(std::as_const(a).back(), value);
  a.clear();
  EXPECT_TRUE(a.is_valid(Side::host));
  EXPECT_TRUE(a.is_valid(Side::device));
}
