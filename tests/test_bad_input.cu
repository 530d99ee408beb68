// Bad input never changes state. Each case calls an entry point with one bad argument (a destroyed
// or bogus stream, a device ordinal out of range, a range that overflows, a malformed environment
// value, a device budget out of range) and checks four things: the error's type, that its message
// names the bad value, that the array's contents and validity are unchanged, and that the array
// stays usable afterwards.
//
// Also here: the drop-in cases of std::vector's own tests (an iterator whose comma operator is
// deleted, a range of volatile elements, std::allocator in every allocator-extended constructor).
#include <gtest/gtest.h>

#include "detail/environment.hpp"
#include <smartarray/smartarray.hpp>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <source_location>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "support/input_iterator.hpp"
#include "support/test_support.hpp"

namespace sa = smartarray;
using sa::Access;
using sa::Side;
using sa::SmartArray;
using namespace sa::test;

namespace {

struct Twice {
  SMARTARRAY_HOST_DEVICE int operator()(int x) const { return 2 * x; }
};

/// Expects `call()` to throw `Error` whose message contains every one of `parts`.
template <typename Error, typename Call>
void expect_error(Call&& call, const std::vector<std::string>& parts,
                  std::source_location where = std::source_location::current()) {
  try {
    call();
    ADD_FAILURE_AT(where.file_name(), static_cast<int>(where.line())) << "expected an exception";
  } catch (const Error& error) {
    const std::string message = error.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    }
  }
}

/// The handle as the library prints it ("0x..."): what an error must name.
std::string printed(sa::StreamRef stream) {
  std::ostringstream text;
  text << stream.handle();
  return text.str();
}

/// What an array holds and where, taken before a failing call and compared after it.
struct Snapshot {
  explicit Snapshot(const SmartArray<int>& a)
      : host(a.is_valid(Side::host)), device(a.is_valid(Side::device)), transfers(a.transfer_stats()) {}
  bool host;
  bool device;
  sa::TransferStats transfers;
};

/// The failed call moved no byte and changed no validity; `a` still holds `values`, and is usable
/// on the default stream, on a new stream and on the host.
void expect_unchanged_and_usable(SmartArray<int>& a, const Snapshot& before,
                                 const std::vector<int>& values) {
  EXPECT_EQ(a.is_valid(Side::host), before.host);
  EXPECT_EQ(a.is_valid(Side::device), before.device);
  EXPECT_EQ(a.transfer_stats().h2d_bytes, before.transfers.h2d_bytes);
  EXPECT_EQ(a.transfer_stats().d2h_bytes, before.transfers.d2h_bytes);
  EXPECT_EQ(std::vector<int>(std::as_const(a).begin(), std::as_const(a).end()), values);
  sa::transform(a, Twice{}, a);
  sa::Stream other;
  sa::transform(a, Twice{}, a, other);
  other.synchronize();
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(std::as_const(a)[i], 4 * values[i]);
}

}  // namespace

// Case 2: a stream that was destroyed is rejected before anything changes, by each entry point.
TEST(DeadStream, TransformOnADestroyedStreamChangesNothing) {
  const auto values = random_values<int>(1000);
  SmartArray<int> b(values);
  sa::StreamRef dead;
  {
    sa::Stream s;
    dead = s;
    (void)std::as_const(b).device_view(s);
  }
  const Snapshot before(b);
  expect_error<sa::logic_error>([&] { sa::transform(b, Twice{}, b, dead); },
                                {"stream", printed(dead), "not a live stream"});
  expect_unchanged_and_usable(b, before, std::vector<int>(values));
}

TEST(DeadStream, FillCopyAndDiscardOnADestroyedStreamChangeNothing) {
  const auto values = random_values<int>(777);
  sa::StreamRef dead;
  { sa::Stream s; dead = s; }
  SmartArray<int> a(values);
  (void)std::as_const(a).device_view();
  const Snapshot a_before(a);
  expect_error<sa::logic_error>([&] { sa::fill(a, 3, dead); }, {printed(dead)});
  expect_unchanged_and_usable(a, a_before, values);

  const auto source = random_values<int>(777);
  SmartArray<int> b(source);
  SmartArray<int> c(values);
  const Snapshot c_before(c);
  expect_error<sa::logic_error>([&] { sa::copy(c, b, dead); }, {printed(dead)});
  expect_unchanged_and_usable(c, c_before, values);

  SmartArray<int> e(values);
  const Snapshot e_before(e);
  expect_error<sa::logic_error>([&] { (void)e.device_view(Access::discard, dead); },
                                {printed(dead)});
  expect_error<sa::logic_error>([&] { (void)e.host_view(Access::read, dead); }, {printed(dead)});
  expect_unchanged_and_usable(e, e_before, values);
}

