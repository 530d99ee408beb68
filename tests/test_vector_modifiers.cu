// The std::vector modifiers of SmartArray<T> that change its size: appends, truncations, insert,
// emplace and erase at the front, the middle and the end (of its own elements too), and the
// non-member erase and erase_if, each against std::vector and with the residency it leaves: the
// exact transfers of each operation (docs/vector.md). Every body runs on the host backend and on
// the cuda backend.
#include <gtest/gtest.h>

#include <cstddef>
#include <iterator>
#include <list>
#include <random>
#include <smartarray/smartarray.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "support/device_ops.cuh"
#include "support/test_support.hpp"
#include "support/vector_arrays.cuh"

namespace sa = smartarray;
using sa::Access;
using sa::Side;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_value;
using sa::test::random_values;
using sa::test::scale_on_device;
using sa::test::scaled;
using sa::test::vectors::both_valid;
using sa::test::vectors::device_read_transfers;
using sa::test::vectors::device_written;
using sa::test::vectors::input_range;

namespace {

constexpr std::size_t n = 1000;

}  // namespace

// --- appends and truncations: the residency of the vector operations -----------------------------

TEST(VectorResidency, AppendingKElementsCopiesExactlyKOnTheNextDeviceRead) {
  const auto values = random_values<float>(n);
  for (const std::size_t k : {std::size_t{1}, std::size_t{37}, n}) {
    SmartArray<float> a(values);
    a.reserve(n + k);
    (void)std::as_const(a).device_view();
    const auto tail = random_values<float>(k);
    {
      const sa::ExpectTransfers expect({});
      a.push_back(tail[0]);
      for (std::size_t i = 1; i < k; ++i) a.emplace_back(tail[i]);
    }
    const sa::TransferStats read = device_read_transfers(a);
    EXPECT_EQ(read.h2d_count, 1U) << "k = " << k;
    EXPECT_EQ(read.h2d_bytes, k * sizeof(float)) << "k = " << k;
    EXPECT_EQ(read.d2d_count, 0U) << "k = " << k;
    auto expected = values;
    expected.insert(expected.end(), tail.begin(), tail.end());
    EXPECT_EQ(host_copy(a), expected);
  }
}

TEST(VectorResidency, EveryAppendFormCopiesOnlyTheTail) {
  const auto values = random_values<float>(n);
  const auto tail = random_values<float>(5);
  const float fill = random_value<float>();
  auto expected = values;
  SmartArray<float> a(values);
  a.reserve(2 * n);
  (void)std::as_const(a).device_view();
  {
    const sa::ExpectTransfers expect({});
    a.insert(a.cend(), tail.begin(), tail.end());  // cend(): a read that keeps the device copy
    a.insert(a.cend(), fill);
    a.insert(a.cend(), 2, fill);
    a.insert(a.cend(), {fill, fill});
    a.emplace(a.cend(), fill);
    a.resize(a.size() + 3, fill);
    a.resize(a.size() + 1);
  }
  expected.insert(expected.end(), tail.begin(), tail.end());
  expected.insert(expected.end(), 6, fill);  // insert(x), insert(2, x), insert({x, x}), emplace(x)
  expected.insert(expected.end(), 3, fill);
  expected.push_back(0.0F);
  const sa::TransferStats read = device_read_transfers(a);
  EXPECT_EQ(read.h2d_count, 1U);
  EXPECT_EQ(read.h2d_bytes, (expected.size() - n) * sizeof(float));
  EXPECT_EQ(host_copy(a), expected);
}

TEST(VectorResidency, AppendThatReallocatesMovesOnlyTheValidDevicePrefix) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = both_valid(values);
  ASSERT_EQ(a.capacity(), n);
  a.push_back(2.5F);  // reallocates the host copy; the device buffer is too small now
  const sa::TransferStats read = device_read_transfers(a);
  EXPECT_EQ(read.d2d_count, 1U);
  EXPECT_EQ(read.d2d_bytes, n * sizeof(float));
  EXPECT_EQ(read.h2d_count, 1U);
  EXPECT_EQ(read.h2d_bytes, sizeof(float));
  auto expected = values;
  expected.push_back(2.5F);
  EXPECT_EQ(host_copy(a), expected);
}

TEST(VectorResidency, NonConstEndMarksTheHostChanged) {
  // end() is a mutable iterator like begin(): insert(end(), x) is correct but copies everything.
  SmartArray<float> a = both_valid(random_values<float>(n));
  a.reserve(2 * n);
  a.insert(a.end(), 1.5F);
  const sa::TransferStats read = device_read_transfers(a);
  EXPECT_EQ(read.h2d_bytes, (n + 1) * sizeof(float));
}

