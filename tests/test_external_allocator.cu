// Another library's device memory from smartarray's pools (interop/external_allocator.hpp): blocks
// of the device resource taken on the library's stream, released in that stream's order or after
// the blocking streams' work, SmartArrays' device copies evicted to make room, and the failures.
// Both backends.
#include "support/test_support.hpp"

#include "support/array_pool.hpp"
#include "support/device_ops.cuh"
#include "support/eviction_trio.cuh"

#include <smartarray/interop/external_allocator.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace sa = smartarray;
using sa::SmartArray;
using sa::StreamRef;
using sa::detail::CopyKind;
using sa::detail::runtime;
using sa::test::ArrayPool;
using sa::test::host_copy;
using sa::test::random_values;

namespace {

constexpr std::size_t block_bytes = ArrayPool::block_bytes;
constexpr std::size_t n = block_bytes / sizeof(float);

/// Device memory for new arrays (and so for the bridge) from `resource`, for the scope.
class UseDeviceResource {
 public:
  explicit UseDeviceResource(sa::MemoryResource& resource)
      : previous_(sa::set_device_resource(&resource)) {}
  ~UseDeviceResource() { (void)sa::set_device_resource(previous_); }
  UseDeviceResource(const UseDeviceResource&) = delete;
  UseDeviceResource& operator=(const UseDeviceResource&) = delete;

 private:
  sa::MemoryResource* previous_;
};

/// Arrays whose device copies live in the built-in pool, whatever `set_device_resource` says.
sa::ArrayOptions in_default_pool() {
  return sa::ArrayOptions{.device_resource = &sa::default_device_resource()};
}

/// `values` uploaded into a new array valid on the device, through `stream`.
SmartArray<float> on_device(const std::vector<float>& values, StreamRef stream) {
  SmartArray<float> a(values, in_default_pool());
  (void)a.device_view(stream);
  return a;
}

/// The `count` floats at device address `block`, read through a new array: a copy on `stream`
/// into the array's device copy, then the array's one download.
std::vector<float> read_block(const void* block, std::size_t count, StreamRef stream) {
  SmartArray<float> out(count, sa::no_init, in_default_pool());
  runtime().copy_async(out.device_view(sa::Access::discard, stream).data(), block,
                       count * sizeof(float), CopyKind::device_to_device, stream);
  return host_copy(out);
}

/// `a`'s device copy copied into the device block at `block` on `stream`.
void write_block(void* block, const SmartArray<float>& a, StreamRef stream) {
  runtime().copy_async(block, a.device_view(stream).data(), a.size() * sizeof(float),
                       CopyKind::device_to_device, stream);
}

/// A random size from one float to one block.
std::size_t random_size() {
  return std::uniform_int_distribution<std::size_t>(sizeof(float), block_bytes)(sa::test::rng());
}

/// How many times `part` occurs in `text`.
std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

}  // namespace

TEST(ExternalAllocator, TakesBlocksOfTheDeviceResourceAndGivesThemBack) {
  ArrayPool pooled(2);
  sa::StatisticsAdaptor counted(pooled.pool);
  const UseDeviceResource use(counted);
  sa::Stream stream;
  const std::size_t first = random_size();
  const std::size_t second = random_size();
  void* a = sa::interop::allocate(first, 0, stream.ref().handle());
  void* b = sa::interop::allocate(second, 0, nullptr);  // the default stream
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(counted.stats().current_count, 2U);
  EXPECT_EQ(counted.stats().current_bytes, first + second);
  // A block holds what is written into it.
  const auto values = random_values<float>(first / sizeof(float));
  const SmartArray<float> source = on_device(values, stream);
  write_block(a, source, stream);
  EXPECT_EQ(read_block(a, values.size(), stream), values);
  sa::interop::deallocate(a, first, 0, stream.ref().handle());
  EXPECT_TRUE(sa::interop::deallocate_after_blocking_work(b, second, 0));
  EXPECT_EQ(counted.stats().current_count, 0U);
  EXPECT_EQ(counted.stats().current_bytes, 0U);
  EXPECT_EQ(counted.stats().total_count, 2U);
  EXPECT_EQ(counted.stats().total_bytes, first + second);
}

TEST(ExternalAllocator, ZeroBytesAndNullBlocksTouchNothing) {
  sa::StatisticsAdaptor& counted = sa::default_device_resource();
  const sa::MemoryStats before = counted.stats();
  EXPECT_EQ(sa::interop::allocate(0, 0, nullptr), nullptr);
  sa::interop::deallocate(nullptr, random_size(), 0, nullptr);
  EXPECT_TRUE(sa::interop::deallocate_after_blocking_work(nullptr, random_size(), 0));
  EXPECT_EQ(counted.stats().total_count, before.total_count);
  EXPECT_EQ(counted.stats().current_count, before.current_count);
}

// One block in the pool: the second request gets the block released on stream s, and its stream
// t waits for the write that s still has pending (s is held by a gate). Without that wait, t
// would read the block before the write.
TEST(ExternalAllocator, AReleasedBlockGoesToAnotherStreamAfterTheWorkOfItsOwn) {
  ArrayPool pooled(1);
  const UseDeviceResource use(pooled.pool);
  sa::Stream s, t;
  const auto values = random_values<float>(n);
  const SmartArray<float> source = on_device(values, s);
  SmartArray<float> out(n, sa::no_init, in_default_pool());
  float* const out_data = out.device_view(sa::Access::discard, t).data();
  void* block = sa::interop::allocate(block_bytes, 0, s.ref().handle());
  auto held = sa::test::gate(s);
  write_block(block, source, s);
  sa::interop::deallocate(block, block_bytes, 0, s.ref().handle());
  void* again = sa::interop::allocate(block_bytes, 0, t.ref().handle());
  EXPECT_EQ(again, block);
  runtime().copy_async(out_data, again, block_bytes, CopyKind::device_to_device, t);
  held.set_value();
  EXPECT_EQ(host_copy(out), values);
  sa::interop::deallocate(again, block_bytes, 0, t.ref().handle());
  EXPECT_EQ(pooled.pool.bytes_in_use(), 0U);
}