// A stream that the array used and that was destroyed since is forgotten: the array stays usable
// on any other stream, and on the host.
TEST(DeadStream, AStreamDestroyedAfterUseIsForgotten) {
  const auto values = random_values<int>(4096);
  SmartArray<int> a(values);
  {
    sa::Stream s;
    sa::transform(a, Twice{}, a, s);
  }
  sa::Stream other;
  sa::transform(a, Twice{}, a, other);
  other.synchronize();
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(std::as_const(a)[i], 4 * values[i]);
  {
    sa::Stream s;
    (void)std::as_const(a).device_view(s);
    (void)a.device_view(Access::read_write, s);
  }
  EXPECT_EQ(a, SmartArray<int>(a));
  sa::transform(a, Twice{}, a);
  EXPECT_EQ(std::as_const(a)[0], 8 * values[0]);
}

// A handle that no stream ever had: rejected on the host backend, which can check any handle
// (a foreign cudaStream_t cannot be checked without undefined behaviour, and is trusted).
TEST(BogusStream, AHandleThatIsNoStreamChangesNothing) {
  if (!on_host_backend()) GTEST_SKIP() << "the cuda backend trusts foreign stream handles";
  const auto values = random_values<int>(300);
  SmartArray<int> a(values);
  (void)std::as_const(a).device_view();
  const Snapshot before(a);
  const sa::StreamRef bogus{reinterpret_cast<void*>(std::uintptr_t{0x4d2})};
  expect_error<sa::logic_error>([&] { sa::transform(a, Twice{}, a, bogus); },
                                {"stream 0x4d2", "not a live stream"});
  expect_error<sa::logic_error>([&] { (void)a.device_view(Access::read_write, bogus); },
                                {"0x4d2"});
  expect_unchanged_and_usable(a, before, values);
}

// Cases 3 and 6: device ordinals are checked wherever they enter.
TEST(DeviceOrdinal, TransferStatsOfADeviceThatDoesNotExistThrows) {
  const int count = sa::device_count();
  for (const int bad : {count, 16, 42, -1, -100000000}) {
    expect_error<sa::logic_error>([&] { (void)sa::device_transfer_stats(bad); },
                                  {"device " + std::to_string(bad), std::to_string(count)});
  }
  EXPECT_NO_THROW((void)sa::device_transfer_stats(count - 1));
}

TEST(DeviceOrdinal, IsValidOnADeviceThatDoesNotExistThrows) {
  const auto values = random_values<int>(64);
  SmartArray<int> a(values);
  (void)std::as_const(a).device_view();
  const Snapshot before(a);
  const int count = sa::device_count();
  for (const int bad : {count, 100000, -1, -100000000}) {
    expect_error<sa::logic_error>([&] { (void)a.is_valid(sa::Device{bad}); },
                                  {"device " + std::to_string(bad), std::to_string(count)});
  }
  EXPECT_TRUE(a.is_valid(sa::Device{0}));
  expect_unchanged_and_usable(a, before, values);
}

// Case 15: the message of a slice past the end prints its offset and length, not a wrapped end.
TEST(SliceRange, AnOverflowingLengthIsPrintedAsGiven) {
  const auto values = random_values<int>(10);
  SmartArray<int> a(values);
  const Snapshot before(a);
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  const std::vector<std::string> parts{"at 5", std::to_string(huge) + " elements",
                                       "the array of 10 elements"};
  expect_error<std::out_of_range>([&] { (void)a.slice(5, huge); }, parts);
  expect_error<std::out_of_range>([&] { (void)std::as_const(a).slice(5, huge); }, parts);
  expect_error<std::out_of_range>([&] { (void)a.slice(11, 0); }, {"[11, 11)", "10 elements"});
  expect_unchanged_and_usable(a, before, values);
}

// Case 12: one parser for every SMARTARRAY_* number; a bad value names the variable, the value and
// the allowed range.
class EnvironmentNumber : public ::testing::Test {
 protected:
  static constexpr const char* name = "SMARTARRAY_TEST_NUMBER";
  void TearDown() override { ::unsetenv(name); }
  static std::optional<std::uint64_t> parse(const char* text, std::uint64_t max,
                                            sa::detail::EnvUnit unit) {
    ::setenv(name, text, 1);
    return sa::detail::environment_number(name, 1, max, unit);
  }
};

