// Misuse detection (debug builds): device views used after their array was resized, given a new
// device buffer, written on the host or destroyed; element access out of range (a moved-from array
// included); reads of a no_init array before any write. Each case shows its error, which names the
// array, the operation and what happened; the correct uses next to each misuse do not throw.
//
// This binary checks whatever the build type: the view checks are inline code of the headers, so
// turning them on here affects this test alone.
#define SMARTARRAY_DEBUG_CHECKS 1

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <optional>
#include <smartarray/smartarray.hpp>
#include <string>
#include <utility>
#include <vector>

#include "support/device_ops.cuh"
#include "support/test_support.hpp"

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using namespace sa::test;

namespace {

/// Expects `use()` to throw logic_error whose message contains every one of `parts`.
template <typename Use>
void expect_misuse(Use&& use, const std::vector<std::string>& parts) {
  try {
    use();
    ADD_FAILURE() << "expected smartarray::logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    }
  }
}

}  // namespace

TEST(ViewGeneration, ViewUsedAfterPushBackThrowsNamingTheResize) {
  const auto values = random_values<float>(1000);
  SmartArray<float> a(values);
  const auto view = a.device_view(Access::read_write);
  EXPECT_NO_THROW((void)view.data());
  a.push_back(random_value<float>());
  expect_misuse([&] { (void)view.data(); },
                {"DeviceView of SmartArray #", "(1000 elements", "DeviceView::data()", "resized"});
  expect_misuse([&] { (void)view.span(); }, {"DeviceView::span()", "resized"});
  // A new view is valid, and the contents are intact.
  const auto fresh = a.device_view(Access::read_write);
  EXPECT_NO_THROW((void)fresh.begin());
  EXPECT_EQ(fresh.size(), values.size() + 1);
  EXPECT_TRUE(std::equal(values.begin(), values.end(), host_copy(a).begin()));
}

TEST(ViewGeneration, ViewUsedAfterResizeDownAndEraseThrows) {
  SmartArray<int> a(random_values<int>(64));
  const auto before_resize = std::as_const(a).device_view();
  a.resize(10);
  expect_misuse([&] { (void)before_resize.end(); }, {"DeviceView::end()", "resized"});
  const auto before_erase = std::as_const(a).device_view();
  a.erase(a.begin() + 3);
  expect_misuse([&] { (void)before_erase.data(); }, {"resized"});
}

TEST(ViewGeneration, ViewUsedAfterHostWriteThrowsAndHostReadDoesNot) {
  const auto values = random_values<double>(256);
  SmartArray<double> a(values);
  const auto view = a.device_view(Access::read_write);
  scale_on_device(a);
  // Reading on the host leaves the device copy valid: the view stays usable.
  EXPECT_EQ(std::as_const(a)[7], values[7] * 2 + 1);
  EXPECT_NO_THROW((void)view.data());
  a[7] = random_value<double>();  // the device copy goes stale
  expect_misuse([&] { (void)view.data(); }, {"acquired for writing on the host"});
}

TEST(ViewGeneration, ViewUsedAfterCopyAssignmentThrowsNamingTheNewBuffer) {
  SmartArray<float> a(random_values<float>(300));
  const SmartArray<float> b(random_values<float>(300));
  const auto view = std::as_const(a).device_view();
  a = b;
  expect_misuse([&] { (void)view.data(); }, {"given a new device buffer"});
  EXPECT_EQ(host_copy(a), host_copy(b));
}

TEST(ViewGeneration, ViewUsedAfterTheArrayIsDestroyedThrows) {
  std::optional<SmartArray<float>> a(std::in_place, random_values<float>(100));
  const auto view = a->device_view(Access::read_write);
  a.reset();
  expect_misuse([&] { (void)view.data(); }, {"(100 elements", "destroyed"});
  // The slot is reused by later arrays, and the old view still reports its own array's fate.
  std::vector<SmartArray<float>> later;
  for (int i = 0; i < 8; ++i) {
    later.emplace_back(random_values<float>(10));
    (void)later.back().device_view(Access::read_write);
  }
  expect_misuse([&] { (void)view.data(); }, {"destroyed"});
}

TEST(ViewGeneration, ViewsFollowTheirBufferThroughMoveAndSwap) {
  const auto values = random_values<int>(50);
  SmartArray<int> a(values);
  const auto view = a.device_view(Access::read_write);
  SmartArray<int> moved(std::move(a));
  EXPECT_NO_THROW((void)view.data());
  SmartArray<int> other(random_values<int>(50));
  moved.swap(other);
  EXPECT_NO_THROW((void)view.data());
  EXPECT_EQ(host_copy(other), values);
}

TEST(ViewGeneration, ReadOnlyConversionKeepsTheStampAndRawViewsAreNotTracked) {
  SmartArray<float> a(random_values<float>(40));
  const sa::DeviceView<const float> read_only = a.device_view(Access::read_write);
  a.push_back(1.5F);
  expect_misuse([&] { (void)read_only.data(); }, {"resized"});
  float dummy = 2.5F;
  const sa::DeviceView<float> raw(&dummy, 1);
  EXPECT_NO_THROW((void)raw.data());
}

// A host pointer kept across a device write and read afterwards: with the stale-host guard on,
// the read stops the program with a message naming the array and the device access.
namespace {

/// Keeps a host pointer into `a`, lets the device write `a`, then reads through the old pointer.
float read_through_a_kept_pointer(SmartArray<float>& a) {
  const float* kept = a.data();
  scale_on_device(a);
  return kept[a.size() / 2];
}

}  // namespace

class StaleHostGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    SMARTARRAY_GTEST_FLAG_SET(death_test_style, "threadsafe");
    sa::set_stale_host_guard(true);
  }
  void TearDown() override { sa::set_stale_host_guard(false); }
};

