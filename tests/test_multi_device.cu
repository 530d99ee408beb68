// Residency across devices: each device's copy has its own validity, a read on one device of data
// another holds is a peer copy (or, without peer access, a copy down to the host and one up), and
// every wait is an event of the writer's stream. Exact transfer counts, on the host backend with
// SMARTARRAY_HOST_DEVICES=2 (CTest runs it with and without peer access) and on the cuda backend
// with two GPUs or more (the tests use devices 0 and 1); with one device every test skips.
#include "support/functors.hpp"
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/upstream_resources.hpp>
#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <future>
#include <string>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::Device;
using sa::SmartArray;
using sa::test::copy_on_device;
using sa::test::host_copy;
using sa::test::random_values;
using sa::test::scale_on_device;
using sa::test::scaled;

namespace {

constexpr std::size_t n = 3000;
constexpr std::size_t bytes = n * sizeof(float);

/// Two devices, a stream on each; the test skips with fewer devices.
class MultiDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (sa::device_count() < 2) GTEST_SKIP() << "one device: nothing to test across devices";
    s0_ = sa::Stream(Device{0});
    s1_ = sa::Stream(Device{1});
  }
  /// Skips a test of peer copies where the devices cannot reach each other.
  [[nodiscard]] static bool peers() {
    return sa::peer_access(Device{1}, Device{0}) && sa::peer_access(Device{0}, Device{1});
  }
  sa::Stream s0_;
  sa::Stream s1_;
};

/// Turns peer access off for a scope (the fallback through the host runs on any machine).
struct NoPeerAccess {
  NoPeerAccess() { sa::testing::set_peer_access_enabled(false); }
  ~NoPeerAccess() { sa::testing::set_peer_access_enabled(true); }
  NoPeerAccess(const NoPeerAccess&) = delete;
  NoPeerAccess& operator=(const NoPeerAccess&) = delete;
};

/// Makes new arrays take memory of `device` from `resource` for a scope.
struct DeviceResourceScope {
  DeviceResourceScope(sa::MemoryResource& resource, int device)
      : device_(device), previous_(sa::set_device_resource(&resource, device)) {}
  ~DeviceResourceScope() { sa::set_device_resource(previous_, device_); }
  DeviceResourceScope(const DeviceResourceScope&) = delete;
  DeviceResourceScope& operator=(const DeviceResourceScope&) = delete;

 private:
  int device_;
  sa::MemoryResource* previous_;
};

using smartarray::test::Add;
struct Twice {
  SMARTARRAY_HOST_DEVICE float operator()(float p) const { return 2 * p; }
};
struct Scale {
  SMARTARRAY_HOST_DEVICE float operator()(float v) const { return v * 2 + 1; }
};

/// A read of `a` on `stream`: its device copy there made valid, nothing else.
void touch_on(const SmartArray<float>& a, sa::StreamRef stream) { (void)a.device_view(stream); }

/// `a` read on `stream` into a fresh array (discarded there first): its contents, read back.
std::vector<float> read_on(const SmartArray<float>& a, sa::StreamRef stream) {
  SmartArray<float> out(a.size());
  copy_on_device(out, a, stream);
  return host_copy(out);
}

}  // namespace

TEST_F(MultiDevice, StreamsAndDefaultStreamsNameTheirDevices) {
  EXPECT_EQ(s0_.device(), Device{0});
  EXPECT_EQ(s1_.device(), Device{1});
  EXPECT_EQ(sa::stream_device(sa::default_stream(Device{1})), Device{1});
  EXPECT_EQ(sa::current_device(), Device{0});
  {
    const sa::DeviceGuard on_one(Device{1});
    EXPECT_EQ(sa::current_device(), Device{1});
    EXPECT_EQ(sa::stream_device(sa::StreamRef{}), Device{1});
    const sa::Stream made;
    EXPECT_EQ(made.device(), Device{1});
  }
  EXPECT_EQ(sa::current_device(), Device{0});
  EXPECT_EQ(sa::device_properties(Device{1}).ordinal, 1);
}

TEST_F(MultiDevice, AWriteOnDevice0ThenAReadOnDevice1IsOnePeerCopy) {
  if (!peers()) GTEST_SKIP() << "the devices have no peer access";
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a, s0_);
  const sa::TransferStats device1_before = sa::device_transfer_stats(1);
  SmartArray<float> out(n);
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0, .d2d_peer = 1, .d2d_peer_bytes = bytes});
    copy_on_device(out, a, s1_);
  }
  const sa::TransferStats device1 = sa::device_transfer_stats(1) - device1_before;
  EXPECT_EQ(device1.d2d_peer_count, 1U);
  EXPECT_EQ(device1.d2d_peer_bytes, bytes);
  EXPECT_TRUE(a.is_valid(Device{0}));
  EXPECT_TRUE(a.is_valid(Device{1}));
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  EXPECT_EQ(host_copy(out), scaled(values));
  // A second read on device 1 copies nothing.
  sa::ExpectTransfers none({});
  copy_on_device(out, a, s1_);
}

