// The residency contract of SmartArray<T> (DESIGN.md), with exact transfer counts. Every body runs
// on the host backend and on the cuda backend.
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <limits>
#include <thread>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::random_values;

namespace {

using sa::test::copy_on_device;
using sa::test::fill_on_device;
using sa::test::host_copy;
using sa::test::scale_on_device;
using sa::test::scaled;

constexpr std::size_t n = 4000;

using sa::test::gate;

}  // namespace

TEST(Residency, NewArrayIsHostValidAndAllocatesNoDeviceMemory) {
  const auto values = random_values<float>(n);
  const SmartArray<float> a(values);
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_FALSE(a.is_valid(sa::Side::device));
  EXPECT_EQ(host_copy(a), values);
  EXPECT_EQ(a.transfer_stats().h2d_count, 0U);
}

TEST(Residency, HostWriteThenTwoDeviceReadsCopiesOnce) {
  SmartArray<float> a(n);
  const auto values = random_values<float>(n);
  std::copy(values.begin(), values.end(), a.begin());
  SmartArray<float> out(n);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = n * sizeof(float)});
    for (int read = 0; read < 2; ++read) copy_on_device(out, a);
  }
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(sa::Side::device));
  EXPECT_EQ(host_copy(out), values);
}

TEST(Residency, TenRoundsOfHostWriteAndDeviceReadWrite) {
  auto expected = random_values<float>(n);
  SmartArray<float> a(expected);
  {
    sa::ExpectTransfers expect({.h2d = 10, .d2h = 9});
    for (int round = 0; round < 10; ++round) {
      const float bump = static_cast<float>(round + 1);
      a[round] += bump;  // host write: a stale host copy is refreshed first
      expected[round] += bump;
      scale_on_device(a);
      expected = scaled(expected);
    }
  }
  EXPECT_EQ(host_copy(a), expected);
  EXPECT_EQ(a.transfer_stats().h2d_count, 10U);
  EXPECT_EQ(a.transfer_stats().d2h_count, 10U);
}

TEST(Residency, HostReadAfterDeviceWriteCopiesOnceAndDeviceStaysValid) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a);
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(host_copy(a), scaled(values));
    EXPECT_EQ(std::as_const(a)[7], scaled(values)[7]);
  }
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    (void)std::as_const(a).device_view();
  }
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(sa::Side::device));
}

TEST(Residency, DiscardOnDeviceCopiesNothingAndMakesHostStale) {
  SmartArray<float> a(random_values<float>(n));
  const float fill = sa::test::random_value<float>();
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    fill_on_device(a, fill);
  }
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  EXPECT_EQ(host_copy(a), std::vector<float>(n, fill));
}

TEST(Residency, DiscardOnHostCopiesNothingAndMakesDeviceStale) {
  SmartArray<float> a(random_values<float>(n));
  scale_on_device(a);
  const auto values = random_values<float>(n);
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    auto host = a.host_view(Access::discard);
    std::copy(values.begin(), values.end(), host.begin());
  }
  EXPECT_FALSE(a.is_valid(sa::Side::device));
  scale_on_device(a);
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST(Residency, ChainOfFiveKernelsCopiesInOnceAndOutOnce) {
  auto expected = random_values<float>(n);
  SmartArray<float> a(expected);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 1});
    for (int k = 0; k < 5; ++k) {
      scale_on_device(a);
      expected = scaled(expected);
    }
    EXPECT_EQ(host_copy(a), expected);
  }
}

TEST(Residency, HostReadWaitsForTheKernelThatWroteTheDeviceCopy) {
  // With SMARTARRAY_HOST_LATENCY_US set (CTest's host.*_latency run), the kernel and the copy are
  // still queued when the host asks: only the wait on this array's event makes the data right.
  sa::Stream stream_owner;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  for (int k = 0; k < 3; ++k) scale_on_device(a, stream_owner);
  std::vector<float> expected = values;
  for (int k = 0; k < 3; ++k) expected = scaled(expected);
  EXPECT_EQ(host_copy(a), expected);
}

