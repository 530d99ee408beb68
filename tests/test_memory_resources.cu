// The memory resources: a typed conformance suite over every resource, pools and raw upstreams
// alike (zero-byte and impossible requests, alignment, blocks that never overlap, exact statistics,
// concurrent use), the upstream resources and the default resources. The pool's own behaviour
// (stream-ordered reuse, split and merge, trim, limit, out-of-memory chain) is in
// test_pool_resource.cu. Every body runs on the host backend and on the cuda backend.
#include "support/memory_resources.hpp"
#include "support/test_support.hpp"

#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/statistics_adaptor.hpp>
#include <smartarray/memory/upstream_resources.hpp>
#include <smartarray/runtime/stream.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::MemoryKind;
using sa::MemoryResource;
using sa::PoolResource;
using sa::StreamRef;
using sa::detail::runtime;
using namespace sa::test::memory;

namespace {

constexpr std::size_t pib = std::size_t{1} << 50;

/// True when the host may read and write the resource's memory.
bool host_accessible(MemoryKind kind) { return kind != MemoryKind::device; }

// ============================================================================================
// Conformance: every resource
// ============================================================================================

template <typename T>
class MemoryResourceConformance : public ::testing::Test {};

using AllResources = ::testing::Types<PoolOverDevice, PoolOverPinned, PoolOverManaged, RawDevice,
                                      RawPinned, RawManaged>;
TYPED_TEST_SUITE(MemoryResourceConformance, AllResources, ResourceNames);

TYPED_TEST(MemoryResourceConformance, ZeroBytesGiveNullAndFreeingNullIsANoOp) {
  sa::Stream stream;
  TypeParam under_test;
  MemoryResource& mr = under_test.resource();
  const std::uint64_t before = seam_allocations();
  EXPECT_EQ(mr.allocate(stream, 0), nullptr);
  EXPECT_EQ(mr.allocate_sync(0), nullptr);
  mr.deallocate(stream, nullptr, 0);
  mr.deallocate_sync(nullptr, 0);
  mr.deallocate(stream, nullptr, 4096);
  EXPECT_EQ(seam_allocations(), before);
}

TYPED_TEST(MemoryResourceConformance, OnePebibyteThrowsOutOfMemoryNamingTheBytes) {
  sa::Stream stream;
  TypeParam under_test;
  MemoryResource& mr = under_test.resource();
  for (const bool host : {false, true}) {
    try {
      void* ptr = host ? mr.allocate_sync(pib) : mr.allocate(stream, pib);
      ADD_FAILURE() << "1 PiB was allocated at " << ptr;
    } catch (const sa::out_of_memory& error) {
      EXPECT_NE(std::string(error.what()).find(std::to_string(pib)), std::string::npos)
          << error.what();
    }
  }
  // The resource still works afterwards.
  void* ptr = mr.allocate(stream, 1000);
  EXPECT_NE(ptr, nullptr);
  mr.deallocate(stream, ptr, 1000);
}

TYPED_TEST(MemoryResourceConformance, RejectsAlignmentsAbove256) {
  TypeParam under_test;
  EXPECT_THROW((void)under_test.resource().allocate_sync(1000, 512), sa::logic_error);
  EXPECT_THROW((void)under_test.resource().allocate_sync(1000, 3), sa::logic_error);
}

TYPED_TEST(MemoryResourceConformance, LiveBlocksNeverOverlapAndAre256Aligned) {
  sa::Stream first;
  sa::Stream second;
  TypeParam under_test;
  MemoryResource& mr = under_test.resource();
  struct Live {
    std::size_t bytes;
    StreamRef stream;
    bool host;
  };
  std::map<std::uintptr_t, Live> live;
  std::uniform_int_distribution<std::size_t> size_of(1, 256 * kib);
  std::uniform_int_distribution<int> percent(0, 99);
  auto& rng = sa::test::rng();
  const auto release = [&](std::map<std::uintptr_t, Live>::iterator it) {
    void* ptr = reinterpret_cast<void*>(it->first);
    if (it->second.host) {
      mr.deallocate_sync(ptr, it->second.bytes);
    } else {
      mr.deallocate(it->second.stream, ptr, it->second.bytes);
    }
    live.erase(it);
  };
  for (int step = 0; step < 400; ++step) {
    if (!live.empty() && percent(rng) < 40) {
      auto victim = live.begin();
      std::advance(victim, std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng));
      release(victim);
      continue;
    }
    const std::size_t bytes = size_of(rng);
    const bool host = percent(rng) < 30;
    const StreamRef stream = percent(rng) < 50 ? first.ref() : second.ref();
    void* ptr = host ? mr.allocate_sync(bytes) : mr.allocate(stream, bytes);
    ASSERT_NE(ptr, nullptr);
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    ASSERT_EQ(begin % 256, 0U) << "block of " << bytes << " bytes at " << ptr;
    const auto next = live.lower_bound(begin);
    if (next != live.end()) ASSERT_LE(begin + bytes, next->first) << "overlaps the next block";
    if (next != live.begin()) {
      const auto previous = std::prev(next);
      ASSERT_LE(previous->first + previous->second.bytes, begin) << "overlaps the previous block";
    }
    live.emplace(begin, Live{bytes, stream, host});
  }
  while (!live.empty()) release(live.begin());
}