TEST_F(EnvironmentNumber, ValuesInRangeAndUnits) {
  using sa::detail::EnvUnit;
  EXPECT_EQ(sa::detail::environment_number(name, 0, 10, EnvUnit::count), std::nullopt);
  EXPECT_EQ(parse("", 10, EnvUnit::count), std::nullopt);
  EXPECT_EQ(parse("7", 10, EnvUnit::count), 7U);
  EXPECT_EQ(parse("3K", std::uint64_t{1} << 40, EnvUnit::bytes), 3U << 10);
  EXPECT_EQ(parse("5M", std::uint64_t{1} << 40, EnvUnit::bytes), 5U << 20);
  EXPECT_EQ(parse("2G", std::uint64_t{1} << 40, EnvUnit::bytes), std::uint64_t{2} << 30);
  EXPECT_EQ(parse("1T", std::uint64_t{1} << 40, EnvUnit::bytes), std::uint64_t{1} << 40);
  EXPECT_EQ(parse("4096", std::uint64_t{1} << 40, EnvUnit::bytes), 4096U);
}

TEST_F(EnvironmentNumber, BadValuesNameTheVariableTheValueAndTheRange) {
  using sa::detail::EnvUnit;
  const std::uint64_t max = std::uint64_t{1} << 40;
  for (const char* bad : {"-5", "+5", "0", "abc", "5X", "12 ", "0x10", "17179869184G",
                          "18446744073709551615", "18446744073709551616", "2T"}) {
    expect_error<sa::logic_error>([&] { (void)parse(bad, max, EnvUnit::bytes); },
                                  {name, std::string("'") + bad + "'", "1 B", "1 TiB"});
  }
  for (const char* bad : {"9223372036854775807", "11", "1K"}) {
    expect_error<sa::logic_error>([&] { (void)parse(bad, 10, EnvUnit::count); },
                                  {name, bad, "1 to 10"});
  }
}

// A device budget below one tile or above 1 EiB names the value and the range, and changes
// neither the budget nor any array; the bounds themselves are budgets.
TEST(DeviceBudget, BelowOneTileOrAboveOneEiBIsRefusedAndChangesNothing) {
  const auto values = random_values<int>(3000);
  SmartArray<int> a(values);
  (void)std::as_const(a).device_view();
  const Snapshot before(a);
  const std::optional<std::size_t> limit = sa::default_device_pool().maximum_size();
  const std::size_t budget = sa::device_budget();
  constexpr std::size_t eib = std::size_t{1} << 60;
  constexpr std::size_t most = std::numeric_limits<std::size_t>::max();
  for (const std::size_t bad : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{255},
                                std::size_t{4095}, eib + 1, most}) {
    sa::ExpectTransfers nothing({});
    expect_error<sa::logic_error>([&] { sa::set_device_budget(bad); },
                                  {"set_device_budget(" + std::to_string(bad) + ", device 0)",
                                   "from 4096 bytes", "to " + std::to_string(eib) + " bytes"});
    EXPECT_EQ(sa::default_device_pool().maximum_size(), limit);
    EXPECT_EQ(sa::device_budget(), budget);
  }
  expect_unchanged_and_usable(a, before, values);
  for (const std::size_t bound : {sa::min_device_budget, sa::max_device_budget}) {
    sa::set_device_budget(bound);
    EXPECT_EQ(sa::device_budget(), bound);
  }
  EXPECT_EQ(sa::max_device_budget, eib);
  sa::set_device_budget(limit);
  EXPECT_EQ(sa::device_budget(), budget);
}

// CTest runs this alone with SMARTARRAY_DEVICE_BUDGET below one tile or above 1 EiB, and
// SMARTARRAY_TEST_BAD_DEVICE_BUDGET=1 (host.test_bad_input_device_budget_*); other runs skip it,
// whatever budget they set. The device pool is never built: every call that needs it throws,
// naming the variable, the value and the range.
TEST(DeviceBudgetEnvironment, AValueOutOfRangeIsAnErrorOfEveryCallThatBuildsThePool) {
  const char* const value = std::getenv("SMARTARRAY_DEVICE_BUDGET");
  if (std::getenv("SMARTARRAY_TEST_BAD_DEVICE_BUDGET") == nullptr || value == nullptr) {
    GTEST_SKIP() << "run by CTest with SMARTARRAY_DEVICE_BUDGET out of range";
  }
  const std::vector<std::string> parts{std::string("SMARTARRAY_DEVICE_BUDGET='") + value + "'",
                                       "4 KiB to 1 EiB"};
  expect_error<sa::logic_error>([] { (void)sa::device_budget(); }, parts);
  expect_error<sa::logic_error>([] { sa::set_device_budget(sa::min_device_budget); }, parts);
  const auto values = random_values<int>(2500);
  SmartArray<int> a(values);
  {
    sa::ExpectTransfers nothing({});
    expect_error<sa::logic_error>([&] { (void)a.device_view(); }, parts);
  }
  EXPECT_TRUE(a.is_valid(Side::host));
  EXPECT_FALSE(a.is_valid(Side::device));
  EXPECT_EQ(std::vector<int>(std::as_const(a).begin(), std::as_const(a).end()), values);
}

