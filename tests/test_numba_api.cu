// The counterparts of Numba's CUDA memory API (numba.hpp, host_registration.hpp, stream.hpp), each
// with exact transfer counts. Every body runs on the host backend and on the cuda backend.
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/smartarray.hpp>
#include <smartarray/runtime/host_registration.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/interop/numba.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::MemoryMode;
using sa::SmartArray;
using sa::test::random_values;

namespace {

using sa::test::fill_on_device;
using sa::test::host_copy;
using sa::test::scale_on_device;
using sa::test::scaled;

constexpr std::size_t n = 3000;
constexpr std::size_t bytes = n * sizeof(float);

/// Device memory that the test owns, filled with `values` (outside any counted scope).
float* external_device_buffer(const std::vector<float>& values) {
  const std::size_t size = values.size() * sizeof(float);
  auto* ptr = static_cast<float*>(sa::detail::runtime().allocate_device(size));
  sa::detail::runtime().copy_async(ptr, values.data(), size, sa::detail::CopyKind::host_to_device,
                                   {});
  sa::synchronize(sa::StreamRef{});
  return ptr;
}

/// The contents of `count` floats of device memory at `ptr`, read with a raw copy.
std::vector<float> read_device(const float* ptr, std::size_t count) {
  std::vector<float> out(count);
  sa::detail::runtime().copy_async(out.data(), ptr, count * sizeof(float),
                                   sa::detail::CopyKind::device_to_host, {});
  sa::synchronize(sa::StreamRef{});
  return out;
}

}  // namespace

TEST(ToDevice, UploadsOnceOnTheStreamAndKeepsBothSidesValid) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  std::optional<SmartArray<float>> a;
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = bytes});
    a.emplace(sa::to_device(values, stream));
  }
  EXPECT_TRUE(a->is_valid(sa::Side::device));
  EXPECT_TRUE(a->is_valid(sa::Side::host));
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  EXPECT_EQ(sa::copy_to_host(*a, stream), values);
}

TEST(ToDevice, MappedModeCopiesNothing) {
  const auto values = random_values<float>(n);
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  auto a = sa::to_device(std::span<const float>(values), {}, {.mode = MemoryMode::mapped});
  scale_on_device(a);
  EXPECT_EQ(sa::copy_to_host(a), scaled(values));
}

TEST(DeviceArray, KernelWriteThenCopyToHostIsOneDeviceToHostCopy) {
  const auto pinned_before = sa::default_pinned_resource().stats().current_bytes;
  auto a = sa::device_array<float>(n);
  EXPECT_EQ(a.size(), n);
  EXPECT_TRUE(a.is_valid(sa::Side::device));
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  // No host memory until the host needs it.
  EXPECT_EQ(sa::default_pinned_resource().stats().current_bytes, pinned_before);
  const float value = sa::test::random_value<float>();
  std::vector<float> out;
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = bytes});
    fill_on_device(a, value);
    out = sa::copy_to_host(a);
  }
  EXPECT_EQ(out, std::vector<float>(n, value));
  // copy_to_host does not make the host copy valid, and made no host buffer either.
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  EXPECT_EQ(sa::default_pinned_resource().stats().current_bytes, pinned_before);
}

TEST(DeviceArray, HostAccessAllocatesTheHostCopyOnDemand) {
  auto a = sa::device_array<float>(n);
  const float value = sa::test::random_value<float>();
  fill_on_device(a, value);
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1});
    EXPECT_EQ(host_copy(a), std::vector<float>(n, value));
  }
  a.push_back(2.0F);
  EXPECT_EQ(a.size(), n + 1);
  EXPECT_EQ(a.back(), 2.0F);
}