TEST_F(StaleHostGuard, ReadThroughAPointerKeptAcrossADeviceWriteStopsWithAClearMessage) {
  EXPECT_DEATH(
      {
        sa::set_stale_host_guard(true);
        SmartArray<float> a(random_values<float>(1 << 16));
        volatile float x = read_through_a_kept_pointer(a);
        (void)x;
      },
      "host pointer into SmartArray #[0-9]+ used at byte [0-9]+ of its host copy after the "
      "device wrote it \\(device access at .*device_ops.cuh:[0-9]+\\)");
}

TEST_F(StaleHostGuard, TakingTheHostCopyAgainIsCorrectAndUnguarded) {
  for (const auto mode : {sa::MemoryMode::explicit_copy, sa::MemoryMode::pageable}) {
    const auto values = random_values<float>((1 << 16) + 3);
    SmartArray<float> a(values, sa::ArrayOptions{.mode = mode});
    scale_on_device(a);
    const auto expected = scaled(values);
    // Every host acquire takes the pages back: const reads, writes, appends and inserts.
    EXPECT_EQ(std::as_const(a)[values.size() / 2], expected[values.size() / 2]);
    scale_on_device(a);
    a.push_back(1.5F);
    a.insert(a.begin() + 5, 2.5F);
    EXPECT_EQ(a[values.size() / 2 + 1], expected[values.size() / 2] * 2 + 1);
    scale_on_device(a);
    a.resize(10);
    a.shrink_to_fit();
    EXPECT_EQ(a.size(), 10U);
    scale_on_device(a);
  }
}

// Element access out of range, a moved-from array included: debug builds throw, naming the array,
// the index and the call, where an unchecked build would read outside the host copy.
TEST(ElementChecks, IndexingAMovedFromArrayNamesTheArrayAndTheIndex) {
  const auto values = random_values<float>(100);
  SmartArray<float> a(values);
  SmartArray<float> b(std::move(a));
  a.set_label("weights");  // NOLINT(bugprone-use-after-move): a moved-from array can be named
  const sa::ExpectTransfers expect({});
  const std::string array = "SmartArray #" + std::to_string(a.id()) + " \"weights\"";
  const int line = __LINE__ + 1;
  expect_misuse([&] { (void)a[5]; },  // NOLINT(bugprone-use-after-move): the misuse under test
                {array, "operator[](5)", "test_misuse.cu:" + std::to_string(line),
                 "out of range for size 0", "moved-from"});
  expect_misuse([&] { (void)std::as_const(a)[0]; }, {array, "operator[](0)"});
  expect_misuse([&] { (void)a.front(); }, {array, "front()", "size 0"});
  expect_misuse([&] { (void)std::as_const(a).back(); }, {array, "back()", "size 0"});
  expect_misuse([&] { (void)b[100]; }, {"SmartArray #" + std::to_string(b.id()),
                                        "operator[](100)", "out of range for size 100"});
  // In range, nothing throws.
  EXPECT_EQ(b[99], values[99]);
  EXPECT_EQ(std::as_const(b).front(), values[0]);
  EXPECT_EQ(b.back(), values[99]);
}

// A no_init array is valid nowhere until written: a read before any write throws in debug builds,
// naming the array and the call, and changes nothing; a write on either side is fine.
TEST(NoInitChecks, ReadingBeforeAnyWriteThrowsAndWritingDoesNot) {
  constexpr std::size_t n = 1000;
  SmartArray<float> a(n, sa::no_init);
  a.set_label("scratch");
  {
    const sa::ExpectTransfers expect({});
    const int line = __LINE__ + 1;
    expect_misuse([&] { (void)std::as_const(a)[3]; },
                  {"SmartArray #" + std::to_string(a.id()) + " \"scratch\"", "no_init",
                   "host read at", "test_misuse.cu:" + std::to_string(line)});
    expect_misuse([&] { (void)std::as_const(a).device_view(); }, {"no_init", "device read"});
    std::vector<float> out(n);
    expect_misuse([&] { a.copy_to(out); }, {"no_init", "copy_to_host"});
    expect_misuse([&] { (void)(a == a); }, {"no_init", "host read"});
    EXPECT_FALSE(a.is_valid(sa::Side::host));
    EXPECT_FALSE(a.is_valid(sa::Side::device));
  }
  const float value = random_value<float>();
  {
    const sa::ExpectTransfers expect({});
    fill_on_device(a, value);  // a device write with discard intent copies nothing
  }
  {
    const sa::ExpectTransfers expect({.d2h = 1});
    EXPECT_EQ(std::as_const(a)[3], value);
  }
  SmartArray<float> b(n, sa::no_init);
  b[0] = value;  // a non-const access is a host write
  EXPECT_EQ(std::as_const(b)[0], value);
}

// reduce_async queues work that reads the array later: the array may be destroyed first. Debug
// builds once terminated here, from a checked view of the destroyed array inside the queued work.
TEST(AsyncLifetime, ReduceAsyncOfAnArrayDestroyedBeforeTheResultIsReadIsCorrect) {
  const auto values = random_values<int>(4096);
  const int expected = *std::max_element(values.begin(), values.end());
  for (int run = 0; run < 20; ++run) {
    sa::Stream stream;
    auto a = std::make_optional<SmartArray<int>>(values);
    (void)std::as_const(*a).device_view(stream);
    std::promise<void> release = gate(stream);  // the reduction waits behind this
    SmartArray<int> result = sa::reduce_async(*a, 0, sa::test::Maximum<int>{}, stream);
    a.reset();
    release.set_value();
    {
      const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = sizeof(int)});
      EXPECT_EQ(std::as_const(result)[0], expected) << "run " << run;
    }
  }
}