TYPED_TEST(MemoryResourceConformance, StatisticsAreExact) {
  sa::Stream stream;
  TypeParam under_test;
  sa::StatisticsAdaptor stats(under_test.resource());
  std::vector<void*> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(stats.allocate(stream, 10 * mib));
  for (int i = 0; i < 10; i += 2) stats.deallocate(stream, blocks[i], 10 * mib);

  sa::MemoryStats now = stats.stats();
  EXPECT_EQ(now.current_bytes, 50 * mib);
  EXPECT_EQ(now.current_count, 5U);
  EXPECT_EQ(now.peak_bytes, 100 * mib);
  EXPECT_EQ(now.peak_count, 10U);
  EXPECT_EQ(now.total_bytes, 100 * mib);
  EXPECT_EQ(now.total_count, 10U);
  EXPECT_EQ(now.has_pool, stats.pool() != nullptr);
  if (PoolResource* pool = stats.pool()) {
    const sa::PoolUsage usage = pool->usage();
    EXPECT_EQ(usage.bytes_in_use, 50 * mib);
    EXPECT_EQ(now.reserved_bytes, usage.reserved_bytes);
    EXPECT_GE(now.reserved_bytes, 100 * mib);
    EXPECT_GE(now.upstream_allocations, 1U);
    EXPECT_GE(now.largest_free_block, 10 * mib);
    EXPECT_DOUBLE_EQ(now.fragmentation,
                     1.0 - static_cast<double>(now.largest_free_block) /
                               static_cast<double>(now.reserved_bytes - usage.bytes_in_use));
    EXPECT_GE(now.fragmentation, 0.0);
    EXPECT_LT(now.fragmentation, 1.0);
  }

  stats.reset_peak();
  now = stats.stats();
  EXPECT_EQ(now.peak_bytes, 50 * mib);
  EXPECT_EQ(now.peak_count, 5U);
  for (int i = 1; i < 10; i += 2) stats.deallocate_sync(blocks[i], 10 * mib);
  now = stats.stats();
  EXPECT_EQ(now.current_bytes, 0U);
  EXPECT_EQ(now.current_count, 0U);
  EXPECT_EQ(now.total_count, 10U);
}

