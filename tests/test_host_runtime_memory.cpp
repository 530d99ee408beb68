// The host backend's emulated device and its memory, each test on a private runtime made through
// make_host_runtime() (support/host_runtime.hpp), so that the results do not depend on which
// backend the process selected, with the latency and device size it chooses: the device's
// properties and size, poisoned and aligned allocations of each kind, bad frees reported rather
// than thrown, out-of-memory beyond the capacity, host registration, mapped pointers, the memory
// checks of copies and prefetches, and a free that waits for queued work. The streams and events
// are in test_host_runtime.cpp.
#include "support/host_runtime.hpp"
#include "support/test_support.hpp"

#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace smartarray::test {
namespace {

using detail::CopyKind;
using detail::Location;
using host_runtime::contains;
using host_runtime::make_runtime;
using host_runtime::message_of;
using host_runtime::OwnedEvent;
using host_runtime::OwnedStream;

bool all_bytes_are(const void* ptr, std::size_t bytes, unsigned char value) {
  const auto* p = static_cast<const unsigned char*>(ptr);
  return std::all_of(p, p + bytes, [value](unsigned char b) { return b == value; });
}

bool aligned_256(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 256 == 0; }

TEST(HostRuntimeMemory, ReportsAnEmulatedDevice) {
  auto rt = make_runtime(0, "1048576");
  EXPECT_EQ(rt->kind(), BackendKind::host);
  const DeviceProperties& p = rt->properties();
  EXPECT_EQ(p.name, "emulated host device (smartarray host backend)");
  EXPECT_GE(p.multiprocessor_count, 1);
  EXPECT_EQ(p.compute_capability_major, 0);
  EXPECT_EQ(p.compute_capability_minor, 0);
  EXPECT_EQ(p.total_memory, 1048576U);
  EXPECT_TRUE(p.can_map_host_memory);
  EXPECT_TRUE(p.managed_memory);
  EXPECT_TRUE(p.concurrent_managed_access);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  rt->memory_info(free_bytes, total_bytes);
  EXPECT_EQ(free_bytes, 1048576U);
  EXPECT_EQ(total_bytes, 1048576U);

  auto default_rt = make_runtime();
  EXPECT_EQ(default_rt->properties().total_memory, std::size_t{16} << 30);
}

TEST(HostRuntimeMemory, DeviceMemoryIsASeparatePoisonedAllocation) {
  auto rt = make_runtime(200);
  OwnedStream s(*rt);
  const std::size_t n = 1000;
  const std::size_t bytes = n * sizeof(std::uint32_t);
  const std::vector<std::uint32_t> src = random_values<std::uint32_t>(n);
  std::vector<std::uint32_t> out(n);
  poison(out.data(), n);

  void* a = rt->allocate_device(bytes);
  void* b = rt->allocate_device(bytes);
  EXPECT_TRUE(aligned_256(a));
  EXPECT_TRUE(aligned_256(b));
  EXPECT_TRUE(all_bytes_are(a, bytes, 0xCD));
  EXPECT_TRUE(all_bytes_are(b, bytes, 0xCD));
  const auto pa = reinterpret_cast<std::uintptr_t>(a);
  const auto pb = reinterpret_cast<std::uintptr_t>(b);
  EXPECT_TRUE(pa + bytes <= pb || pb + bytes <= pa);

  rt->copy_async(a, src.data(), bytes, CopyKind::host_to_device, s);
  rt->copy_async(b, a, bytes, CopyKind::device_to_device, s);
  rt->copy_async(out.data(), b, bytes, CopyKind::device_to_host, s);
  rt->synchronize(s);
  EXPECT_EQ(out, src);
  EXPECT_EQ(std::memcmp(a, src.data(), bytes), 0);  // the device copy is its own buffer

  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  rt->memory_info(free_bytes, total_bytes);
  EXPECT_EQ(total_bytes - free_bytes, 2 * bytes);
  rt->free_device(a);
  rt->free_device(b);
  rt->memory_info(free_bytes, total_bytes);
  EXPECT_EQ(free_bytes, total_bytes);

  void* pinned = rt->allocate_pinned(100);
  void* managed = rt->allocate_managed(300);
  EXPECT_TRUE(aligned_256(pinned));
  EXPECT_TRUE(aligned_256(managed));
  EXPECT_TRUE(all_bytes_are(pinned, 100, 0xCD));
  EXPECT_TRUE(all_bytes_are(managed, 300, 0xCD));
  rt->free_pinned(pinned);
  rt->free_managed(managed);
  EXPECT_EQ(rt->allocate_device(0), nullptr);
}

TEST(HostRuntimeMemory, BadFreesAreReportedNotThrown) {
  auto rt = make_runtime();
  void* device = rt->allocate_device(512);
  int local = 0;
  ::testing::internal::CaptureStderr();
  rt->free_device(&local);
  rt->free_pinned(device);  // the wrong free function leaves the allocation alone
  rt->unregister_host(&local);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(log, "free_device")) << log;
  EXPECT_TRUE(contains(log, "free_pinned")) << log;
  EXPECT_TRUE(contains(log, "unregister_host")) << log;
  EXPECT_TRUE(all_bytes_are(device, 512, 0xCD));
  rt->free_device(device);

  ::testing::internal::CaptureStderr();
  rt->free_device(device);  // a double free
  EXPECT_TRUE(contains(::testing::internal::GetCapturedStderr(), "not a live allocation"));
}

