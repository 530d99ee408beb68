// transform_reduce's async and out(r) forms (and reduce's out form): the result stays on the
// device until read, in an array or a slice of the caller; bad inputs (sizes that differ, a
// destination that is not one element, a slice that its array no longer holds) throw before
// anything moves; and the out form replays in a captured graph while the host form is refused
// there. Every body runs on the host and the cuda backend.
#include "support/reduction_reference.hpp"
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
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

// --- the async and out forms ---------------------------------------------------------------------

TEST(TransformReduceForms, AsyncLeavesTheResultOnTheDeviceUntilRead) {
  constexpr std::size_t n = 5000;
  const auto as = random_values<std::int64_t>(n);
  const auto bs = random_values<std::int64_t>(n);
  auto a = std::make_optional<SmartArray<std::int64_t>>(as);
  const SmartArray<std::int64_t> b(bs);
  const Reference<std::int64_t> dot = reference<std::int64_t>(7, Times<std::int64_t>{}, n, as, bs);
  sa::Stream stream;
  {
    // The kernels run once first, on other arrays: CUDA loads a kernel lazily at its first
    // launch, which waits for the work that the gate below holds back.
    const SmartArray<std::int64_t> warm(bs);
    const SmartArray<std::int64_t> done = sa::transform_reduce_async(
        warm, warm, std::int64_t{7}, Plus<std::int64_t>{}, Times<std::int64_t>{}, stream);
    (void)done[0];
  }
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

TEST(TransformReduceForms, OutFormsWriteTheDeviceCopyOfTheCallersArray) {
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
// --- bad inputs ----------------------------------------------------------------------------------

TEST(TransformReduceForms, BadInputsThrowBeforeAnythingMoves) {
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
// --- graphs --------------------------------------------------------------------------------------

TEST(TransformReduceForms, TheOutFormReplaysInAGraphAndTheHostFormIsRefusedThere) {
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

}  // namespace