// A library whose free names no stream: the block is released after the work queued so far on
// the default stream (here a write held by a gate), so the next user's stream waits for it.
TEST(ExternalAllocator, ABlockOfUnknownUsersIsReleasedAfterTheDefaultStreamsWork) {
  ArrayPool pooled(1);
  const UseDeviceResource use(pooled.pool);
  sa::Stream t;
  const auto values = random_values<float>(n);
  const SmartArray<float> source = on_device(values, StreamRef{});
  SmartArray<float> out(n, sa::no_init, in_default_pool());
  float* const out_data = out.device_view(sa::Access::discard, t).data();
  void* block = sa::interop::allocate(block_bytes, 0, nullptr);
  auto held = sa::test::gate(StreamRef{});
  write_block(block, source, StreamRef{});
  EXPECT_TRUE(sa::interop::deallocate_after_blocking_work(block, block_bytes, 0));
  void* again = sa::interop::allocate(block_bytes, 0, t.ref().handle());
  EXPECT_EQ(again, block);
  runtime().copy_async(out_data, again, block_bytes, CopyKind::device_to_device, t);
  held.set_value();
  EXPECT_EQ(host_copy(out), values);
  sa::interop::deallocate(again, block_bytes, 0, t.ref().handle());
  EXPECT_EQ(pooled.pool.bytes_in_use(), 0U);
}

// The pool is full of SmartArrays' device copies: each request drops one, the clean copy first,
// then the oldest dirty one (written back once); the arrays keep their values.
TEST(ExternalAllocator, AFullPoolEvictsCleanCopiesFirstThenTheOldestDirtyOne) {
  ArrayPool pooled(3);
  const UseDeviceResource use(pooled.pool);
  sa::test::EvictionTrio trio(n, pooled.arrays);
  void* first = sa::interop::allocate(block_bytes, 0, nullptr);
  EXPECT_FALSE(trio.c.is_valid(sa::Side::device));
  EXPECT_TRUE(trio.d.is_valid(sa::Side::device));
  void* second = sa::interop::allocate(block_bytes, 0, nullptr);
  EXPECT_EQ(pooled.pool.bytes_in_use(), 3 * block_bytes);
  trio.expect_clean_then_oldest_dirty_evicted();
  sa::interop::deallocate(first, block_bytes, 0, nullptr);
  sa::interop::deallocate(second, block_bytes, 0, nullptr);
  EXPECT_EQ(pooled.pool.bytes_in_use(), block_bytes);  // e's device copy
}

// The library's own blocks are never dropped: with nothing of SmartArrays' to evict, the request
// throws out_of_memory, and the block that holds the pool keeps its contents.
TEST(ExternalAllocator, NothingToEvictThrowsOutOfMemoryAndKeepsTheLibrarysBlocks) {
  ArrayPool pooled(1);
  const UseDeviceResource use(pooled.pool);
  const auto values = random_values<float>(n);
  const SmartArray<float> source = on_device(values, StreamRef{});
  void* held = sa::interop::allocate(block_bytes, 0, nullptr);
  write_block(held, source, StreamRef{});
  EXPECT_THROW((void)sa::interop::allocate(random_size(), 0, nullptr), sa::out_of_memory);
  EXPECT_EQ(pooled.pool.bytes_in_use(), block_bytes);
  EXPECT_EQ(read_block(held, n, StreamRef{}), values);
  sa::interop::deallocate(held, block_bytes, 0, nullptr);
  EXPECT_EQ(pooled.pool.bytes_in_use(), 0U);
}

// A device that does not exist: allocate throws; the frees report on stderr and leave the block
// allocated, and the block is still the caller's to free with its device.
TEST(ExternalAllocator, AnUnknownDeviceThrowsOnAllocateAndLeavesTheBlockOnFree) {
  const int missing = sa::device_count();
  EXPECT_THROW((void)sa::interop::allocate(random_size(), missing, nullptr), sa::logic_error);
  sa::StatisticsAdaptor& counted = sa::default_device_resource();
  const std::size_t bytes = random_size();
  void* block = sa::interop::allocate(bytes, 0, nullptr);
  const sa::MemoryStats before = counted.stats();
  testing::internal::CaptureStderr();
  sa::interop::deallocate(block, bytes, missing, nullptr);
  EXPECT_FALSE(sa::interop::deallocate_after_blocking_work(block, bytes, missing));
  const std::string err = testing::internal::GetCapturedStderr();
  const std::string expected = "smartarray: free of " + std::to_string(bytes) + " bytes at ";
  EXPECT_EQ(occurrences(err, expected), 2U) << err;  // once per free
  EXPECT_EQ(counted.stats().current_count, before.current_count);
  EXPECT_EQ(counted.stats().current_bytes, before.current_bytes);
  EXPECT_TRUE(sa::interop::deallocate_after_blocking_work(block, bytes, 0));
  EXPECT_EQ(counted.stats().current_count, before.current_count - 1);
}
