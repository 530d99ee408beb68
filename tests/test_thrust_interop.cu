// Thrust algorithms on SmartArrays through device_begin/device_end, with exact transfer counts.
// Thrust's device system is CUDA, so every test skips itself on the host backend.
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>
#include <smartarray/interop/thrust.hpp>

#include <gtest/gtest.h>
#include <thrust/execution_policy.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::random_values;

namespace {

constexpr std::size_t n = 10000;

template <typename T>
std::vector<T> host_copy(const SmartArray<T>& a) {
  const auto view = a.host_view();
  return {view.begin(), view.end()};
}

}  // namespace

#define SKIP_ON_HOST_BACKEND() \
  if (sa::test::on_host_backend()) GTEST_SKIP() << "Thrust's device system is CUDA"

TEST(ThrustInterop, SortInPlaceCopiesInOnceAndBackOnce) {
  SKIP_ON_HOST_BACKEND();
  sa::Stream stream;
  auto values = random_values<int>(n);
  SmartArray<int> keys(values);
  const auto policy = thrust::cuda::par_nosync.on(stream.ref().cuda_stream());
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0});
    thrust::sort(policy, sa::interop::device_begin(keys, Access::read_write, stream),
                 sa::interop::device_end(keys, Access::read_write, stream));
  }
  EXPECT_FALSE(keys.is_valid(sa::Side::host));
  std::sort(values.begin(), values.end());
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 1});
  EXPECT_EQ(host_copy(keys), values);
}

TEST(ThrustInterop, ScanFromAReadRangeIntoADiscardedRange) {
  SKIP_ON_HOST_BACKEND();
  sa::Stream stream;
  const auto values = random_values<int>(n);
  const SmartArray<int> in(values);
  SmartArray<int> sums(n);
  sa::test::poison(sums.data(), sums.size());
  const auto policy = thrust::cuda::par_nosync.on(stream.ref().cuda_stream());
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0});
    thrust::inclusive_scan(policy, sa::interop::device_begin(in, stream),
                           sa::interop::device_end(in, stream),
                           sa::interop::device_begin(sums, Access::discard, stream));
  }
  EXPECT_EQ(sums.transfer_stats().h2d_count, 0U);
  EXPECT_TRUE(in.is_valid(sa::Side::host));
  std::vector<int> expected(n);
  std::inclusive_scan(values.begin(), values.end(), expected.begin());
  EXPECT_EQ(host_copy(sums), expected);
}

TEST(ThrustInterop, ReduceByKey) {
  SKIP_ON_HOST_BACKEND();
  sa::Stream stream;
  std::vector<int> key_values(n);
  for (std::size_t i = 0; i < n; ++i) key_values[i] = static_cast<int>(i / 7);  // runs of 7
  const auto values = random_values<int>(n);
  const SmartArray<int> keys(key_values), vals(values);
  const std::size_t groups = (n + 6) / 7;
  SmartArray<int> unique_keys(groups), sums(groups);
  const auto policy = thrust::cuda::par.on(stream.ref().cuda_stream());
  const auto ends = thrust::reduce_by_key(
      policy, sa::interop::device_begin(keys, stream), sa::interop::device_end(keys, stream),
      sa::interop::device_begin(vals, stream),
      sa::interop::device_begin(unique_keys, Access::discard, stream),
      sa::interop::device_begin(sums, Access::discard, stream));
  EXPECT_EQ(static_cast<std::size_t>(
                ends.first - sa::interop::device_begin(unique_keys, Access::discard, stream)),
            groups);
  const auto got_keys = host_copy(unique_keys);
  const auto got_sums = host_copy(sums);
  for (std::size_t g = 0; g < groups; ++g) {
    EXPECT_EQ(got_keys[g], static_cast<int>(g));
    int expected = 0;
    for (std::size_t i = g * 7; i < std::min(n, g * 7 + 7); ++i) expected += values[i];
    EXPECT_EQ(got_sums[g], expected) << g;
  }
}

TEST(ThrustInterop, ReadAccessOnANonConstArrayIsRefused) {
  SKIP_ON_HOST_BACKEND();
  SmartArray<int> a(random_values<int>(10));
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  try {
    (void)sa::interop::device_begin(a, Access::read);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("std::as_const(a)"), std::string::npos)
        << error.what();
  }
}

TEST(ThrustInterop, TheHostBackendIsRefused) {
  if (!sa::test::on_host_backend()) GTEST_SKIP() << "checks the host backend's refusal";
  const SmartArray<int> a(random_values<int>(10));
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  EXPECT_THROW((void)sa::interop::device_begin(a), sa::logic_error);
}