TYPED_TEST(MemoryResourceConformance, StatisticsStayExactUnderConcurrentRequestsAndCountOnlyTheirOwn) {
  TypeParam under_test;
  sa::StatisticsAdaptor stats(under_test.resource());
  // A request that bypasses the adaptor is not its to count.
  void* bypass = under_test.resource().allocate_sync(3 * 256);
  constexpr int threads = 4;
  constexpr int rounds = 200;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&stats, t] {
      std::mt19937 rng(static_cast<unsigned>(t) + 1U);
      std::uniform_int_distribution<std::size_t> size(1, 64 * 1024);
      std::vector<std::pair<void*, std::size_t>> held;
      for (int r = 0; r < rounds; ++r) {
        const std::size_t bytes = size(rng);
        held.emplace_back(stats.allocate_sync(bytes), bytes);
        if (held.size() == 3) {
          stats.deallocate_sync(held.front().first, held.front().second);
          held.erase(held.begin());
        }
      }
      for (const auto& [ptr, bytes] : held) stats.deallocate_sync(ptr, bytes);
    });
  }
  for (std::thread& worker : workers) worker.join();
  const sa::MemoryStats now = stats.stats();
  EXPECT_EQ(now.current_bytes, 0U);
  EXPECT_EQ(now.current_count, 0U);
  EXPECT_EQ(now.total_count, static_cast<std::uint64_t>(threads * rounds));
  EXPECT_GE(now.peak_count, 3U);
  EXPECT_LE(now.peak_count, static_cast<std::size_t>(threads * 3));
  EXPECT_LE(now.peak_bytes, static_cast<std::size_t>(threads * 3 * 64 * 1024));
  under_test.resource().deallocate_sync(bypass, 3 * 256);
  EXPECT_EQ(stats.stats().total_count, static_cast<std::uint64_t>(threads * rounds));
}

TYPED_TEST(MemoryResourceConformance, EightThreadsAllocateAndFreeConcurrently) {
  constexpr int threads = 8;
  constexpr int steps = 150;
  std::vector<sa::Stream> streams(threads);
  TypeParam under_test;
  MemoryResource& mr = under_test.resource();
  const bool writable = host_accessible(mr.kind());

  std::mutex live_mutex;
  std::map<std::uintptr_t, std::size_t> live;  // every live block of every thread
  std::atomic<int> failures{0};
  const auto claim = [&](void* ptr, std::size_t bytes) {
    const std::lock_guard lock(live_mutex);
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    const auto next = live.lower_bound(begin);
    const bool overlaps =
        (next != live.end() && begin + bytes > next->first) ||
        (next != live.begin() && std::prev(next)->first + std::prev(next)->second > begin);
    if (overlaps || begin % 256 != 0) ++failures;
    live.emplace(begin, bytes);
  };
  const auto unclaim = [&](void* ptr) {
    const std::lock_guard lock(live_mutex);
    live.erase(reinterpret_cast<std::uintptr_t>(ptr));
  };

  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t, seed = sa::test::rng()()] {
      std::mt19937_64 rng(seed);
      std::uniform_int_distribution<std::size_t> size_of(256, 128 * kib);
      const StreamRef stream = streams[t];
      const auto pattern = static_cast<unsigned char>(0x11 * (t + 1));
      std::vector<std::pair<void*, std::size_t>> mine;
      const auto release = [&] {
        auto [ptr, bytes] = mine.back();
        mine.pop_back();
        if (writable) {
          // Nobody else wrote into the block while this thread owned it.
          const auto* data = static_cast<const unsigned char*>(ptr);
          for (std::size_t i = 0; i < bytes; i += 61) {
            if (data[i] != pattern) {
              ++failures;
              break;
            }
          }
        }
        unclaim(ptr);
        if (writable) {
          mr.deallocate_sync(ptr, bytes);
        } else {
          mr.deallocate(stream, ptr, bytes);
        }
      };
      for (int step = 0; step < steps; ++step) {
        if (mine.size() >= 6 || (!mine.empty() && rng() % 3 == 0)) {
          std::swap(mine[rng() % mine.size()], mine.back());
          release();
          continue;
        }
        const std::size_t bytes = size_of(rng);
        void* ptr = writable ? mr.allocate_sync(bytes) : mr.allocate(stream, bytes);
        claim(ptr, bytes);
        if (writable) std::memset(ptr, pattern, bytes);
        mine.emplace_back(ptr, bytes);
      }
      while (!mine.empty()) release();
    });
  }
  for (auto& worker : workers) worker.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(live.empty());
}

