// Graphs (sa::capture, sa::Graph::launch): a replay copies exactly the stale bytes of the graph's
// precondition, waits for nothing when nothing is stale, and commits what the graph wrote. Both
// backends: the host backend records each captured stream's queue and replays it.
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/upstream_resources.hpp>
#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;

namespace {

using u32 = std::uint32_t;
constexpr std::size_t tile = 4096;  // the default tile, in bytes
constexpr std::size_t n = 8 * tile / sizeof(u32);

struct Axpy {
  u32 a;
  SMARTARRAY_HOST_DEVICE u32 operator()(u32 x, u32 y) const { return a * x + y; }
};
struct Mix {
  SMARTARRAY_HOST_DEVICE u32 operator()(u32 x, u32 y) const { return (x ^ y) + 7U; }
};

/// The host reference of `rounds` axpy steps.
std::vector<u32> axpy(u32 a, const std::vector<u32>& x, std::vector<u32> y, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = a * x[i] + y[i];
  }
  return y;
}

/// The issue's chain: ten axpy steps on `s`.
sa::Graph capture_chain(sa::StreamRef stream, SmartArray<u32>& x, SmartArray<u32>& y, u32 a) {
  return sa::capture(stream, [&](sa::StreamRef s) {
    for (int k = 0; k < 10; ++k) sa::transform(y, Axpy{a}, x, y, s);
  });
}

std::uint64_t waits() { return sa::global_counters().snapshot().wait_count; }

}  // namespace

