// The host backend's streams and events, each test on a private runtime made through
// make_host_runtime() (support/host_runtime.hpp), so that the results do not depend on which
// backend the process selected, and with the emulated latency it chooses (read when a runtime is
// made): work in stream order, the latency of every queued operation, waits across streams that do
// not block the host, events and their records, failed host functions, synchronization, and eight
// threads at once. The tests are about one emulated device, so each private runtime has one,
// whatever SMARTARRAY_HOST_DEVICES says. The device and its memory are in
// test_host_runtime_memory.cpp.
#include "support/host_runtime.hpp"
#include "support/test_support.hpp"

#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace smartarray::test {
namespace {

using detail::CopyKind;
using namespace std::chrono_literals;
using host_runtime::contains;
using host_runtime::make_runtime;
using host_runtime::message_of;
using host_runtime::OwnedEvent;
using host_runtime::OwnedStream;

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
