// Asynchronous prefetch to the host and to the device, and discard: the exact copies of each, per
// range, in each memory mode and across devices; what the first host access after a prefetch waits
// for (that prefetch's copies only) and copies (nothing); a host write before the copy lands is
// never lost; tokens outlive their arrays; bad input. A gate (a host function that blocks a stream
// until the test opens it) keeps copies pending. Both backends.
#include "support/array_pool.hpp"
#include "support/device_ops.cuh"
#include "support/test_support.hpp"

#include <smartarray/graph.hpp>
#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <future>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::MemoryMode;
using sa::SmartArray;
using sa::test::gate;
using sa::test::host_copy;
using sa::test::random_values;
using sa::test::scale_on_device;
using sa::test::scaled;

namespace {

constexpr std::size_t n = 1 << 16;
constexpr std::size_t bytes = n * sizeof(float);
constexpr std::chrono::milliseconds soon{2000};
constexpr std::chrono::milliseconds briefly{200};

/// The array's transfers and waits since construction.
sa::TransferStats stats(const SmartArray<float>& a) { return a.transfer_stats(); }

/// True when `done` becomes ready within `timeout`.
template <typename Future>
bool ready_within(Future& done, std::chrono::milliseconds timeout) {
  return done.wait_for(timeout) == std::future_status::ready;
}

std::string printed(sa::StreamRef stream) {
  std::ostringstream out;
  out << stream.handle();
  return out.str();
}

}  // namespace

// The device wrote the array; a prefetch copies it down once, asynchronously, and the host read
// after wait() copies and waits for nothing.
TEST(Prefetch, ToHostCopiesTheStaleBytesOnceAndTheReadAfterItCopiesNothing) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a, stream);
  const sa::TransferStats before = stats(a);
  sa::Prefetch p = a.prefetch_to_host(stream);
  const sa::TransferStats queued = stats(a) - before;
  EXPECT_EQ(queued.d2h_count, 1U);
  EXPECT_EQ(queued.d2h_bytes, bytes);
  EXPECT_EQ(queued.wait_count, 0U) << "the prefetch itself waited on the host";
  p.wait();
  EXPECT_TRUE(p.ready());
  {
    sa::ExpectTransfers none(a.counters(), {});
    const sa::TransferStats read_before = stats(a);
    EXPECT_EQ(std::as_const(a)[0], scaled(values)[0]);
    EXPECT_EQ(host_copy(a), scaled(values));
    EXPECT_EQ((stats(a) - read_before).wait_count, 0U);
  }
  EXPECT_TRUE(a.is_valid(sa::Side::device)) << "a prefetch is a read: the device copy stays valid";
}

// The first host access waits for the prefetch's copy only: later work on its stream, blocked
// behind a gate, is not waited for.
TEST(Prefetch, TheFirstHostAccessWaitsForThePrefetchCopyOnlyNotTheStream) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a, stream);
  sa::Prefetch p = a.prefetch_to_host(stream);
  std::promise<void> release = gate(stream);
  auto read = std::async(std::launch::async, [&] { return host_copy(a); });
  const bool read_done = ready_within(read, soon);
  release.set_value();
  EXPECT_TRUE(read_done) << "the host read waited for work queued after the prefetch";
  EXPECT_EQ(read.get(), scaled(values));
  sa::synchronize(stream);
  EXPECT_EQ(stats(a).d2h_count, 1U);
}

// A host write of the range before the copy lands waits for it: the write is never overwritten.
TEST(Prefetch, AHostWriteBeforeTheCopyLandsWaitsForItAndIsKept) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a, stream);
  std::promise<void> release = gate(stream);
  sa::Prefetch p = a.prefetch_to_host(stream);  // returns with its copy behind the gate
  EXPECT_FALSE(p.ready());
  const float written = sa::test::random_value<float>();
  auto write = std::async(std::launch::async, [&] { a[5] = written; });
  EXPECT_FALSE(ready_within(write, briefly)) << "the host write did not wait for the copy";
  release.set_value();
  ASSERT_TRUE(ready_within(write, soon));
  write.get();
  EXPECT_TRUE(p.ready());
  std::vector<float> want = scaled(values);
  want[5] = written;
  EXPECT_EQ(host_copy(a), want);
  const sa::TransferStats total = stats(a);
  EXPECT_EQ(total.d2h_count, 1U);
  EXPECT_EQ(total.wait_count, 1U) << "the write waits once, for the pending copy";
}

