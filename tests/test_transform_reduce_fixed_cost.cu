// Reductions with no fixed cost: in the steady state reduce and transform_reduce (every form, on
// arrays and slices) allocate nothing and wait for nothing but their result, a stream made after
// another one is destroyed allocates nothing either, and concurrent host threads, on one stream or
// two, each get their own result. Every body runs on the host and the cuda backend.
#include "support/reduction_reference.hpp"
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::SmartArray;
using sa::test::random_values;
using sa::test::reductions::matches;
using sa::test::reductions::Plus;
using sa::test::reductions::Reference;
using sa::test::reductions::reference;
using sa::test::reductions::Square;
using sa::test::reductions::Times;

namespace {

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

}  // namespace
