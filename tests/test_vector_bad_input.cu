// The errors of SmartArray<T>'s std::vector interface: those std::vector gives (out_of_range,
// length_error past max_size, a throwing element constructor), foreign iterators, injected
// allocation and copy failures (each leaving the array unchanged), the fallback of the default host
// storage to pageable memory, and a host array larger than memory. Every body runs on the host
// backend and on the cuda backend.
//
// This binary checks foreign iterators whatever the build type: the debug checks are inline code of
// the header, so turning them on here affects this test alone.
#define SMARTARRAY_DEBUG_CHECKS 1

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <smartarray/smartarray.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/device_ops.cuh"
#include "support/test_support.hpp"

namespace sa = smartarray;
using sa::Side;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;
using sa::test::scale_on_device;
using sa::test::scaled;

namespace {

constexpr std::size_t n = 1000;

/// Host storage without the pageable fallback, so that an injected failure reaches the caller.
sa::ArrayOptions strict_host() { return {.host_resource = &sa::pinned_resource()}; }

}  // namespace

TEST(VectorBadInput, AtThrowsOutOfRange) {
  const auto values = random_values<float>(10);
  SmartArray<float> a(values);
  EXPECT_THROW((void)a.at(10), std::out_of_range);
  EXPECT_THROW((void)std::as_const(a).at(std::numeric_limits<std::size_t>::max()),
               std::out_of_range);
  EXPECT_EQ(host_copy(a), values);
}

TEST(VectorBadInput, SizesPastMaxSizeThrowLengthErrorAndChangeNothing) {
  const auto values = random_values<double>(100);
  SmartArray<double> a(values);
  const std::size_t capacity = a.capacity();
  const std::size_t too_many = SmartArray<double>::max_size() + 1;
  EXPECT_THROW((void)SmartArray<double>(too_many), std::length_error);
  EXPECT_THROW((void)SmartArray<double>(too_many, 1.5), std::length_error);
  EXPECT_THROW(a.reserve(too_many), std::length_error);
  EXPECT_THROW(a.resize(too_many), std::length_error);
  EXPECT_THROW(a.resize(too_many, 2.5), std::length_error);
  EXPECT_THROW(a.assign(too_many, 2.5), std::length_error);
  EXPECT_THROW(a.insert(a.cbegin() + 3, SmartArray<double>::max_size(), 2.5), std::length_error);
  EXPECT_THROW(a.insert(a.cend(), SmartArray<double>::max_size(), 2.5), std::length_error);
  EXPECT_EQ(a.capacity(), capacity);
  EXPECT_EQ(host_copy(a), values);
}

/// A trivially copyable element whose converting constructor throws on NaN.
struct Finite {
  float value = 0;
  Finite() = default;
  explicit Finite(float v) : value(v) {
    if (std::isnan(v)) throw std::invalid_argument("Finite(NaN)");
  }
};
static_assert(std::is_trivially_copyable_v<Finite>);

