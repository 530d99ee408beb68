// The residency contract in each memory mode (memory_mode.hpp), with exact transfer counts:
// explicit and pageable copy, mapped never copies, managed prefetches instead of copying. Every
// body runs on the host backend (which emulates mapped and managed memory with host memory) and on
// the cuda backend.
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/smartarray.hpp>
#include <smartarray/memory/memory_mode.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/upstream_resources.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::MemoryMode;
using sa::SmartArray;
using sa::test::random_values;

namespace {

using sa::test::copy_on_device;
using sa::test::fill_on_device;
using sa::test::host_copy;
using sa::test::scale_on_device;
using sa::test::scaled;

constexpr std::size_t n = 4000;
constexpr std::size_t bytes = n * sizeof(float);

using sa::test::gate;

/// Opens the gate from another thread after a delay, so that a host call that forgets to wait
/// runs before the gated work.
std::thread open_later(std::promise<void>& release) {
  return std::thread([&release] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    release.set_value();
  });
}

class MemoryModes : public ::testing::TestWithParam<MemoryMode> {
 protected:
  [[nodiscard]] sa::ArrayOptions options() const { return {.mode = GetParam()}; }
  [[nodiscard]] bool copies() const {
    return GetParam() == MemoryMode::explicit_copy || GetParam() == MemoryMode::pageable;
  }
  [[nodiscard]] bool managed() const { return GetParam() == MemoryMode::managed; }
  /// `count` when this mode copies, else 0.
  [[nodiscard]] std::uint64_t copies_or_zero(std::uint64_t count) const {
    return copies() ? count : 0;
  }
  /// `count` when this mode prefetches: managed, on a device with concurrentManagedAccess (without
  /// it the driver migrates at each launch and nothing is prefetched).
  [[nodiscard]] std::uint64_t prefetches_or_zero(std::uint64_t count) const {
    return managed() && sa::device_properties().concurrent_managed_access ? count : 0;
  }
};

std::string mode_name(const ::testing::TestParamInfo<MemoryMode>& info) {
  return sa::to_string(info.param);
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(AllModes, MemoryModes,
                         ::testing::Values(MemoryMode::explicit_copy, MemoryMode::pageable,
                                           MemoryMode::mapped, MemoryMode::managed),
                         mode_name);

TEST_P(MemoryModes, ModeIsKeptAndNewArrayIsHostValid) {
  const auto values = random_values<float>(n);
  const SmartArray<float> a(values, options());
  EXPECT_EQ(a.memory_mode(), GetParam());
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_FALSE(a.is_valid(sa::Side::device));
  EXPECT_EQ(host_copy(a), values);
}

TEST_P(MemoryModes, HostWriteThenTwoDeviceReads) {
  SmartArray<float> a(n, options());
  const auto values = random_values<float>(n);
  std::copy(values.begin(), values.end(), a.begin());
  SmartArray<float> out(n);
  const auto before = sa::global_transfer_stats();
  {
    sa::ExpectTransfers expect({.h2d = copies_or_zero(1), .d2h = 0});
    for (int read = 0; read < 2; ++read) copy_on_device(out, a);
  }
  const auto made = sa::global_transfer_stats() - before;
  EXPECT_EQ(made.prefetch_count, prefetches_or_zero(1));
  EXPECT_EQ(made.prefetch_bytes, prefetches_or_zero(bytes));
  EXPECT_EQ(a.transfer_stats().h2d_count, copies_or_zero(1));
  EXPECT_EQ(a.transfer_stats().h2d_bytes, copies_or_zero(bytes));
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(sa::Side::device));
  EXPECT_EQ(host_copy(out), values);
  EXPECT_EQ(host_copy(a), values);
}

TEST_P(MemoryModes, TenRoundsOfHostWriteAndDeviceReadWrite) {
  SmartArray<float> a(n, options());
  std::vector<float> expected;
  const auto before = sa::global_transfer_stats();
  {
    sa::ExpectTransfers expect({.h2d = copies_or_zero(10), .d2h = copies_or_zero(9)});
    for (int round = 0; round < 10; ++round) {
      const auto values = random_values<float>(n);
      auto host = a.host_view(Access::read_write);
      for (std::size_t i = 0; i < n; i += 7) host[i] = values[i];
      expected.assign(host.begin(), host.end());
      scale_on_device(a);
      expected = scaled(expected);
    }
  }
  const auto made = sa::global_transfer_stats() - before;
  // Managed: one prefetch to the device per round and one back to the host in every round but
  // the first.
  EXPECT_EQ(made.prefetch_count, prefetches_or_zero(19));
  EXPECT_EQ(host_copy(a), expected);
}

