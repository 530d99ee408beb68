// Graphs (sa::capture, sa::Graph::launch) across replays: a replay copies exactly the stale bytes
// of the graph's precondition, waits for nothing when nothing is stale, commits what the graph
// wrote, and refuses arrays that changed since the capture. Streams: two graphs sharing an array,
// a fork and join, a stream that joins at its first use. Both backends: the host backend records
// each captured stream's queue and replays it.
#include "support/test_support.hpp"

#include "support/device_ops.cuh"
#include "support/graph_ops.cuh"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;
using namespace sa::test::graphs;

TEST(Graphs, AThousandReplaysWithNoHostAccessCopyNothingAndWaitForNothing) {
  RandomPair pair;
  auto& [xs, ys, x, y] = pair;
  x.set_label("x");
  sa::Stream stream;
  sa::Graph graph;
  {
    sa::ExpectTransfers nothing({});  // the capture runs nothing and copies nothing
    graph = capture_chain(stream, x, y, 3);
  }
  EXPECT_TRUE(y.is_valid(sa::Side::host));
  EXPECT_FALSE(y.is_valid(sa::Side::device));
  ASSERT_EQ(graph.arrays().size(), 2U);
  EXPECT_EQ(graph.arrays()[0].name, "SmartArray #" + std::to_string(graph.arrays()[0].id) + " \"x\"");
  EXPECT_EQ(graph.arrays()[0].bytes_read, n * sizeof(u32));
  EXPECT_EQ(graph.arrays()[0].bytes_written, 0U);
  EXPECT_EQ(graph.arrays()[1].bytes_written, n * sizeof(u32));
  {
    // The first launch of host-valid arrays: one upload per array read.
    sa::ExpectTransfers first({.h2d = 2, .h2d_bytes = 2 * n * sizeof(u32)});
    graph.launch(stream);
  }
  const std::uint64_t waits_before = waits();
  {
    sa::ExpectTransfers none({});
    for (int it = 0; it < 1000; ++it) graph.launch(stream);
  }
  EXPECT_EQ(waits(), waits_before);
  EXPECT_EQ(graph.launches(), 1001U);
  EXPECT_FALSE(y.is_valid(sa::Side::host));
  {
    sa::ExpectTransfers back({.d2h = 1, .d2h_bytes = n * sizeof(u32)});
    EXPECT_EQ(host_copy(y), axpy(3, xs, ys, 10 * 1001));
  }
  EXPECT_EQ(host_copy(x), xs);
}

TEST(Graphs, AHostWriteOfOneElementUploadsExactlyItsTileBeforeTheNextReplay) {
  const auto old_xs = random_values<u32>(n);
  const auto ys = random_values<u32>(n);
  SmartArray<u32> x(old_xs);
  SmartArray<u32> y(ys);
  sa::Stream stream;
  sa::Graph graph = capture_chain(stream, x, y, 5);
  graph.launch(stream);
  auto new_xs = old_xs;
  const std::size_t element = 3 * tile / sizeof(u32) + 17;
  new_xs[element] = old_xs[element] + 1 + sa::test::random_value<u32>() % 1000;
  {
    sa::ExpectTransfers write({});  // x's host copy is valid: the write copies nothing
    x[element] = new_xs[element];
  }
  EXPECT_FALSE(x.is_valid(sa::Side::device));
  {
    sa::ExpectTransfers one_tile({.h2d = 1, .h2d_bytes = tile});
    graph.launch(stream);
  }
  {
    sa::ExpectTransfers none({});
    graph.launch(stream);
  }
  EXPECT_EQ(host_copy(y), axpy(5, new_xs, axpy(5, old_xs, ys, 10), 20));
}

TEST(Graphs, AHostReadAfterAReplayCopiesBackExactlyTheWrittenBytesWhenItReads) {
  RandomPair pair;
  auto& [xs, ys, x, y] = pair;
  constexpr std::size_t part = tile / sizeof(u32);  // the graph writes y's first tile only
  sa::Stream stream;
  sa::Graph graph = sa::capture(stream, [&](sa::StreamRef s) {
    sa::transform(y.slice(0, part), Mix{}, x.slice(0, part), x.slice(part, part), s);
  });
  ASSERT_EQ(graph.arrays().size(), 2U);
  EXPECT_EQ(graph.arrays()[0].bytes_read, 2 * tile);  // x: read only
  EXPECT_EQ(graph.arrays()[1].bytes_read, 0U);        // y: written only
  EXPECT_EQ(graph.arrays()[1].bytes_written, tile);
  {
    sa::ExpectTransfers launch({.h2d = 1, .h2d_bytes = 2 * tile});
    graph.launch(stream);
    graph.launch(stream);
  }
  auto expected = ys;
  for (std::size_t i = 0; i < part; ++i) expected[i] = Mix{}(xs[i], xs[part + i]);
  {
    sa::ExpectTransfers back({.d2h = 1, .d2h_bytes = tile});
    EXPECT_EQ(host_copy(y), expected);
  }
  {
    sa::ExpectTransfers again({});
    EXPECT_EQ(host_copy(y), expected);
  }
}

