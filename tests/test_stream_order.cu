// Stream order by range: a use of a range on one stream waits only for the conflicting uses of
// that range on other streams (an overlap where at least one side writes), and only up to the
// point of each, not for later work on its stream. Each test blocks one stream behind a gate (a
// host function that waits for the test) and checks whether work queued on the other stream
// completes meanwhile; the data is checked once both are done. Both backends.
#include "support/device_ops.cuh"
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <smartarray/runtime/detail/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <future>
#include <thread>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::gate;
using sa::test::host_copy;
using sa::test::random_values;

namespace {

constexpr std::size_t n = 1 << 16;
constexpr std::size_t half_n = n / 2;

/// True when everything queued on `stream` so far completes within `timeout` (an event recorded
/// now, polled), while the other stream stays blocked.
bool completes_within(sa::StreamRef stream, std::chrono::milliseconds timeout) {
  sa::detail::PooledEvent event;
  sa::detail::runtime().record(event.get(), stream);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (sa::detail::runtime().query(event.get())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

constexpr std::chrono::milliseconds soon{2000};
constexpr std::chrono::milliseconds briefly{200};

/// Every element of view `v` set to `value` on `stream`.
void fill_range(sa::DeviceView<float> v, float value, sa::StreamRef stream) {
  sa::test::fill_view(v, value, stream);
}

std::vector<float> expected(std::size_t count, float first, float second, std::size_t split) {
  std::vector<float> values(count, second);
  std::fill(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(split), first);
  return values;
}

}  // namespace

// The case the issue names: the whole array written on A, then a long kernel on A over the first
// half, then the second half written on B. B waits for A's whole-array write, not for the kernel.
TEST(StreamOrderByRange, AWriteOfTheSecondHalfWaitsForTheEarlierWholeWriteNotTheLaterKernel) {
  sa::Stream a_stream;
  sa::Stream b_stream;
  SmartArray<float> a(random_values<float>(n));
  sa::test::fill_on_device(a, 1.0F, a_stream);
  // The "long kernel": a use of the first half on A, then A blocked until the test says.
  fill_range(a.slice(0, half_n).device_view(Access::read_write, a_stream), 2.0F, a_stream);
  std::promise<void> release = gate(a_stream);
  fill_range(a.slice(half_n, half_n).device_view(Access::discard, b_stream), 3.0F, b_stream);
  const bool b_done = completes_within(b_stream, soon);
  release.set_value();
  EXPECT_TRUE(b_done) << "the write of the second half_n on B waited for A's kernel on the first";
  sa::synchronize(a_stream);
  EXPECT_EQ(host_copy(a), expected(n, 2.0F, 3.0F, half_n));
}

TEST(StreamOrderByRange, WritesOfDisjointHalvesOnTwoStreamsRunSideBySide) {
  sa::Stream a_stream;
  sa::Stream b_stream;
  SmartArray<float> a(random_values<float>(n));
  for (int round = 0; round < 3; ++round) {
    fill_range(a.slice(0, half_n).device_view(Access::discard, a_stream), 4.0F + round, a_stream);
    std::promise<void> release = gate(a_stream);
    fill_range(a.slice(half_n, half_n).device_view(Access::discard, b_stream), 5.0F + round,
               b_stream);
    const bool b_done = completes_within(b_stream, soon);
    release.set_value();
    EXPECT_TRUE(b_done) << "round " << round;
  }
  sa::synchronize(a_stream);
  EXPECT_EQ(host_copy(a), expected(n, 6.0F, 7.0F, half_n));
}

TEST(StreamOrderByRange, ReadsOfOneRangeOnTwoStreamsNeverWaitForEachOther) {
  sa::Stream a_stream;
  sa::Stream b_stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  SmartArray<float> copy_a(n);
  SmartArray<float> copy_b(n);
  (void)std::as_const(a).device_view(a_stream);  // uploaded on A
  sa::synchronize(a_stream);
  sa::test::copy_on_device(copy_a, a, a_stream);
  std::promise<void> release = gate(a_stream);
  sa::test::copy_on_device(copy_b, a, b_stream);
  const bool b_done = completes_within(b_stream, soon);
  release.set_value();
  EXPECT_TRUE(b_done);
  sa::synchronize(a_stream);
  EXPECT_EQ(host_copy(copy_a), values);
  EXPECT_EQ(host_copy(copy_b), values);
}

// Conflicts still wait: a read of a range that A writes behind its gate, and a write of a range
// that A reads behind it, do not complete on B until A's use does.
TEST(StreamOrderByRange, AConflictingUseOnAnotherStreamWaitsForThatUse) {
  sa::Stream a_stream;
  sa::Stream b_stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  SmartArray<float> out(n);
  // B reads the second half, which A writes behind its gate.
  std::promise<void> release = gate(a_stream);
  fill_range(a.slice(half_n, half_n).device_view(Access::discard, a_stream), 8.0F, a_stream);
  sa::test::copy_on_device(out, a, b_stream);
  EXPECT_FALSE(completes_within(b_stream, briefly));
  release.set_value();
  sa::synchronize(b_stream);
  std::vector<float> want = values;
  std::fill(want.begin() + half_n, want.end(), 8.0F);
  EXPECT_EQ(host_copy(out), want);

  // B writes the first half, which A reads behind its gate (into `out`).
  SmartArray<float> snapshot(n);
  std::promise<void> second = gate(a_stream);
  sa::test::copy_on_device(snapshot, a, a_stream);
  fill_range(a.slice(0, half_n).device_view(Access::discard, b_stream), 9.0F, b_stream);
  EXPECT_FALSE(completes_within(b_stream, briefly));
  second.set_value();
  sa::synchronize(b_stream);
  EXPECT_EQ(host_copy(snapshot), want);  // read before B's write
  EXPECT_EQ(host_copy(a), expected(n, 9.0F, 8.0F, half_n));
}

// The one-stream steady state keeps one record per array and changes nothing per call.
TEST(StreamOrderByRange, ALoopOnOneStreamOverTheSameRangesAddsNoWaitAndNoCopy) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  sa::test::scale_on_device(a, stream);
  sa::synchronize(stream);
  const auto before = sa::global_transfer_stats();
  for (int i = 0; i < 10; ++i) sa::test::scale_on_device(a, stream);
  const auto after = sa::global_transfer_stats();
  EXPECT_EQ(after.h2d_count, before.h2d_count);
  EXPECT_EQ(after.d2h_count, before.d2h_count);
  EXPECT_EQ(after.d2d_count, before.d2d_count);
  EXPECT_EQ(after.wait_count, before.wait_count);
  std::vector<float> want = values;
  for (int i = 0; i < 11; ++i) want = sa::test::scaled(want);
  EXPECT_EQ(host_copy(a), want);
}

// A device buffer is its allocating stream's from the allocation on: the pool may hand it a block
// whose earlier work is still queued there. A use on another stream of bytes that stream has not
// touched yet waits for that point, as a use of touched bytes does: here the block of `x`, freed on
// A behind a kernel held by a gate, becomes `y`'s on A, and `y`'s second half is uploaded on B.
TEST(StreamOrderByRange, BytesOfANewBufferThatItsStreamHasNotTouchedWaitForItsAllocation) {
  sa::Stream a_stream;
  sa::Stream b_stream;
  std::promise<void> release = gate(a_stream);
  {
    SmartArray<float> x(random_values<float>(n));
    sa::test::fill_on_device(x, 1.0F, a_stream);  // queued behind the gate
  }  // x's block goes back to the pool on A, behind the fill
  const auto values = random_values<float>(n);
  SmartArray<float> y(values);
  (void)std::as_const(y).slice(0, half_n).device_view(a_stream);       // allocated on A
  (void)std::as_const(y).slice(half_n, half_n).device_view(b_stream);  // uploaded on B
  const bool b_done = completes_within(b_stream, briefly);
  release.set_value();
  EXPECT_FALSE(b_done) << "B used bytes of y's new block before A reached its allocation";
  SmartArray<float> out(n);
  sa::test::copy_on_device(out, y, b_stream);
  EXPECT_EQ(host_copy(out), values);
}

// The same for a copy: the new array's block is allocated on the source's writer's stream, and
// its bytes past what the copy writes (here a tail the host appended) wait for that point on other
// streams too.
TEST(StreamOrderByRange, TheBytesPastACopysDeviceDataWaitForItsAllocation) {
  sa::Stream a_stream;
  sa::Stream b_stream;
  const auto values = random_values<float>(n);
  SmartArray<float> source(values);
  sa::test::scale_on_device(source, a_stream);
  source.resize(2 * n, 2.0F);  // the host holds the tail; the device, the first n
  std::promise<void> release = gate(a_stream);
  const SmartArray<float> copy(source);  // its device copy: one D2D on A, behind the gate
  (void)copy.slice(n, n).device_view(b_stream);  // the tail uploaded on B
  const bool b_done = completes_within(b_stream, briefly);
  release.set_value();
  EXPECT_FALSE(b_done) << "B used bytes of the copy's new block before A reached its allocation";
  std::vector<float> want = sa::test::scaled(values);
  want.resize(2 * n, 2.0F);
  SmartArray<float> out(2 * n);
  sa::test::copy_on_device(out, copy, b_stream);
  EXPECT_EQ(host_copy(out), want);
}