TEST(Graphs, AThousandReplaysWithNoHostAccessCopyNothingAndWaitForNothing) {
  const auto xs = random_values<u32>(n);
  const auto ys = random_values<u32>(n);
  SmartArray<u32> x(xs);
  SmartArray<u32> y(ys);
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
  const auto xs = random_values<u32>(n);
  const auto ys = random_values<u32>(n);
  SmartArray<u32> x(xs);
  SmartArray<u32> y(ys);
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
  const auto xs = random_values<u32>(n);
  const auto ys = random_values<u32>(n);
  SmartArray<u32> x(xs);
  SmartArray<u32> y(ys);
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

// --- what a capture refuses, and what an error inside one leaves ---------------------------------

namespace {

/// Runs `fn` as a capture that must fail with a message holding `expected`, then checks that
/// `y` kept its values and host-only residency, and that `stream` still runs eager work.
template <typename Fn>
void expect_capture_error(sa::Stream& stream, SmartArray<u32>& y, const std::vector<u32>& ys,
                          Fn fn, const std::string& expected) {
  {
    sa::ExpectTransfers nothing({});
    try {
      (void)sa::capture(stream, fn);
      ADD_FAILURE() << "the capture must fail with: " << expected;
    } catch (const std::exception& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  }
  EXPECT_TRUE(y.is_valid(sa::Side::host));
  EXPECT_FALSE(y.is_valid(sa::Side::device));
  EXPECT_EQ(host_copy(y), ys);
  SmartArray<u32> probe(ys);
  sa::transform(probe, Axpy{2}, probe, 1U, stream);
  EXPECT_EQ(host_copy(probe), axpy(2, ys, std::vector<u32>(n, 1U), 1));
}

}  // namespace

TEST(Graphs, InsideACaptureHostAccessOfAWrittenArrayAndHostWaitsThrowNamingTheCall) {
  const auto xs = random_values<u32>(n);
  const auto ys = random_values<u32>(n);
  SmartArray<u32> x(xs);
  SmartArray<u32> y(ys);
  sa::Stream stream;
  const auto write_y = [&](sa::StreamRef s) { sa::transform(y, Axpy{2}, x, y, s); };
  expect_capture_error(
      stream, y, ys, [&](sa::StreamRef s) { write_y(s), (void)y[3]; }, "element access");
  expect_capture_error(
      stream, y, ys, [&](sa::StreamRef s) { write_y(s), (void)std::as_const(y)[3]; },
      "element access");
  expect_capture_error(
      stream, y, ys, [&](sa::StreamRef s) { write_y(s), (void)y.host_view(); }, "host access");
  expect_capture_error(
      stream, y, ys, [&](sa::StreamRef s) { write_y(s), sa::synchronize(s); }, "synchronize");
  expect_capture_error(
      stream, y, ys, [&](sa::StreamRef s) { write_y(s), sa::synchronize_device(); },
      "synchronize_device");
  expect_capture_error(
      stream, y, ys,
      [&](sa::StreamRef s) { write_y(s), (void)sa::capture(s, [](sa::StreamRef) {}); },
      "captures do not nest");
  // A host read of an array the graph only reads is an ordinary read.
  sa::Graph reads = sa::capture(stream, [&](sa::StreamRef s) {
    sa::transform(y, Axpy{2}, x, y, s);
    EXPECT_EQ(host_copy(x), xs);
  });
  EXPECT_EQ(reads.arrays().size(), 2U);
}

TEST(Graphs, AnExceptionInsideTheCaptureLeavesResidencyAndTheStreamAsTheyWere) {
  const auto xs = random_values<u32>(n);
  const auto ys = random_values<u32>(n);
  SmartArray<u32> x(xs);
  SmartArray<u32> y(ys);
  sa::Stream stream;
  expect_capture_error(
      stream, y, ys,
      [&](sa::StreamRef s) {
        sa::transform(y, Axpy{2}, x, y, s);
        throw std::runtime_error("user failure");
      },
      "user failure");
  EXPECT_FALSE(x.is_valid(sa::Side::device));
  sa::Graph graph = capture_chain(stream, x, y, 2);
  graph.launch(stream);
  EXPECT_EQ(host_copy(y), axpy(2, xs, ys, 10));
}

TEST(Graphs, CapturesRefuseTheDefaultStreamAndManagedArrays) {
  const auto xs = random_values<u32>(n);
  const auto ys = random_values<u32>(n);
  SmartArray<u32> x(xs);
  SmartArray<u32> y(ys);
  sa::Stream stream;
  EXPECT_THROW((void)sa::capture(sa::StreamRef{}, [](sa::StreamRef) {}), sa::logic_error);
  SmartArray<u32> managed(xs, sa::ArrayOptions{.mode = sa::MemoryMode::managed});
  expect_capture_error(
      stream, y, ys,
      [&](sa::StreamRef s) { sa::transform(managed, Axpy{2}, managed, 1U, s); }, "managed mode");
  EXPECT_EQ(host_copy(managed), xs);
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

TEST(Graphs, PoolGrowthThatWouldEvictInsideACaptureThrows) {
  constexpr std::size_t block_bytes = std::size_t{1} << 20;
  sa::DeviceMemoryResource upstream;
  sa::PoolOptions options;
  options.chunk_size = block_bytes;
  options.max_chunk_size = block_bytes;
  options.maximum_size = block_bytes;
  options.name = "graph pool";
  sa::PoolResource pool(upstream, options);
  const sa::ArrayOptions in_pool{.device_resource = &pool};
  const auto values = random_values<u32>(block_bytes / sizeof(u32));
  SmartArray<u32> a(values, in_pool);
  SmartArray<u32> b(values, in_pool);
  sa::Stream stream;
  try {
    (void)sa::capture(stream, [&](sa::StreamRef s) {
      sa::transform(a, Axpy{2}, a, 1U, s);
      sa::transform(b, Axpy{2}, b, 1U, s);
    });
    FAIL() << "the second buffer does not fit the pool";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("graph pool out of memory"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("inside sa::capture"), std::string::npos);
  }
  EXPECT_EQ(host_copy(a), values);
  EXPECT_EQ(host_copy(b), values);
}

// --- what a capture holds ------------------------------------------------------------------------

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

// A temporary (a map result) released inside the capture stays reserved for the graph.
TEST(Graphs, TemporariesComeFromThePoolAtCaptureAndStayReservedForTheGraph) {
  const auto xs = random_values<u32>(n);
  const auto ys = random_values<u32>(n);
  SmartArray<u32> x(xs);
  SmartArray<u32> y(ys);
  SmartArray<u32> z(n, 0U);
  sa::Stream stream;
  // The arrays' own buffers first: the capture then allocates only the temporary.
  sa::transform(z, Axpy{1}, x, y, stream);
  stream.synchronize();
  sa::StatisticsAdaptor& resource = sa::default_device_resource();
  const std::size_t before = resource.stats().current_bytes;
  {
    sa::Graph graph = sa::capture(stream, [&](sa::StreamRef s) {
      const SmartArray<u32> t = sa::map(Axpy{2}, x, y, s);
      sa::transform(sa::out(z), Mix{}, t, x, s);
    });
    EXPECT_EQ(resource.stats().current_bytes, before + n * sizeof(u32));
    EXPECT_EQ(graph.arrays().size(), 3U);  // the temporary is the graph's own
    graph.launch(stream);
    graph.launch(stream);
    std::vector<u32> expected(n);
    for (std::size_t i = 0; i < n; ++i) expected[i] = Mix{}(2 * xs[i] + ys[i], xs[i]);
    EXPECT_EQ(host_copy(z), expected);
  }
  EXPECT_EQ(resource.stats().current_bytes, before);
}

namespace {
struct Plus {
  SMARTARRAY_HOST_DEVICE u32 operator()(u32 a, u32 b) const { return a + b; }
};
struct AddInto {
  sa::DeviceView<u32> out;
  sa::DeviceView<const u32> add;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { out[i] += add[i]; }
};
}  // namespace

// fill, copy, for_each_index on a view, a slice, and a reduction whose result leaves the capture.
TEST(Graphs, AdaptersSlicesAndAnEscapingReductionReplay) {
  const auto xs = random_values<u32>(n);
  SmartArray<u32> x(xs);
  SmartArray<u32> v(n, 0U);
  SmartArray<u32> w(n, 0U);
  SmartArray<u32> sum;
  sa::Stream stream;
  sa::Graph graph = sa::capture(stream, [&](sa::StreamRef s) {
    sa::fill(w, 5U, s);
    sa::copy(v, x, s);
    const sa::DeviceView<u32> out = v.device_view(Access::read_write, s);
    const sa::DeviceView<const u32> add = w.device_view(Access::read, s);
    sa::for_each_index(out.size(), AddInto{out, add}, s);
    sa::fill(v.slice(0, 4), 1U, s);
    sum = sa::reduce_async(v, 0U, Plus{}, s);
  });
  EXPECT_EQ(graph.arrays().size(), 4U);
  std::vector<u32> expected = xs;
  for (u32& value : expected) value += 5;
  for (std::size_t i = 0; i < 4; ++i) expected[i] = 1;
  u32 total = 0;
  for (const u32 value : expected) total += value;
  for (int it = 0; it < 3; ++it) {
    graph.launch(stream);
    sa::ExpectTransfers one({.d2h = 1, .d2h_bytes = sizeof(u32)});
    EXPECT_EQ(std::as_const(sum)[0], total);
  }
  EXPECT_EQ(host_copy(v), expected);
}

// An array that a graph binds keeps its device copy while the graph exists.
TEST(Graphs, ArraysThatAGraphBindsAreNotEvicted) {
  constexpr std::size_t block_bytes = std::size_t{1} << 20;
  sa::DeviceMemoryResource upstream;
  sa::PoolOptions options;
  options.chunk_size = block_bytes;
  options.max_chunk_size = block_bytes;
  options.maximum_size = 2 * block_bytes;
  sa::PoolResource pool(upstream, options);
  const sa::ArrayOptions in_pool{.device_resource = &pool};
  constexpr std::size_t count = block_bytes / sizeof(u32);
  const auto values = random_values<u32>(count);
  SmartArray<u32> a(values, in_pool);
  SmartArray<u32> b(values, in_pool);
  SmartArray<u32> c(values, in_pool);
  sa::Stream stream;
  {
    sa::Graph graph = sa::capture(stream, [&](sa::StreamRef s) {
      sa::transform(b, Plus{}, a, b, s);
    });
    graph.launch(stream);
    EXPECT_THROW(sa::transform(c, Plus{}, c, 1U, stream), sa::out_of_memory);
    EXPECT_TRUE(a.is_valid(sa::Side::device));
    graph.launch(stream);
  }
  // Without the graph, the clean copy of a makes room.
  sa::transform(c, Plus{}, c, 1U, stream);
  EXPECT_FALSE(a.is_valid(sa::Side::device));
  std::vector<u32> twice(count);
  for (std::size_t i = 0; i < count; ++i) twice[i] = 3 * values[i];
  EXPECT_EQ(host_copy(b), twice);
  EXPECT_EQ(host_copy(a), values);
}

TEST(Graphs, OneCaptureRecordsOneDevice) {
  if (sa::device_count() < 2) GTEST_SKIP() << "needs two devices";
  const auto xs = random_values<u32>(n);
  SmartArray<u32> y(random_values<u32>(n));
  const auto ys = host_copy(y);
  SmartArray<u32> x(xs);
  sa::Stream stream(sa::Device{0});
  sa::Stream second(sa::Device{1});
  expect_capture_error(
      stream, y, ys, [&](sa::StreamRef) { sa::transform(x, Axpy{2}, x, 1U, second); },
      "one capture records the work of one device");
  sa::Graph graph = capture_chain(stream, x, y, 3);
  EXPECT_THROW(graph.launch(second), sa::logic_error);
  graph.launch(stream);
  EXPECT_EQ(host_copy(y), axpy(3, xs, ys, 10));
}
