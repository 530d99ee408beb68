// Eviction of device copies when a pool runs out: each pool's out-of-memory chain evicts exactly
// the arrays whose device buffers it holds (least recently used first, clean copies before dirty
// ones), whether the pool is the default one or the user's, and only while eviction gives memory
// back. Both backends.
#include "support/test_support.hpp"

#include "support/array_pool.hpp"
#include "support/device_ops.cuh"

#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/statistics_adaptor.hpp>
#include <smartarray/memory/upstream_resources.hpp>
#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;
using sa::test::scale_on_device;
using sa::test::scaled;

namespace {

using sa::test::ArrayPool;
constexpr std::size_t block_bytes = ArrayPool::block_bytes;
constexpr std::size_t n = block_bytes / sizeof(float);

bool device_valid(const SmartArray<float>& a) { return a.is_valid(sa::Side::device); }

}  // namespace

TEST(Eviction, AUserPoolThatRunsOutEvictsItsLeastRecentlyUsedCleanArray) {
  ArrayPool pooled(2);
  const sa::ArrayOptions& in_pool = pooled.arrays;
  const auto a_values = random_values<float>(n);
  const auto b_values = random_values<float>(n);
  const auto c_values = random_values<float>(n);
  SmartArray<float> a(a_values, in_pool);
  SmartArray<float> b(b_values, in_pool);
  SmartArray<float> c(c_values, in_pool);
  (void)a.device_view();
  (void)b.device_view();  // the pool is full
  (void)c.device_view();  // evicts a: the least recently used, and clean (nothing to write back)
  EXPECT_FALSE(device_valid(a));
  EXPECT_TRUE(device_valid(b));
  EXPECT_TRUE(device_valid(c));
  EXPECT_EQ(a.transfer_stats().d2h_count, 0U);
  EXPECT_EQ(host_copy(a), a_values);
  EXPECT_EQ(host_copy(c), c_values);
  EXPECT_EQ(pooled.pool.upstream_allocation_count(), 2U);
}

TEST(Eviction, ADirtyCopyIsWrittenBackBeforeItsBlockIsReused) {
  ArrayPool pooled(2);
  const sa::ArrayOptions& in_pool = pooled.arrays;
  const auto a_values = random_values<float>(n);
  const auto b_values = random_values<float>(n);
  SmartArray<float> a(a_values, in_pool);
  SmartArray<float> b(b_values, in_pool);
  SmartArray<float> c(random_values<float>(n), in_pool);
  scale_on_device(a);  // only the device holds a's values now
  scale_on_device(b);
  (void)c.device_view();  // no clean copy to drop: a, the least recently used, is written back
  EXPECT_FALSE(device_valid(a));
  EXPECT_EQ(a.transfer_stats().d2h_count, 1U);
  EXPECT_EQ(a.transfer_stats().d2h_bytes, block_bytes);
  EXPECT_EQ(host_copy(a), scaled(a_values));
  EXPECT_EQ(host_copy(b), scaled(b_values));
}

TEST(Eviction, ArraysOfAnotherPoolAreNeverEvicted) {
  // d's device copy lives in the default pool and is the least recently used: when the user's pool
  // runs out, d stays (dropping it would free nothing there), and the pool evicts its own a.
  ArrayPool pooled(1);
  const sa::ArrayOptions& in_pool = pooled.arrays;
  SmartArray<float> d(random_values<float>(n));
  (void)d.device_view();
  SmartArray<float> a(random_values<float>(n), in_pool);
  (void)a.device_view();
  SmartArray<float> b(random_values<float>(n), in_pool);
  (void)b.device_view();
  EXPECT_TRUE(device_valid(d));
  EXPECT_FALSE(device_valid(a));
  EXPECT_TRUE(device_valid(b));
}

TEST(Eviction, AnArrayOverAStatisticsAdaptorIsEvictedByThePoolUnderIt) {
  ArrayPool pooled(1);
  sa::StatisticsAdaptor counted(pooled.pool);
  const sa::ArrayOptions in_pool{.device_resource = &counted};
  const auto a_values = random_values<float>(n);
  SmartArray<float> a(a_values, in_pool);
  SmartArray<float> b(random_values<float>(n), in_pool);
  (void)a.device_view();
  (void)b.device_view();
  EXPECT_FALSE(device_valid(a));
  EXPECT_TRUE(device_valid(b));
  EXPECT_EQ(counted.stats().current_count, 1U);
  EXPECT_EQ(host_copy(a), a_values);
}