TEST_F(MultiDevice, AHostReadAfterThatIsOneCopyDownFromADeviceThatHoldsIt) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a, s0_);
  (void)read_on(a, s1_);
  ASSERT_TRUE(a.is_valid(Device{0}) && a.is_valid(Device{1}));
  {
    // Without peer access the read on device 1 went through the host copy, which holds it now.
    sa::ExpectTransfers expect(peers() ? sa::Transfers{.d2h = 1, .d2h_bytes = bytes}
                                       : sa::Transfers{});
    EXPECT_EQ(host_copy(a), scaled(values));
  }
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(Device{0}));
  EXPECT_TRUE(a.is_valid(Device{1}));
}

TEST_F(MultiDevice, AWriteOnDevice1MakesDevice0AndTheHostStale) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  (void)read_on(a, s0_);
  (void)read_on(a, s1_);
  ASSERT_TRUE(a.is_valid(sa::Side::host) && a.is_valid(Device{0}) && a.is_valid(Device{1}));
  {
    sa::ExpectTransfers expect({});
    scale_on_device(a, s1_);
  }
  EXPECT_TRUE(a.is_valid(Device{1}));
  EXPECT_FALSE(a.is_valid(Device{0}));
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  // Device 0 reads it back from device 1: one peer copy, or down and up without peer access.
  {
    sa::ExpectTransfers expect(peers() ? sa::Transfers{.d2d_peer = 1}
                                       : sa::Transfers{.h2d = 1, .d2h = 1, .staged = 1});
    touch_on(a, s0_);
  }
  EXPECT_EQ(read_on(a, s0_), scaled(values));
}

TEST_F(MultiDevice, WithoutPeerAccessAReadAcrossDevicesGoesThroughTheHostCopy) {
  const NoPeerAccess off;
  EXPECT_FALSE(sa::peer_access(Device{1}, Device{0}));
  EXPECT_TRUE(sa::peer_access(Device{1}, Device{1}));
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a, s0_);
  const sa::TransferStats device0_before = sa::device_transfer_stats(0);
  const sa::TransferStats device1_before = sa::device_transfer_stats(1);
  SmartArray<float> out(n);
  {
    sa::ExpectTransfers expect(
        {.h2d = 1, .d2h = 1, .h2d_bytes = bytes, .d2h_bytes = bytes, .d2d_peer = 0, .staged = 1});
    copy_on_device(out, a, s1_);
  }
  // The copy down counts on device 0, the copy up and the staged read on device 1.
  const sa::TransferStats device0 = sa::device_transfer_stats(0) - device0_before;
  const sa::TransferStats device1 = sa::device_transfer_stats(1) - device1_before;
  EXPECT_EQ(device0.d2h_count, 1U);
  EXPECT_EQ(device1.h2d_count, 1U);
  EXPECT_EQ(device1.staged_count, 1U);
  EXPECT_EQ(device1.staged_bytes, bytes);
  // The host copy now holds the data too: reading it costs nothing.
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  {
    sa::ExpectTransfers none({});
    EXPECT_EQ(host_copy(a), scaled(values));
  }
  EXPECT_EQ(host_copy(out), scaled(values));
}

TEST_F(MultiDevice, AnArrayMadeOnADeviceGetsAHostBufferForAReadStagedThroughIt) {
  const NoPeerAccess off;
  const auto values = random_values<float>(n);
  const SmartArray<float> a(values);
  // A result of map is made on device 0 and has no host buffer yet.
  const SmartArray<float> doubled = sa::map(Twice{}, a, s0_.ref());
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 1, .staged = 1});
    touch_on(doubled, s1_);
  }
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = 2 * values[i];
  sa::ExpectTransfers none({});
  EXPECT_EQ(host_copy(doubled), want);
}

TEST_F(MultiDevice, ACopyDownWaitsForAnUploadToAnotherDeviceThatStillReadsTheHostCopy) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  SmartArray<float> out0(n);
  // Device 0 reads the array: its upload waits behind the gate, still to read the host copy.
  std::promise<void> gate = sa::test::gate(s0_);
  copy_on_device(out0, a, s0_);
  // Device 1 then overwrites it (nothing of device 0's is ordered before that), and the host
  // reads it: the copy down into the host buffer must wait for device 0's upload.
  const float later = sa::test::random_value<float>();
  sa::test::fill_on_device(a, later, s1_);
  auto host_read = std::async(std::launch::async, [&] { return host_copy(a); });
  const bool read_before_upload =
      host_read.wait_for(std::chrono::milliseconds(200)) == std::future_status::ready;
  gate.set_value();
  EXPECT_FALSE(read_before_upload);
  EXPECT_EQ(host_read.get(), std::vector<float>(n, later));
  EXPECT_EQ(host_copy(out0), values);  // device 0 read the values of its time
}

