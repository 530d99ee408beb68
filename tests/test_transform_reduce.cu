// transform_reduce against std::transform_reduce (every arithmetic type, arrays and slices, both
// forms, empty and odd sizes), its exact transfers, its async and out(r) forms, bad inputs, the
// out-of-core path, and reductions with no fixed cost: reduce and transform_reduce allocate
// nothing and wait for nothing but their result in the steady state, and concurrent host threads
// each get their own result. Every body runs on the host and the cuda backend.
#include "support/small_device_budget.hpp"
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <future>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;

namespace {

// --- functors (namespace scope: nvcc cannot place device lambdas in a TEST body) ----------------

template <typename R>
struct Plus {
  SMARTARRAY_HOST_DEVICE R operator()(R x, R y) const { return x + y; }
};
/// x * y in the result's type R.
template <typename R>
struct Times {
  template <typename X, typename Y>
  SMARTARRAY_HOST_DEVICE R operator()(X x, Y y) const {
    return static_cast<R>(x) * static_cast<R>(y);
  }
};
/// x * x in the result's type R.
template <typename R>
struct Square {
  template <typename X>
  SMARTARRAY_HOST_DEVICE R operator()(X x) const {
    return static_cast<R>(x) * static_cast<R>(x);
  }
};

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

/// The reference, on the host: `init` plus each transformed value converted to R, summed in R for
/// integers (exact: unsigned wraps as the device does), in long double for floating point, with
/// the sum of magnitudes that the tolerance scales with.
template <typename R>
struct Reference {
  R exact{};
  long double value = 0;
  long double magnitude = 0;
};
template <typename R, typename F, typename... Inputs>
Reference<R> reference(R init, F f, std::size_t n, const Inputs&... inputs) {
  Reference<R> ref;
  ref.exact = init;
  ref.value = static_cast<long double>(init);
  ref.magnitude = std::fabs(static_cast<long double>(init));
  for (std::size_t i = 0; i < n; ++i) {
    const R v = f(inputs[i]...);
    ref.exact = static_cast<R>(ref.exact + v);
    ref.value += static_cast<long double>(v);
    ref.magnitude += std::fabs(static_cast<long double>(v));
  }
  return ref;
}

/// Checks a result against the reference: exactly for integers; within rounding for floating
/// point, relative to the sum of magnitudes (a sequential sum on the host backend, a tree on the
/// GPU).
template <typename R>
::testing::AssertionResult matches(R got, const Reference<R>& want, std::size_t n) {
  if constexpr (std::is_floating_point_v<R>) {
    const long double tolerance = static_cast<long double>(std::numeric_limits<R>::epsilon()) *
                                  (8 * std::sqrt(static_cast<long double>(n)) + 8) * want.magnitude;
    if (std::fabs(static_cast<long double>(got) - want.value) <= tolerance) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "got " << got << ", want " << want.value << " within "
                                         << tolerance << " (n " << n << ")";
  } else {
    if (got == want.exact) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "got " << got << ", want " << want.exact << " (n " << n << ")";
  }
}

/// True when `message` holds every one of `parts`.
template <typename... Parts>
::testing::AssertionResult names(const std::string& message, const Parts&... parts) {
  for (const std::string& part : {std::string(parts)...}) {
    if (message.find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "\"" << message << "\" does not name " << part;
    }
  }
  return ::testing::AssertionSuccess();
}

/// The residency of an array: host and device validity.
template <typename T>
std::pair<bool, bool> residency(const SmartArray<T>& a) {
  return {a.is_valid(sa::Side::host), a.is_valid(sa::Side::device)};
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

// --- the async and out forms
// ----------------------------------------------------------------------

TEST(TransformReduce, AsyncLeavesTheResultOnTheDeviceUntilRead) {
  constexpr std::size_t n = 5000;
  const auto as = random_values<std::int64_t>(n);
  const auto bs = random_values<std::int64_t>(n);
  auto a = std::make_optional<SmartArray<std::int64_t>>(as);
  const SmartArray<std::int64_t> b(bs);
  const Reference<std::int64_t> dot = reference<std::int64_t>(7, Times<std::int64_t>{}, n, as, bs);
  sa::Stream stream;
  std::promise<void> release = sa::test::gate(stream);  // the reduction runs after a is gone
  SmartArray<std::int64_t> result;
  {
    sa::ExpectTransfers expect({.h2d = 2});
    result = sa::transform_reduce_async(*a, b, std::int64_t{7}, Plus<std::int64_t>{},
                                        Times<std::int64_t>{}, stream);
    a.reset();
  }
  release.set_value();
  EXPECT_FALSE(result.is_valid(sa::Side::host));
  sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = sizeof(std::int64_t)});
  EXPECT_EQ(std::as_const(result)[0], dot.exact);
}

