// CCCL memory resources, both ways: smartarray's resources seen as `cuda::mr` resources (the
// toolkit's concept is checked at compile time, and an erased ref allocates from the pool), and
// SmartArray device storage from a CCCL resource of either generation, with eviction and a retry
// when it runs out. Then release_device_memory, which another library's out-of-memory calls.
// Both backends.
#include "support/test_support.hpp"

#include "support/device_ops.cuh"
#include "support/eviction_trio.cuh"

#include <smartarray/interop/cccl_resource.hpp>
#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <new>
#include <string>
#include <utility>

namespace sa = smartarray;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;
using sa::test::scale_on_device;
using sa::test::scaled;

namespace {

#if CCCL_MAJOR_VERSION > 3 || (CCCL_MAJOR_VERSION == 3 && CCCL_MINOR_VERSION >= 2)
static_assert(cuda::mr::resource_with<sa::interop::CcclResourceView, cuda::mr::device_accessible>);
using DeviceResourceRef = cuda::mr::resource_ref<cuda::mr::device_accessible>;
#else
static_assert(
    cuda::mr::async_resource_with<sa::interop::CcclResourceView, cuda::mr::device_accessible>);
using DeviceResourceRef = cuda::mr::async_resource_ref<cuda::mr::device_accessible>;
#endif
static_assert(sa::interop::cccl_stream_resource<sa::interop::CcclResourceView>);

constexpr std::size_t block_bytes = std::size_t{1} << 20;
constexpr std::size_t n = block_bytes / sizeof(float);

/// Device memory for at most `limit` bytes at a time, throwing std::bad_alloc beyond: a foreign
/// resource that runs out. Counts its live blocks.
struct Budget {
  explicit Budget(std::size_t bytes) : limit(bytes) {}

  sa::DeviceMemoryResource device;
  std::size_t limit;
  std::size_t in_use = 0;
  std::size_t live = 0;
  /// Streams that CUDA did not know (on the cuda backend): a CCCL resource gets real streams.
  std::size_t unknown_streams = 0;

  /// Counts `stream` unless CUDA knows it (on the host backend the handles are the library's).
  void check(cuda::stream_ref stream) {
    if (sa::backend() != sa::BackendKind::cuda) return;
    const cudaError_t status = cudaStreamQuery(stream.get());
    if (status != cudaSuccess && status != cudaErrorNotReady) {
      (void)cudaGetLastError();
      ++unknown_streams;
    }
  }

  void* take(sa::StreamRef stream, std::size_t bytes, std::size_t alignment, bool host) {
    if (in_use + bytes > limit) throw std::bad_alloc();
    void* ptr = host ? device.allocate_sync(bytes, alignment)
                     : device.allocate(stream, bytes, alignment);
    in_use += bytes;
    ++live;
    return ptr;
  }
  void give(sa::StreamRef stream, void* ptr, std::size_t bytes, std::size_t alignment, bool host) {
    if (host) {
      device.deallocate_sync(ptr, bytes, alignment);
    } else {
      device.deallocate(stream, ptr, bytes, alignment);
    }
    in_use -= bytes;
    --live;
  }
};

sa::StreamRef from_cccl(cuda::stream_ref stream) { return sa::StreamRef{stream.get()}; }

}  // namespace

// Foreign resources, outside the anonymous namespace: the concepts use members that no call does.
namespace cccl_test {

/// CCCL 3.0's spelling: allocate(bytes, align), allocate_async(bytes, align, stream).
struct StreamLastResource {
  Budget* budget;
  void* allocate(std::size_t bytes, std::size_t alignment) {
    return budget->take({}, bytes, alignment, true);
  }
  void deallocate(void* ptr, std::size_t bytes, std::size_t alignment) noexcept {
    budget->give({}, ptr, bytes, alignment, true);
  }
  void* allocate_async(std::size_t bytes, std::size_t alignment, cuda::stream_ref stream) {
    budget->check(stream);
    return budget->take(from_cccl(stream), bytes, alignment, false);
  }
  void deallocate_async(void* ptr, std::size_t bytes, std::size_t alignment,
                        cuda::stream_ref stream) noexcept {
    budget->give(from_cccl(stream), ptr, bytes, alignment, false);
  }
  bool operator==(const StreamLastResource& other) const { return budget == other.budget; }
  bool operator!=(const StreamLastResource& other) const { return budget != other.budget; }
  friend void get_property(const StreamLastResource&, cuda::mr::device_accessible) noexcept {}
};

/// CCCL 3.2's spelling: allocate(stream, bytes, align), allocate_sync(bytes, align).
struct StreamFirstResource {
  Budget* budget;
  void* allocate_sync(std::size_t bytes, std::size_t alignment) {
    return budget->take({}, bytes, alignment, true);
  }
  void deallocate_sync(void* ptr, std::size_t bytes, std::size_t alignment) noexcept {
    budget->give({}, ptr, bytes, alignment, true);
  }
  void* allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t alignment) {
    budget->check(stream);
    return budget->take(from_cccl(stream), bytes, alignment, false);
  }
  void deallocate(cuda::stream_ref stream, void* ptr, std::size_t bytes,
                  std::size_t alignment) noexcept {
    budget->give(from_cccl(stream), ptr, bytes, alignment, false);
  }
  bool operator==(const StreamFirstResource& other) const { return budget == other.budget; }
};

