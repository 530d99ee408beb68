// Stream priorities: a stream keeps the priority it was made with (the cuda backend at the ends
// of the device's range, the host backend as a reported value), work on a high-priority stream is
// ordered with the array's other streams as on any stream, and a bad device or priority throws
// naming it. Both backends.
#include "support/device_ops.cuh"
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::Device;
using sa::SmartArray;
using sa::StreamPriority;
using sa::test::host_copy;
using sa::test::random_values;

namespace {

/// The message of the logic_error that `fn` throws ("" when it throws none).
template <typename F>
std::string logic_error_of(F&& fn) {
  try {
    std::forward<F>(fn)();
  } catch (const sa::logic_error& error) {
    return error.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The CUDA priority range of the current device: {least, greatest}.
std::pair<int, int> cuda_priority_range() {
  int least = 0;
  int greatest = 0;
  EXPECT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  return {least, greatest};
}

}  // namespace

TEST(StreamPriority, AStreamKeepsThePriorityItWasMadeWith) {
  const sa::Stream plain;
  const sa::Stream normal(Device{0}, StreamPriority::normal);
  const sa::Stream high(Device{0}, StreamPriority::high);
  EXPECT_EQ(plain.priority(), StreamPriority::normal);
  EXPECT_EQ(normal.priority(), StreamPriority::normal);
  EXPECT_EQ(high.priority(), StreamPriority::high);
  EXPECT_EQ(sa::stream_priority(high), StreamPriority::high);
  EXPECT_EQ(high.device(), Device{0});
  EXPECT_EQ(sa::stream_priority(sa::StreamRef{}), StreamPriority::normal);
  EXPECT_EQ(sa::stream_priority(sa::default_stream(Device{0})), StreamPriority::normal);
  EXPECT_STREQ(sa::to_string(StreamPriority::normal), "normal");
  EXPECT_STREQ(sa::to_string(StreamPriority::high), "high");
}

TEST(StreamPriority, AMoveKeepsThePriority) {
  sa::Stream first(Device{0}, StreamPriority::high);
  const sa::StreamRef handle = first;
  const sa::Stream second(std::move(first));
  EXPECT_EQ(second.ref(), handle);
  EXPECT_EQ(second.priority(), StreamPriority::high);
  sa::Stream assigned;
  assigned = sa::Stream(Device{0}, StreamPriority::high);
  EXPECT_EQ(assigned.priority(), StreamPriority::high);
}

TEST(StreamPriority, TheCudaBackendUsesTheEndsOfTheDevicesRange) {
  if (sa::test::on_host_backend()) GTEST_SKIP() << "CUDA priorities: the cuda backend only";
  const auto [least, greatest] = cuda_priority_range();
  const sa::Stream normal(Device{0}, StreamPriority::normal);
  const sa::Stream high(Device{0}, StreamPriority::high);
  int value = 1;
  ASSERT_EQ(cudaStreamGetPriority(sa::StreamRef(normal).cuda_stream(), &value), cudaSuccess);
  EXPECT_EQ(value, least);
  ASSERT_EQ(cudaStreamGetPriority(sa::StreamRef(high).cuda_stream(), &value), cudaSuccess);
  EXPECT_EQ(value, greatest);
}

TEST(StreamPriority, AForeignCudaStreamReportsItsPriority) {
  if (sa::test::on_host_backend()) GTEST_SKIP() << "a cudaStream_t: the cuda backend only";
  const auto [least, greatest] = cuda_priority_range();
  if (least == greatest) GTEST_SKIP() << "the device has no stream priorities";
  cudaStream_t foreign = nullptr;
  ASSERT_EQ(cudaStreamCreateWithPriority(&foreign, cudaStreamNonBlocking, greatest), cudaSuccess);
  EXPECT_EQ(sa::stream_priority(sa::StreamRef(foreign)), StreamPriority::high);
  sa::forget_stream(foreign);
  ASSERT_EQ(cudaStreamDestroy(foreign), cudaSuccess);
}

// A high-priority stream is ordered with the array's other streams as any stream is: a write of
// one half on it, beside a write of the other half on a normal stream, then a read of both.
TEST(StreamPriority, WorkOnAHighPriorityStreamIsOrderedByRange) {
  constexpr std::size_t n = 1 << 14;
  const sa::Stream normal(Device{0}, StreamPriority::normal);
  const sa::Stream high(Device{0}, StreamPriority::high);
  SmartArray<float> a(random_values<float>(n));
  std::vector<float> expected = host_copy(a);
  sa::test::scale_on_device(a, normal);
  sa::test::fill_view(a.slice(0, n / 2).device_view(Access::read_write, high), 3.0F, high);
  sa::test::fill_view(a.slice(n / 2, n / 2).device_view(Access::discard, normal), 5.0F, normal);
  for (std::size_t i = 0; i < n; ++i) expected[i] = i < n / 2 ? 3.0F : 5.0F;
  SmartArray<float> copy(n);
  sa::test::copy_on_device(copy, a, high);
  EXPECT_EQ(host_copy(copy), expected);
  EXPECT_EQ(host_copy(a), expected);
}

TEST(StreamPriority, BadInputThrowsNamingIt) {
  const int count = sa::device_count();
  const std::string bad_device =
      logic_error_of([&] { const sa::Stream s(Device{count}, StreamPriority::high); });
  EXPECT_TRUE(contains(bad_device, "create a stream: device " + std::to_string(count) +
                                       " does not exist"))
      << bad_device;
  const std::string negative =
      logic_error_of([] { const sa::Stream s(Device{-1}, StreamPriority::normal); });
  EXPECT_TRUE(contains(negative, "device -1 does not exist")) << negative;
  const std::string bad_priority =
      logic_error_of([] { const sa::Stream s(Device{0}, static_cast<StreamPriority>(7)); });
  EXPECT_TRUE(contains(bad_priority, "StreamPriority 7 is not a priority (normal or high)"))
      << bad_priority;
  EXPECT_STREQ(sa::to_string(static_cast<StreamPriority>(7)), "unknown");
}

TEST(StreamPriority, TheHostBackendRefusesAStreamThatIsNotLive) {
  if (!sa::test::on_host_backend()) GTEST_SKIP() << "the cuda backend trusts a foreign handle";
  int not_a_stream = 0;
  const std::string message =
      logic_error_of([&] { (void)sa::stream_priority(sa::StreamRef(&not_a_stream)); });
  EXPECT_TRUE(contains(message, "is not a live stream")) << message;
}
