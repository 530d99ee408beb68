// transform_reduce against std::transform_reduce: every arithmetic type (typed), arrays and slices
// in any mix, both forms (two inputs, or one), empty and odd sizes; its exact transfers and waits,
// and the out-of-core path over a small device budget. The async and out(r) forms, bad inputs and
// graphs are in test_transform_reduce_forms.cu, the steady-state costs in
// test_transform_reduce_fixed_cost.cu. Every body runs on the host and the cuda backend.
#include "support/reduction_reference.hpp"
#include "support/small_device_budget.hpp"
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;
using sa::test::reductions::matches;
using sa::test::reductions::Plus;
using sa::test::reductions::Reference;
using sa::test::reductions::reference;
using sa::test::reductions::Square;
using sa::test::reductions::Times;

namespace {

/// The sizes of the typed tests: one element, a few, more than one block, a block and one, and a
/// large odd size.
constexpr std::size_t sizes[] = {1, 3, 1000, 257, 65537, 1000003};

/// Fresh random values for an input of type T: small for 32-bit integers, so that no sum of
/// 1000003 products overflows.
template <typename T>
std::vector<T> input_values(std::size_t n) {
  std::vector<T> values = random_values<T>(n);
  if constexpr (std::is_integral_v<T> && sizeof(T) <= 4) {
    for (T& v : values) v = static_cast<T>(v % 32 + 1);
  }
  return values;
}

// --- the typed comparison with std::transform_reduce --------------------------------------------

/// Inputs of types A and B, folded into R.
template <typename A_, typename B_, typename R_>
struct Types {
  using A = A_;
  using B = B_;
  using R = R_;
};

template <typename T>
class TransformReduceTyped : public ::testing::Test {};
using Configurations =
    ::testing::Types<Types<int, int, int>, Types<unsigned, unsigned, unsigned>,
                     Types<std::int64_t, std::int64_t, std::int64_t>,
                     Types<long long, long long, long long>,
                     Types<std::uint64_t, std::uint64_t, std::uint64_t>, Types<float, float, float>,
                     Types<double, double, double>, Types<float, double, double>,
                     Types<int, float, double>, Types<int, int, long long>>;
TYPED_TEST_SUITE(TransformReduceTyped, Configurations);

TYPED_TEST(TransformReduceTyped, MatchesStdTransformReduceForEverySizeAndForm) {
  using A = typename TypeParam::A;
  using B = typename TypeParam::B;
  using R = typename TypeParam::R;
  sa::Stream stream;
  for (const std::size_t n : sizes) {
    const auto as = input_values<A>(n);
    const auto bs = input_values<B>(n);
    const SmartArray<A> a(as);
    const SmartArray<B> b(bs);
    const R init = input_values<R>(1)[0];
    const Reference<R> dot = reference<R>(init, Times<R>{}, n, as, bs);
    const Reference<R> squares = reference<R>(init, Square<R>{}, n, as);
    EXPECT_TRUE(matches(sa::transform_reduce(a, b, init, Plus<R>{}, Times<R>{}, stream), dot, n));
    EXPECT_TRUE(matches(sa::transform_reduce(a, init, Plus<R>{}, Square<R>{}, stream), squares, n));
    // The default stream, and a StreamRef.
    EXPECT_TRUE(matches(sa::transform_reduce(a, b, init, Plus<R>{}, Times<R>{}), dot, n));
    EXPECT_TRUE(
        matches(sa::transform_reduce(a, init, Plus<R>{}, Square<R>{}, stream.ref()), squares, n));
    // The integer results are exact: std::transform_reduce agrees.
    if constexpr (std::is_integral_v<R>) {
      EXPECT_EQ(
          std::transform_reduce(as.begin(), as.end(), bs.begin(), init, Plus<R>{}, Times<R>{}),
          dot.exact);
    }
    // A part of each, as slices.
    const std::size_t k = n / 2 + 1;
    const Reference<R> head = reference<R>(init, Times<R>{}, k, as, bs);
    EXPECT_TRUE(matches(
        sa::transform_reduce(a.slice(0, k), b.slice(0, k), init, Plus<R>{}, Times<R>{}, stream),
        head, k));
  }
}

TYPED_TEST(TransformReduceTyped, AsyncAndOutFormsHoldTheSameResultOnTheDevice) {
  using A = typename TypeParam::A;
  using B = typename TypeParam::B;
  using R = typename TypeParam::R;
  sa::Stream stream;
  constexpr std::size_t n = 65537;
  const auto as = input_values<A>(n);
  const auto bs = input_values<B>(n);
  const SmartArray<A> a(as);
  const SmartArray<B> b(bs);
  const R init = input_values<R>(1)[0];
  const Reference<R> dot = reference<R>(init, Times<R>{}, n, as, bs);
  const Reference<R> squares = reference<R>(init, Square<R>{}, n, as);
  const SmartArray<R> pending =
      sa::transform_reduce_async(a, b, init, Plus<R>{}, Times<R>{}, stream);
  const SmartArray<R> pending_squares =
      sa::transform_reduce_async(a, init, Plus<R>{}, Square<R>{}, stream);
  SmartArray<R> r(1);
  SmartArray<R> wide(5);
  sa::transform_reduce(a, b, init, Plus<R>{}, Times<R>{}, sa::out(r), stream);
  sa::transform_reduce(a, init, Plus<R>{}, Square<R>{}, wide.slice(3, 1), stream);
  EXPECT_FALSE(pending.is_valid(sa::Side::host));
  EXPECT_FALSE(r.is_valid(sa::Side::host));
  EXPECT_TRUE(matches(std::as_const(pending)[0], dot, n));
  EXPECT_TRUE(matches(std::as_const(pending_squares)[0], squares, n));
  EXPECT_TRUE(matches(std::as_const(r)[0], dot, n));
  EXPECT_TRUE(matches(std::as_const(wide)[3], squares, n));
}

// --- arrays and slices, in any mix --------------------------------------------------------------

TEST(TransformReduce, TakesArraysAndSlicesInAnyMix) {
  constexpr std::size_t n = 10007;
  const auto fs = random_values<float>(n);
  const auto ds = random_values<double>(n);
  SmartArray<float> f(fs);
  SmartArray<double> d(ds);
  const std::size_t first = 13;
  const std::size_t k = 5000;
  std::vector<float> f_part(fs.begin() + first, fs.begin() + first + k);
  std::vector<double> d_part(ds.begin(), ds.begin() + k);
  std::vector<double> d_tail(ds.end() - static_cast<std::ptrdiff_t>(k), ds.end());
  const Reference<double> want = reference<double>(0.5, Times<double>{}, k, f_part, d_part);
  const Reference<double> want_tail = reference<double>(0.5, Times<double>{}, k, f_part, d_tail);
  sa::Stream stream;
  // Slice<T> with Slice<const T>, temporaries both.
  EXPECT_TRUE(matches(sa::transform_reduce(f.slice(first, k), std::as_const(d).slice(0, k), 0.5,
                                           Plus<double>{}, Times<double>{}, stream),
                      want, k));
  // An array with a slice, and a slice with an array.
  const SmartArray<float> g(f_part);
  const SmartArray<double> e(d_part);
  EXPECT_TRUE(
      matches(sa::transform_reduce(g, d.slice(0, k), 0.5, Plus<double>{}, Times<double>{}, stream),
              want, k));
  EXPECT_TRUE(matches(
      sa::transform_reduce(f.slice(first, k), e, 0.5, Plus<double>{}, Times<double>{}, stream),
      want, k));
  // A slice of a slice, and a named Slice<const T>.
  const sa::Slice<const double> tail = std::as_const(d).slice(n - k, k);
  EXPECT_TRUE(matches(sa::transform_reduce(f.slice(0, first + k).slice(first, k), tail, 0.5,
                                           Plus<double>{}, Times<double>{}, stream),
                      want_tail, k));
  // A temporary array.
  EXPECT_TRUE(matches(sa::transform_reduce(SmartArray<float>(f_part), e, 0.5, Plus<double>{},
                                           Times<double>{}, stream),
                      want, k));
  // One array twice: a sum of squares.
  const Reference<double> squares = reference<double>(0.0, Square<double>{}, n, ds);
  EXPECT_TRUE(matches(sa::transform_reduce(d, d, 0.0, Plus<double>{}, Times<double>{}, stream),
                      squares, n));
  EXPECT_EQ(f.transfer_stats().d2h_count, 0U);
  EXPECT_EQ(d.transfer_stats().d2h_count, 0U);
}

TEST(TransformReduce, SlicesCopyInOnlyTheBytesTheDeviceLacks) {
  constexpr std::size_t n = 4000;
  const auto as = random_values<std::int64_t>(n);
  const auto bs = random_values<std::int64_t>(n);
  const SmartArray<std::int64_t> a(as);
  const SmartArray<std::int64_t> b(bs);
  const auto sum_of = [&](std::size_t first, std::size_t count) {
    std::int64_t total = 0;
    for (std::size_t i = first; i < first + count; ++i) total += as[i] * bs[i];
    return total;
  };
  {
    sa::ExpectTransfers expect({.h2d = 2,
                                .d2h = 1,
                                .h2d_bytes = 2 * 1000 * sizeof(std::int64_t),
                                .d2h_bytes = sizeof(std::int64_t)});
    EXPECT_EQ(sa::transform_reduce(a.slice(100, 1000), b.slice(100, 1000), std::int64_t{0},
                                   Plus<std::int64_t>{}, Times<std::int64_t>{}),
              sum_of(100, 1000));
  }
  {
    // [500, 1100) is on the device already: only [1100, 1500) of each comes in.
    sa::ExpectTransfers expect({.h2d = 2,
                                .d2h = 1,
                                .h2d_bytes = 2 * 400 * sizeof(std::int64_t),
                                .d2h_bytes = sizeof(std::int64_t)});
    EXPECT_EQ(sa::transform_reduce(a.slice(500, 1000), b.slice(500, 1000), std::int64_t{0},
                                   Plus<std::int64_t>{}, Times<std::int64_t>{}),
              sum_of(500, 1000));
  }
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_EQ(a.transfer_stats().d2h_count, 0U);
  EXPECT_EQ(b.transfer_stats().d2h_count, 0U);
}

// --- transfers and waits -------------------------------------------------------------------------

TEST(TransformReduce, DeviceValidInputsMoveNothingButTheResult) {
  constexpr std::size_t n = 100003;
  const auto as = random_values<float>(n);
  const auto bs = random_values<float>(n);
  SmartArray<float> a(as);
  SmartArray<float> b(bs);
  sa::Stream stream;
  // Written on the device: the host copies are stale, and stay so.
  sa::test::scale_on_device(a, stream);
  sa::test::scale_on_device(b, stream);
  const auto as2 = sa::test::scaled(as);
  const auto bs2 = sa::test::scaled(bs);
  const Reference<double> dot = reference<double>(1.0, Times<double>{}, n, as2, bs2);
  const std::uint64_t waits = sa::global_transfer_stats().wait_count;
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = sizeof(double)});
    EXPECT_TRUE(
        matches(sa::transform_reduce(a, b, 1.0, Plus<double>{}, Times<double>{}, stream), dot, n));
  }
  // The host waited for the result only: one event.
  EXPECT_EQ(sa::global_transfer_stats().wait_count - waits, 1U);
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = sizeof(float)});
    (void)sa::transform_reduce(a, 0.0F, Plus<float>{}, Square<float>{}, stream);
  }
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  EXPECT_FALSE(b.is_valid(sa::Side::host));
  EXPECT_EQ(a.transfer_stats().d2h_count, 0U);
  EXPECT_EQ(b.transfer_stats().d2h_count, 0U);
}