TEST_P(MemoryModes, ChainOfFiveKernelsThenHostRead) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, options());
  std::vector<float> expected = values;
  const auto before = sa::global_transfer_stats();
  {
    sa::ExpectTransfers expect({.h2d = copies_or_zero(1), .d2h = copies_or_zero(1)});
    for (int k = 0; k < 5; ++k) {
      scale_on_device(a);
      expected = scaled(expected);
    }
    EXPECT_EQ(host_copy(a), expected);
  }
  EXPECT_EQ((sa::global_transfer_stats() - before).prefetch_count, prefetches_or_zero(2));
}

TEST_P(MemoryModes, HostReadAfterDeviceWriteSeesTheData) {
  SmartArray<float> a(n, options());
  const float value = sa::test::random_value<float>();
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = copies_or_zero(1)});
    fill_on_device(a, value);
    EXPECT_EQ(host_copy(a), std::vector<float>(n, value));
  }
  EXPECT_TRUE(a.is_valid(sa::Side::device));
  EXPECT_TRUE(a.is_valid(sa::Side::host));
}

TEST_P(MemoryModes, LargeHostReadWriteAfterDeviceWriteKeepsEveryValue) {
  // Over 1 MiB and not a whole number of pages: in managed mode the host writer's acquire first
  // writes every page that the prefetch brought back, on several threads, with its own value.
  constexpr std::size_t large = (std::size_t{3} << 20) / sizeof(float) + 123;
  const auto values = random_values<float>(large);
  SmartArray<float> a(values, options());
  scale_on_device(a);
  const auto expected = scaled(values);
  const float last = -sa::test::random_value<float>();
  const auto before = sa::global_transfer_stats();
  {
    // The last D2H is the read of `out`, which is an explicit array.
    sa::ExpectTransfers expect({.h2d = copies_or_zero(1), .d2h = copies_or_zero(1) + 1});
    {
      const auto host = a.host_view(Access::read_write);
      ASSERT_EQ(std::vector<float>(host.begin(), host.end()), expected);
      host[large - 1] = last;
      host[0] = last;
    }
    SmartArray<float> out(large);
    sa::test::poison(out.host_view(Access::discard).data(), large);
    copy_on_device(out, a);
    auto copied = expected;
    copied.front() = last;
    copied.back() = last;
    EXPECT_EQ(host_copy(out), copied);
  }
  // Managed: back to the host for the writer, then to the device for the copy.
  EXPECT_EQ((sa::global_transfer_stats() - before).prefetch_count, prefetches_or_zero(2));
}

TEST_P(MemoryModes, HostReadWaitsForAGatedDeviceWriter) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, options());
  (void)a.device_view(Access::read, stream);
  std::promise<void> release = gate(stream);
  scale_on_device(a, stream);
  std::thread opener = open_later(release);
  EXPECT_EQ(host_copy(a), scaled(values));
  opener.join();
}

TEST_P(MemoryModes, HostWriteWaitsForAGatedDeviceReader) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, options());
  SmartArray<float> out(n);
  (void)a.device_view(Access::read, stream);
  std::promise<void> release = gate(stream);
  copy_on_device(out, a, stream);
  std::thread opener = open_later(release);
  // The kernel queued behind the gate must read the old values.
  std::fill(a.begin(), a.end(), -1.5F);
  opener.join();
  EXPECT_EQ(host_copy(out), values);
  EXPECT_EQ(host_copy(a), std::vector<float>(n, -1.5F));
}

TEST_P(MemoryModes, WorkOnTwoStreamsIsOrdered) {
  sa::Stream first;
  sa::Stream second;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, options());
  SmartArray<float> copy(n);
  (void)a.device_view(Access::read, first);
  std::promise<void> release = gate(first);
  copy_on_device(copy, a, first);
  scale_on_device(a, second);  // must not overwrite before the read on `first` ran
  release.set_value();
  EXPECT_EQ(host_copy(copy), values);
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST_P(MemoryModes, ArrayOutlivesTheStreamsItWasUsedOn) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, options());
  SmartArray<float> copy(n, options());
  {
    sa::Stream first;
    scale_on_device(a, first);
    copy_on_device(copy, a, first);
  }  // both arrays still name `first` as a device user; it must never be used again
  sa::Stream second;
  scale_on_device(a, second);
  EXPECT_EQ(host_copy(copy), scaled(values));
  EXPECT_EQ(host_copy(a), scaled(scaled(values)));
  std::fill(a.begin(), a.end(), 1.0F);
}