// ============================================================================================
// Upstreams and defaults
// ============================================================================================

TEST(UpstreamResources, KindsAndEquality) {
  const sa::DeviceMemoryResource device_a;
  const sa::DeviceMemoryResource device_b;
  const sa::PinnedMemoryResource pinned;
  const sa::PinnedMemoryResource mapped(sa::pinned_mapped);
  const sa::ManagedMemoryResource managed;
  EXPECT_EQ(device_a.kind(), MemoryKind::device);
  EXPECT_EQ(pinned.kind(), MemoryKind::pinned);
  EXPECT_EQ(mapped.kind(), MemoryKind::mapped);
  EXPECT_EQ(managed.kind(), MemoryKind::managed);
  EXPECT_TRUE(device_a.is_equal(device_b));
  EXPECT_FALSE(device_a.is_equal(pinned));
  EXPECT_FALSE(pinned.is_equal(mapped));
  EXPECT_TRUE(mapped.is_equal(sa::PinnedMemoryResource(sa::pinned_mapped)));
}

TEST(UpstreamResources, MappedPinnedMemoryHasADevicePointer) {
  sa::PinnedMemoryResource mapped(sa::pinned_mapped);
  void* host = mapped.allocate_sync(4096);
  EXPECT_NE(runtime().mapped_device_pointer(host), nullptr);
  mapped.deallocate_sync(host, 4096);
}

TEST(DefaultResources, AreStatisticsOverPerDevicePools) {
  EXPECT_EQ(&sa::device_resource(), &sa::default_device_resource());
  EXPECT_EQ(&sa::pinned_resource(), &sa::default_pinned_resource());
  EXPECT_EQ(sa::default_device_resource().pool(), &sa::default_device_pool());
  EXPECT_EQ(sa::default_pinned_resource().pool(), &sa::default_pinned_pool());
  EXPECT_EQ(sa::default_device_pool().kind(), MemoryKind::device);
  EXPECT_EQ(sa::default_pinned_pool().kind(), MemoryKind::pinned);
  EXPECT_EQ(&sa::default_device_pool(0), &sa::default_device_pool());
  // The first ordinal past the last device, whatever the number of devices.
  EXPECT_THROW((void)sa::default_device_pool(sa::device_count()), sa::logic_error);
  EXPECT_THROW((void)sa::set_pinned_resource(nullptr, sa::device_count()), sa::logic_error);
}

TEST(DefaultResources, CanBeReplacedAndRestored) {
  sa::PinnedMemoryResource raw_pinned;
  sa::DeviceMemoryResource raw_device;
  EXPECT_EQ(sa::set_device_resource(&raw_device), nullptr);
  EXPECT_EQ(&sa::device_resource(), &raw_device);
  EXPECT_EQ(sa::set_pinned_resource(&raw_pinned), nullptr);
  EXPECT_EQ(&sa::pinned_resource(), &raw_pinned);
  EXPECT_EQ(sa::set_device_resource(nullptr), &raw_device);
  EXPECT_EQ(sa::set_pinned_resource(nullptr), &raw_pinned);
  EXPECT_EQ(&sa::device_resource(), &sa::default_device_resource());
  EXPECT_EQ(&sa::pinned_resource(), &sa::default_pinned_resource());
}

TEST(DefaultResources, DeviceResourceCountsItsTraffic) {
  sa::Stream stream;
  MemoryResource& mr = sa::device_resource();
  const sa::MemoryStats before = sa::default_device_resource().stats();
  void* block = mr.allocate(stream, 3 * mib);
  const sa::MemoryStats during = sa::default_device_resource().stats();
  EXPECT_EQ(during.current_bytes, before.current_bytes + 3 * mib);
  EXPECT_EQ(during.total_count, before.total_count + 1);
  EXPECT_TRUE(during.has_pool);
  mr.deallocate(stream, block, 3 * mib);
  EXPECT_EQ(sa::default_device_resource().stats().current_bytes, before.current_bytes);
}

}  // namespace