TEST(TransformReduce, OutFormsWriteTheDeviceCopyOfTheCallersArray) {
  constexpr std::size_t n = 20011;
  const auto as = random_values<std::int64_t>(n);
  const auto bs = random_values<std::int64_t>(n);
  const SmartArray<std::int64_t> a(as);
  const SmartArray<std::int64_t> b(bs);
  (void)a.device_view();
  (void)b.device_view();
  const Reference<std::int64_t> dot = reference<std::int64_t>(3, Times<std::int64_t>{}, n, as, bs);
  const Reference<std::int64_t> squares = reference<std::int64_t>(3, Square<std::int64_t>{}, n, as);
  std::int64_t sum = 3;
  for (const std::int64_t v : as) sum += v;
  sa::Stream stream;
  SmartArray<std::int64_t> r(1, -1);
  SmartArray<std::int64_t> s(1, -1);
  SmartArray<std::int64_t> t(1, -1);
  SmartArray<std::int64_t> many(4, -1);
  {
    // Nothing comes back, and the host waits for nothing.
    const std::uint64_t waits = sa::global_transfer_stats().wait_count;
    sa::ExpectTransfers expect({});
    sa::transform_reduce(a, b, std::int64_t{3}, Plus<std::int64_t>{}, Times<std::int64_t>{},
                         sa::out(r), stream);
    sa::transform_reduce(a, std::int64_t{3}, Plus<std::int64_t>{}, Square<std::int64_t>{}, s,
                         stream);
    sa::reduce(a, std::int64_t{3}, Plus<std::int64_t>{}, sa::out(t), stream);
    sa::reduce(a.slice(0, n), std::int64_t{3}, Plus<std::int64_t>{}, many.slice(2, 1), stream);
    EXPECT_EQ(sa::global_transfer_stats().wait_count, waits);
  }
  EXPECT_FALSE(r.is_valid(sa::Side::host));
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = sizeof(std::int64_t)});
    EXPECT_EQ(std::as_const(r)[0], dot.exact);
  }
  EXPECT_EQ(std::as_const(s)[0], squares.exact);
  EXPECT_EQ(std::as_const(t)[0], sum);
  EXPECT_EQ(host_copy(many), (std::vector<std::int64_t>{-1, -1, sum, -1}));
}

// --- bad inputs
// ------------------------------------------------------------------------------------

TEST(TransformReduce, BadInputsThrowBeforeAnythingMoves) {
  const auto as = random_values<float>(100);
  const auto bs = random_values<float>(70);
  SmartArray<float> a(as);
  SmartArray<float> b(bs);
  (void)std::as_const(b).device_view();  // valid on both sides
  SmartArray<float> r(1);
  sa::test::poison(r.data(), 1);
  SmartArray<float> three(3);
  sa::test::poison(three.data(), 3);
  SmartArray<float> none;
  const auto unwritten = host_copy(r);
  const auto unwritten_three = host_copy(three);
  const auto a_residency = residency(a);
  const auto b_residency = residency(b);
  sa::Stream stream;
  const auto expect_length_error = [](const auto& call, const std::string& first,
                                      const std::string& second) {
    try {
      call();
      ADD_FAILURE() << "expected std::length_error";
    } catch (const std::length_error& error) {
      EXPECT_TRUE(names(error.what(), first, second));
    }
  };
  {
    sa::ExpectTransfers nothing({});
    // Inputs of different sizes name both sizes.
    expect_length_error(
        [&] { (void)sa::transform_reduce(a, b, 0.0F, Plus<float>{}, Times<float>{}, stream); },
        "100", "70");
    expect_length_error(
        [&] { (void)sa::transform_reduce(a.slice(0, 50), b, 0.0F, Plus<float>{}, Times<float>{}); },
        "50", "70");
    expect_length_error(
        [&] {
          (void)sa::transform_reduce_async(a, b, 0.0F, Plus<float>{}, Times<float>{}, stream);
        },
        "100", "70");
    expect_length_error(
        [&] {
          sa::transform_reduce(a, b, 0.0F, Plus<float>{}, Times<float>{}, sa::out(r), stream);
        },
        "100", "70");
    // A destination of another size than 1 names its size.
    expect_length_error(
        [&] {
          sa::transform_reduce(a.slice(0, 70), b, 0.0F, Plus<float>{}, Times<float>{},
                               sa::out(three), stream);
        },
        "destination", "3 elements");
    expect_length_error(
        [&] { sa::transform_reduce(a, 0.0F, Plus<float>{}, Square<float>{}, none, stream); },
        "destination", "0 elements");
    expect_length_error([&] { sa::reduce(a, 0.0F, Plus<float>{}, sa::out(three), stream); },
                        "destination", "3 elements");
    expect_length_error(
        [&] { sa::reduce(a.slice(0, 3), 0.0F, Plus<float>{}, three.slice(0, 2), stream); },
        "destination", "2 elements");
  }
  // A slice that its array no longer holds: std::out_of_range, naming the range.
  SmartArray<float> shrinking(as);
  const sa::Slice<float> tail = shrinking.slice(90, 10);
  const sa::Slice<float> last = shrinking.slice(99, 1);
  shrinking.resize(95);
  const auto shrunk = host_copy(shrinking);
  {
    sa::ExpectTransfers nothing({});
    EXPECT_THROW(
        (void)sa::transform_reduce(tail, a.slice(0, 10), 0.0F, Plus<float>{}, Times<float>{}),
        std::out_of_range);
    EXPECT_THROW((void)sa::transform_reduce(tail, 0.0F, Plus<float>{}, Square<float>{}, stream),
                 std::out_of_range);
    EXPECT_THROW(
        sa::transform_reduce(a.slice(0, 10), 0.0F, Plus<float>{}, Square<float>{}, last, stream),
        std::out_of_range);
    EXPECT_THROW(sa::reduce(a, 0.0F, Plus<float>{}, sa::out(last), stream), std::out_of_range);
    EXPECT_THROW(sa::reduce(tail, 0.0F, Plus<float>{}, sa::out(r), stream), std::out_of_range);
  }
  // Contents and residency as they were; the outputs still poisoned.
  EXPECT_EQ(host_copy(r), unwritten);
  EXPECT_EQ(host_copy(three), unwritten_three);
  EXPECT_EQ(residency(a), a_residency);
  EXPECT_EQ(residency(b), b_residency);
  EXPECT_EQ(host_copy(a), as);
  EXPECT_EQ(host_copy(b), bs);
  EXPECT_EQ(host_copy(shrinking), shrunk);
}

