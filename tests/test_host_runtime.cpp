// The host backend on its own: each test makes a private runtime through make_host_runtime(), so
// the results do not depend on which backend the process selected, and each test can choose the
// emulated latency and device size (both are read when a runtime is made). The tests are about one
// emulated device, so each private runtime has one, whatever SMARTARRAY_HOST_DEVICES says.
#include "support/test_support.hpp"

#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace smartarray::test {
namespace {

using detail::CopyKind;
using detail::EventHandle;
using detail::Location;
using detail::Runtime;
using namespace std::chrono_literals;

/// Sets (or, with nullptr, unsets) an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// A private host runtime of one device, with `latency_us` per queued operation and
/// `device_memory` bytes of emulated device memory (the default size when nullptr).
std::unique_ptr<Runtime> make_runtime(std::uint64_t latency_us = 0,
                                      const char* device_memory = nullptr) {
  const std::string latency_text = std::to_string(latency_us);
  ScopedEnv latency("SMARTARRAY_HOST_LATENCY_US", latency_text.c_str());
  ScopedEnv memory("SMARTARRAY_HOST_DEVICE_MEMORY", device_memory);
  ScopedEnv devices("SMARTARRAY_HOST_DEVICES", "1");
  return std::unique_ptr<Runtime>(detail::make_host_runtime());
}

/// A stream of a test's runtime, destroyed at the end of the scope.
class OwnedStream {
 public:
  explicit OwnedStream(Runtime& rt) : rt_(rt), ref_(rt.create_stream()) {}
  ~OwnedStream() { rt_.destroy_stream(ref_); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  operator StreamRef() const { return ref_; }  // NOLINT

 private:
  Runtime& rt_;
  StreamRef ref_;
};

/// An event of a test's runtime, destroyed at the end of the scope.
class OwnedEvent {
 public:
  explicit OwnedEvent(Runtime& rt) : rt_(rt), event_(rt.create_event()) {}
  ~OwnedEvent() { rt_.destroy_event(event_); }
  OwnedEvent(const OwnedEvent&) = delete;
  OwnedEvent& operator=(const OwnedEvent&) = delete;
  operator EventHandle() const { return event_; }  // NOLINT

 private:
  Runtime& rt_;
  EventHandle event_;
};

/// A host function that blocks its stream until `open()`. If the host never opens it (because a
/// call that should not block did), it gives up after a while and `timed_out()` says so.
class Gate {
 public:
  Gate() : opened_(promise_.get_future().share()) {}
  [[nodiscard]] std::function<void()> wait_task() {
    return [opened = opened_, timed_out = timed_out_] {
      if (opened.wait_for(10s) != std::future_status::ready) *timed_out = true;
    };
  }
  void open() { promise_.set_value(); }
  [[nodiscard]] bool timed_out() const { return *timed_out_; }

