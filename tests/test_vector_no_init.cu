// Arrays made with no_init: they take no memory and are valid nowhere until written, a write on
// either side copies nothing and takes no memory on the other, and appends after the unwritten
// elements are valid on the host. Every body runs on the host backend and on the cuda backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <smartarray/smartarray.hpp>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "support/device_ops.cuh"
#include "support/test_support.hpp"

namespace sa = smartarray;
using sa::Access;
using sa::Side;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_value;
using sa::test::random_values;

namespace {

constexpr std::size_t n = 1000;

}  // namespace

TEST(VectorNoInit, TakesNoMemoryAndIsValidNowhere) {
  const sa::MemoryStats host_before = sa::default_pinned_resource().stats();
  const sa::MemoryStats device_before = sa::default_device_resource().stats();
  const sa::ExpectTransfers expect({});
  const SmartArray<float> a(n, sa::no_init);
  EXPECT_EQ(a.size(), n);
  EXPECT_EQ(a.capacity(), n);
  EXPECT_FALSE(a.is_valid(Side::host));
  EXPECT_FALSE(a.is_valid(Side::device));
  const SmartArray<float> copy(a);  // a copy of nothing written holds nothing either
  EXPECT_EQ(copy.size(), n);
  EXPECT_FALSE(copy.is_valid(Side::host));
  EXPECT_EQ(sa::default_pinned_resource().stats().total_count, host_before.total_count);
  EXPECT_EQ(sa::default_device_resource().stats().total_count, device_before.total_count);
  EXPECT_THROW((void)SmartArray<float>(SmartArray<float>::max_size() + 1, sa::no_init),
               std::length_error);
}

TEST(VectorNoInit, DeviceWritesCopyNothingAndTakeNoHostMemory) {
  const float value = random_value<float>();
  for (const Access access : {Access::discard, Access::read_write}) {
    SmartArray<float> a(n, sa::no_init);
    const sa::MemoryStats host_before = sa::default_pinned_resource().stats();
    {
      const sa::ExpectTransfers expect({});
      sa::test::fill_view(a.device_view(access), value);
    }
    EXPECT_EQ(sa::default_pinned_resource().stats().total_count, host_before.total_count);
    EXPECT_TRUE(a.is_valid(Side::device));
    EXPECT_FALSE(a.is_valid(Side::host));
    {
      const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
      EXPECT_EQ(host_copy(a), std::vector<float>(n, value));
    }
  }
}

TEST(VectorNoInit, HostWritesCopyNothingAndTakeNoDeviceMemory) {
  const auto values = random_values<float>(n);
  const sa::MemoryStats device_before = sa::default_device_resource().stats();
  SmartArray<float> a(n, sa::no_init);
  SmartArray<float> b(n, sa::no_init);
  SmartArray<float> c(n, sa::no_init);
  {
    const sa::ExpectTransfers expect({});
    for (std::size_t i = 0; i < n; ++i) a[i] = values[i];  // non-const access: a host write
    const std::span<float> all = b.host_view(Access::discard);
    std::copy(values.begin(), values.end(), all.begin());
    c.assign(values.begin(), values.end());
  }
  EXPECT_EQ(sa::default_device_resource().stats().total_count, device_before.total_count);
  for (const SmartArray<float>* array : {&a, &b, &c}) {
    EXPECT_TRUE(array->is_valid(Side::host));
    EXPECT_FALSE(array->is_valid(Side::device));
    const sa::ExpectTransfers expect({.h2d = 1});
    EXPECT_EQ(host_copy(*array), values);
    (void)array->device_view();
  }
}

TEST(VectorNoInit, AppendsAfterTheUnwrittenElementsAreValidOnTheHost) {
  SmartArray<float> a(n, sa::no_init);
  const float value = random_value<float>();
  {
    const sa::ExpectTransfers expect({});
    a.push_back(value);
  }
  EXPECT_EQ(a.size(), n + 1);
  EXPECT_EQ(std::as_const(a).back(), value);
  a.clear();
  EXPECT_TRUE(a.is_valid(Side::host));
  EXPECT_TRUE(a.is_valid(Side::device));
}