// Only the slice's stale bytes move, one copy per stale run; the rest of the array stays stale.
TEST(Prefetch, ASliceCopiesOneRunPerStaleRangeOfItsBytes) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a, stream);
  // The host writes [2000, 3000): the slice [1000, 5000) then has two stale runs around it.
  const auto middle = random_values<float>(1000);
  std::copy(middle.begin(), middle.end(), a.slice(2000, 1000).host_view().begin());
  const sa::TransferStats before = stats(a);
  sa::Prefetch p = a.slice(1000, 4000).prefetch_to_host(stream);
  const sa::TransferStats queued = stats(a) - before;
  EXPECT_EQ(queued.d2h_count, 2U);
  EXPECT_EQ(queued.d2h_bytes, 3000 * sizeof(float));
  p.wait();
  std::vector<float> want = scaled(values);
  std::copy(middle.begin(), middle.end(), want.begin() + 2000);
  {
    sa::ExpectTransfers none(a.counters(), {});
    const auto slice = std::as_const(a).slice(1000, 4000).host_view();
    EXPECT_TRUE(std::equal(slice.begin(), slice.end(), want.begin() + 1000));
  }
  EXPECT_FALSE(a.is_valid(sa::Side::host)) << "bytes outside the slice were copied";
  EXPECT_EQ(host_copy(a), want);
}

TEST(Prefetch, AHostValidRangeCopiesNothingAndItsTokenIsReady) {
  sa::Stream stream;
  SmartArray<float> a(random_values<float>(n));
  (void)std::as_const(a).device_view(stream);
  sa::ExpectTransfers none(a.counters(), {});
  const sa::Prefetch p = a.prefetch_to_host(stream);
  EXPECT_TRUE(p.ready());
  p.wait();
  EXPECT_TRUE(sa::Prefetch().ready());
  EXPECT_EQ(stats(a).wait_count, 0U);
}

TEST(Prefetch, ToDeviceUploadsTheStaleBytesAndAKernelThenCopiesNothing) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  {
    sa::ExpectTransfers upload(a.counters(), {.h2d = 1, .h2d_bytes = bytes});
    a.prefetch_to_device(stream);
  }
  {
    sa::ExpectTransfers none(a.counters(), {});
    scale_on_device(a, stream);
  }
  // A slice: only its stale bytes.
  std::copy(values.begin(), values.begin() + 100, a.slice(0, 100).host_view().begin());
  {
    sa::ExpectTransfers part(a.counters(), {.h2d = 1, .h2d_bytes = 100 * sizeof(float)});
    std::as_const(a).slice(0, 500).prefetch_to_device(stream);
  }
  std::vector<float> want = scaled(values);
  std::copy(values.begin(), values.begin() + 100, want.begin());
  EXPECT_EQ(host_copy(a), want);
}

// A managed array's prefetch is one cudaMemPrefetchAsync to the host; a mapped one's moves
// nothing, and its token is ready once the kernel that writes it is done; a pageable one's copy is
// staged through the host and done when the call returns.
TEST(Prefetch, EachMemoryModeCountsItsOwnKindOfCopy) {
  for (const MemoryMode mode : {MemoryMode::managed, MemoryMode::mapped, MemoryMode::pageable}) {
    SCOPED_TRACE(sa::to_string(mode));
    sa::Stream stream;
    const auto values = random_values<float>(n);
    SmartArray<float> a(values, sa::ArrayOptions{.mode = mode});
    scale_on_device(a, stream);
    const sa::TransferStats before = stats(a);
    sa::Prefetch p = a.prefetch_to_host(stream);
    const sa::TransferStats queued = stats(a) - before;
    const bool prefetches =
        mode == MemoryMode::managed && sa::device_properties().concurrent_managed_access;
    EXPECT_EQ(queued.prefetch_count, prefetches ? 1U : 0U);
    EXPECT_EQ(queued.d2h_count, mode == MemoryMode::pageable ? 1U : 0U);
    if (mode == MemoryMode::pageable) EXPECT_TRUE(p.ready());
    p.wait();
    const sa::TransferStats read_before = stats(a);
    EXPECT_EQ(host_copy(a), scaled(values));
    const sa::TransferStats read = stats(a) - read_before;
    EXPECT_EQ(read.d2h_count + read.prefetch_count + read.wait_count, 0U);
  }
}