TEST(Graphs, LaunchRefusesAResizedArrayAndLeavesItIntact) {
  RandomPair pair;
  auto& [xs, ys, x, y] = pair;
  y.set_label("weights");
  sa::Stream stream;
  sa::Graph graph = capture_chain(stream, x, y, 7);
  graph.launch(stream);
  const auto after_one = axpy(7, xs, ys, 10);
  const u32 appended = sa::test::random_value<u32>();
  y.push_back(appended);
  try {
    graph.launch(stream);
    FAIL() << "a resized array must make launch throw";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("\"weights\" was resized from"), std::string::npos)
        << error.what();
  }
  auto expected = after_one;
  expected.push_back(appended);
  EXPECT_EQ(host_copy(y), expected);
  EXPECT_EQ(host_copy(x), xs);
  EXPECT_EQ(graph.launches(), 1U);
}

// x is bound first and stale on the device, y is bound second and resized: the launch checks both
// before it uploads x, so it copies nothing; with y's old size back, the graph replays.
TEST(Graphs, LaunchChecksEveryArrayBeforeAnyFixUpCopy) {
  RandomPair pair;
  auto& [xs, ys, x, y] = pair;
  y.set_label("resized");
  sa::Stream stream;
  sa::Graph graph = capture_chain(stream, x, y, 3);
  graph.launch(stream);
  const auto new_xs = random_values<u32>(n);
  std::ranges::copy(new_xs, x.host_view(Access::discard).begin());
  y.push_back(sa::test::random_value<u32>());
  const sa::TransferStats x_before = x.transfer_stats();
  {
    sa::ExpectTransfers nothing({});
    try {
      graph.launch(stream);
      FAIL() << "a resized array must make launch throw";
    } catch (const sa::logic_error& error) {
      EXPECT_NE(std::string(error.what()).find("\"resized\" was resized from"), std::string::npos)
          << error.what();
    }
  }
  EXPECT_EQ(x.transfer_stats().h2d_count, x_before.h2d_count);
  EXPECT_FALSE(x.is_valid(sa::Side::device));
  EXPECT_EQ(graph.launches(), 1U);
  y.pop_back();
  {
    sa::ExpectTransfers x_only({.h2d = 1, .h2d_bytes = n * sizeof(u32)});
    graph.launch(stream);
  }
  EXPECT_EQ(host_copy(y), axpy(3, new_xs, axpy(3, xs, ys, 10), 10));
  EXPECT_EQ(host_copy(x), new_xs);
}