TEST_F(MultiDevice, TwoStreamsOnTwoDevicesInAChainWaitOnEventsNotOnTheHost) {
  if (!peers()) GTEST_SKIP() << "without peer access a read across devices waits on the host";
  auto expected = random_values<float>(n);
  SmartArray<float> a(expected);
  const std::uint64_t host_waits_before = sa::global_transfer_stats().wait_count;
  for (int round = 0; round < 6; ++round) {
    // Device 0 writes behind a closed gate; device 1's read must wait for it on the device.
    std::promise<void> gate = sa::test::gate(s0_);
    scale_on_device(a, s0_);
    scale_on_device(a, s1_);
    gate.set_value();
    expected = scaled(scaled(expected));
  }
  // No host wait so far: every order was an event between the two streams.
  EXPECT_EQ(sa::global_transfer_stats().wait_count, host_waits_before);
  EXPECT_EQ(host_copy(a), expected);
  EXPECT_EQ(a.transfer_stats().h2d_count, 1U);
  EXPECT_EQ(a.transfer_stats().d2d_peer_count, 11U);
}

TEST_F(MultiDevice, TheDefaultStreamIsTheCurrentDevicesAndStaysItsOwn) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  {
    const sa::DeviceGuard on_one(Device{1});
    std::promise<void> gate = sa::test::gate(sa::StreamRef{});
    scale_on_device(a, sa::StreamRef{});  // device 1's default stream, behind the gate
    gate.set_value();
  }
  EXPECT_TRUE(a.is_valid(Device{1}));
  EXPECT_FALSE(a.is_valid(Device{0}));
  // Device 0 is current again: the host read still waits for device 1's default stream.
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST_F(MultiDevice, AdaptersRunWhereTheirStreamLives) {
  const auto x = random_values<float>(n);
  const auto y = random_values<float>(n);
  SmartArray<float> a(x);
  SmartArray<float> b(y);
  (void)read_on(a, s0_);
  SmartArray<float> sum(n);
  sa::transform(sa::out(sum), Add{}, a, b, s1_.ref());
  EXPECT_TRUE(sum.is_valid(Device{1}));
  EXPECT_FALSE(sum.is_valid(Device{0}));
  EXPECT_TRUE(a.is_valid(Device{1}));
  const SmartArray<float> twice = sa::map(Twice{}, sum, s1_.ref());
  EXPECT_TRUE(twice.is_valid(Device{1}));
  EXPECT_FALSE(twice.is_valid(Device{0}));
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = 2 * (x[i] + y[i]);
  EXPECT_EQ(host_copy(twice), want);
  const float largest = *std::max_element(want.begin(), want.end());
  {
    sa::ExpectTransfers expect({.d2h = 1});  // the result only: the fold runs on device 1
    EXPECT_EQ(sa::reduce(twice, -1e30f, sa::test::Maximum<float>{}, s1_.ref()), largest);
  }
}

TEST_F(MultiDevice, EachDeviceCopyComesFromItsDevicesPool) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  const std::size_t pool1_before = sa::default_device_resource(1).stats().current_bytes;
  const std::size_t pool0_before = sa::default_device_resource(0).stats().current_bytes;
  (void)read_on(a, s1_);
  EXPECT_GE(sa::default_device_resource(1).stats().current_bytes, pool1_before + bytes);
  EXPECT_EQ(sa::default_device_resource(0).stats().current_bytes, pool0_before);
  EXPECT_FALSE(a.is_valid(Device{0}));
}

TEST_F(MultiDevice, AppendsAfterBothDevicesHoldTheArrayCopyOnlyTheTail) {
  auto values = random_values<float>(n);
  const auto tail = random_values<float>(5);
  const std::size_t tail_bytes = tail.size() * sizeof(float);
  SmartArray<float> a(values);
  a.reserve(n + tail.size());  // device buffers as large: no reallocation below
  touch_on(a, s0_);
  touch_on(a, s1_);
  for (const float v : tail) {
    a.push_back(v);
    values.push_back(v);
  }
  {
    // Device 1 takes the tail from the host; device 0 from device 1 when it can reach it.
    sa::ExpectTransfers expect(peers() ? sa::Transfers{.h2d = 1,
                                                       .h2d_bytes = tail_bytes,
                                                       .d2d_peer = 1,
                                                       .d2d_peer_bytes = tail_bytes}
                                       : sa::Transfers{.h2d = 2, .h2d_bytes = 2 * tail_bytes});
    touch_on(a, s1_);
    touch_on(a, s0_);
  }
  EXPECT_EQ(read_on(a, s1_), values);
  EXPECT_EQ(read_on(a, s0_), values);
}