// Bytes written on two devices: each comes down from its own device, once.
TEST(Prefetch, BytesHeldOnTwoDevicesComeFromEach) {
  if (sa::device_count() < 2) GTEST_SKIP() << "one device: nothing to test across devices";
  sa::Stream first(sa::Device{0});
  sa::Stream second(sa::Device{1});
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  sa::test::fill_view(a.slice(0, n / 2).device_view(Access::discard, first), 1.5F, first);
  sa::test::fill_view(a.slice(n / 2, n / 2).device_view(Access::discard, second), 2.5F, second);
  const sa::TransferStats before = stats(a);
  const sa::TransferStats before0 = sa::device_transfer_stats(0);
  const sa::TransferStats before1 = sa::device_transfer_stats(1);
  sa::Prefetch p = a.prefetch_to_host(first);
  EXPECT_EQ((stats(a) - before).d2h_count, 2U);
  EXPECT_EQ((sa::device_transfer_stats(0) - before0).d2h_bytes, bytes / 2);
  EXPECT_EQ((sa::device_transfer_stats(1) - before1).d2h_bytes, bytes / 2);
  p.wait();
  sa::ExpectTransfers none(a.counters(), {});
  std::vector<float> want(n, 1.5F);
  std::fill(want.begin() + n / 2, want.end(), 2.5F);
  EXPECT_EQ(host_copy(a), want);
}

// A discarded array is never copied: not by a host read, not by a device read, not by eviction.
TEST(Discard, NoCopyMovesDiscardedBytesUntilTheyAreWritten) {
  sa::Stream stream;
  SmartArray<float> scratch(random_values<float>(n));
  scale_on_device(scratch, stream);
  scratch.discard();
  {
    sa::ExpectTransfers none(scratch.counters(), {});
    (void)std::as_const(scratch).host_view();
    (void)std::as_const(scratch)[n - 1];
    (void)std::as_const(scratch).device_view(stream);
    (void)scratch.prefetch_to_host(stream);
  }
  EXPECT_TRUE(scratch.is_valid(sa::Side::host));
  EXPECT_TRUE(scratch.is_valid(sa::Side::device));
  // Written again on the host, the bytes move as any others.
  const auto fresh = random_values<float>(n);
  std::copy(fresh.begin(), fresh.end(), scratch.host_view().begin());
  {
    sa::ExpectTransfers upload(scratch.counters(), {.h2d = 1, .h2d_bytes = bytes});
    scale_on_device(scratch, stream);
  }
  EXPECT_EQ(host_copy(scratch), scaled(fresh));
}

TEST(Discard, ASliceDiscardLeavesOnlyTheRestToCopy) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a, stream);
  a.slice(0, n / 2).discard();
  {
    sa::ExpectTransfers rest(a.counters(), {.d2h = 1, .d2h_bytes = bytes / 2});
    const auto all = std::as_const(a).host_view();
    const auto want = scaled(values);
    EXPECT_TRUE(std::equal(all.begin() + n / 2, all.end(), want.begin() + n / 2));
  }
}

TEST(Discard, AnEvictedDiscardedCopyIsNotWrittenBack) {
  sa::test::ArrayPool pooled(2);
  constexpr std::size_t count = sa::test::ArrayPool::block_bytes / sizeof(float);
  SmartArray<float> a(random_values<float>(count), pooled.arrays);
  SmartArray<float> b(random_values<float>(count), pooled.arrays);
  SmartArray<float> c(random_values<float>(count), pooled.arrays);
  scale_on_device(a);  // only the device holds a's values
  scale_on_device(b);
  a.discard();
  (void)c.device_view();  // the pool is full: a, the least recently used, is evicted
  EXPECT_TRUE(c.is_valid(sa::Side::device));
  EXPECT_EQ(pooled.pool.upstream_allocation_count(), 2U);
  EXPECT_EQ(a.transfer_stats().d2h_count, 0U) << "discarded bytes were written back";
  // Still unspecified everywhere: a new device buffer receives no copy either.
  sa::ExpectTransfers none(a.counters(), {});
  (void)a.device_view(Access::read_write);
}