static_assert(sa::interop::cccl_stream_resource<StreamLastResource>);
static_assert(sa::interop::cccl_stream_resource<StreamFirstResource>);

}  // namespace cccl_test

namespace {

using cccl_test::StreamFirstResource;
using cccl_test::StreamLastResource;

bool device_valid(const SmartArray<float>& a) { return a.is_valid(sa::Side::device); }

template <class Resource>
class CcclDeviceStorage : public ::testing::Test {};
using Generations = ::testing::Types<StreamLastResource, StreamFirstResource>;
TYPED_TEST_SUITE(CcclDeviceStorage, Generations);

}  // namespace

TEST(CcclResourceView, AnErasedRefAllocatesFromThePool) {
  sa::StatisticsAdaptor& counted = sa::default_device_resource();
  const sa::MemoryStats before = counted.stats();
  sa::interop::CcclResourceView view{counted};
  DeviceResourceRef ref{view};
  sa::Stream stream;
  const cuda::stream_ref on{static_cast<cudaStream_t>(stream.ref().handle())};
#if CCCL_MAJOR_VERSION > 3 || (CCCL_MAJOR_VERSION == 3 && CCCL_MINOR_VERSION >= 2)
  void* block = ref.allocate(on, 3000, 256);
#else
  void* block = ref.allocate_async(3000, 256, on);
#endif
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(counted.stats().current_count, before.current_count + 1);
  EXPECT_EQ(counted.stats().total_bytes, before.total_bytes + 3000);
#if CCCL_MAJOR_VERSION > 3 || (CCCL_MAJOR_VERSION == 3 && CCCL_MINOR_VERSION >= 2)
  ref.deallocate(on, block, 3000, 256);
#else
  ref.deallocate_async(block, 3000, 256, on);
#endif
  EXPECT_EQ(counted.stats().current_count, before.current_count);
  stream.synchronize();
}

TEST(CcclResourceView, ViewsCompareByTheirResources) {
  sa::DeviceMemoryResource raw;
  EXPECT_EQ(sa::interop::CcclResourceView{sa::default_device_resource()},
            sa::interop::CcclResourceView{sa::default_device_resource()});
  EXPECT_NE(sa::interop::CcclResourceView{sa::default_device_resource()},
            sa::interop::CcclResourceView{raw});
  void* block = sa::interop::CcclResourceView{raw}.allocate_sync(512);
  ASSERT_NE(block, nullptr);
  sa::interop::CcclResourceView{raw}.deallocate_sync(block, 512);
}

TYPED_TEST(CcclDeviceStorage, ArraysTakeTheirDeviceCopiesFromTheResource) {
  Budget budget{4 * block_bytes};
  sa::interop::CcclDeviceResource resource{TypeParam{&budget}};
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, sa::ArrayOptions{.device_resource = &resource});
  scale_on_device(a);
  EXPECT_EQ(budget.live, 1U);
  EXPECT_EQ(budget.in_use, block_bytes);
  EXPECT_EQ(host_copy(a), scaled(values));
  EXPECT_EQ(a.transfer_stats().h2d_count, 1U);
  EXPECT_EQ(a.transfer_stats().d2h_count, 1U);
  // The default stream, as the library names it with several devices, reaches CUDA as CUDA's own.
  EXPECT_EQ(budget.unknown_streams, 0U);
}

TYPED_TEST(CcclDeviceStorage, RunningOutEvictsCleanCopiesFirstThenTheOldestDirtyOne) {
  Budget budget{3 * block_bytes};
  sa::interop::CcclDeviceResource resource{TypeParam{&budget}};
  const sa::ArrayOptions options{.device_resource = &resource};
  sa::test::EvictionTrio trio(n, options);  // the resource is full
  SmartArray<float> f(random_values<float>(2 * n), options);
  (void)f.device_view();  // needs two blocks: c (clean) goes first, then d, the older dirty one
  EXPECT_EQ(budget.in_use, 3 * block_bytes);
  trio.expect_clean_then_oldest_dirty_evicted();
}