TEST(DeviceArray, InManagedAndMappedModes) {
  for (const MemoryMode mode : {MemoryMode::managed, MemoryMode::mapped, MemoryMode::pageable}) {
    auto a = sa::device_array<float>(n, {}, {.mode = mode});
    EXPECT_EQ(a.memory_mode(), mode);
    const float value = sa::test::random_value<float>();
    fill_on_device(a, value);
    sa::ExpectTransfers expect({.h2d = 0, .d2h = mode == MemoryMode::pageable ? 1U : 0U});
    EXPECT_EQ(sa::copy_to_host(a), std::vector<float>(n, value)) << sa::to_string(mode);
  }
}

TEST(DeviceArray, LikeTakesSizeAndModeButNotContents) {
  const auto values = random_values<float>(n);
  const SmartArray<float> source(values, {.mode = MemoryMode::pageable});
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  auto like = sa::device_array_like(source);
  EXPECT_EQ(like.size(), source.size());
  EXPECT_EQ(like.memory_mode(), MemoryMode::pageable);
  EXPECT_TRUE(like.is_valid(sa::Side::device));
  EXPECT_FALSE(like.is_valid(sa::Side::host));
}

TEST(CopyToHost, FromAValidHostCopyCopiesNothing) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  (void)a.device_view(Access::read);
  std::vector<float> dest(n);
  sa::test::poison(dest.data(), n);
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  sa::copy_to_host(a, std::span<float>(dest));
  EXPECT_EQ(dest, values);
}

TEST(CopyToHost, IntoALargerDestinationFillsThePrefix) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a);
  std::vector<float> dest(n + 10);
  sa::test::poison(dest.data(), dest.size());
  const std::vector<float> poisoned_tail(dest.begin() + n, dest.end());
  sa::copy_to_host(a, std::span<float>(dest));
  EXPECT_EQ(std::vector<float>(dest.begin(), dest.begin() + n), scaled(values));
  EXPECT_EQ(std::vector<float>(dest.begin() + n, dest.end()), poisoned_tail);
}

TEST(CopyToHost, TooSmallDestinationThrowsNamingBothSizes) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a);
  std::vector<float> dest(n - 1, 7.0F);
  try {
    sa::copy_to_host(a, std::span<float>(dest));
    FAIL() << "copy_to_host into a too small destination did not throw";
  } catch (const std::length_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(std::to_string(n - 1)), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(n)), std::string::npos) << message;
  }
  EXPECT_EQ(dest, std::vector<float>(n - 1, 7.0F));
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST(CopyToHost, AsyncTwinIsDoneAfterTheStreamIsSynchronized) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a, stream);
  std::vector<float> dest(n);
  sa::test::poison(dest.data(), n);
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = bytes});
    sa::copy_to_host_async(a, std::span<float>(dest), stream);
    stream.synchronize();
  }
  EXPECT_EQ(dest, scaled(values));
  EXPECT_FALSE(a.is_valid(sa::Side::host));
}

TEST(WrapDevice, CopiesNothingNeverFreesAndTheContentsSurvive) {
  const auto values = random_values<float>(n);
  float* external = external_device_buffer(values);
  {
    std::optional<SmartArray<float>> wrapped;
    {
      sa::ExpectTransfers expect({.h2d = 0, .d2h = 0, .d2d = 0});
      wrapped.emplace(sa::wrap_device(external, n));
      EXPECT_TRUE(wrapped->is_valid(sa::Side::device));
      EXPECT_FALSE(wrapped->is_valid(sa::Side::host));
      auto view = wrapped->device_view(Access::read_write);
      EXPECT_EQ(view.data(), external);
      scale_on_device(*wrapped);
    }
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1});
    EXPECT_EQ(sa::copy_to_host(*wrapped), scaled(values));
  }
  // The wrapper is gone; the buffer is still ours, with the kernel's result in it.
  EXPECT_EQ(read_device(external, n), scaled(values));
  sa::detail::runtime().free_device(external);
}