 private:
  std::promise<void> promise_;
  std::shared_future<void> opened_;
  std::shared_ptr<std::atomic<bool>> timed_out_ = std::make_shared<std::atomic<bool>>(false);
};

/// The message of the `Exception` that `fn` throws (a failure when it throws nothing).
template <typename Exception, typename Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const Exception& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool all_bytes_are(const void* ptr, std::size_t bytes, unsigned char value) {
  const auto* p = static_cast<const unsigned char*>(ptr);
  return std::all_of(p, p + bytes, [value](unsigned char b) { return b == value; });
}

bool aligned_256(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 256 == 0; }

TEST(HostRuntime, ReportsAnEmulatedDevice) {
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

TEST(HostRuntime, DeviceMemoryIsASeparatePoisonedAllocation) {
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

TEST(HostRuntime, BadFreesAreReportedNotThrown) {
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

TEST(HostRuntime, AllocationsBeyondCapacityThrowOutOfMemory) {
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

TEST(HostRuntime, OneStreamRunsItsWorkInOrder) {
  auto rt = make_runtime(200);
  OwnedStream s(*rt);
  std::vector<int> order;  // touched only by the worker until the synchronize
  for (int i = 0; i < 100; ++i) rt->launch_host_func(s, [&order, i] { order.push_back(i); });

  const std::size_t n = 4096;
  const std::vector<std::int64_t> src = random_values<std::int64_t>(n);
  std::vector<std::int64_t> out(n);
  poison(out.data(), n);
  void* dev = rt->allocate_device(n * sizeof(std::int64_t));
  bool copied_before_host_func = false;
  rt->copy_async(dev, src.data(), n * sizeof(std::int64_t), CopyKind::host_to_device, s);
  rt->launch_host_func(s, [&] {
    copied_before_host_func = std::memcmp(dev, src.data(), n * sizeof(std::int64_t)) == 0;
  });
  rt->copy_async(out.data(), dev, n * sizeof(std::int64_t), CopyKind::device_to_host, s);
  rt->synchronize(s);

  std::vector<int> expected(100);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
  EXPECT_TRUE(copied_before_host_func);
  EXPECT_EQ(out, src);
  EXPECT_TRUE(rt->query(s));
  rt->free_device(dev);
}

TEST(HostRuntime, CopyToDeviceNowReadsItsSourcesAtOnceAndWritesInStreamOrder) {
  auto rt = make_runtime();
  OwnedStream s(*rt);
  const std::size_t n = 1000;
  const std::vector<std::int32_t> first = random_values<std::int32_t>(n);
  const std::vector<std::int32_t> second = random_values<std::int32_t>(2 * n);
  std::vector<std::int32_t> sources = first;
  sources.insert(sources.end(), second.begin(), second.end());
  auto* dev = static_cast<std::int32_t*>(rt->allocate_device(3 * n * sizeof(std::int32_t)));
  Gate gate;
  rt->launch_host_func(s, gate.wait_task());
  const std::vector<detail::CopyRange> copies{
      {dev, sources.data(), n * sizeof(std::int32_t)},
      {dev + n, sources.data() + n, 2 * n * sizeof(std::int32_t)}};
  ASSERT_TRUE(rt->copy_to_device_now(copies, s));
  poison(sources.data(), sources.size());  // the copies read their sources already
  EXPECT_FALSE(rt->query(s));              // and write behind the gate
  gate.open();
  std::vector<std::int32_t> out(3 * n);
  poison(out.data(), out.size());
  rt->copy_async(out.data(), dev, out.size() * sizeof(std::int32_t), CopyKind::device_to_host, s);
  rt->synchronize(s);
  EXPECT_FALSE(gate.timed_out());
  EXPECT_TRUE(std::equal(first.begin(), first.end(), out.begin()));
  EXPECT_TRUE(std::equal(second.begin(), second.end(), out.begin() + n));
  rt->free_device(dev);
}

TEST(HostRuntime, EveryQueuedOperationWaitsForTheLatency) {
  auto rt = make_runtime(50'000);  // 50 ms, read when the runtime was made
  OwnedStream s(*rt);
  const std::vector<std::int32_t> src = random_values<std::int32_t>(64);
  void* dev = rt->allocate_device(256);
  const auto start = std::chrono::steady_clock::now();
  rt->copy_async(dev, src.data(), 256, CopyKind::host_to_device, s);
  rt->launch_host_func(s, [] {});
  EXPECT_FALSE(rt->query(s));  // the calls returned long before their work ran
  rt->synchronize(s);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_TRUE(rt->query(s));
  rt->free_device(dev);
}

TEST(HostRuntime, StreamWaitOrdersStreamsWithoutBlockingTheHost) {
  auto rt = make_runtime(1000);
  OwnedStream a(*rt);
  OwnedStream b(*rt);
  OwnedEvent e(*rt);
  const std::size_t n = 2048;
  const std::size_t bytes = n * sizeof(double);
  const std::vector<double> src = random_values<double>(n);
  std::vector<double> out(n);
  poison(out.data(), n);
  void* dev = rt->allocate_device(bytes);

  Gate gate;
  rt->launch_host_func(a, gate.wait_task());
  rt->copy_async(dev, src.data(), bytes, CopyKind::host_to_device, a);
  rt->record(e, a);
  rt->stream_wait(b, e);
  rt->copy_async(out.data(), dev, bytes, CopyKind::device_to_host, b);
  // The host got here while `a` is still held by the gate.
  EXPECT_FALSE(rt->query(e));
  EXPECT_FALSE(rt->query(b));
  gate.open();
  rt->synchronize(b);
  EXPECT_FALSE(gate.timed_out()) << "a call that should not block the host blocked it";
  EXPECT_TRUE(rt->query(e));
  EXPECT_EQ(out, src);
  rt->free_device(dev);
}

TEST(HostRuntime, AnEventCapturesTheQueueEndAtRecordTime) {
  auto rt = make_runtime(100);
  OwnedStream s(*rt);
  OwnedEvent e(*rt);
  Gate first;
  Gate second;
  rt->launch_host_func(s, first.wait_task());
  rt->record(e, s);
  rt->launch_host_func(s, second.wait_task());  // queued after the record: not part of it
  EXPECT_FALSE(rt->query(e));
  first.open();
  rt->synchronize(e);
  EXPECT_TRUE(rt->query(e));
  EXPECT_FALSE(rt->query(s));
  second.open();
  rt->synchronize(s);
  EXPECT_FALSE(first.timed_out());
  EXPECT_FALSE(second.timed_out());
}

TEST(HostRuntime, ReRecordingAnEventKeepsEarlierWaits) {
  auto rt = make_runtime(100);
  OwnedStream a(*rt);
  OwnedStream b(*rt);
  OwnedStream idle(*rt);
  OwnedEvent e(*rt);
  Gate gate;
  std::atomic<bool> b_ran{false};
  rt->launch_host_func(a, gate.wait_task());
  rt->record(e, a);
  rt->stream_wait(b, e);
  rt->launch_host_func(b, [&] { b_ran = true; });

  rt->record(e, idle);  // replaces the captured position: e is complete at once
  EXPECT_TRUE(rt->query(e));
  rt->synchronize(e);
  EXPECT_FALSE(rt->query(b));  // but b still waits for the record it was given
  EXPECT_FALSE(b_ran);
  gate.open();
  rt->synchronize(b);
  EXPECT_TRUE(b_ran);
  EXPECT_FALSE(gate.timed_out());

  // A stream waiting on its own earlier record does not wait for itself.
  rt->record(e, b);
  rt->stream_wait(b, e);
  rt->synchronize(b);
}

TEST(HostRuntime, ANeverRecordedEventIsComplete) {
  auto rt = make_runtime(100);
  OwnedStream s(*rt);
  OwnedEvent e(*rt);
  EXPECT_TRUE(rt->query(e));
  rt->synchronize(e);
  rt->stream_wait(s, e);
  EXPECT_TRUE(rt->query(s));  // nothing was queued
}

TEST(HostRuntime, EventsOutliveTheirStream) {
  auto rt = make_runtime(100);
  OwnedEvent e(*rt);
  StreamRef s = rt->create_stream();
  std::atomic<int> done{0};
  for (int i = 0; i < 3; ++i) {
    rt->launch_host_func(s, [&] {
      std::this_thread::sleep_for(2ms);
      ++done;
    });
  }
  rt->record(e, s);
  rt->destroy_stream(s);  // waits for the queued work
  EXPECT_EQ(done.load(), 3);
  EXPECT_TRUE(rt->query(e));
  rt->synchronize(e);

  EXPECT_TRUE(contains(message_of<logic_error>([&] { (void)rt->query(s); }), "not a live stream"));
  ::testing::internal::CaptureStderr();
  rt->destroy_stream(s);
  EXPECT_TRUE(contains(::testing::internal::GetCapturedStderr(), "destroy_stream"));
}

TEST(HostRuntime, AFailedHostFunctionIsReportedOnceByTheNextSynchronize) {
  auto rt = make_runtime(100);
  OwnedStream s(*rt);
  OwnedEvent e(*rt);
  std::atomic<bool> ran_after{false};
  rt->launch_host_func(s, [] { throw std::runtime_error("first failure"); });
  rt->launch_host_func(s, [] { throw std::runtime_error("second failure"); });
  rt->launch_host_func(s, [&] { ran_after = true; });
  ::testing::internal::CaptureStderr();
  try {
    rt->synchronize(s);
    ADD_FAILURE() << "the failure was not reported";
  } catch (const cuda_error& error) {
    const std::string message = error.what();
    EXPECT_EQ(error.status(), -1);
    EXPECT_TRUE(contains(message, "first failure")) << message;
    EXPECT_TRUE(contains(message, detail::concat("stream ", StreamRef(s).handle()))) << message;
  }
  EXPECT_TRUE(contains(::testing::internal::GetCapturedStderr(), "second failure"));
  EXPECT_TRUE(ran_after);  // the worker kept going
  EXPECT_NO_THROW(rt->synchronize(s));

  rt->launch_host_func(s, [] { throw std::runtime_error("seen through an event"); });
  rt->record(e, s);
  EXPECT_TRUE(contains(message_of<cuda_error>([&] { rt->synchronize(e); }), "through an event"));

  rt->launch_host_func(StreamRef{}, [] { throw 42; });
  EXPECT_TRUE(contains(message_of<cuda_error>([&] { rt->synchronize_device(); }),
                       "default stream"));
  EXPECT_NO_THROW(rt->synchronize_device());
}

TEST(HostRuntime, SynchronizingFromOwnHostFunctionThrowsInsteadOfHanging) {
  auto rt = make_runtime();
  OwnedStream s(*rt);
  std::string message;
  rt->launch_host_func(s, [&] {
    try {
      rt->synchronize(s);
    } catch (const logic_error& error) {
      message = error.what();
    }
  });
  rt->synchronize(s);
  EXPECT_TRUE(contains(message, "would wait for itself")) << message;
}

TEST(HostRuntime, RegisterHostRejectsOverlaps) {
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

TEST(HostRuntime, OnlyMappedPinnedMemoryHasADevicePointer) {
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

TEST(HostRuntime, CopiesAndPrefetchesCheckTheirMemory) {
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

TEST(HostRuntime, FreeWaitsForQueuedWork) {
  auto rt = make_runtime(20'000);
  OwnedStream s(*rt);
  const std::vector<std::uint64_t> src = random_values<std::uint64_t>(512);
  void* dev = rt->allocate_device(4096);
  rt->copy_async(dev, src.data(), 4096, CopyKind::host_to_device, s);
  rt->free_device(dev);  // as cudaFree: the queued copy finishes first
  EXPECT_TRUE(rt->query(s));
}

TEST(HostRuntime, SynchronizeDeviceWaitsForEveryStream) {
  auto rt = make_runtime(100);
  std::vector<std::unique_ptr<OwnedStream>> streams;
  for (int i = 0; i < 4; ++i) streams.push_back(std::make_unique<OwnedStream>(*rt));
  std::atomic<int> done{0};
  const auto slow_task = [&] {
    std::this_thread::sleep_for(2ms);
    ++done;
  };
  for (const auto& s : streams) rt->launch_host_func(*s, slow_task);
  rt->launch_host_func(StreamRef{}, slow_task);
  rt->synchronize_device();
  EXPECT_EQ(done.load(), 5);
}

// Eight threads make streams and events, allocate, copy through the shared default stream and
// wait across streams, all at once.
TEST(HostRuntime, EightThreadsAtOnce) {
  auto rt = make_runtime(10);
  constexpr int threads = 8;
  constexpr int rounds = 30;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 engine(static_cast<unsigned>(t) + 1);
      OwnedStream s(*rt);
      OwnedEvent produced(*rt);
      OwnedEvent relayed(*rt);
      for (int round = 0; round < rounds; ++round) {
        const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 4096)(engine);
        const std::size_t bytes = n * sizeof(std::uint32_t);
        auto* staging = static_cast<std::uint32_t*>(rt->allocate_pinned(bytes));
        auto* result = static_cast<std::uint32_t*>(rt->allocate_pinned(bytes));
        for (std::size_t i = 0; i < n; ++i) staging[i] = static_cast<std::uint32_t>(engine()) | 1U;
        std::memset(result, 0xA5, bytes);
        void* first = rt->allocate_device(bytes);
        void* second = rt->allocate_device(bytes);

        rt->copy_async(first, staging, bytes, CopyKind::host_to_device, s);
        rt->record(produced, s);
        rt->stream_wait(StreamRef{}, produced);
        rt->copy_async(second, first, bytes, CopyKind::device_to_device, StreamRef{});
        rt->record(relayed, StreamRef{});
        rt->stream_wait(s, relayed);
        rt->copy_async(result, second, bytes, CopyKind::device_to_host, s);
        (void)rt->query(relayed);
        rt->synchronize(s);
        if (std::memcmp(result, staging, bytes) != 0) ++mismatches;

        rt->free_device(first);
        rt->free_device(second);
        rt->free_pinned(staging);
        rt->free_pinned(result);
      }
    });
  }
  for (auto& worker : workers) worker.join();
  EXPECT_EQ(mismatches.load(), 0);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  rt->memory_info(free_bytes, total_bytes);
  EXPECT_EQ(free_bytes, total_bytes);
}

}  // namespace
}  // namespace smartarray::test
