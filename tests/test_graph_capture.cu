// Graphs (sa::capture) inside the capture: what it refuses (host access of what the graph writes,
// host waits, the default stream, managed arrays, the pool's out-of-memory path,
// release_device_memory, destroying a captured stream, a second device),
// what an error leaves (residency and the stream as they were), and what it holds: temporaries
// reserved for the graph, adapters, slices, an escaping reduction, sa::launch and Thrust (cuda
// backend), and arrays kept from eviction. Both backends.
#include "support/test_support.hpp"

#include "support/device_ops.cuh"
#include "support/array_pool.hpp"
#include "support/graph_ops.cuh"

#include <smartarray/interop/thrust.hpp>

#include <thrust/execution_policy.h>
#include <thrust/transform.h>

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;
using namespace sa::test::graphs;

namespace {
__global__ void scale_add_kernel(sa::DeviceView<const u32> x, sa::DeviceView<u32> y) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < y.size();
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    y[i] = 3 * x[i] + y[i];
  }
}
}  // namespace

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

/// Runs `fn` as a capture that must fail with logic_error naming `call` and where the capture was
/// opened, having copied nothing.
template <typename Fn>
void expect_refused_in_capture(sa::Stream& stream, Fn fn, const std::string& call) {
  const sa::source_location opened = sa::source_location::current();
  sa::ExpectTransfers nothing({});
  try {
    (void)sa::capture(stream, fn, opened);
    ADD_FAILURE() << "the capture must refuse " << call;
  } catch (const sa::logic_error& error) {
    const std::string named = call + " inside sa::capture (opened at " + opened.file_name() + ":" +
                              std::to_string(opened.line());
    EXPECT_NE(std::string(error.what()).find(named), std::string::npos) << error.what();
  }
}

/// The handle as the library prints it ("0x...").
std::string printed(sa::StreamRef stream) {
  std::ostringstream text;
  text << stream.handle();
  return text.str();
}

}  // namespace

// --- what a capture refuses, and what an error inside one leaves ---------------------------------

TEST(GraphCapture, InsideACaptureHostAccessOfAWrittenArrayAndHostWaitsThrowNamingTheCall) {
  RandomPair pair;
  auto& [xs, ys, x, y] = pair;
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
  expect_capture_error(
      stream, y, ys, [&](sa::StreamRef) { sa::transform(y, Axpy{2}, x, y, sa::StreamRef{}); },
      "work on the default stream");
  SmartArray<u32> other(xs);
  sa::Graph earlier = capture_chain(stream, other, other, 3);
  expect_capture_error(
      stream, y, ys, [&](sa::StreamRef s) { write_y(s), earlier.launch(s); }, "Graph::launch");
  EXPECT_EQ(earlier.launches(), 0U);
  EXPECT_EQ(host_copy(other), xs);
  // A host read of an array the graph only reads is an ordinary read.
  sa::Graph reads = sa::capture(stream, [&](sa::StreamRef s) {
    sa::transform(y, Axpy{2}, x, y, s);
    EXPECT_EQ(host_copy(x), xs);
  });
  EXPECT_EQ(reads.arrays().size(), 2U);
}