TEST(WrapDevice, GrowthMovesToPooledMemoryAndLeavesTheExternalBufferAlone) {
  const auto values = random_values<float>(n);
  float* external = external_device_buffer(values);
  {
    auto wrapped = sa::wrap_device(external, n);
    wrapped.push_back(3.0F);
    {
      sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .d2d = 1, .h2d_bytes = sizeof(float),
                                  .d2d_bytes = bytes});
      scale_on_device(wrapped);
    }
    EXPECT_NE(wrapped.device_view(Access::read).data(), external);
    std::vector<float> expected = values;
    expected.push_back(3.0F);
    EXPECT_EQ(host_copy(wrapped), scaled(expected));
  }
  EXPECT_EQ(read_device(external, n), values);
  sa::detail::runtime().free_device(external);
}

TEST(WrapDevice, NullPointerWithASizeThrows) {
  EXPECT_THROW((void)sa::wrap_device<float>(nullptr, 4), sa::logic_error);
  const auto empty = sa::wrap_device<float>(nullptr, 0);
  EXPECT_TRUE(empty.empty());
}

TEST(WrapDevice, ManagedOrMappedModeIsRefused) {
  const auto values = random_values<float>(n);
  float* external = external_device_buffer(values);
  EXPECT_THROW((void)sa::wrap_device(external, n, {.mode = MemoryMode::managed}), sa::logic_error);
  EXPECT_EQ(read_device(external, n), values);
  sa::detail::runtime().free_device(external);
}

TEST(PinnedArray, IsPinnedAndNeverFallsBackToPageableMemory) {
  sa::test::ClearFaults clear;
  auto a = sa::pinned_array<double>(n);
  EXPECT_EQ(a.size(), n);
  EXPECT_EQ(a.memory_mode(), MemoryMode::explicit_copy);
  EXPECT_EQ(host_copy(a), std::vector<double>(n, 0.0));
  sa::testing::inject_failure(sa::testing::Fault::allocation, 1);
  EXPECT_THROW((void)sa::pinned_array<double>(n), sa::out_of_memory);
}

TEST(MappedArray, KernelsUseHostMemoryWithoutCopies) {
  auto a = sa::mapped_array<float>(n, true, false);
  EXPECT_EQ(a.memory_mode(), MemoryMode::mapped);
  const auto values = random_values<float>(n);
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  std::copy(values.begin(), values.end(), a.begin());
  scale_on_device(a);
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST(HostRegistration, RegisteringTheSameRangeTwiceThrows) {
  std::vector<float> data(n, 1.0F);
  const sa::HostRegistration registration{std::span<float>(data)};
  EXPECT_THROW(sa::HostRegistration{std::span<float>(data)}, sa::logic_error);
}

TEST(HostRegistration, NullWithASizeThrows) {
  EXPECT_THROW((sa::HostRegistration{nullptr, 64}), sa::logic_error);
}

TEST(HostRegistration, RegisteredVectorUploadsAndReadsBack) {
  const auto values = random_values<float>(n);
  std::vector<float> source = values;
  std::vector<float> dest(n);
  sa::test::poison(dest.data(), n);
  const sa::HostRegistration source_registration{std::span<float>(source)};
  const sa::HostRegistration dest_registration{std::span<float>(dest)};
  EXPECT_EQ(source_registration.size_bytes(), bytes);
  auto a = sa::to_device(source);
  scale_on_device(a);
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 1});
  sa::copy_to_host(a, std::span<float>(dest));
  EXPECT_EQ(dest, scaled(values));
}

TEST(AutoSynchronize, QueuedWorkIsDoneWhenTheScopeEnds) {
  sa::Stream stream;
  std::atomic<bool> ran{false};
  {
    const sa::AutoSynchronize guard(stream);
    sa::detail::runtime().launch_host_func(stream, [&ran] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ran.store(true);
    });
  }
  EXPECT_TRUE(ran.load());
  EXPECT_TRUE(stream.query());
}

TEST(AutoSynchronize, SynchronizeOfAStreamWaitsForItsKernels) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  {
    const sa::AutoSynchronize guard(stream);
    scale_on_device(a, stream);
  }
  EXPECT_TRUE(stream.query());
  sa::synchronize(stream);
  EXPECT_EQ(host_copy(a), scaled(values));
}