TEST(Residency, DeviceReadOnStreamBSeesWriteOnStreamAWithoutBlockingTheHost) {
  sa::Stream a_stream;
  sa::Stream b_stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  SmartArray<float> out(n);
  (void)a.device_view(Access::read, a_stream);  // upload on A first
  std::promise<void> release = gate(a_stream);
  scale_on_device(a, a_stream);  // queued behind the gate
  copy_on_device(out, a, b_stream);
  // The host got here while A is still blocked: nothing above waited on A.
  EXPECT_FALSE(a_stream.query());
  EXPECT_FALSE(b_stream.query());
  release.set_value();
  EXPECT_EQ(host_copy(out), scaled(values));
}

TEST(Residency, DeviceWriteOnStreamBWaitsForReadOnStreamA) {
  sa::Stream a_stream;
  sa::Stream b_stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  SmartArray<float> copy(n);
  (void)a.device_view(Access::read, a_stream);
  std::promise<void> release = gate(a_stream);
  copy_on_device(copy, a, a_stream);
  scale_on_device(a, b_stream);  // must not overwrite before A's read ran
  release.set_value();
  EXPECT_EQ(host_copy(copy), values);
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST(Residency, ArrayOutlivesTheStreamsItWasUsedOn) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  SmartArray<float> copy(n);
  {
    sa::Stream first;
    scale_on_device(a, first);
    copy_on_device(copy, a, first);
  }  // both arrays still name `first` as a device user; it must never be used again
  sa::Stream second;
  scale_on_device(a, second);
  EXPECT_EQ(host_copy(copy), scaled(values));
  EXPECT_EQ(host_copy(a), scaled(scaled(values)));
}

TEST(Residency, SwapHandsOverWorkOnAStreamDestroyedSince) {
  // b has seen the retirement of `first`; a has not. After the swap b holds a's work on `first`,
  // which it must still drop instead of waiting on the destroyed stream.
  const auto a_values = random_values<float>(n);
  const auto b_values = random_values<float>(n);
  SmartArray<float> a(a_values);
  SmartArray<float> b(b_values);
  {
    sa::Stream first;
    scale_on_device(a, first);
  }
  scale_on_device(b);
  a.swap(b);
  sa::Stream second;
  scale_on_device(b, second);
  scale_on_device(a, second);
  EXPECT_EQ(host_copy(b), scaled(scaled(a_values)));
  EXPECT_EQ(host_copy(a), scaled(scaled(b_values)));
}

TEST(Residency, AForgottenUserStreamIsNeverNamedAgainByPoolsOrArrays) {
  // A stream that the user created (a cudaStream_t on cuda), forgotten and then destroyed: neither
  // the pool block released on it nor the array it last wrote may name it again. The host backend
  // throws on a destroyed stream; CUDA would crash.
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  const sa::StreamRef user = sa::detail::runtime().create_stream();
  scale_on_device(a, user);
  {
    SmartArray<float> temp(values);
    (void)temp.device_view(Access::read, user);
  }  // temp's device block goes back to the pool on `user`
  sa::forget_stream(user);
  sa::detail::runtime().destroy_stream(user);
  sa::Stream other;
  SmartArray<float> b(values);
  scale_on_device(b, other);  // may take the block released on `user`
  scale_on_device(a, other);  // a was last written on `user`
  EXPECT_EQ(host_copy(a), scaled(scaled(values)));
  EXPECT_EQ(host_copy(b), scaled(values));
}

TEST(Residency, AHandleRetiredBeforeAnArrayNamedItIsALiveStream) {
  // The backend may give a destroyed stream's handle to a new stream. Retiring `first`'s handle
  // plays that: it was retired before the array named it, so a later retirement of another stream
  // must not make the array forget `first`'s pending write.
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  sa::Stream first;
  sa::detail::retire_stream(first);
  auto release = gate(first);
  fill_on_device(a, 7.5F, first);  // queued behind the gate
  { const sa::Stream unrelated; }  // another retirement: a cleans up its stream names
  sa::Stream second;
  scale_on_device(a, second);  // must wait for the fill on `first`
  release.set_value();
  EXPECT_EQ(host_copy(a), scaled(std::vector<float>(n, 7.5F)));
}

