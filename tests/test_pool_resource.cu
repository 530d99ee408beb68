// The pool resource over each upstream: stream-ordered reuse of freed blocks, split and merge,
// trim, the hard limit, the out-of-memory chain (eviction hooks, then the error's message),
// injected failures and forgotten streams; pinned blocks that a host writer gets only after the
// copies that read them; and the pool options. Every body runs on the host backend and on the cuda
// backend.
#include "support/memory_resources.hpp"
#include "support/test_support.hpp"

#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/upstream_resources.hpp>
#include <smartarray/runtime/stream.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace sa = smartarray;
using sa::PoolOptions;
using sa::PoolResource;
using sa::detail::CopyKind;
using sa::detail::runtime;
using sa::test::poison;
using sa::test::random_values;
using namespace sa::test::memory;

namespace {

/// Options whose every chunk is exactly `chunk` bytes (or the request, when larger).
PoolOptions fixed_chunks(std::size_t chunk, std::size_t initial = 0,
                         std::optional<std::size_t> maximum = std::nullopt) {
  PoolOptions options;
  options.initial_size = initial;
  options.chunk_size = chunk;
  options.max_chunk_size = chunk;
  options.maximum_size = maximum;
  options.name = "test pool";
  return options;
}

// ============================================================================================
// The pool over each upstream
// ============================================================================================

template <typename T>
class PoolConformance : public ::testing::Test {};

using Pools = ::testing::Types<PoolOverDevice, PoolOverPinned>;
TYPED_TEST_SUITE(PoolConformance, Pools, ResourceNames);

TYPED_TEST(PoolConformance, SameSizeOnSameStreamReusesTheBlockWithoutUpstreamCall) {
  sa::Stream stream;
  TypeParam under_test;
  PoolResource& pool = under_test.pool;
  void* first = pool.allocate(stream, 3 * unit + 7);
  pool.deallocate(stream, first, 3 * unit + 7);
  const std::uint64_t upstream_before = pool.upstream_allocation_count();
  const std::uint64_t seam_before = seam_allocations();
  void* again = pool.allocate(stream, 3 * unit + 7);
  EXPECT_EQ(again, first);
  EXPECT_EQ(pool.upstream_allocation_count(), upstream_before);
  EXPECT_EQ(seam_allocations(), seam_before);
  pool.deallocate(stream, again, 3 * unit + 7);
}

TYPED_TEST(PoolConformance, BlockFreedOnStreamAReachesStreamBOnlyAfterBWaitsForItsLastUse) {
  sa::Stream a;
  sa::Stream b;
  // One chunk of one block: B can only get the block that A used.
  TypeParam under_test(fixed_chunks(unit, unit));
  PoolResource& pool = under_test.pool;
  const auto written = random_values<std::uint32_t>(unit / sizeof(std::uint32_t));
  OtherSide source(pool.kind(), unit);
  source.fill(written.data());
  OtherSide read_back(pool.kind(), unit);
  std::vector<unsigned char> poisoned(unit);
  poison(poisoned.data(), unit);
  read_back.fill(poisoned.data());

  void* block = pool.allocate(a, unit);
  Gate gate(a);  // A's last use of the block, a write, stays queued until the gate opens
  source.copy_to_async(block, a);
  pool.deallocate(a, block, unit);

  void* reused = pool.allocate(b, unit);
  ASSERT_EQ(reused, block);
  EXPECT_EQ(pool.upstream_allocation_count(), 1U);
  EXPECT_FALSE(runtime().query(a)) << "the pool made the host wait for stream A";
  read_back.copy_from_async(reused, b);
  EXPECT_FALSE(completes_within(b, std::chrono::milliseconds(100)))
      << "stream B does not wait for A's write";
  gate.open();
  runtime().synchronize(b);
  EXPECT_TRUE(same_bytes(read_back.read().data(), written.data(), unit))
      << "B read the block before A's write completed";
  pool.deallocate(b, reused, unit);
}

TYPED_TEST(PoolConformance, BlockFreedOnACompletedStreamGoesToTheHost) {
  sa::Stream stream;
  TypeParam under_test(fixed_chunks(unit, unit));
  PoolResource& pool = under_test.pool;
  void* block = pool.allocate(stream, unit);
  pool.deallocate(stream, block, unit);
  stream.synchronize();
  EXPECT_EQ(pool.allocate_sync(unit), block);
  EXPECT_EQ(pool.upstream_allocation_count(), 1U);
  pool.deallocate_sync(block, unit);
}

TYPED_TEST(PoolConformance, BlockFreedByTheHostIsReusableByAnyStreamAtOnce) {
  sa::Stream stream;
  TypeParam under_test(fixed_chunks(unit, unit));
  PoolResource& pool = under_test.pool;
  void* block = pool.allocate_sync(unit);
  pool.deallocate_sync(block, unit);
  EXPECT_EQ(pool.allocate(stream, unit), block);
  pool.deallocate(stream, block, unit);
}

TYPED_TEST(PoolConformance, SplitFourUnitsIntoTwoPlusTwo) {
  sa::Stream stream;
  TypeParam under_test(fixed_chunks(4 * unit, 4 * unit));
  PoolResource& pool = under_test.pool;
  auto* four = static_cast<char*>(pool.allocate(stream, 4 * unit));
  pool.deallocate(stream, four, 4 * unit);
  auto* low = static_cast<char*>(pool.allocate(stream, 2 * unit));
  auto* high = static_cast<char*>(pool.allocate(stream, 2 * unit));
  EXPECT_EQ(low, four);
  EXPECT_EQ(high, four + 2 * unit);
  EXPECT_EQ(pool.upstream_allocation_count(), 1U);
  EXPECT_EQ(pool.bytes_in_use(), 4 * unit);
  EXPECT_EQ(pool.largest_free_block(), 0U);
  pool.deallocate(stream, low, 2 * unit);
  pool.deallocate(stream, high, 2 * unit);
}

TYPED_TEST(PoolConformance, MergeBothHalvesInEitherOrder) {
  sa::Stream stream;
  TypeParam under_test(fixed_chunks(4 * unit, 4 * unit));
  PoolResource& pool = under_test.pool;
  auto* four = static_cast<char*>(pool.allocate(stream, 4 * unit));
  pool.deallocate(stream, four, 4 * unit);
  for (const bool low_first : {true, false}) {
    auto* low = static_cast<char*>(pool.allocate(stream, 2 * unit));
    auto* high = static_cast<char*>(pool.allocate(stream, 2 * unit));
    ASSERT_EQ(low, four);
    ASSERT_EQ(high, four + 2 * unit);
    pool.deallocate(stream, low_first ? low : high, 2 * unit);
    EXPECT_EQ(pool.largest_free_block(), 2 * unit);
    pool.deallocate(stream, low_first ? high : low, 2 * unit);
    EXPECT_EQ(pool.largest_free_block(), 4 * unit);
    auto* merged = static_cast<char*>(pool.allocate(stream, 4 * unit));
    EXPECT_EQ(merged, four) << (low_first ? "low half freed first" : "high half freed first");
    pool.deallocate(stream, merged, 4 * unit);
  }
  EXPECT_EQ(pool.upstream_allocation_count(), 1U);
}

TYPED_TEST(PoolConformance, BlocksNeverMergeAcrossChunks) {
  sa::Stream stream;
  TypeParam under_test(fixed_chunks(2 * unit));
  PoolResource& pool = under_test.pool;
  void* first = pool.allocate(stream, 2 * unit);
  void* second = pool.allocate(stream, 2 * unit);
  pool.deallocate(stream, first, 2 * unit);
  pool.deallocate(stream, second, 2 * unit);
  EXPECT_EQ(pool.largest_free_block(), 2 * unit);  // even if upstream made them adjacent
  EXPECT_EQ(pool.usage().chunk_count, 2U);
}

TYPED_TEST(PoolConformance, TrimReturnsOnlyWhollyFreeChunks) {
  sa::Stream stream;
  TypeParam under_test(fixed_chunks(4 * unit));
  PoolResource& pool = under_test.pool;
  void* whole = pool.allocate(stream, 4 * unit);   // chunk 1
  void* half_a = pool.allocate(stream, 2 * unit);  // chunk 2
  void* half_b = pool.allocate(stream, 2 * unit);  // chunk 2
  void* kept = pool.allocate(stream, 4 * unit);    // chunk 3
  ASSERT_EQ(pool.usage().chunk_count, 3U);
  pool.deallocate(stream, whole, 4 * unit);
  pool.deallocate(stream, half_a, 2 * unit);

  EXPECT_EQ(pool.trim(), 4 * unit);
  sa::PoolUsage usage = pool.usage();
  EXPECT_EQ(usage.chunk_count, 2U);
  EXPECT_EQ(usage.reserved_bytes, 8 * unit);
  EXPECT_EQ(usage.upstream_releases, 1U);
  EXPECT_EQ(usage.bytes_in_use, 6 * unit);

  pool.deallocate(stream, half_b, 2 * unit);
  pool.deallocate(stream, kept, 4 * unit);
  EXPECT_EQ(pool.trim(), 8 * unit);
  usage = pool.usage();
  EXPECT_EQ(usage.chunk_count, 0U);
  EXPECT_EQ(usage.reserved_bytes, 0U);
  EXPECT_EQ(pool.trim(), 0U);
}

// A small block released for anyone waits for the next host request of its size: a growing
// vector's pattern. It never costs growth, never shows as fragmentation, and trim returns its chunk.
TYPED_TEST(PoolConformance, SmallHostBlocksAreReusedWholeAndFiledBeforeGrowth) {
  TypeParam under_test(fixed_chunks(unit, unit));
  PoolResource& pool = under_test.pool;
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<std::size_t> granules(1, 16);
  const std::size_t small = granules(rng) * 256;
  auto* first = static_cast<char*>(pool.allocate_sync(small));
  pool.deallocate_sync(first, small);
  EXPECT_EQ(pool.bytes_in_use(), 0U);
  auto* again = static_cast<char*>(pool.allocate_sync(small));
  EXPECT_EQ(again, first) << "the released block of " << small << " bytes is reused whole";
  EXPECT_EQ(pool.bytes_in_use(), small);
  pool.deallocate_sync(again, small);
  // Queries see one merged free chunk, not a waiting small block.
  EXPECT_EQ(pool.largest_free_block(), unit);
  // A request that only the whole chunk satisfies takes it without growing the pool.
  pool.deallocate_sync(pool.allocate_sync(small), small);
  auto* whole = static_cast<char*>(pool.allocate_sync(unit));
  EXPECT_EQ(whole, first);
  EXPECT_EQ(pool.upstream_allocation_count(), 1U);
  pool.deallocate_sync(whole, unit);
  pool.deallocate_sync(pool.allocate_sync(small), small);
  EXPECT_EQ(pool.trim(), unit);
  EXPECT_EQ(pool.usage().chunk_count, 0U);
}

TYPED_TEST(PoolConformance, FreeingAWaitingSmallBlockAgainStops) {
  SMARTARRAY_GTEST_FLAG_SET(death_test_style, "threadsafe");
  TypeParam under_test(fixed_chunks(unit, unit));
  PoolResource& pool = under_test.pool;
  void* block = pool.allocate_sync(512);
  pool.deallocate_sync(block, 512);
  EXPECT_DEATH(pool.deallocate_sync(block, 512), "freed twice");
}

TYPED_TEST(PoolConformance, HardLimitOfSixUnits) {
  sa::Stream stream;
  TypeParam under_test(fixed_chunks(unit, 0, 6 * unit));
  PoolResource& pool = under_test.pool;
  void* five = pool.allocate(stream, 5 * unit);
  void* one = pool.allocate(stream, unit);
  EXPECT_THROW((void)pool.allocate(stream, unit), sa::out_of_memory);
  EXPECT_THROW((void)pool.allocate_sync(unit), sa::out_of_memory);
  EXPECT_EQ(pool.reserved_bytes(), 6 * unit);
  pool.deallocate(stream, five, 5 * unit);
  pool.deallocate(stream, one, unit);
  void* six = pool.allocate(stream, 6 * unit);
  EXPECT_NE(six, nullptr);
  EXPECT_LE(pool.reserved_bytes(), 6 * unit);
  pool.deallocate(stream, six, 6 * unit);
}

TYPED_TEST(PoolConformance, OutOfMemoryMessageNamesBytesUseReservedAndLargestFreeBlock) {
  sa::Stream stream;
  TypeParam under_test(fixed_chunks(4 * unit, 0, 4 * unit));
  PoolResource& pool = under_test.pool;
  void* three = pool.allocate(stream, 3 * unit);
  try {
    (void)pool.allocate(stream, 2 * unit);
    ADD_FAILURE() << "no out_of_memory";
  } catch (const sa::out_of_memory& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("test pool allocate of 131072 bytes on stream"), std::string::npos)
        << message;
    EXPECT_NE(message.find("in use 192.0 KiB, reserved 256.0 KiB, largest free block 64.0 KiB"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("limit 256.0 KiB"), std::string::npos) << message;
  }
  pool.deallocate(stream, three, 3 * unit);
}

TYPED_TEST(PoolConformance, EvictionHookRunsBeforeOutOfMemory) {
  sa::Stream stream;
  TypeParam under_test(fixed_chunks(4 * unit, 0, 4 * unit));
  PoolResource& pool = under_test.pool;
  void* cached = pool.allocate(stream, 4 * unit);
  int calls = 0;
  std::size_t last_needed = 0;
  const auto id = pool.add_eviction_hook([&](std::size_t needed) -> std::size_t {
    ++calls;
    last_needed = needed;
    if (cached == nullptr) return 0;
    pool.deallocate(stream, cached, 4 * unit);  // hooks run without the pool's lock
    cached = nullptr;
    return 4 * unit;
  });
  void* fresh = pool.allocate(stream, 2 * unit);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(last_needed, 2 * unit);
  EXPECT_NE(fresh, nullptr);
  EXPECT_EQ(pool.reserved_bytes(), 4 * unit);

  // Once nothing is left to evict, the chain ends in out_of_memory, after the hook ran.
  void* rest = pool.allocate(stream, 2 * unit);
  EXPECT_THROW((void)pool.allocate(stream, unit), sa::out_of_memory);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(last_needed, unit);

  pool.remove_eviction_hook(id);
  EXPECT_THROW((void)pool.allocate(stream, unit), sa::out_of_memory);
  EXPECT_EQ(calls, 2);
  pool.deallocate(stream, fresh, 2 * unit);
  pool.deallocate(stream, rest, 2 * unit);
}

TYPED_TEST(PoolConformance, InjectedFailureHitsPoolAllocationsEvenOnAHit) {
  sa::test::ClearFaults clear;
  sa::Stream stream;
  TypeParam under_test(fixed_chunks(unit, unit));
  PoolResource& pool = under_test.pool;
  sa::testing::inject_failure(sa::testing::Fault::allocation, 1);
  EXPECT_THROW((void)pool.allocate(stream, unit), sa::out_of_memory);
  EXPECT_EQ(pool.bytes_in_use(), 0U);
  void* block = pool.allocate(stream, unit);
  EXPECT_NE(block, nullptr);
  pool.deallocate(stream, block, unit);
}

TYPED_TEST(PoolConformance, ForgottenStreamCanBeDestroyedWhileItsBlocksStayInThePool) {
  TypeParam under_test(fixed_chunks(unit, unit));
  PoolResource& pool = under_test.pool;
  void* block = nullptr;
  {
    sa::Stream gone;
    block = pool.allocate(gone, unit);
    pool.deallocate(gone, block, unit);
    sa::forget_stream(gone);
  }
  sa::Stream other;
  EXPECT_EQ(pool.allocate(other, unit), block);  // no event is recorded on the destroyed stream
  pool.deallocate(other, block, unit);
}

// ============================================================================================
// Pinned blocks and host writers
// ============================================================================================

TEST(PinnedPoolHostWriters, BlockIsNotReusedWhileACopyFromItIsInFlight) {
  sa::Stream stream;
  sa::PinnedMemoryResource upstream;
  PoolResource pool(upstream, fixed_chunks(unit));
  const auto source_words = random_values<std::uint32_t>(unit / sizeof(std::uint32_t));
  void* device = runtime().allocate_device(unit);
  PinnedBuffer read_back(unit);
  poison(static_cast<unsigned char*>(read_back.data()), unit);

  void* block = pool.allocate_sync(unit);
  std::memcpy(block, source_words.data(), unit);
  Gate gate(stream);
  runtime().copy_async(device, block, unit, CopyKind::host_to_device, stream);
  pool.deallocate(stream, block, unit);  // the copy still reads it

  void* for_host = pool.allocate_sync(unit);
  EXPECT_NE(for_host, block) << "a host writer got a block that a queued copy still reads";
  std::memset(for_host, 0x5A, unit);
  gate.open();
  runtime().copy_async(read_back.data(), device, unit, CopyKind::device_to_host, stream);
  runtime().synchronize(stream);
  EXPECT_TRUE(same_bytes(read_back.data(), source_words.data(), unit));
  pool.deallocate_sync(for_host, unit);
  runtime().free_device(device);
}

TEST(PinnedPoolHostWriters, AtTheLimitTheHostWriterWaitsForTheCopy) {
  sa::Stream stream;
  sa::PinnedMemoryResource upstream;
  PoolResource pool(upstream, fixed_chunks(unit, unit, unit));
  const auto source_words = random_values<std::uint32_t>(unit / sizeof(std::uint32_t));
  void* device = runtime().allocate_device(unit);
  PinnedBuffer read_back(unit);
  poison(static_cast<unsigned char*>(read_back.data()), unit);

  void* block = pool.allocate_sync(unit);
  std::memcpy(block, source_words.data(), unit);
  Gate gate(stream);
  runtime().copy_async(device, block, unit, CopyKind::host_to_device, stream);
  pool.deallocate(stream, block, unit);

  // The only block is still read by the copy: the host writer must wait for it.
  auto writer = std::async(std::launch::async, [&] {
    void* got = pool.allocate_sync(unit);
    std::memset(got, 0x5A, unit);
    return got;
  });
  EXPECT_EQ(writer.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "allocate_sync returned while a copy still read the only block";
  gate.open();
  void* got = writer.get();
  EXPECT_EQ(got, block);
  runtime().copy_async(read_back.data(), device, unit, CopyKind::device_to_host, stream);
  runtime().synchronize(stream);
  EXPECT_TRUE(same_bytes(read_back.data(), source_words.data(), unit));
  pool.deallocate_sync(got, unit);
  runtime().free_device(device);
}

// ============================================================================================
// Options
// ============================================================================================

TEST(PoolOptionsTest, InitialSizeIsReservedAtConstructionAndMustFitTheLimit) {
  sa::DeviceMemoryResource upstream;
  const PoolResource pool(upstream, fixed_chunks(unit, 3 * unit));
  EXPECT_EQ(pool.reserved_bytes(), 3 * unit);
  EXPECT_EQ(pool.upstream_allocation_count(), 1U);
  EXPECT_EQ(pool.largest_free_block(), 3 * unit);
  EXPECT_THROW({ const PoolResource too_large(upstream, fixed_chunks(unit, 4 * unit, 2 * unit)); },
               sa::logic_error);
}

TEST(PoolOptionsTest, GrowthStepsFollowThePoolUpToTheMaximumChunk) {
  sa::Stream stream;
  sa::DeviceMemoryResource upstream;
  PoolOptions options;
  options.chunk_size = unit;
  options.max_chunk_size = 4 * unit;
  PoolResource pool(upstream, options);
  std::vector<void*> blocks;
  std::vector<std::size_t> reserved;
  for (int i = 0; i < 12; ++i) {
    blocks.push_back(pool.allocate(stream, unit));
    reserved.push_back(pool.reserved_bytes());
  }
  // Steps: 1, 1, 2, 4, 4 units (each as large as the pool, at most 4 units).
  EXPECT_EQ(reserved[0], unit);
  EXPECT_EQ(reserved[1], 2 * unit);
  EXPECT_EQ(reserved[2], 4 * unit);
  EXPECT_EQ(reserved[4], 8 * unit);
  EXPECT_EQ(reserved[8], 12 * unit);
  EXPECT_EQ(pool.upstream_allocation_count(), 5U);
  for (void* block : blocks) pool.deallocate(stream, block, unit);
}

}  // namespace