TEST(VectorBadInput, ThrowingElementConstructorInEmplaceBackChangesNothing) {
  const auto values = random_values<float>(n + 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  SmartArray<Finite> a;
  a.reserve(n + 1);
  for (std::size_t i = 0; i < n; ++i) a.emplace_back(values[i]);
  const std::size_t capacity = a.capacity();
  const auto expect_first = [&](std::size_t count) {
    ASSERT_EQ(a.size(), count);
    EXPECT_EQ(a.capacity(), capacity);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(a[i].value, values[i]) << "element " << i;
  };
  // The capacity holds one more element: the lock-free path.
  EXPECT_THROW(a.emplace_back(nan), std::invalid_argument);
  expect_first(n);
  a.emplace_back(values[n]);
  ASSERT_EQ(a.size(), a.capacity());
  // The array is full: the growth path.
  EXPECT_THROW(a.emplace_back(nan), std::invalid_argument);
  expect_first(n + 1);
}

TEST(VectorBadInput, ForeignIteratorsThrowLogicErrorNamingTheOperation) {
  const auto values = random_values<int>(20);
  SmartArray<int> a(values);
  SmartArray<int> other(values);
  const auto expect_logic_error = [](auto operation, const std::string& name) {
    try {
      operation();
      ADD_FAILURE() << "expected smartarray::logic_error from " << name;
    } catch (const sa::logic_error& error) {
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
    }
  };
  expect_logic_error([&] { a.insert(other.cbegin(), 1); }, "insert");
  expect_logic_error([&] { a.insert(other.cbegin() + 3, 2, 1); }, "insert");
  expect_logic_error([&] { a.insert(other.cend(), values.begin(), values.end()); }, "insert");
  expect_logic_error([&] { a.insert(a.cend() + 1, {1, 2}); }, "insert");
  expect_logic_error([&] { a.emplace(other.cbegin(), 1); }, "emplace");
  expect_logic_error([&] { a.erase(other.cbegin()); }, "erase");
  expect_logic_error([&] { a.erase(a.cend()); }, "erase");
  expect_logic_error([&] { a.erase(a.cbegin() + 5, a.cbegin() + 2); }, "erase");
  expect_logic_error([&] { a.erase(a.cbegin(), other.cend()); }, "erase");
  SmartArray<int> empty;
  expect_logic_error([&] { empty.pop_back(); }, "pop_back");
  EXPECT_EQ(host_copy(a), values);
  EXPECT_EQ(host_copy(other), values);
}

TEST(VectorBadInput, InjectedAllocationFailureDuringGrowthLeavesTheArrayUnchanged) {
  const sa::test::ClearFaults clear;
  const auto values = random_values<float>(n);
  const auto extra = random_values<float>(3);
  using Operation = void (*)(SmartArray<float>&, const std::vector<float>&);
  const std::vector<std::pair<const char*, Operation>> operations = {
      {"push_back", [](SmartArray<float>& a, const std::vector<float>& x) { a.push_back(x[0]); }},
      {"emplace_back",
       [](SmartArray<float>& a, const std::vector<float>& x) { (void)a.emplace_back(x[0]); }},
      {"insert at the end",
       [](SmartArray<float>& a, const std::vector<float>& x) { a.insert(a.cend(), x[0]); }},
      {"insert in the middle",
       [](SmartArray<float>& a, const std::vector<float>& x) { a.insert(a.cbegin() + 5, x[0]); }},
      {"insert a range",
       [](SmartArray<float>& a, const std::vector<float>& x) {
         a.insert(a.cbegin() + 1, x.begin(), x.end());
       }},
      {"insert copies",
       [](SmartArray<float>& a, const std::vector<float>& x) { a.insert(a.cbegin(), 2, x[1]); }},
      {"reserve", [](SmartArray<float>& a, const std::vector<float>&) { a.reserve(2 * n); }},
      {"resize", [](SmartArray<float>& a, const std::vector<float>&) { a.resize(n + 1); }},
      {"resize with a value",
       [](SmartArray<float>& a, const std::vector<float>& x) { a.resize(n + 9, x[2]); }},
      {"assign", [](SmartArray<float>& a, const std::vector<float>& x) { a.assign(2 * n, x[0]); }},
  };
  for (const auto& [name, operation] : operations) {
    for (const bool device_valid : {false, true}) {
      SmartArray<float> a(values, strict_host());
      ASSERT_EQ(a.capacity(), n);
      if (device_valid) (void)std::as_const(a).device_view();
      sa::testing::inject_failure(sa::testing::Fault::allocation, 1);
      EXPECT_THROW(operation(a, extra), std::bad_alloc) << name;
      sa::testing::clear_injected_failures();
      EXPECT_EQ(a.size(), n) << name;
      EXPECT_EQ(a.capacity(), n) << name;
      EXPECT_EQ(a.is_valid(Side::device), device_valid) << name;
      EXPECT_EQ(host_copy(a), values) << name;
      operation(a, extra);  // and it works afterwards
      EXPECT_GT(a.capacity(), n) << name;
    }
  }
}

TEST(VectorBadInput, InjectedCopyFailureDuringAMiddleInsertLeavesTheArrayUnchanged) {
  const sa::test::ClearFaults clear;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  const SmartArray<float>::const_iterator base = a.cbegin();
  scale_on_device(a);
  sa::testing::inject_failure(sa::testing::Fault::copy, 1);
  EXPECT_THROW(a.insert(base + 3, 1.5F), sa::cuda_error);
  sa::testing::inject_failure(sa::testing::Fault::copy, 1);
  EXPECT_THROW(a.erase(base + 3), sa::cuda_error);
  EXPECT_EQ(a.size(), n);
  EXPECT_TRUE(a.is_valid(Side::device));
  EXPECT_EQ(host_copy(a), scaled(values));
}

TEST(VectorBadInput, DefaultHostStorageFallsBackToPageableMemory) {
  // The default pinned resource is replaced by pageable memory when it fails (with a notice).
  const sa::test::ClearFaults clear;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  (void)std::as_const(a).device_view();
  sa::testing::inject_failure(sa::testing::Fault::allocation, 1);
  a.push_back(2.5F);
  EXPECT_FALSE(sa::testing::failure_pending(sa::testing::Fault::allocation));
  auto expected = values;
  expected.push_back(2.5F);
  EXPECT_EQ(host_copy(a), expected);
  scale_on_device(a);
  EXPECT_EQ(host_copy(a), scaled(expected));
}

TEST(VectorBadInput, AHostArrayLargerThanMemoryThrowsOutOfMemoryNamingTheBytes) {
  // Neither pinned nor pageable memory can hold 1 TiB: the error names the bytes and the host,
  // as a device allocation's does, and nothing is left allocated.
  constexpr std::size_t tebibyte = std::size_t{1} << 40;
  const sa::MemoryStats before = sa::default_pinned_resource().stats();
  const sa::ExpectTransfers expect({});
  for (const auto mode : {sa::MemoryMode::explicit_copy, sa::MemoryMode::pageable}) {
    try {
      const SmartArray<std::byte> huge(tebibyte, sa::ArrayOptions{.mode = mode});
      ADD_FAILURE() << "expected out_of_memory, got " << huge.size() << " bytes";
    } catch (const sa::out_of_memory& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("host allocation of 1099511627776 bytes"), std::string::npos)
          << message;
      EXPECT_NE(message.find("pageable memory"), std::string::npos) << message;
    }
  }
  EXPECT_EQ(sa::default_pinned_resource().stats().current_bytes, before.current_bytes);
  // The array that would have fallen back still works at a size that fits.
  const auto values = random_values<float>(n);
  EXPECT_EQ(host_copy(SmartArray<float>(values)), values);
}