TEST(TransformReduce, HostValidInputsAreCopiedInOnceEach) {
  constexpr std::size_t n = 3001;
  const auto as = input_values<int>(n);
  const auto bs = random_values<double>(n);
  const SmartArray<int> a(as);
  const SmartArray<double> b(bs);
  const Reference<double> dot = reference<double>(0.0, Times<double>{}, n, as, bs);
  {
    sa::ExpectTransfers expect({.h2d = 2,
                                .d2h = 1,
                                .h2d_bytes = n * (sizeof(int) + sizeof(double)),
                                .d2h_bytes = sizeof(double)});
    EXPECT_TRUE(matches(sa::transform_reduce(a, b, 0.0, Plus<double>{}, Times<double>{}), dot, n));
  }
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(sa::Side::device));
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = sizeof(double)});
    EXPECT_TRUE(matches(sa::transform_reduce(a, b, 0.0, Plus<double>{}, Times<double>{}), dot, n));
  }
}

TEST(TransformReduce, EmptyInputsAreInitAndMoveNothing) {
  const SmartArray<float> a;
  const SmartArray<double> b;
  SmartArray<double> c(random_values<double>(10));
  sa::Stream stream;
  {
    const std::uint64_t waits = sa::global_transfer_stats().wait_count;
    sa::ExpectTransfers expect({});
    EXPECT_EQ(sa::transform_reduce(a, b, 2.5, Plus<double>{}, Times<double>{}, stream), 2.5);
    EXPECT_EQ(sa::transform_reduce(a, 2.5, Plus<double>{}, Square<double>{}, stream), 2.5);
    EXPECT_EQ(sa::transform_reduce(c.slice(10, 0), std::as_const(c).slice(3, 0), 2.5,
                                   Plus<double>{}, Times<double>{}, stream),
              2.5);
    EXPECT_EQ(sa::global_transfer_stats().wait_count, waits);
  }
  EXPECT_FALSE(c.is_valid(sa::Side::device));
  const SmartArray<double> pending =
      sa::transform_reduce_async(a, b, 2.5, Plus<double>{}, Times<double>{}, stream);
  EXPECT_EQ(std::as_const(pending)[0], 2.5);
  SmartArray<double> r(1, -1.0);
  {
    sa::ExpectTransfers expect({});
    sa::transform_reduce(a, b, 2.5, Plus<double>{}, Times<double>{}, sa::out(r), stream);
  }
  sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = sizeof(double)});
  EXPECT_EQ(std::as_const(r)[0], 2.5);
}