TEST(Eviction, APoolWithNoEvictableArrayStillThrowsOutOfMemory) {
  ArrayPool pooled(1);
  const sa::ArrayOptions& in_pool = pooled.arrays;
  const auto a_values = random_values<float>(n);
  SmartArray<float> a(a_values, in_pool);
  SmartArray<float> b(random_values<float>(2 * n), in_pool);
  (void)a.device_view();
  // b needs two blocks: evicting a frees only one, and the pool may not grow.
  EXPECT_THROW((void)b.device_view(), sa::out_of_memory);
  EXPECT_EQ(host_copy(a), a_values);
  EXPECT_TRUE(b.is_valid(sa::Side::host));
}

TEST(Eviction, FreedBlocksSpreadOverChunksLeadToAnotherRoundOfEviction) {
  // Two chunks of two blocks each, full; the least recently used are a (chunk 1) and c (chunk 2).
  // A two-block array needs a whole chunk: evicting a and c frees two blocks but no chunk, so the
  // pool evicts again (b, then d would follow) until one chunk is free and can be regrown.
  sa::DeviceMemoryResource upstream;
  sa::PoolOptions options;
  options.chunk_size = 2 * block_bytes;
  options.max_chunk_size = 2 * block_bytes;
  options.maximum_size = 4 * block_bytes;
  sa::PoolResource pool(upstream, options);
  const sa::ArrayOptions in_pool{.device_resource = &pool};
  const auto b_values = random_values<float>(n);
  SmartArray<float> a(random_values<float>(n), in_pool);
  SmartArray<float> b(b_values, in_pool);
  SmartArray<float> c(random_values<float>(n), in_pool);
  SmartArray<float> d(random_values<float>(n), in_pool);
  (void)a.device_view();
  (void)b.device_view();
  (void)c.device_view();
  (void)d.device_view();
  (void)a.device_view();  // use order now: b, c, d, a
  ASSERT_EQ(pool.usage().chunk_count, 2U);
  SmartArray<float> e(random_values<float>(2 * n), in_pool);
  (void)e.device_view();
  EXPECT_TRUE(device_valid(e));
  // Round one drops b and c (the two oldest); round two drops d, which frees c's chunk.
  EXPECT_FALSE(device_valid(b));
  EXPECT_FALSE(device_valid(c));
  EXPECT_FALSE(device_valid(d));
  EXPECT_TRUE(device_valid(a));
  EXPECT_EQ(host_copy(b), b_values);
}

// A hook that reports bytes it did not free gets one round: the pool's free space did not grow, so
// the allocation throws naming the request, and the array stays as it was. (The hook stops lying
// after `rounds_cap` rounds, so that a pool that retried forever fails the test instead of hanging
// it.)
TEST(Eviction, AHookThatReportsBytesItDidNotFreeEndsTheRetries) {
  ArrayPool pooled(1, "lied-to pool");
  sa::Stream stream;
  void* held = pooled.pool.allocate(stream, block_bytes);  // another user fills the pool
  constexpr int rounds_cap = 1000;
  int rounds = 0;
  const auto lie = pooled.pool.add_eviction_hook([&](std::size_t needed) -> std::size_t {
    return ++rounds < rounds_cap ? needed : 0;
  });
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, pooled.arrays);
  {
    sa::ExpectTransfers nothing({});
    try {
      (void)a.device_view(Access::read, stream);
      ADD_FAILURE() << "the pool has no room";
    } catch (const sa::out_of_memory& error) {
      const std::string expected = "lied-to pool allocate of " + std::to_string(block_bytes);
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  }
  EXPECT_EQ(rounds, 1);
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_FALSE(device_valid(a));
  pooled.pool.remove_eviction_hook(lie);
  pooled.pool.deallocate(stream, held, block_bytes);
  {
    sa::ExpectTransfers upload({.h2d = 1, .h2d_bytes = block_bytes});
    (void)std::as_const(a).device_view(stream);
  }
  EXPECT_EQ(host_copy(a), values);
}
