// The memory layer: a typed conformance suite over every resource, the pool's stream-ordered
// reuse, split and merge, trim, limit, out-of-memory chain and statistics. Every body runs on the
// host backend and on the cuda backend.
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
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace sa = smartarray;
using sa::MemoryKind;
using sa::MemoryResource;
using sa::PoolOptions;
using sa::PoolResource;
using sa::StreamRef;
using sa::detail::CopyKind;
using sa::detail::runtime;
using sa::test::poison;
using sa::test::random_values;

namespace {

constexpr std::size_t kib = std::size_t{1} << 10;
constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t pib = std::size_t{1} << 50;
/// The block size of the split, merge, trim and limit cases: a multiple of 256.
constexpr std::size_t unit = 64 * kib;

// --- resources under test, each owning its upstream ---

template <typename Upstream>
struct PoolOver {
  explicit PoolOver(PoolOptions options = {}) : pool(upstream, std::move(options)) {}
  MemoryResource& resource() { return pool; }
  Upstream upstream;
  PoolResource pool;
};

template <typename Raw>
struct RawResource {
  MemoryResource& resource() { return raw; }
  Raw raw;
};

using PoolOverDevice = PoolOver<sa::DeviceMemoryResource>;
using PoolOverPinned = PoolOver<sa::PinnedMemoryResource>;
using PoolOverManaged = PoolOver<sa::ManagedMemoryResource>;
using RawDevice = RawResource<sa::DeviceMemoryResource>;
using RawPinned = RawResource<sa::PinnedMemoryResource>;
using RawManaged = RawResource<sa::ManagedMemoryResource>;

struct ResourceNames {
  template <typename T>
  static std::string GetName(int) {  // NOLINT(readability-identifier-naming): gtest's name
    if constexpr (std::is_same_v<T, PoolOverDevice>) return "PoolOverDevice";
    if constexpr (std::is_same_v<T, PoolOverPinned>) return "PoolOverPinned";
    if constexpr (std::is_same_v<T, PoolOverManaged>) return "PoolOverManaged";
    if constexpr (std::is_same_v<T, RawDevice>) return "RawDevice";
    if constexpr (std::is_same_v<T, RawPinned>) return "RawPinned";
    if constexpr (std::is_same_v<T, RawManaged>) return "RawManaged";
    return "Unknown";
  }
};

/// True when the host may read and write the resource's memory.
bool host_accessible(MemoryKind kind) { return kind != MemoryKind::device; }

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

/// Raw pinned memory for staging copies (so that they are truly asynchronous on the GPU).
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes) : data_(runtime().allocate_pinned(bytes)) {}
  ~PinnedBuffer() { runtime().free_pinned(data_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  [[nodiscard]] void* data() const { return data_; }

 private:
  void* data_;
};

/// A buffer on the other side from blocks of `block_kind`: device memory for host blocks, pinned
/// memory for device blocks. Copies between a block and it are asynchronous on the GPU, as
/// host-to-host copies are not.
class OtherSide {
 public:
  OtherSide(MemoryKind block_kind, std::size_t bytes)
      : on_device_(block_kind != MemoryKind::device),
        bytes_(bytes),
        data_(on_device_ ? runtime().allocate_device(bytes) : runtime().allocate_pinned(bytes)) {}
  ~OtherSide() {
    if (on_device_) {
      runtime().free_device(data_);
    } else {
      runtime().free_pinned(data_);
    }
  }
  OtherSide(const OtherSide&) = delete;
  OtherSide& operator=(const OtherSide&) = delete;

  /// Replaces the contents with bytes from `host` (synchronously).
  void fill(const void* host) {
    if (!on_device_) {
      std::memcpy(data_, host, bytes_);
      return;
    }
    runtime().copy_async(data_, host, bytes_, CopyKind::host_to_device, StreamRef{});
    runtime().synchronize(StreamRef{});
  }
  /// The contents (synchronously).
  [[nodiscard]] std::vector<unsigned char> read() const {
    std::vector<unsigned char> out(bytes_);
    if (!on_device_) {
      std::memcpy(out.data(), data_, bytes_);
      return out;
    }
    runtime().copy_async(out.data(), data_, bytes_, CopyKind::device_to_host, StreamRef{});
    runtime().synchronize(StreamRef{});
    return out;
  }
  /// Enqueues a copy of the contents into `block` on `stream`.
  void copy_to_async(void* block, StreamRef stream) const {
    runtime().copy_async(block, data_, bytes_,
                         on_device_ ? CopyKind::device_to_host : CopyKind::host_to_device, stream);
  }
  /// Enqueues a copy of `block` into this buffer on `stream`.
  void copy_from_async(const void* block, StreamRef stream) const {
    runtime().copy_async(data_, block, bytes_,
                         on_device_ ? CopyKind::host_to_device : CopyKind::device_to_host, stream);
  }

 private:
  bool on_device_;
  std::size_t bytes_;
  void* data_;
};

bool same_bytes(const void* a, const void* b, std::size_t bytes) {
  return std::memcmp(a, b, bytes) == 0;
}

/// Holds a stream with a host function until `open()` (or, as a safety net, 10 s): work queued
/// behind it stays pending, whatever the timing.
class Gate {
 public:
  explicit Gate(StreamRef stream) {
    runtime().launch_host_func(stream, [opened = opened_.get_future().share()] {
      (void)opened.wait_for(std::chrono::seconds(10));
    });
  }
  ~Gate() { open(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void open() {
    if (!is_open_) opened_.set_value();
    is_open_ = true;
  }

 private:
  std::promise<void> opened_;
  bool is_open_ = false;
};

/// True when all work queued on `stream` completes within `limit` (polled).
bool completes_within(StreamRef stream, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (runtime().query(stream)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return runtime().query(stream);
}

std::uint64_t seam_allocations() { return sa::global_transfer_stats().allocation_count; }

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
// Options, upstreams and defaults
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