TEST(VectorResidency, TruncationsCopyNothingAndKeepTheDevicePrefix) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = both_valid(values);
  {
    const sa::ExpectTransfers expect({});
    a.pop_back();
    a.erase(a.cend() - 3, a.cend());
    a.erase(a.cend() - 1);
    a.resize(n - 10);
  }
  EXPECT_TRUE(a.is_valid(Side::device));
  EXPECT_TRUE(a.is_valid(Side::host));
  EXPECT_EQ(device_read_transfers(a), sa::TransferStats{});
  EXPECT_EQ(host_copy(a), std::vector<float>(values.begin(), values.end() - 10));

  scale_on_device(a);  // host stale: truncation still copies nothing
  {
    const sa::ExpectTransfers expect({});
    a.pop_back();
    a.resize(n / 2);
  }
  {
    const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n / 2 * sizeof(float)});
    EXPECT_EQ(host_copy(a), scaled(std::vector<float>(values.begin(), values.begin() + n / 2)));
  }
  const std::size_t capacity = a.capacity();
  {
    const sa::ExpectTransfers expect({});
    a.clear();
    a.resize(0);
  }
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.capacity(), capacity);
}

TEST(VectorResidency, PopBackThenPushBackWhileAnUploadIsPendingKeepsTheData) {
  // The upload reads the host buffer asynchronously; writing the slot it reads must wait for it.
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  a.reserve(2 * n);
  (void)std::as_const(a).device_view();
  a.pop_back();
  a.pop_back();
  a.push_back(-1.5F);
  a.push_back(-2.5F);
  auto expected = values;
  expected[n - 2] = -1.5F;
  expected[n - 1] = -2.5F;
  SmartArray<float> out(n, -7.0F);
  sa::test::copy_on_device(out, a);
  EXPECT_EQ(host_copy(out), expected);
}

// --- insert and erase
// -----------------------------------------------------------------------------

TEST(VectorModifiers, InsertOneAtFrontMiddleAndEnd) {
  const auto values = random_values<int>(n);
  for (const std::size_t at : {std::size_t{0}, n / 2, n}) {
    SmartArray<int> a(values);
    std::vector<int> model = values;
    const int x = random_value<int>();
    int y = random_value<int>();
    auto it = a.insert(a.cbegin() + at, x);
    EXPECT_EQ(it - a.cbegin(), static_cast<std::ptrdiff_t>(at));
    EXPECT_EQ(*it, x);
    model.insert(model.begin() + at, x);
    it = a.insert(a.cbegin() + at, std::move(y));
    model.insert(model.begin() + at, y);
    EXPECT_EQ(*it, y);
    it = a.emplace(a.cbegin() + at, 5);
    model.emplace(model.begin() + at, 5);
    EXPECT_EQ(*it, 5);
    EXPECT_EQ(host_copy(a), model) << "at " << at;
  }
}

TEST(VectorModifiers, InsertCountRangeAndListAtFrontMiddleAndEnd) {
  const auto values = random_values<int>(n);
  const auto extra = random_values<int>(17);
  for (const std::size_t at : {std::size_t{0}, n / 3, n}) {
    SmartArray<int> a(values);
    std::vector<int> model = values;
    auto it = a.insert(a.cbegin() + at, 4, extra[0]);
    EXPECT_EQ(it - a.cbegin(), static_cast<std::ptrdiff_t>(at));
    model.insert(model.begin() + at, 4, extra[0]);
    it = a.insert(a.cbegin() + at, extra.begin(), extra.end());
    EXPECT_EQ(*it, extra.front());
    model.insert(model.begin() + at, extra.begin(), extra.end());
    const std::list<int> list(extra.rbegin(), extra.rend());
    a.insert(a.cbegin() + at, list.begin(), list.end());
    model.insert(model.begin() + at, list.begin(), list.end());
    std::istringstream in;
    const auto [first, last] = input_range(in, extra);
    it = a.insert(a.cbegin() + at, first, last);
    EXPECT_EQ(it - a.cbegin(), static_cast<std::ptrdiff_t>(at));
    model.insert(model.begin() + at, extra.begin(), extra.end());
    it = a.insert(a.cbegin() + at, {extra[1], extra[2]});
    EXPECT_EQ(*it, extra[1]);
    model.insert(model.begin() + at, {extra[1], extra[2]});
    EXPECT_EQ(host_copy(a), model) << "at " << at;
    // Empty insertions return the position and change nothing.
    EXPECT_EQ(a.insert(a.cbegin() + at, 0, 1) - a.cbegin(), static_cast<std::ptrdiff_t>(at));
    EXPECT_EQ(a.insert(a.cbegin() + at, extra.begin(), extra.begin()) - a.cbegin(),
              static_cast<std::ptrdiff_t>(at));
    EXPECT_EQ(a.insert(a.cbegin() + at, std::initializer_list<int>{}) - a.cbegin(),
              static_cast<std::ptrdiff_t>(at));
    EXPECT_EQ(host_copy(a), model);
  }
}