// Case 13: a trace setting that is neither a switch nor a file that can be opened is an error.
TEST(EnvironmentTrace, SettingsAreSwitchesOrWritableFiles) {
  using sa::detail::TraceSetting;
  using sa::detail::trace_setting;
  EXPECT_EQ(trace_setting(nullptr).kind, TraceSetting::Kind::off);
  for (const char* off : {"", "0", "false", "off", "no"}) {
    EXPECT_EQ(trace_setting(off).kind, TraceSetting::Kind::off) << off;
  }
  for (const char* on : {"1", "true", "on", "yes", "stderr"}) {
    EXPECT_EQ(trace_setting(on).kind, TraceSetting::Kind::stderr_stream) << on;
  }
  const TraceSetting file = trace_setting("/tmp/smartarray_trace_test.log");
  EXPECT_EQ(file.kind, TraceSetting::Kind::file);
  EXPECT_EQ(file.path, "/tmp/smartarray_trace_test.log");
  expect_error<sa::logic_error>([] { (void)trace_setting("/nonexistent/dir/file"); },
                                {"SMARTARRAY_TRACE", "/nonexistent/dir/file", "cannot open"});
}

// Case 18: the range constructor never applies the comma operator to the caller's iterators.
namespace {
/// A multi-pass iterator whose comma operator is deleted (support/input_iterator.hpp).
template <typename T>
using NoCommaIterator = sa::test::InputIterator<T, std::forward_iterator_tag>;
}  // namespace

TEST(DropIn, RangeOfAnIteratorWithoutACommaOperator) {
  const auto values = random_values<int>(100);
  const SmartArray<int> a(NoCommaIterator<int>(values.data()),
                          NoCommaIterator<int>(values.data() + values.size()));
  EXPECT_EQ(std::vector<int>(a.begin(), a.end()), values);
  SmartArray<int> b(random_values<int>(3));
  b.assign(NoCommaIterator<int>(values.data()), NoCommaIterator<int>(values.data() + 10));
  b.insert(b.end(), NoCommaIterator<int>(values.data()), NoCommaIterator<int>(values.data() + 5));
  ASSERT_EQ(b.size(), 15U);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(std::as_const(b)[i], values[i]);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(std::as_const(b)[10 + i], values[i]);
}

// Case 19: a range of volatile elements.
TEST(DropIn, RangeOfVolatileElements) {
  auto values = random_values<int>(50);
  volatile int* first = values.data();
  const SmartArray<int> a(first, first + values.size());
  EXPECT_EQ(std::vector<int>(a.begin(), a.end()), values);
  const volatile int* cfirst = values.data();
  SmartArray<int> b(random_values<int>(2));
  b.assign(cfirst, cfirst + 20);
  b.insert(b.begin(), cfirst + 20, cfirst + 25);
  ASSERT_EQ(b.size(), 25U);
  EXPECT_EQ(std::as_const(b)[0], values[20]);
  EXPECT_EQ(std::as_const(b)[5], values[0]);
}

// Case 20: std::allocator<T> means the default options in every allocator-extended constructor,
// and compares equal to an allocator of the default options.
TEST(DropIn, StdAllocatorMeansTheDefaultOptions) {
  const std::allocator<int> alloc;
  const int value = random_value<int>();
  const auto values = random_values<int>(40);
  const SmartArray<int> empty(alloc);
  EXPECT_TRUE(empty.empty());
  const SmartArray<int> filled(7, value, alloc);
  EXPECT_EQ(filled, SmartArray<int>(7, value));
  const SmartArray<int> sized(9, alloc);
  EXPECT_EQ(sized.size(), 9U);
  const SmartArray<int> ranged(values.begin(), values.end(), alloc);
  EXPECT_EQ(std::vector<int>(ranged.begin(), ranged.end()), values);
  const SmartArray<int> listed({1, 2, 3}, alloc);
  EXPECT_EQ(listed.size(), 3U);
  const SmartArray<int> copied(ranged, alloc);
  EXPECT_EQ(copied, ranged);
  SmartArray<int> source(ranged);
  const SmartArray<int> moved(std::move(source), alloc);
  EXPECT_EQ(moved, ranged);
  const SmartArray deduced(values.begin(), values.end(), alloc);
  EXPECT_EQ(deduced, ranged);
  EXPECT_TRUE(ranged.get_allocator() == alloc);
  EXPECT_TRUE(alloc == ranged.get_allocator());
  EXPECT_FALSE(SmartArray<int>(sa::ArrayOptions{.mode = sa::MemoryMode::managed}).get_allocator() ==
               alloc);
  EXPECT_EQ(sa::Allocator<int>(alloc), sa::Allocator<int>());
}