TEST(Residency, ACopyConstructionIsAUseOfItsSourceThatLaterWritersWaitFor) {
  const auto values = random_values<float>(n);
  SmartArray<float> x(values);
  {
    sa::Stream first;
    scale_on_device(x, first);
  }  // x's last writer is gone: the copy below reads x on the default stream
  auto release = sa::test::gate(sa::StreamRef{});
  const SmartArray<float> copy(x);  // queued behind the gate
  sa::Stream second;
  sa::test::fill_on_device(x, 7.5F, second);  // must wait for the copy's read
  release.set_value();
  EXPECT_EQ(host_copy(copy), scaled(values));
  EXPECT_EQ(host_copy(x), std::vector<float>(n, 7.5F));
}

TEST(Residency, AWriteThroughGpuIsOrderedAfterPendingReadsOnOtherStreams) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  SmartArray<float> c(n);
  sa::Stream uploader;
  sa::Stream reader;
  sa::Stream writer;
  (void)std::as_const(a).device_view(uploader);  // the last writer is `uploader`, not `reader`
  uploader.synchronize();
  auto release = sa::test::gate(reader);
  sa::copy(c, a, reader);  // reads a behind the gate
  const sa::DeviceView<float> view = a.gpu(writer);
  sa::test::fill_view(view, 7.5F, writer);  // Numba's protocol: write through gpu(), then say so
  a.gpu_changed(writer);
  release.set_value();
  EXPECT_EQ(host_copy(c), values);
  EXPECT_EQ(host_copy(a), std::vector<float>(n, 7.5F));
}

TEST(Residency, ZeroSizeArraysNeverAllocateOrCopy) {
  const auto before = sa::global_transfer_stats();
  SmartArray<double> a;
  SmartArray<double> b(0);
  auto dv = a.device_view(Access::read_write);
  auto hv = b.host_view(Access::read_write);
  (void)a.device_view(Access::discard);
  SmartArray<double> c(a);
  const auto after = sa::global_transfer_stats() - before;
  EXPECT_EQ(dv.data(), nullptr);
  EXPECT_EQ(dv.size(), 0U);
  EXPECT_TRUE(hv.empty());
  EXPECT_EQ(after.h2d_count + after.d2h_count + after.d2d_count, 0U);
  EXPECT_EQ(after.allocation_count, 0U);
  EXPECT_EQ(a.transfer_stats(), sa::TransferStats{});
  EXPECT_TRUE(c.empty());
}

TEST(Residency, CopyIsDeepAndIndependent) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  SmartArray<float> host_copy_of_a(a);
  scale_on_device(a);  // a: device-valid only
  SmartArray<float> device_copy_of_a(a);
  EXPECT_FALSE(device_copy_of_a.is_valid(sa::Side::host));
  EXPECT_EQ(device_copy_of_a.transfer_stats().d2d_count, 1U);
  scale_on_device(a);
  EXPECT_EQ(host_copy(host_copy_of_a), values);
  EXPECT_EQ(host_copy(device_copy_of_a), scaled(values));
  EXPECT_EQ(host_copy(a), scaled(scaled(values)));
}

TEST(Residency, MoveIsConstantTimeAndLeavesTheSourceEmpty) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a);
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  SmartArray<float> b(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the contract says so
  EXPECT_EQ(a.capacity(), 0U);
  SmartArray<float> c;
  c = std::move(b);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.size(), n);
  EXPECT_TRUE(c.is_valid(sa::Side::device));
}

TEST(Residency, AppendAfterDeviceValidCopiesOnlyTheTail) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  a.reserve(n + 100);
  (void)std::as_const(a).device_view();
  const auto tail = random_values<float>(37);
  for (float x : tail) a.push_back(x);
  {
    sa::ExpectTransfers expect({.h2d = 1, .h2d_bytes = tail.size() * sizeof(float)});
    scale_on_device(a);
  }
  auto expected = values;
  expected.insert(expected.end(), tail.begin(), tail.end());
  EXPECT_EQ(host_copy(a), scaled(expected));
}