TEST_P(MemoryModes, PushBackAndResizeGrowthKeepContents) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, options());
  scale_on_device(a);  // the host copy is stale when the growth starts
  std::vector<float> expected = scaled(values);
  const auto tail = random_values<float>(3 * n);
  for (const float x : tail) {
    a.push_back(x);
    expected.push_back(x);
  }
  a.resize(5 * n, 2.5F);
  expected.resize(5 * n, 2.5F);
  EXPECT_EQ(host_copy(a), expected);
  scale_on_device(a);
  EXPECT_EQ(host_copy(a), scaled(expected));
}

TEST_P(MemoryModes, InsertAndEraseAfterDeviceWriteKeepContents) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, options());
  scale_on_device(a);
  std::vector<float> expected = scaled(values);
  const float x = sa::test::random_value<float>();
  a.insert(a.begin() + 10, x);
  expected.insert(expected.begin() + 10, x);
  a.erase(a.begin() + 100, a.begin() + 200);
  expected.erase(expected.begin() + 100, expected.begin() + 200);
  EXPECT_EQ(host_copy(a), expected);
  scale_on_device(a);
  EXPECT_EQ(host_copy(a), scaled(expected));
}

TEST_P(MemoryModes, CopyIsDeepAndIndependent) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, options());
  scale_on_device(a);
  SmartArray<float> b(a);
  EXPECT_EQ(b.memory_mode(), GetParam());
  scale_on_device(a);
  EXPECT_EQ(host_copy(b), scaled(values));
  EXPECT_EQ(host_copy(a), scaled(scaled(values)));
}

TEST_P(MemoryModes, ShrinkToFitAndClearKeepWhatRemains) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, options());
  a.reserve(4 * n);
  scale_on_device(a);
  a.shrink_to_fit();
  EXPECT_EQ(host_copy(a), scaled(values));
  a.clear();
  EXPECT_TRUE(a.empty());
  a.push_back(1.0F);
  EXPECT_EQ(host_copy(a), std::vector<float>{1.0F});
}

TEST(MemoryModesBadInput, ManagedRequestBeyondFreeDeviceMemoryThrowsBeforeTheDriver) {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  sa::detail::runtime().memory_info(free_bytes, total_bytes);
  const std::size_t count = free_bytes / sizeof(float) + (std::size_t{1} << 20);
  try {
    SmartArray<float> a(count, sa::ArrayOptions{.mode = MemoryMode::managed});
    FAIL() << "a managed array larger than the free device memory was allocated";
  } catch (const sa::out_of_memory& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(std::to_string(count * sizeof(float))), std::string::npos) << message;
    EXPECT_NE(message.find("free"), std::string::npos) << message;
  }
}

TEST(MemoryModesPageable, LargeTransfersAreStagedAsOneLogicalCopyEach) {
  // 12 MiB: three staging chunks, both staging blocks reused.
  constexpr std::size_t large = 3 * (std::size_t{1} << 20);
  const auto values = random_values<float>(large);
  SmartArray<float> a(values, sa::ArrayOptions{.mode = MemoryMode::pageable});
  const auto before = sa::global_transfer_stats();
  scale_on_device(a);
  EXPECT_EQ(host_copy(a), scaled(values));
  // The global counters count each staged transfer once too, not once per chunk.
  const auto global = sa::global_transfer_stats() - before;
  EXPECT_EQ(global.h2d_count, 1U);
  EXPECT_EQ(global.h2d_bytes, large * sizeof(float));
  EXPECT_EQ(global.d2h_count, 1U);
  EXPECT_EQ(global.d2h_bytes, large * sizeof(float));
  const auto made = a.transfer_stats();
  EXPECT_EQ(made.h2d_count, 1U);
  EXPECT_EQ(made.h2d_bytes, large * sizeof(float));
  EXPECT_EQ(made.d2h_count, 1U);
  EXPECT_EQ(made.d2h_bytes, large * sizeof(float));
}