TEST(VectorModifiers, SelfInsertAtFrontMiddleAndEnd) {
  const auto values = random_values<int>(64);
  for (const bool full : {false, true}) {  // with and without room: growth frees the source
    for (const std::size_t at : {std::size_t{0}, std::size_t{20}, std::size_t{64}}) {
      SmartArray<int> a(values);
      if (!full) a.reserve(1000);
      std::vector<int> model = values;
      const std::vector<int> source(model.begin() + 10, model.begin() + 40);
      auto it = a.insert(a.cbegin() + at, a.cbegin() + 10, a.cbegin() + 40);
      model.insert(model.begin() + at, source.begin(), source.end());
      EXPECT_EQ(it - a.cbegin(), static_cast<std::ptrdiff_t>(at));
      a.shrink_to_fit();
      const int front = model.front();
      a.insert(a.cbegin() + at, a.front());  // a value that lives in the array
      model.insert(model.begin() + at, front);
      a.shrink_to_fit();
      const int back = model.back();
      a.insert(a.cbegin() + at, 3, a.back());
      model.insert(model.begin() + at, 3, back);
      a.emplace(a.cbegin() + at, a[5]);
      model.insert(model.begin() + at, model[5]);
      a.push_back(a[7]);
      model.push_back(model[7]);
      const std::vector<int> whole = model;
      a.insert(a.cbegin() + at, a.cbegin(), a.cend());
      model.insert(model.begin() + at, whole.begin(), whole.end());
      EXPECT_EQ(host_copy(a), model) << "at " << at << (full ? " (full)" : " (room)");
    }
  }
}

TEST(VectorModifiers, AppendingItsOwnElementWhenFullCopiesItBeforeTheGrowth) {
  const auto values = random_values<int>(n);
  SmartArray<int> a(values);
  std::vector<int> model = values;
  for (std::size_t round = 0; round < 8; ++round) {
    a.shrink_to_fit();  // full: the append reallocates and frees the element it copies
    const std::size_t full = a.capacity();
    ASSERT_EQ(full, a.size());
    const std::size_t i = (round * 37) % a.size();
    if (round % 2 == 0) {
      a.push_back(a[i]);
    } else {
      a.emplace_back(std::as_const(a)[i]);
    }
    model.push_back(model[i]);
    EXPECT_GT(a.capacity(), full) << "round " << round;
    EXPECT_EQ(host_copy(a), model) << "round " << round;
  }
}

TEST(VectorModifiers, EraseAtFrontMiddleAndEnd) {
  const auto values = random_values<int>(n);
  SmartArray<int> a(values);
  std::vector<int> model = values;
  auto it = a.erase(a.cbegin());
  EXPECT_EQ(it - a.cbegin(), 0);
  model.erase(model.begin());
  it = a.erase(a.cbegin() + 100);
  EXPECT_EQ(*it, model[101]);
  model.erase(model.begin() + 100);
  it = a.erase(a.cbegin() + 10, a.cbegin() + 30);
  EXPECT_EQ(it - a.cbegin(), 10);
  model.erase(model.begin() + 10, model.begin() + 30);
  it = a.erase(a.cend() - 1);
  EXPECT_EQ(it, a.cend());
  model.pop_back();
  it = a.erase(a.cbegin() + 5, a.cbegin() + 5);
  EXPECT_EQ(it - a.cbegin(), 5);
  it = a.erase(a.cbegin() + 500, a.cend());
  EXPECT_EQ(it, a.cend());
  model.erase(model.begin() + 500, model.end());
  EXPECT_EQ(host_copy(a), model);
  a.erase(a.cbegin(), a.cend());
  EXPECT_TRUE(a.empty());
}

TEST(VectorResidency, InsertOrEraseInTheMiddleMakesTheHostWholeOnceAndTheDeviceStale) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = both_valid(values);
  {
    const sa::ExpectTransfers expect({});
    a.insert(a.cbegin() + 10, 1.5F);
    a.erase(a.cbegin() + 20);
  }
  EXPECT_TRUE(a.is_valid(Side::host));
  EXPECT_FALSE(a.is_valid(Side::device));
  EXPECT_EQ(device_read_transfers(a).h2d_bytes, n * sizeof(float));
  auto expected = values;
  expected.insert(expected.begin() + 10, 1.5F);
  expected.erase(expected.begin() + 20);
  EXPECT_EQ(host_copy(a), expected);
}