// --- graphs
// ----------------------------------------------------------------------------------------

TEST(TransformReduce, TheOutFormReplaysInAGraphAndTheHostFormIsRefusedThere) {
  constexpr std::size_t n = 3000;
  auto as = random_values<double>(n);
  const auto bs = random_values<double>(n);
  SmartArray<double> a(as);
  const SmartArray<double> b(bs);
  SmartArray<double> r(1);
  sa::Stream stream;
  sa::Graph graph = sa::capture(stream, [&](sa::StreamRef s) {
    sa::transform_reduce(a, b, 0.0, Plus<double>{}, Times<double>{}, sa::out(r), s);
  });
  for (int round = 0; round < 3; ++round) {
    as[7] += 1.0;
    a[7] = as[7];  // a host write: the replay uploads its tile
    graph.launch(stream);
    EXPECT_TRUE(
        matches(std::as_const(r)[0], reference<double>(0.0, Times<double>{}, n, as, bs), n));
  }
  const auto a_residency = residency(a);
  EXPECT_THROW((void)sa::capture(stream,
                                 [&](sa::StreamRef s) {
                                   (void)sa::transform_reduce(a, b, 0.0, Plus<double>{},
                                                              Times<double>{}, s);
                                 }),
               sa::logic_error);
  EXPECT_THROW((void)sa::capture(
                   stream, [&](sa::StreamRef s) { (void)sa::reduce(a, 0.0, Plus<double>{}, s); }),
               sa::logic_error);
  EXPECT_EQ(residency(a), a_residency);
  EXPECT_TRUE(matches(sa::transform_reduce(a, b, 0.0, Plus<double>{}, Times<double>{}, stream),
                      reference<double>(0.0, Times<double>{}, n, as, bs), n));
}

// --- reductions with no fixed cost
// -----------------------------------------------------------------