TYPED_TEST(CcclDeviceStorage, NothingLeftToEvictThrowsOutOfMemoryAndKeepsTheArray) {
  Budget budget{block_bytes};
  sa::interop::CcclDeviceResource resource{TypeParam{&budget}};
  const auto values = random_values<float>(2 * n);
  SmartArray<float> a(values, sa::ArrayOptions{.device_resource = &resource});
  try {
    (void)a.device_view();
    FAIL() << "expected out_of_memory";
  } catch (const sa::out_of_memory& error) {
    EXPECT_NE(std::string(error.what()).find("CCCL resource allocate of 2097152 bytes"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(budget.live, 0U);
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_EQ(host_copy(a), values);
}

// A hook that reports bytes it did not free gets one round: nothing came back through the
// adaptor, so the allocation throws. (The hook stops lying after `rounds_cap` rounds, so that an
// adaptor that retried forever fails the test instead of hanging it.)
TEST(CcclDeviceResource, AHookThatReportsBytesItDidNotFreeEndsTheRetries) {
  Budget budget{block_bytes};
  sa::interop::CcclDeviceResource resource{StreamFirstResource{&budget}};
  sa::Stream stream;
  void* held = resource.allocate(stream, block_bytes);  // another user fills the resource
  constexpr int rounds_cap = 1000;
  int rounds = 0;
  const auto lie = resource.add_eviction_hook([&](std::size_t needed) -> std::size_t {
    return ++rounds < rounds_cap ? needed : 0;
  });
  const auto values = random_values<float>(n);
  SmartArray<float> a(values, sa::ArrayOptions{.device_resource = &resource});
  {
    sa::ExpectTransfers nothing({});
    try {
      (void)std::as_const(a).device_view(stream);
      ADD_FAILURE() << "the resource has no room";
    } catch (const sa::out_of_memory& error) {
      const std::string expected = "CCCL resource allocate of " + std::to_string(block_bytes);
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  }
  EXPECT_EQ(rounds, 1);
  EXPECT_FALSE(device_valid(a));
  resource.remove_eviction_hook(lie);
  resource.deallocate(stream, held, block_bytes);
  {
    sa::ExpectTransfers upload({.h2d = 1, .h2d_bytes = block_bytes});
    (void)std::as_const(a).device_view(stream);
  }
  EXPECT_EQ(host_copy(a), values);
}

TEST(CcclDeviceResource, ServesNewArraysOfADeviceThroughSetDeviceResource) {
  Budget budget{block_bytes};
  sa::interop::CcclDeviceResource resource{StreamFirstResource{&budget}};
  sa::MemoryResource* const previous = sa::set_device_resource(&resource);
  const auto a_values = random_values<float>(n);
  {
    SmartArray<float> a(a_values);
    SmartArray<float> b(random_values<float>(n));
    scale_on_device(a);
    (void)b.device_view();  // evicts a: dirty, written back
    EXPECT_EQ(a.transfer_stats().d2h_count, 1U);
    EXPECT_EQ(budget.live, 1U);
    EXPECT_EQ(host_copy(a), scaled(a_values));
  }
  (void)sa::set_device_resource(previous);
  EXPECT_EQ(budget.live, 0U);
}

TEST(ReleaseDeviceMemory, DropsCleanCopiesFirstThenTheOldestDirtyOnesAndTrimsThePool) {
  sa::PoolResource& pool = sa::default_device_pool();
  (void)pool.trim();
  const std::size_t in_use_before = pool.bytes_in_use();
  const auto c1_values = random_values<float>(n);
  const auto c2_values = random_values<float>(n);
  const auto d1_values = random_values<float>(n);
  const auto d2_values = random_values<float>(n);
  const auto d3_values = random_values<float>(n);
  SmartArray<float> d1(d1_values), d2(d2_values), d3(d3_values), c1(c1_values), c2(c2_values);
  scale_on_device(d1);
  scale_on_device(d2);
  scale_on_device(d3);
  (void)c1.device_view();
  (void)c2.device_view();
  // Two clean blocks, then dirty ones by age until 3.5 blocks are freed: d1 and d2.
  const std::size_t reserved_before = pool.reserved_bytes();
  const sa::DeviceMemoryRelease release =
      sa::release_device_memory(3 * block_bytes + block_bytes / 2);
  EXPECT_EQ(release.evicted_bytes, 4 * block_bytes);
  EXPECT_FALSE(device_valid(c1));
  EXPECT_FALSE(device_valid(c2));
  EXPECT_FALSE(device_valid(d1));
  EXPECT_FALSE(device_valid(d2));
  EXPECT_TRUE(device_valid(d3));
  EXPECT_EQ(c1.transfer_stats().d2h_count + c2.transfer_stats().d2h_count, 0U);
  EXPECT_EQ(d1.transfer_stats().d2h_count, 1U);
  EXPECT_EQ(d1.transfer_stats().d2h_bytes, block_bytes);
  EXPECT_EQ(d2.transfer_stats().d2h_count, 1U);
  EXPECT_EQ(d3.transfer_stats().d2h_count, 0U);
  EXPECT_EQ(pool.bytes_in_use(), in_use_before + block_bytes);
  // What the trim returned is what the pool no longer holds.
  EXPECT_EQ(pool.reserved_bytes(), reserved_before - release.returned_bytes);
  EXPECT_EQ(host_copy(c1), c1_values);
  EXPECT_EQ(host_copy(c2), c2_values);
  EXPECT_EQ(host_copy(d1), scaled(d1_values));
  EXPECT_EQ(host_copy(d2), scaled(d2_values));
  EXPECT_EQ(host_copy(d3), scaled(d3_values));
}

TEST(ReleaseDeviceMemory, RefusesADeviceThatIsNotThere) {
  EXPECT_THROW((void)sa::release_device_memory(1, sa::device_count()), sa::logic_error);
}