TEST_F(MultiDevice, SlicesSplitAnArrayAcrossTwoDevicesAndTheHostGathersIt) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  const std::size_t half = n / 2;
  // Each half goes up to its device and comes back down from it: nothing crosses devices.
  sa::ExpectTransfers expect({.h2d = 2, .d2h = 2, .h2d_bytes = bytes, .d2h_bytes = bytes});
  sa::transform(a.slice(0, half), Scale{}, a.slice(0, half), s0_.ref());
  sa::transform(a.slice(half, n - half), Scale{}, a.slice(half, n - half), s1_.ref());
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST_F(MultiDevice, EvictionOnOneDeviceLeavesTheOtherValid) {
  constexpr std::size_t block = std::size_t{1} << 20;
  constexpr std::size_t m = block / sizeof(float);
  sa::PoolOptions options;
  options.chunk_size = block;
  options.max_chunk_size = block;
  options.maximum_size = 2 * block;
  options.name = "device 1 test pool";
  sa::DeviceMemoryResource upstream(Device{1});
  sa::PoolResource pool(upstream, options);
  const DeviceResourceScope scope(pool, 1);
  std::vector<SmartArray<float>> arrays;
  std::vector<std::vector<float>> contents;
  for (int k = 0; k < 3; ++k) {
    contents.push_back(random_values<float>(m));
    arrays.emplace_back(contents.back());
    scale_on_device(arrays.back(), s0_);
    contents.back() = scaled(contents.back());
  }
  const auto read_on_device1 = [&](int k) { touch_on(arrays[k], s1_); };
  read_on_device1(0);
  read_on_device1(1);
  // A third copy on device 1 evicts the least recently used clean one there: arrays[0]'s.
  read_on_device1(2);
  EXPECT_FALSE(arrays[0].is_valid(Device{1}));
  EXPECT_TRUE(arrays[0].is_valid(Device{0}));
  EXPECT_TRUE(arrays[1].is_valid(Device{1}));
  EXPECT_TRUE(arrays[2].is_valid(Device{1}));
  // Written on device 1, both copies there are dirty: the least recently used is written back to
  // the host (one copy down) before its block is reused.
  scale_on_device(arrays[1], s1_);
  scale_on_device(arrays[2], s1_);
  contents[1] = scaled(contents[1]);
  contents[2] = scaled(contents[2]);
  // (Without peer access every copy on device 1 came through the host, which holds it too.)
  if (peers()) {
    {
      sa::ExpectTransfers expect({.d2h = 1, .d2d_peer = 1});
      read_on_device1(0);
    }
    EXPECT_TRUE(arrays[1].is_valid(sa::Side::host));
    EXPECT_FALSE(arrays[1].is_valid(Device{1}));
    EXPECT_TRUE(arrays[2].is_valid(Device{1}));
  }
  for (int k = 0; k < 3; ++k) EXPECT_EQ(host_copy(arrays[k]), contents[k]) << "array " << k;
}

TEST_F(MultiDevice, AFailedPeerCopyLosesNothingAndMarksNothingValid) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a, s0_);
  const sa::test::ClearFaults clear;
  sa::testing::inject_failure(sa::testing::Fault::copy, 1);
  SmartArray<float> out(n);
  EXPECT_THROW(copy_on_device(out, a, s1_), sa::cuda_error);
  EXPECT_FALSE(a.is_valid(Device{1}));
  EXPECT_TRUE(a.is_valid(Device{0}));
  EXPECT_EQ(read_on(a, s1_), scaled(values));
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST_F(MultiDevice, AFailedCopyOfAStagedReadLosesNothing) {
  const NoPeerAccess off;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a, s0_);
  for (std::uint64_t nth = 1; nth <= 2; ++nth) {
    const sa::test::ClearFaults clear;
    sa::testing::inject_failure(sa::testing::Fault::copy, nth);
    SmartArray<float> out(n);
    EXPECT_THROW(copy_on_device(out, a, s1_), sa::cuda_error) << "copy " << nth;
    EXPECT_FALSE(a.is_valid(Device{1})) << "copy " << nth;
    EXPECT_TRUE(a.is_valid(Device{0})) << "copy " << nth;
  }
  EXPECT_EQ(read_on(a, s1_), scaled(values));
}

TEST_F(MultiDevice, BadDevicesAreRefusedByName) {
  const int count = sa::device_count();
  try {
    const sa::Stream nowhere(Device{count});
    ADD_FAILURE() << "a stream on a device that does not exist";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("device " + std::to_string(count)), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(sa::set_current_device(Device{-1}), sa::logic_error);
  EXPECT_THROW((void)sa::default_device_pool(count), sa::logic_error);
  EXPECT_EQ(sa::current_device(), Device{0});
}