// Tokens outlive their arrays: destroying, resizing or moving an array waits for its pending
// copies, so that no copy writes freed or moved memory, and its token is ready then.
TEST(Prefetch, ATokenOutlivesItsArray) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  const auto open_later = [](std::promise<void>& release) {
    return std::thread([&release] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      release.set_value();
    });
  };
  sa::Prefetch destroyed;
  std::promise<void> first;
  std::thread opener;
  {
    SmartArray<float> a(values);
    scale_on_device(a, stream);
    first = gate(stream);
    destroyed = a.prefetch_to_host(stream);
    opener = open_later(first);
  }  // the destructor waits for the copy into the host buffer it frees
  opener.join();
  EXPECT_TRUE(destroyed.ready());
  destroyed.wait();

  SmartArray<float> b(values);
  scale_on_device(b, stream);
  std::promise<void> second = gate(stream);
  const sa::Prefetch resized = b.prefetch_to_host(stream);
  opener = open_later(second);
  b.resize(4 * n, 1.0F);  // a reallocation of the host buffer: it waits for the copy
  opener.join();
  EXPECT_TRUE(resized.ready());
  std::vector<float> want = scaled(values);
  want.resize(4 * n, 1.0F);
  EXPECT_EQ(host_copy(b), want);

  SmartArray<float> c(values);
  scale_on_device(c, stream);
  std::promise<void> third = gate(stream);
  const sa::Prefetch moved = c.prefetch_to_host(stream);
  SmartArray<float> d = std::move(c);
  third.set_value();
  EXPECT_EQ(host_copy(d), scaled(values));
  EXPECT_TRUE(moved.ready());
  EXPECT_EQ(d.transfer_stats().d2h_count + c.transfer_stats().d2h_count, 1U);
}

TEST(PrefetchBadInput, ASlicePastTheEndThrowsNamingTheRangeAndTheSize) {
  SmartArray<float> a(random_values<float>(n));
  const auto slice = a.slice(n - 100, 100);
  a.resize(n / 2);
  for (const auto& call : std::vector<std::function<void()>>{
           [&] { (void)slice.prefetch_to_host(); }, [&] { slice.prefetch_to_device(); },
           [&] { slice.discard(); }}) {
    try {
      call();
      ADD_FAILURE() << "no exception";
    } catch (const std::out_of_range& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find(std::to_string(n - 100) + ", " + std::to_string(n)), std::string::npos)
          << what;
      EXPECT_NE(what.find(std::to_string(n / 2)), std::string::npos) << what;
    }
  }
  EXPECT_EQ(a.size(), n / 2);
}

TEST(PrefetchBadInput, ADestroyedStreamIsRejectedAndNothingChanges) {
  sa::StreamRef dead;
  {
    sa::Stream s;
    dead = s;
  }
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a);
  const sa::TransferStats before = stats(a);
  for (const auto& call : std::vector<std::function<void()>>{
           [&] { (void)a.prefetch_to_host(dead); }, [&] { a.prefetch_to_device(dead); }}) {
    try {
      call();
      ADD_FAILURE() << "no exception";
    } catch (const sa::logic_error& error) {
      EXPECT_NE(std::string(error.what()).find(printed(dead)), std::string::npos) << error.what();
    }
  }
  EXPECT_EQ((stats(a) - before).d2h_count, 0U);
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  EXPECT_EQ(host_copy(a), scaled(values));
}

// A prefetch to the host and a discard are host-side operations: inside a capture, whose work has
// not run, they are refused, naming the call and where the capture began, and change nothing.
TEST(PrefetchBadInput, PrefetchToHostAndDiscardAreRefusedInsideACapture) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a, stream);
  for (const bool discard : {false, true}) {
    try {
      (void)sa::capture(stream, [&](sa::StreamRef) {
        if (discard) {
          a.discard();
        } else {
          (void)a.prefetch_to_host(stream);
        }
      });
      ADD_FAILURE() << "no exception";
    } catch (const sa::logic_error& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find(discard ? "discard" : "prefetch_to_host"), std::string::npos) << what;
      EXPECT_NE(what.find("inside sa::capture"), std::string::npos) << what;
    }
  }
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  EXPECT_EQ(stats(a).d2h_count, 0U);
  EXPECT_EQ(host_copy(a), scaled(values));
}