TEST(MemoryModesExplicit, PinnedBuffersOfFinishedUploadsAreReusedWhileTheStreamIsBusy) {
  // Each round uploads a fresh array and reads another back while the upload may still run. The
  // uploaded array's pinned buffer goes back to the pool when it dies; the next round's host
  // requests must find it although the stream has taken new work since: the pool stays at the
  // two buffers of one round instead of growing every other round.
  constexpr std::size_t n = std::size_t{1} << 20;
  sa::PinnedMemoryResource upstream;
  sa::PoolOptions options;
  options.chunk_size = n * sizeof(float);
  options.max_chunk_size = n * sizeof(float);
  options.name = "round pool";
  sa::PoolResource pool(upstream, options);
  const sa::ArrayOptions in_pool{.host_resource = &pool};
  for (int round = 0; round < 8; ++round) {
    const auto values = random_values<float>(n);
    {
      SmartArray<float> uploaded(values, in_pool);
      (void)uploaded.device_view();  // the upload reads the pinned buffer on the default stream
      SmartArray<float> result = sa::device_array<float>(n, {}, in_pool);
      fill_on_device(result, 1.5F);
      EXPECT_EQ(std::as_const(result)[n - 1], 1.5F);  // a host buffer for the download
      EXPECT_EQ(host_copy(uploaded), values);
    }
    sa::synchronize_device();
    EXPECT_LE(pool.reserved_bytes(), 2 * n * sizeof(float)) << "round " << round;
  }
}

TEST(MemoryModesPageable, StagingBlocksAreFreeForAnyoneOnceATransferReturns) {
  // A pool that holds the four 4 MiB staging blocks and nothing more, and may not grow.
  constexpr std::size_t block = std::size_t{4} << 20;
  constexpr std::size_t blocks = 4;
  sa::PinnedMemoryResource upstream;
  sa::PoolOptions limits;
  limits.initial_size = blocks * block;
  limits.chunk_size = blocks * block;
  limits.maximum_size = blocks * block;
  limits.name = "staging pool";
  sa::PoolResource pool(upstream, limits);
  sa::Stream stream;
  const auto values = random_values<float>(5 * (std::size_t{1} << 20));  // 20 MiB, five chunks
  SmartArray<float> a(values, sa::ArrayOptions{.host_resource = &pool, .mode = MemoryMode::pageable});
  (void)a.device_view(Access::read, stream);  // the staged upload
  // Later work holds the stream busy; the upload's blocks must not wait for it.
  std::promise<void> release = gate(stream);
  std::atomic<bool> opened{false};
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    opened = true;
    release.set_value();
  });
  std::vector<void*> taken;
  for (std::size_t b = 0; b < blocks; ++b) taken.push_back(pool.allocate_sync(block));
  EXPECT_FALSE(opened.load()) << "the host waited for the stream's later work to get the blocks";
  for (void* ptr : taken) pool.deallocate_sync(ptr, block);
  opener.join();
  EXPECT_EQ(pool.upstream_allocation_count(), 1U);
  EXPECT_EQ(host_copy(a), values);
}

TEST(MemoryModesManaged, ReadMostlyAdviceIsAppliedAndKeepsTheContract) {
  if (!sa::detail::runtime().properties().managed_memory) GTEST_SKIP() << "no managed memory";
  const auto values = random_values<float>(1 << 18);
  SmartArray<float> advised(values, sa::ArrayOptions{.mode = MemoryMode::managed, .read_mostly = true});
  SmartArray<float> plain(values, sa::ArrayOptions{.mode = MemoryMode::managed});
  if (sa::backend() == sa::BackendKind::cuda) {
    const auto read_mostly = [](const SmartArray<float>& a) {
      int attribute = -1;
      const float* data = a.device_view().data();
      EXPECT_EQ(cudaMemRangeGetAttribute(&attribute, sizeof(attribute),
                                         cudaMemRangeAttributeReadMostly, data,
                                         a.size() * sizeof(float)),
                cudaSuccess);
      return attribute;
    };
    EXPECT_EQ(read_mostly(advised), 1);
    EXPECT_EQ(read_mostly(plain), 0);
  }
  // Reads on both sides, then a device write: the advice changes no result and no count.
  SmartArray<float> out(values.size());
  copy_on_device(out, advised);
  EXPECT_EQ(host_copy(out), values);
  EXPECT_EQ(std::as_const(advised)[123], values[123]);
  scale_on_device(advised);
  EXPECT_EQ(host_copy(advised), scaled(values));
  EXPECT_EQ(advised.transfer_stats().h2d_count, 0U);
  EXPECT_EQ(advised.transfer_stats().d2h_count, 0U);
}

TEST(MemoryModesMapped, PortableAndWriteCombinedFlagsAreAccepted) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, sa::ArrayOptions{.mode = MemoryMode::mapped,
                                               .portable = true,
                                               .write_combined = true});
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  scale_on_device(a);
  EXPECT_EQ(host_copy(a), scaled(values));
}