TEST(ReductionsWithNoFixedCost, RepeatedCallsAllocateNothingAndWaitForTheResultOnly) {
  constexpr std::size_t n = 200003;
  const auto as = random_values<double>(n);
  const auto bs = random_values<double>(n);
  const SmartArray<double> a(as);
  const SmartArray<double> b(bs);
  SmartArray<double> r(1);
  SmartArray<double> s(1);
  sa::Stream stream;
  (void)a.device_view(stream);
  (void)b.device_view(stream);
  const auto every_form = [&] {
    (void)sa::reduce(a, 0.0, Plus<double>{}, stream);
    (void)sa::reduce(a.slice(1, n - 2), 0.0, Plus<double>{}, stream);
    (void)sa::transform_reduce(a, b, 0.0, Plus<double>{}, Times<double>{}, stream);
    (void)sa::transform_reduce(a.slice(0, 10), 0.0, Plus<double>{}, Square<double>{}, stream);
    sa::reduce(a, 0.0, Plus<double>{}, sa::out(r), stream);
    sa::transform_reduce(a, b, 0.0, Plus<double>{}, Times<double>{}, sa::out(s), stream);
  };
  every_form();  // the stream's first reductions take its scratch
  constexpr int rounds = 50;
  const sa::TransferStats before = sa::global_transfer_stats();
  const std::size_t device_requests = sa::default_device_resource().stats().total_count;
  const std::size_t pinned_requests = sa::default_pinned_resource().stats().total_count;
  for (int round = 0; round < rounds; ++round) every_form();
  const sa::TransferStats made = sa::global_transfer_stats() - before;
  EXPECT_EQ(made.allocation_count, 0U);
  EXPECT_EQ(sa::default_device_resource().stats().total_count, device_requests);
  EXPECT_EQ(sa::default_pinned_resource().stats().total_count, pinned_requests);
  // Four results come back per round, each one D2H and one wait; nothing else moves.
  EXPECT_EQ(made.d2h_count, 4U * rounds);
  EXPECT_EQ(made.d2h_bytes, 4U * rounds * sizeof(double));
  EXPECT_EQ(made.wait_count, 4U * rounds);
  EXPECT_EQ(made.h2d_count + made.d2d_count, 0U);
  EXPECT_TRUE(matches(std::as_const(s)[0], reference<double>(0.0, Times<double>{}, n, as, bs), n));
}

TEST(ReductionsWithNoFixedCost, AStreamMadeAfterAnotherIsDestroyedAllocatesNothing) {
  constexpr std::size_t n = 100000;
  const auto as = random_values<float>(n);
  const SmartArray<float> a(as);
  (void)a.device_view();
  const auto on_a_new_stream = [&] {
    sa::Stream stream;
    (void)sa::reduce(a, 0.0F, Plus<float>{}, stream);
    return sa::transform_reduce(a, a, 0.0, Plus<double>{}, Times<double>{}, stream);
  };
  (void)on_a_new_stream();
  const std::uint64_t allocations = sa::global_transfer_stats().allocation_count;
  const Reference<double> squares = reference<double>(0.0, Square<double>{}, n, as);
  for (int k = 0; k < 5; ++k) EXPECT_TRUE(matches(on_a_new_stream(), squares, n));
  EXPECT_EQ(sa::global_transfer_stats().allocation_count, allocations);
}

TEST(ReductionsWithNoFixedCost, ConcurrentThreadsEachGetTheirOwnResult) {
  constexpr int iterations = 40;
  constexpr std::size_t n = 30011;
  struct Work {
    SmartArray<std::int64_t> a;
    SmartArray<std::int64_t> b;
    std::int64_t dot = 0;
    std::int64_t sum = 0;
  };
  const auto make_work = [] {
    const auto as = random_values<std::int64_t>(n);
    const auto bs = random_values<std::int64_t>(n);
    Work work{SmartArray<std::int64_t>(as), SmartArray<std::int64_t>(bs), 0, 0};
    for (std::size_t i = 0; i < n; ++i) {
      work.dot += as[i] * bs[i];
      work.sum += as[i];
    }
    return work;
  };
  for (const bool one_stream : {true, false}) {
    sa::Stream first;
    sa::Stream second;
    Work works[2] = {make_work(), make_work()};
    std::string wrong[2];
    const auto run = [&](int t) {
      const Work& work = works[t];
      const sa::StreamRef stream = t == 0 || one_stream ? first.ref() : second.ref();
      for (int it = 0; it < iterations; ++it) {
        const std::int64_t dot = sa::transform_reduce(
            work.a, work.b, std::int64_t{0}, Plus<std::int64_t>{}, Times<std::int64_t>{}, stream);
        const std::int64_t sum = sa::reduce(work.a, std::int64_t{0}, Plus<std::int64_t>{}, stream);
        if ((dot != work.dot || sum != work.sum) && wrong[t].empty()) {
          wrong[t] = sa::detail::concat("iteration ", it, ": dot ", dot, " (want ", work.dot,
                                        "), sum ", sum, " (want ", work.sum, ")");
        }
      }
    };
    std::thread other(run, 1);
    run(0);
    other.join();
    EXPECT_EQ(wrong[0], "") << (one_stream ? "one stream" : "two streams");
    EXPECT_EQ(wrong[1], "") << (one_stream ? "one stream" : "two streams");
  }
}

// --- out of core
// -----------------------------------------------------------------------------------

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