TEST(VectorResidency, MiddleInsertsAndErasesOnAHostOnlyArrayMatchStdVectorAndCopyNothing) {
  // The host copy is the only valid one: inserts and erases in the middle change nothing else.
  const auto values = random_values<float>(n);
  const auto extra = random_values<float>(64);
  SmartArray<float> a(values);
  a.reserve(n + 64);
  std::vector<float> expected = values;
  std::mt19937 rng(7);
  {
    const sa::ExpectTransfers expect({});
    for (std::size_t i = 0; i < 64; ++i) {
      const std::size_t at = 1 + rng() % (expected.size() - 2);
      if (i % 3 == 2) {
        a.erase(a.cbegin() + static_cast<std::ptrdiff_t>(at));
        expected.erase(expected.begin() + static_cast<std::ptrdiff_t>(at));
      } else {
        a.insert(a.cbegin() + static_cast<std::ptrdiff_t>(at), extra[i]);
        expected.insert(expected.begin() + static_cast<std::ptrdiff_t>(at), extra[i]);
      }
    }
  }
  EXPECT_EQ(host_copy(a), expected);
  EXPECT_EQ(device_read_transfers(a).h2d_bytes, expected.size() * sizeof(float));
  // Now the device copy is valid too: a middle insert makes it stale, and the next read copies all.
  a.insert(a.cbegin() + 5, 9.5F);
  expected.insert(expected.begin() + 5, 9.5F);
  EXPECT_FALSE(a.is_valid(Side::device));
  EXPECT_EQ(device_read_transfers(a).h2d_bytes, expected.size() * sizeof(float));
  EXPECT_EQ(host_copy(a), expected);
}

TEST(VectorResidency, InsertThroughAPositionTakenBeforeADeviceWriteCopiesTheHostOnce) {
  // A position stays valid across device work (nothing reallocates), and the host is stale there:
  // the insert itself brings the host copy back, once.
  const auto values = random_values<float>(n);
  for (const bool full : {false, true}) {
    SmartArray<float> a(values);
    if (!full) a.reserve(2 * n);
    SmartArray<float>::const_iterator base = a.cbegin();
    scale_on_device(a);
    {
      const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
      const auto it = a.insert(base + 7, {1.5F, 2.5F});
      EXPECT_EQ(it[1], 2.5F);
    }
    auto expected = scaled(values);
    expected.insert(expected.begin() + 7, {1.5F, 2.5F});
    EXPECT_FALSE(a.is_valid(Side::device));
    EXPECT_EQ(host_copy(a), expected);

    base = a.cbegin();
    scale_on_device(a);
    {
      const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = (n + 2) * sizeof(float)});
      a.erase(base + 3, base + 5);
    }
    expected = scaled(expected);
    expected.erase(expected.begin() + 3, expected.begin() + 5);
    EXPECT_EQ(host_copy(a), expected);
  }
}

TEST(VectorResidency, AppendWhileTheHostIsStaleThenInsertInTheMiddle) {
  // Host valid only for an appended tail: a middle insert copies just the stale prefix.
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  a.reserve(2 * n);
  const SmartArray<float>::const_iterator base = a.cbegin();
  scale_on_device(a);
  a.push_back(3.5F);
  {
    const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    a.insert(base + 1, 4.5F);
  }
  auto expected = scaled(values);
  expected.push_back(3.5F);
  expected.insert(expected.begin() + 1, 4.5F);
  EXPECT_EQ(host_copy(a), expected);
}

// --- non-member erase and erase_if
// ----------------------------------------------------------------

TEST(VectorModifiers, EraseAndEraseIfRemoveLikeStdVector) {
  std::vector<int> model = random_values<int>(n);
  for (std::size_t i = 0; i < n; i += 7) model[i] = 42;
  SmartArray<int> a(model);
  EXPECT_EQ(erase(a, 42), std::erase(model, 42));  // ADL finds smartarray::erase
  std::size_t calls = 0;
  const auto odd = [&calls](int x) {
    ++calls;
    return x % 2 != 0;
  };
  const std::size_t size_before = a.size();
  EXPECT_EQ(erase_if(a, odd), std::erase_if(model, [](int x) { return x % 2 != 0; }));
  EXPECT_EQ(calls, size_before);  // once per element, as std::erase_if
  EXPECT_EQ(host_copy(a), model);
  EXPECT_EQ(sa::erase(a, -1), 0U);
}

TEST(VectorResidency, EraseIfWithNoMatchKeepsTheDeviceCopy) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = device_written(values);
  {
    const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(erase_if(a, [](float x) { return x == 0.0F; }), 0U);
  }
  EXPECT_TRUE(a.is_valid(Side::device));
  const float victim = scaled(values)[n / 2];
  {
    const sa::ExpectTransfers expect({});
    EXPECT_GE(erase(a, victim), 1U);
  }
  EXPECT_FALSE(a.is_valid(Side::device));
}