// --- out of core ---------------------------------------------------------------------------------

/// A device budget of 8 MiB for the test, restored after it.
class TransformReduceOutOfCore : public sa::test::SmallDeviceBudget {};

TEST_F(TransformReduceOutOfCore, FoldsChunksOfArraysOverTheBudget) {
  constexpr std::size_t n = std::size_t{2} << 20;  // 16 MiB of int64 per array
  const auto as = random_values<std::int64_t>(n);
  const auto bs = random_values<std::int64_t>(n);
  const SmartArray<std::int64_t> a(as);
  const SmartArray<std::int64_t> b(bs);
  const Reference<std::int64_t> dot = reference<std::int64_t>(5, Times<std::int64_t>{}, n, as, bs);
  const std::size_t chunks = chunks_of(n, 2 * sizeof(std::int64_t));
  ASSERT_GT(chunks, 1U);
  {
    sa::ExpectTransfers expect({.h2d = 2 * chunks,
                                .d2h = 1,
                                .h2d_bytes = 2 * n * sizeof(std::int64_t),
                                .d2h_bytes = sizeof(std::int64_t)});
    EXPECT_EQ(
        sa::transform_reduce(a, b, std::int64_t{5}, Plus<std::int64_t>{}, Times<std::int64_t>{}),
        dot.exact);
  }
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_EQ(host_copy(a), as);
  // The async and out forms, a slice and the unary form.
  const SmartArray<std::int64_t> pending = sa::transform_reduce_async(
      a, b, std::int64_t{5}, Plus<std::int64_t>{}, Times<std::int64_t>{});
  EXPECT_EQ(std::as_const(pending)[0], dot.exact);
  SmartArray<std::int64_t> r(1);
  sa::transform_reduce(a, b, std::int64_t{5}, Plus<std::int64_t>{}, Times<std::int64_t>{},
                       sa::out(r));
  EXPECT_EQ(std::as_const(r)[0], dot.exact);
  const std::size_t k = n - 1001;
  EXPECT_EQ(sa::transform_reduce(a.slice(1001, k), std::int64_t{0}, Plus<std::int64_t>{},
                                 Square<std::int64_t>{}),
            reference<std::int64_t>(0, Square<std::int64_t>{}, k,
                                    std::vector<std::int64_t>(as.begin() + 1001, as.end()))
                .exact);
  // reduce's out form over the budget too.
  std::int64_t sum = 0;
  for (const std::int64_t v : as) sum += v;
  sa::reduce(a, std::int64_t{0}, Plus<std::int64_t>{}, sa::out(r));
  EXPECT_EQ(std::as_const(r)[0], sum);
}

}  // namespace