TEST(Residency, AppendWhileHostStaleCopiesOnlyThePrefixBack) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a);  // host stale
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    a.push_back(42.5F);
    a.resize(n + 3, -7.25F);
  }
  auto expected = scaled(values);
  expected.push_back(42.5F);
  expected.push_back(-7.25F);
  expected.push_back(-7.25F);
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(host_copy(a), expected);
  }
}

TEST(Residency, NumbaAliases) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  sa::test::fill_view(a.gpu(), 2.5F);
  a.gpu_changed();
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  auto h = a.host();
  EXPECT_EQ(std::vector<float>(h.begin(), h.end()), std::vector<float>(n, 2.5F));
  h[0] = 3.5F;
  a.host_changed();
  EXPECT_FALSE(a.is_valid(sa::Side::device));
  {
    sa::ExpectTransfers expect({.h2d = 1});
    (void)a.gpu();
  }
  SmartArray<float> stale_device(values);
  EXPECT_THROW(stale_device.gpu_changed(), sa::logic_error);
}

TEST(Residency, InjectedDeviceAllocationFailureKeepsContents) {
  sa::test::ClearFaults clear;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  sa::testing::inject_failure(sa::testing::Fault::allocation, 1);
  EXPECT_THROW((void)a.device_view(Access::read_write), sa::out_of_memory);
  EXPECT_EQ(host_copy(a), values);
  scale_on_device(a);
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST(Residency, InjectedCopyFailureDuringDeviceAcquireKeepsContents) {
  sa::test::ClearFaults clear;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  sa::testing::inject_failure(sa::testing::Fault::copy, 1);
  try {
    (void)a.device_view(Access::read_write);
    ADD_FAILURE() << "expected the injected copy failure";
  } catch (const sa::cuda_error& error) {
    EXPECT_NE(std::string(error.what()).find("host-to-device"), std::string::npos) << error.what();
  }
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_EQ(host_copy(a), values);
  sa::ExpectTransfers expect({.h2d = 1, .d2h = 1});
  scale_on_device(a);
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST(Residency, InjectedCopyFailureDuringHostAcquireKeepsDeviceContents) {
  sa::test::ClearFaults clear;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a);
  sa::testing::inject_failure(sa::testing::Fault::copy, 1);
  EXPECT_THROW((void)a.host_view(Access::read), sa::cuda_error);
  EXPECT_TRUE(a.is_valid(sa::Side::device));
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST(BadInput, AtOutOfRangeNamesIndexAndSize) {
  const auto values = random_values<int>(10);
  SmartArray<int> a(values);
  try {
    (void)a.at(10);
    ADD_FAILURE() << "expected std::out_of_range";
  } catch (const std::out_of_range& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("at(10)"), std::string::npos) << message;
    EXPECT_NE(message.find("size 10"), std::string::npos) << message;
  }
  auto view = std::as_const(a).host_view();
  EXPECT_EQ(std::vector<int>(view.begin(), view.end()), values);
}

TEST(BadInput, ByteCountOverflowThrowsLengthErrorAndKeepsContents) {
  const auto values = random_values<double>(100);
  SmartArray<double> a(values);
  EXPECT_THROW(SmartArray<double>(std::numeric_limits<std::size_t>::max() / 4), std::length_error);
  EXPECT_THROW(a.reserve(std::numeric_limits<std::size_t>::max() / 2), std::length_error);
  EXPECT_THROW(a.resize(SmartArray<double>::max_size() + 1), std::length_error);
  auto view = std::as_const(a).host_view();
  EXPECT_EQ(std::vector<double>(view.begin(), view.end()), values);
}

TEST(BadInput, BackendFailureNamesOperationAndBytes) {
  sa::test::ClearFaults clear;
  SmartArray<float> a(random_values<float>(1000));
  sa::testing::inject_failure(sa::testing::Fault::copy, 1);
  try {
    (void)a.device_view(Access::read);
    ADD_FAILURE() << "expected cuda_error";
  } catch (const sa::cuda_error& error) {
    EXPECT_NE(std::string(error.what()).find("4000 bytes"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("stream"), std::string::npos) << error.what();
  }
}