TEST(Graphs, LaunchRefusesADestroyedOrMovedArray) {
  const auto xs = random_values<u32>(n);
  const auto ys = random_values<u32>(n);
  SmartArray<u32> y(ys);
  sa::Stream stream;
  sa::Graph graph;
  {
    SmartArray<u32> x(xs);
    x.set_label("gone");
    graph = capture_chain(stream, x, y, 3);
    graph.launch(stream);
  }
  try {
    graph.launch(stream);
    FAIL() << "a destroyed array must make launch throw";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("\"gone\" was destroyed"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(host_copy(y), axpy(3, xs, ys, 10));

  SmartArray<u32> x2(xs);
  SmartArray<u32> y2(ys);
  sa::Graph moved = capture_chain(stream, x2, y2, 3);
  moved.launch(stream);
  SmartArray<u32> taken(std::move(y2));
  EXPECT_THROW(moved.launch(stream), sa::logic_error);
  EXPECT_EQ(host_copy(taken), axpy(3, xs, ys, 10));
}

TEST(Graphs, LaunchRefusesADestroyedStreamBeforeItCopiesAnything) {
  RandomPair pair;
  auto& [xs, ys, x, y] = pair;
  sa::Stream stream;
  sa::Graph graph = capture_chain(stream, x, y, 3);
  void* gone = nullptr;
  {
    const sa::Stream temporary;
    gone = temporary.ref().handle();
  }
  {
    sa::ExpectTransfers nothing({});
    EXPECT_THROW(graph.launch(sa::StreamRef{gone}), sa::logic_error);
  }
  EXPECT_EQ(graph.launches(), 0U);
  EXPECT_FALSE(x.is_valid(sa::Side::device));
  graph.launch(stream);
  EXPECT_EQ(host_copy(y), axpy(3, xs, ys, 10));
}

// Two graphs share y: one writes it on s1, the other reads it on s2. The second launch orders s2
// after s1 through y's tracker; run under SMARTARRAY_HOST_LATENCY_US, a missing wait reads stale
// data.
TEST(Graphs, TwoGraphsSharingAnArrayOnTwoStreamsAreOrdered) {
  auto xs = random_values<u32>(n);
  SmartArray<u32> x(xs);
  SmartArray<u32> y(n, 0U);
  SmartArray<u32> z(n, 0U);
  sa::Stream s1;
  sa::Stream s2;
  sa::Graph produce = sa::capture(s1, [&](sa::StreamRef s) {
    sa::transform(sa::out(y), Axpy{9}, x, 1U, s);
  });
  sa::Graph consume = sa::capture(s2, [&](sa::StreamRef s) {
    sa::transform(sa::out(z), Mix{}, y, x, s);
  });
  produce.launch(s1);  // uploads x whole
  consume.launch(s2);
  for (int round = 0; round < 5; ++round) {
    const std::size_t element = sa::test::random_value<u32>() % n;
    xs[element] = sa::test::random_value<u32>();
    x[element] = xs[element];
    {
      sa::ExpectTransfers fix_up({.h2d = 1, .h2d_bytes = tile});
      produce.launch(s1);
      consume.launch(s2);
    }
    std::vector<u32> expected(n);
    for (std::size_t i = 0; i < n; ++i) expected[i] = Mix{}(9 * xs[i] + 1, xs[i]);
    sa::ExpectTransfers back({.d2h = 1, .d2h_bytes = n * sizeof(u32)});
    ASSERT_EQ(host_copy(z), expected) << "round " << round;
  }
}

// A stream of the device that the captured calls use joins the capture at its first use (after
// the work captured so far) and is joined back when the capture ends.
TEST(Graphs, AnotherStreamJoinsTheCaptureAtItsFirstUse) {
  const auto xs = random_values<u32>(n);
  SmartArray<u32> x(xs);
  SmartArray<u32> y(n, 0U);
  sa::Stream stream;
  sa::Stream other;
  sa::Graph graph = sa::capture(stream, [&](sa::StreamRef s) {
    sa::transform(sa::out(y), Axpy{3}, x, 1U, s);
    sa::transform(y, Mix{}, y, x, other);
  });
  EXPECT_EQ(host_copy(y), std::vector<u32>(n, 0U));
  graph.launch(stream);
  std::vector<u32> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = Mix{}(3 * xs[i] + 1, xs[i]);
  EXPECT_EQ(host_copy(y), expected);
}

// b on s1 forks c onto s2 (which waits for b's writer) while s1 computes d; e joins s2 back.
TEST(Graphs, AForkAndJoinAcrossTwoStreamsReplaysInOrder) {
  const auto as = random_values<u32>(n);
  SmartArray<u32> a(as);
  SmartArray<u32> b(n, 0U);
  SmartArray<u32> c(n, 0U);
  SmartArray<u32> d(n, 0U);
  SmartArray<u32> e(n, 0U);
  sa::Stream s1;
  sa::Stream s2;
  sa::Graph graph = sa::capture(s1, [&](sa::StreamRef s) {
    sa::transform(sa::out(b), Axpy{3}, a, 1U, s);
    sa::transform(sa::out(c), Mix{}, b, a, s2);
    sa::transform(sa::out(d), Axpy{5}, b, 2U, s);
    sa::transform(sa::out(e), Mix{}, c, d, s);
  });
  EXPECT_EQ(graph.arrays().size(), 5U);
  {
    sa::ExpectTransfers first({.h2d = 1, .h2d_bytes = n * sizeof(u32)});
    graph.launch(s1);
  }
  {
    sa::ExpectTransfers none({});
    for (int it = 0; it < 10; ++it) graph.launch(s1);
  }
  std::vector<u32> expected(n);
  for (std::size_t i = 0; i < n; ++i) {
    const u32 bi = 3 * as[i] + 1;
    expected[i] = Mix{}(Mix{}(bi, as[i]), 5 * bi + 2);
  }
  EXPECT_EQ(host_copy(e), expected);
}