TEST(GraphCapture, AnExceptionInsideTheCaptureLeavesResidencyAndTheStreamAsTheyWere) {
  RandomPair pair;
  auto& [xs, ys, x, y] = pair;
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

TEST(GraphCapture, CapturesRefuseTheDefaultStreamAndManagedArrays) {
  RandomPair pair;
  auto& [xs, ys, x, y] = pair;
  sa::Stream stream;
  EXPECT_THROW((void)sa::capture(sa::StreamRef{}, [](sa::StreamRef) {}), sa::logic_error);
  SmartArray<u32> managed(xs, sa::ArrayOptions{.mode = sa::MemoryMode::managed});
  expect_capture_error(
      stream, y, ys,
      [&](sa::StreamRef s) { sa::transform(managed, Axpy{2}, managed, 1U, s); }, "managed mode");
  EXPECT_EQ(host_copy(managed), xs);
}

// The pool's out-of-memory chain is refused before its first step: the clean copy that eviction
// would drop stays.
TEST(GraphCapture, PoolGrowthThatWouldEvictInsideACaptureIsRefusedBeforeItEvicts) {
  sa::test::ArrayPool pooled(1, "full pool");
  const auto values = random_values<u32>(sa::test::ArrayPool::block_bytes / sizeof(u32));
  const auto b_values = random_values<u32>(values.size());
  SmartArray<u32> clean(values, pooled.arrays);
  SmartArray<u32> b(b_values, pooled.arrays);
  sa::Stream stream;
  (void)std::as_const(clean).device_view(stream);  // fills the pool
  stream.synchronize();
  expect_refused_in_capture(
      stream, [&](sa::StreamRef s) { sa::transform(b, Axpy{2}, b, 1U, s); },
      "full pool out of memory for " + std::to_string(sa::test::ArrayPool::block_bytes) +
          " bytes");
  EXPECT_TRUE(clean.is_valid(sa::Side::device));
  EXPECT_FALSE(b.is_valid(sa::Side::device));
  EXPECT_EQ(host_copy(b), b_values);
  EXPECT_EQ(host_copy(clean), values);
}

TEST(GraphCapture, ReleaseDeviceMemoryInsideACaptureIsRefusedBeforeItEvicts) {
  RandomPair pair;
  auto& [xs, ys, x, y] = pair;
  sa::Stream stream;
  (void)std::as_const(x).device_view(stream);  // a clean copy, the first to be evicted
  stream.synchronize();
  constexpr std::size_t wanted = std::size_t{1} << 40;
  expect_refused_in_capture(
      stream,
      [&](sa::StreamRef s) {
        sa::transform(y, Axpy{2}, y, 1U, s);
        (void)sa::release_device_memory(wanted);
      },
      "release_device_memory(" + std::to_string(wanted) + ", device 0)");
  EXPECT_TRUE(x.is_valid(sa::Side::device));
  EXPECT_FALSE(y.is_valid(sa::Side::device));
  {
    sa::ExpectTransfers y_only({.h2d = 1, .h2d_bytes = n * sizeof(u32)});
    sa::transform(y, Axpy{2}, x, y, stream);
  }
  EXPECT_EQ(host_copy(y), axpy(2, xs, ys, 1));
}

// A Stream destroyed inside the capture cannot throw: a captured stream is kept, untouched, until
// the capture ends, which then fails naming it; it is destroyed after.
TEST(GraphCapture, AStreamOfTheCaptureDestroyedInsideItIsKeptUntilTheCaptureFails) {
  RandomPair pair;
  auto& [xs, ys, x, y] = pair;
  sa::Stream stream;
  std::optional<sa::Stream> side(std::in_place);
  const sa::StreamRef kept = *side;
  expect_refused_in_capture(
      stream,
      [&](sa::StreamRef s) {
        sa::transform(y, Axpy{2}, x, y, s);
        sa::transform(x, Axpy{3}, x, 1U, *side);  // side joins the capture
        side.reset();
      },
      "destroying Stream " + printed(kept));
  EXPECT_THROW(sa::fill(x, 1U, kept), sa::logic_error);
  EXPECT_FALSE(x.is_valid(sa::Side::device));
  EXPECT_FALSE(y.is_valid(sa::Side::device));
  EXPECT_EQ(host_copy(x), xs);
  sa::Graph graph = capture_chain(stream, x, y, 2);
  graph.launch(stream);
  EXPECT_EQ(host_copy(y), axpy(2, xs, ys, 10));
}

// A pool with room grows from its upstream during a capture (a plain allocation, kept by the
// array that needs it); only its out-of-memory path is refused.
TEST(GraphCapture, APoolWithRoomGrowsInsideACapture) {
  sa::test::ArrayPool pooled(2, "growing pool");
  const auto values = random_values<u32>(sa::test::ArrayPool::block_bytes / sizeof(u32));
  SmartArray<u32> a(values, pooled.arrays);
  SmartArray<u32> b(values, pooled.arrays);
  sa::Stream stream;
  EXPECT_EQ(pooled.pool.reserved_bytes(), 0U);
  sa::Graph graph = sa::capture(stream, [&](sa::StreamRef s) {
    sa::transform(b, Plus{}, a, b, s);
  });
  EXPECT_EQ(pooled.pool.reserved_bytes(), 2 * sa::test::ArrayPool::block_bytes);
  graph.launch(stream);
  std::vector<u32> twice(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) twice[i] = 2 * values[i];
  EXPECT_EQ(host_copy(b), twice);
}

// --- what a capture holds ------------------------------------------------------------------------

// A temporary (a map result) released inside the capture stays reserved for the graph.
TEST(GraphCapture, TemporariesComeFromThePoolAtCaptureAndStayReservedForTheGraph) {
  RandomPair pair;
  auto& [xs, ys, x, y] = pair;
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
struct AddInto {
  sa::DeviceView<u32> out;
  sa::DeviceView<const u32> add;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { out[i] += add[i]; }
};
}  // namespace

// fill, copy, for_each_index on a view, a slice, and a reduction whose result leaves the capture.
TEST(GraphCapture, AdaptersSlicesAndAnEscapingReductionReplay) {
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
TEST(GraphCapture, ArraysThatAGraphBindsAreNotEvicted) {
  sa::test::ArrayPool pooled(2);
  const sa::ArrayOptions& in_pool = pooled.arrays;
  constexpr std::size_t count = sa::test::ArrayPool::block_bytes / sizeof(u32);
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

TEST(GraphCapture, OneCaptureRecordsOneDevice) {
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

// A raw kernel through sa::launch and a Thrust algorithm on device_begin/device_end: both record
// into the graph and replay (cuda backend: Thrust's device system and __global__ kernels are CUDA).
TEST(GraphCapture, SaLaunchAndThrustReplay) {
  if (sa::test::on_host_backend()) GTEST_SKIP() << "raw kernels and Thrust need the cuda backend";
  RandomPair pair;
  auto& [xs, ys, x, y] = pair;
  SmartArray<u32> z(n, 0U);
  sa::Stream stream;
  sa::Graph graph = sa::capture(stream, [&](sa::StreamRef s) {
    sa::launch(scale_add_kernel, 64, 256, s, x, y);
    thrust::transform(thrust::cuda::par_nosync.on(s.cuda_stream()),
                      sa::interop::device_begin(std::as_const(y), s),
                      sa::interop::device_end(std::as_const(y), s),
                      sa::interop::device_begin(std::as_const(x), s),
                      sa::interop::device_begin(z, Access::discard, s), Mix{});
  });
  EXPECT_EQ(graph.arrays().size(), 3U);
  {
    sa::ExpectTransfers first({.h2d = 2, .h2d_bytes = 2 * n * sizeof(u32)});
    graph.launch(stream);
  }
  {
    sa::ExpectTransfers none({});
    graph.launch(stream);
  }
  const auto y2 = axpy(3, xs, ys, 2);
  std::vector<u32> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = Mix{}(y2[i], xs[i]);
  EXPECT_EQ(host_copy(z), expected);
  EXPECT_EQ(host_copy(y), y2);
}