TEST(HostRuntimeMemory, AllocationsBeyondCapacityThrowOutOfMemory) {
  auto rt = make_runtime(0, "1048576");
  void* a = rt->allocate_device(786432);
  const std::string message = message_of<out_of_memory>([&] { (void)rt->allocate_device(524288); });
  EXPECT_TRUE(contains(message, "524288")) << message;
  EXPECT_TRUE(contains(message, "786432")) << message;
  EXPECT_THROW((void)rt->allocate_managed(524288), std::bad_alloc);  // managed counts too

  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  rt->memory_info(free_bytes, total_bytes);
  EXPECT_EQ(free_bytes, 262144U);
  void* rest = rt->allocate_managed(262144);
  rt->free_device(a);
  rt->free_managed(rest);
  void* all = rt->allocate_device(1048576);
  rt->free_device(all);
}

TEST(HostRuntimeMemory, RegisterHostRejectsOverlaps) {
  auto rt = make_runtime();
  std::vector<std::byte> buffer(4096);
  std::byte* base = buffer.data();
  rt->register_host(base, 1024);
  const std::string message = message_of<logic_error>([&] { rt->register_host(base + 512, 1024); });
  EXPECT_TRUE(contains(message, "is already registered")) << message;
  EXPECT_TRUE(contains(message, detail::concat(static_cast<void*>(base + 512)))) << message;
  EXPECT_TRUE(contains(message, "1024 bytes")) << message;

  rt->register_host(base + 1024, 1024, pinned_mapped);  // adjacent is fine
  EXPECT_EQ(rt->mapped_device_pointer(base + 1030), base + 1030);
  EXPECT_THROW((void)rt->mapped_device_pointer(base + 10), logic_error);  // not mapped
  rt->unregister_host(base);
  rt->unregister_host(base + 1024);
  rt->register_host(base, 4096);
  rt->unregister_host(base);

  void* pinned = rt->allocate_pinned(1024);
  EXPECT_THROW(rt->register_host(static_cast<std::byte*>(pinned) + 100, 10), logic_error);
  rt->free_pinned(pinned);
}

TEST(HostRuntimeMemory, OnlyMappedPinnedMemoryHasADevicePointer) {
  auto rt = make_runtime(100);
  OwnedStream s(*rt);
  auto* mapped = static_cast<std::byte*>(rt->allocate_pinned(1024, pinned_mapped));
  void* plain = rt->allocate_pinned(1024);
  void* device = rt->allocate_device(1024);
  EXPECT_EQ(rt->mapped_device_pointer(mapped + 100), mapped + 100);
  const std::string message =
      message_of<logic_error>([&] { (void)rt->mapped_device_pointer(plain); });
  EXPECT_TRUE(contains(message, detail::concat(plain))) << message;
  EXPECT_THROW((void)rt->mapped_device_pointer(device), logic_error);

  // The device side of a copy may be mapped memory.
  const std::vector<std::uint8_t> src = random_values<std::uint8_t>(1024);
  rt->copy_async(rt->mapped_device_pointer(mapped), src.data(), 1024, CopyKind::host_to_device, s);
  rt->synchronize(s);
  EXPECT_EQ(std::memcmp(mapped, src.data(), 1024), 0);
  rt->free_pinned(mapped);
  rt->free_pinned(plain);
  rt->free_device(device);
}

TEST(HostRuntimeMemory, CopiesAndPrefetchesCheckTheirMemory) {
  auto rt = make_runtime();
  OwnedStream s(*rt);
  void* dev = rt->allocate_device(256);
  void* other = rt->allocate_device(256);
  void* managed = rt->allocate_managed(256);
  std::vector<std::byte> host(512);
  std::vector<std::byte> host2(512);

  EXPECT_THROW(rt->copy_async(host.data(), host2.data(), 256, CopyKind::host_to_device, s),
               logic_error);  // the destination is not device memory
  EXPECT_THROW(rt->copy_async(dev, other, 256, CopyKind::host_to_device, s),
               logic_error);  // the source is device memory
  const std::string overrun = message_of<logic_error>(
      [&] { rt->copy_async(host.data(), dev, 512, CopyKind::device_to_host, s); });
  EXPECT_TRUE(contains(overrun, "512 bytes")) << overrun;
  EXPECT_THROW(rt->copy_async(static_cast<std::byte*>(dev) + 16, dev, 64,
                              CopyKind::device_to_device, s),
               logic_error);  // overlapping ranges
  EXPECT_THROW(rt->prefetch_async(dev, 256, Location::device, s), logic_error);

  rt->prefetch_async(managed, 256, Location::device, s);
  rt->copy_async(managed, host.data(), 256, CopyKind::host_to_device, s);
  rt->copy_async(other, managed, 256, CopyKind::device_to_device, s);
  rt->synchronize(s);
  rt->free_device(dev);
  rt->free_device(other);
  rt->free_managed(managed);
}

TEST(HostRuntimeMemory, FreeWaitsForQueuedWork) {
  auto rt = make_runtime(20'000);
  OwnedStream s(*rt);
  const std::vector<std::uint64_t> src = random_values<std::uint64_t>(512);
  void* dev = rt->allocate_device(4096);
  rt->copy_async(dev, src.data(), 4096, CopyKind::host_to_device, s);
  rt->free_device(dev);  // as cudaFree: the queued copy finishes first
  EXPECT_TRUE(rt->query(s));
}

}  // namespace
}  // namespace smartarray::test
