// NVTX ranges (diagnostics/nvtx.hpp), recorded through NVTX's own injection interface by the
// tests' recorder (support/nvtx_recorder.cpp), without Nsight Systems. CTest runs this binary with
// NVTX_INJECTION64_PATH naming the recorder (host.test_nvtx, cuda.test_nvtx), once more with
// SMARTARRAY_NVTX=0 as well (host.test_nvtx_off), once without a tool (host.test_nvtx_no_tool),
// and with the recorder on two emulated devices, with and without peer access (host.test_nvtx_2,
// host.test_nvtx_2_no_peer). Each test is about one of those runs and skips in the others.
//
// The migration ranges are checked against the transfer events as the trace writes them: one
// range per event, with the same direction, device, bytes, reason, array and call site, each inside
// the range of the acquire that made it, itself inside the adapter call's range; and for every kind
// of transfer, the counters agree with both.
#include "support/test_support.hpp"

#include "support/device_ops.cuh"
#include "support/nvtx_recorder.hpp"

#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/diagnostics/testing.hpp>
#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sa = smartarray;
namespace nvtx = smartarray::test::nvtx;
using sa::Access;
using sa::SmartArray;
using sa::test::host_copy;

namespace {
// The trace sink is read once, on the first migration of the process: set it before any test runs.
const std::string trace_path = [] {
  std::string path =
      ::testing::TempDir() + "smartarray_nvtx_trace_" + std::to_string(::getpid()) + ".log";
  std::remove(path.c_str());
  ::setenv("SMARTARRAY_TRACE", path.c_str(), 1);
  return path;
}();

bool tool_attached() {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  return path != nullptr && *path != '\0';
}
bool switched_off() {
  const char* value = std::getenv("SMARTARRAY_NVTX");
  return value != nullptr && std::strcmp(value, "0") == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The trace lines written since `start` (a length of the trace file).
std::vector<std::string> trace_lines_since(std::size_t start) {
  std::istringstream text(read_file(trace_path).substr(start));
  std::vector<std::string> lines;
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  return lines;
}

/// The events of the smartarray domain so far.
std::size_t smartarray_events() {
  const std::vector<nvtx::Record> records = nvtx::records();
  return static_cast<std::size_t>(
      std::count_if(records.begin(), records.end(),
                    [](const nvtx::Record& r) { return r.domain == "smartarray"; }));
}

/// A range of the smartarray domain on this thread, and the index of the one it is inside.
struct Range {
  nvtx::Record open;
  int parent = -1;
  bool closed = false;
};

/// The ranges of the smartarray domain that this thread opened since record `first` (other
/// domains, such as CCCL's, are left out); every one must be closed.
std::vector<Range> ranges_since(std::size_t first) {
  const std::uint64_t me = std::hash<std::thread::id>{}(std::this_thread::get_id());
  const std::vector<nvtx::Record> records = nvtx::records();
  std::vector<Range> ranges;
  std::vector<int> open;
  for (std::size_t i = first; i < records.size(); ++i) {
    const nvtx::Record& record = records[i];
    if (record.domain != "smartarray" || record.thread != me ||
        record.kind == nvtx::Record::Kind::mark) {
      continue;
    }
    if (record.kind == nvtx::Record::Kind::push) {
      ranges.push_back({record, open.empty() ? -1 : open.back(), false});
      open.push_back(static_cast<int>(ranges.size()) - 1);
    } else if (!open.empty()) {
      ranges[static_cast<std::size_t>(open.back())].closed = true;
      open.pop_back();
    } else {
      ADD_FAILURE() << "a pop without a push";
    }
  }
  EXPECT_TRUE(open.empty()) << open.size() << " ranges left open";
  return ranges;
}

/// A migration's range: "H2D device 0 (reason) at file:line".
const std::regex migration_message(R"(^(.*?) (device \d+(?: -> \d+)?) \((.*)\) at (.+)$)");
/// A trace line: "smartarray: H2D device 0 4000 B array #3 "x" (reason) at file:line".
const std::regex trace_line(
    R"(^smartarray: (.*?) (device \d+(?: -> \d+)?) (\d+) B (array #(\d+)(?: ".*")?) \((.*)\) at (.+)$)");

bool is_migration(const Range& range) {
  return range.open.message.rfind("acquire ", 0) != 0 &&
         std::regex_match(range.open.message, migration_message);
}

/// True when `range` starts with `start` and names this file's `line` as its call site.
bool named(const Range& range, const std::string& start, int line) {
  const std::string site = "/test_nvtx.cu:" + std::to_string(line);
  const std::string& message = range.open.message;
  return message.rfind(start, 0) == 0 && message.size() >= site.size() &&
         message.compare(message.size() - site.size(), site.size(), site) == 0;
}

/// "<what> at .../test_nvtx.cu:<line>", as a range names a call of this file.
bool at_line(const Range& range, const std::string& what, int line) {
  return named(range, what + " at ", line);
}

/// Checks each migration range against the trace line of its transfer event, in order, and that
/// it lies inside the range of its acquire (same array, same call site), itself at top level or
/// inside the range of the adapter called there. Returns the migration ranges.
std::vector<Range> check_against_trace(const std::vector<Range>& ranges, std::size_t trace_start) {
  std::vector<Range> migrations;
  for (const Range& range : ranges) {
    if (is_migration(range)) migrations.push_back(range);
  }
  const std::vector<std::string> lines = trace_lines_since(trace_start);
  EXPECT_EQ(migrations.size(), lines.size());
  for (std::size_t i = 0; i < migrations.size() && i < lines.size(); ++i) {
    const nvtx::Record& got = migrations[i].open;
    std::smatch range_parts;
    std::smatch trace_parts;
    if (!std::regex_match(got.message, range_parts, migration_message) ||
        !std::regex_match(lines[i], trace_parts, trace_line)) {
      ADD_FAILURE() << "unexpected range or trace line: " << got.message << " / " << lines[i];
      continue;
    }
    EXPECT_EQ(range_parts[1], trace_parts[1]) << "direction of " << lines[i];
    EXPECT_EQ(range_parts[2], trace_parts[2]) << "device of " << lines[i];
    EXPECT_TRUE(got.has_payload);
    EXPECT_EQ(std::to_string(got.payload), trace_parts[3].str()) << "bytes of " << lines[i];
    EXPECT_EQ(got.category_name, trace_parts[4].str()) << "array of " << lines[i];
    EXPECT_EQ(std::to_string(got.category), trace_parts[5].str()) << "array of " << lines[i];
    EXPECT_EQ(range_parts[3], trace_parts[6]) << "reason of " << lines[i];
    EXPECT_EQ(range_parts[4], trace_parts[7]) << "call site of " << lines[i];
  }
  for (const Range& range : ranges) {
    EXPECT_TRUE(range.closed) << range.open.message;
    if (!is_migration(range)) continue;
    if (range.parent < 0) {
      ADD_FAILURE() << range.open.message << " is inside no acquire";
      continue;
    }
    const Range& acquire = ranges[static_cast<std::size_t>(range.parent)];
    EXPECT_EQ(acquire.open.message.rfind("acquire ", 0), 0U) << acquire.open.message;
    EXPECT_EQ(acquire.open.category, range.open.category) << acquire.open.message;
    const std::string site = range.open.message.substr(range.open.message.rfind(" at "));
    EXPECT_NE(acquire.open.message.find(site), std::string::npos) << acquire.open.message;
    if (acquire.parent >= 0) {
      const Range& call = ranges[static_cast<std::size_t>(acquire.parent)];
      EXPECT_NE(call.open.message.find(site), std::string::npos) << call.open.message;
      EXPECT_EQ(call.open.category, 0U) << call.open.message;
    }
  }
  return migrations;
}

/// One transfer event as a sink names it.
struct Event {
  std::string direction;  ///< "H2D", "P2P", "staged read", "prefetch to host", ...
  std::string devices;    ///< "device 0", "device 0 -> 1"
  std::uint64_t bytes = 0;
  std::string array;  ///< `array #3 "x"`
  std::string reason;
  std::string site;  ///< file:line

  /// The device whose counters count it: the last one named.
  [[nodiscard]] int device() const { return std::stoi(devices.substr(devices.rfind(' ') + 1)); }
  /// Both prefetch directions count as `prefetch` in TransferStats.
  [[nodiscard]] std::string counted_as() const {
    return direction.rfind("prefetch", 0) == 0 ? "prefetch" : direction;
  }
  [[nodiscard]] std::string text() const {
    return direction + " " + devices + " " + std::to_string(bytes) + " B " + array + " (" + reason +
           ") at " + site;
  }
};

/// The event of a transfer's range.
Event event_of(const Range& range) {
  std::smatch parts;
  if (!std::regex_match(range.open.message, parts, migration_message)) {
    ADD_FAILURE() << "not a transfer's range: " << range.open.message;
    return {};
  }
  EXPECT_TRUE(range.open.has_payload) << range.open.message;
  return {parts[1], parts[2], range.open.payload, range.open.category_name, parts[3], parts[4]};
}

/// The event of a trace line.
Event event_of(const std::string& line) {
  std::smatch parts;
  if (!std::regex_match(line, parts, trace_line)) {
    ADD_FAILURE() << "not a transfer's trace line: " << line;
    return {};
  }
  return {parts[1], parts[2], std::stoull(parts[3]), parts[4], parts[6], parts[7]};
}

/// Count and bytes.
using Tally = std::pair<std::uint64_t, std::uint64_t>;

/// The transfers of `stats` by direction as the trace names it (`prefetch` for both prefetch
/// directions), the directions without any left out.
std::map<std::string, Tally> by_direction(const sa::TransferStats& stats) {
  std::map<std::string, Tally> tally;
  const auto put = [&](const char* direction, std::uint64_t count, std::uint64_t bytes) {
    if (count != 0 || bytes != 0) tally[direction] = {count, bytes};
  };
  put("H2D", stats.h2d_count, stats.h2d_bytes);
  put("D2H", stats.d2h_count, stats.d2h_bytes);
  put("D2D", stats.d2d_count, stats.d2d_bytes);
  put("P2P", stats.d2d_peer_count, stats.d2d_peer_bytes);
  put("staged read", stats.staged_count, stats.staged_bytes);
  put("prefetch", stats.prefetch_count, stats.prefetch_bytes);
  return tally;
}

/// The events of `events` by direction, as `direction` names it.
template <typename Direction>
std::map<std::string, Tally> by_direction(const std::vector<Event>& events, Direction direction) {
  std::map<std::string, Tally> tally;
  for (const Event& event : events) {
    Tally& sum = tally[direction(event)];
    ++sum.first;
    sum.second += event.bytes;
  }
  return tally;
}

/// The transfers that a step is expected to make in one direction, all for `reason`.
struct Expected {
  const char* direction;
  std::uint64_t count;
  std::uint64_t bytes;
  const char* reason;
};

/// The three sinks of transfer events from the moment it is made: the counters (global and per
/// device), the trace and this thread's NVTX ranges.
class Sinks {
 public:
  Sinks()
      : global_(sa::global_transfer_stats()),
        first_(nvtx::records().size()),
        trace_start_(read_file(trace_path).size()) {
    for (int d = 0; d < sa::device_count(); ++d) devices_.push_back(sa::device_transfer_stats(d));
  }

  /// Checks that the sinks saw the same events since, and that these are `expected` exactly, each
  /// made for a call at `line` of this file (0: for a line of the library). A failure names the
  /// line of the check too.
  void expect(const std::vector<Expected>& expected, int line,
              sa::source_location check = sa::source_location::current()) const {
    const ::testing::ScopedTrace step(check.file_name(), static_cast<int>(check.line()),
                                      "the transfers checked here");
    std::vector<Event> ranges;
    for (const Range& range : ranges_since(first_)) {
      if (is_migration(range)) ranges.push_back(event_of(range));
    }
    std::vector<Event> trace;
    for (const std::string& text : trace_lines_since(trace_start_)) trace.push_back(event_of(text));
    // One range per trace line, naming the same direction, devices, bytes, array, reason and
    // call site. (A staged read's range encloses its download's, but is traced after it.)
    EXPECT_EQ(sorted_texts(ranges), sorted_texts(trace));
    const auto counted_as = [](const Event& event) { return event.counted_as(); };
    EXPECT_EQ(by_direction(sa::global_transfer_stats() - global_), by_direction(trace, counted_as));
    for (int d = 0; d < static_cast<int>(devices_.size()); ++d) {
      std::vector<Event> on_device;
      std::copy_if(trace.begin(), trace.end(), std::back_inserter(on_device),
                   [d](const Event& event) { return event.device() == d; });
      EXPECT_EQ(by_direction(sa::device_transfer_stats(d) - devices_[static_cast<std::size_t>(d)]),
                by_direction(on_device, counted_as))
          << "device " << d;
    }
    std::map<std::string, Tally> want;
    for (const Expected& e : expected) want[e.direction] = {e.count, e.bytes};
    EXPECT_EQ(by_direction(trace, [](const Event& event) { return event.direction; }), want);
    const std::string site = "/test_nvtx.cu:" + std::to_string(line);
    for (const Event& event : trace) {
      const auto of = std::find_if(expected.begin(), expected.end(), [&](const Expected& e) {
        return event.direction == e.direction;
      });
      if (of != expected.end()) EXPECT_EQ(event.reason, of->reason) << event.text();
      if (line > 0) {
        EXPECT_TRUE(event.site.size() >= site.size() &&
                    event.site.compare(event.site.size() - site.size(), site.size(), site) == 0)
            << event.text();
      }
    }
  }

 private:
  static std::vector<std::string> sorted_texts(const std::vector<Event>& events) {
    std::vector<std::string> texts;
    for (const Event& event : events) texts.push_back(event.text());
    std::sort(texts.begin(), texts.end());
    return texts;
  }

  sa::TransferStats global_;
  std::vector<sa::TransferStats> devices_;
  std::size_t first_;
  std::size_t trace_start_;
};

/// Turns peer access off for a scope: reads across devices are staged through the host.
struct NoPeerAccess {
  NoPeerAccess() { sa::testing::set_peer_access_enabled(false); }
  ~NoPeerAccess() { sa::testing::set_peer_access_enabled(true); }
  NoPeerAccess(const NoPeerAccess&) = delete;
  NoPeerAccess& operator=(const NoPeerAccess&) = delete;
};

/// Sets the device budget of device 0 for a scope, with the pool trimmed first (the budget is
/// what the chunks may take).
class DeviceBudget {
 public:
  explicit DeviceBudget(std::size_t bytes) : previous_(sa::default_device_pool().maximum_size()) {
    (void)sa::default_device_pool().trim();
    sa::set_device_budget(bytes);
  }
  ~DeviceBudget() { sa::set_device_budget(previous_); }
  DeviceBudget(const DeviceBudget&) = delete;
  DeviceBudget& operator=(const DeviceBudget&) = delete;

 private:
  std::optional<std::size_t> previous_;
};

struct Twice {
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return 2.0F * x; }
};

/// `values`, each times `factor`.
std::vector<float> times(std::vector<float> values, float factor) {
  for (float& x : values) x *= factor;
  return values;
}

/// The elements of `a` as its copy on the device of `stream` holds them.
std::vector<float> read_on(const SmartArray<float>& a, sa::StreamRef stream) {
  SmartArray<float> out(a.size());
  sa::copy(out, a, stream);
  return host_copy(out);
}

__global__ void add_one(sa::DeviceView<float> v) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < v.size()) v[i] += 1.0F;
}

}  // namespace

TEST(Nvtx, RangesMatchTheTransferEvents) {
  if (!tool_attached() || switched_off()) GTEST_SKIP() << "the run with the recorder";
  ASSERT_TRUE(sa::nvtx_enabled());
  ASSERT_TRUE(sa::nvtx_recording());
  constexpr std::size_t n = 4096;  // four tiles of 4 KiB: an element read fetches one
  SmartArray<float> a(sa::test::random_values<float>(n));
  SmartArray<float> b(sa::test::random_values<float>(n));
  a.set_label("weights");
  const std::size_t first = nvtx::records().size();
  const std::size_t trace_start = read_file(trace_path).size();
  int line[5];
  {
    sa::ExpectTransfers expect({.h2d = 2,
                                .d2h = 2,
                                .h2d_bytes = 2 * n * sizeof(float),
                                .d2h_bytes = 4096 + n * sizeof(float)});
    line[0] = __LINE__ + 1;
    (void)std::as_const(a).device_view();  // H2D of a
    line[1] = __LINE__ + 1;
    sa::transform(b, Twice{}, b);  // H2D of b, inside the adapter's range
    line[2] = __LINE__ + 1;
    sa::transform(a, Twice{}, a);  // no copy: the host copy of a goes stale
    line[3] = __LINE__ + 1;
    EXPECT_NE(std::as_const(a)[5], 0.0F);  // D2H of a's first tile only
    line[4] = __LINE__ + 1;
    EXPECT_NE(std::as_const(b).host_view()[7], 0.0F);  // D2H of b
  }
  const std::vector<Range> ranges = ranges_since(first);
  const std::vector<Range> migrations = check_against_trace(ranges, trace_start);
  ASSERT_EQ(migrations.size(), 4U);
  const std::string name_a = "array #" + std::to_string(a.id()) + " \"weights\"";
  const std::string name_b = "array #" + std::to_string(b.id());
  const auto expect_migration = [&](const Range& range, const char* direction, int at,
                                    const std::string& array, std::uint64_t bytes,
                                    const char* acquire, const char* call) {
    EXPECT_TRUE(named(range, std::string(direction) + " device 0 (", at)) << range.open.message;
    EXPECT_EQ(range.open.category_name, array) << range.open.message;
    EXPECT_EQ(range.open.payload, bytes) << range.open.message;
    const Range& parent = ranges[static_cast<std::size_t>(range.parent)];
    EXPECT_TRUE(at_line(parent, acquire, at)) << parent.open.message;
    if (call == nullptr) {
      EXPECT_EQ(parent.parent, -1) << parent.open.message;
    } else {
      ASSERT_GE(parent.parent, 0) << parent.open.message;
      EXPECT_TRUE(at_line(ranges[static_cast<std::size_t>(parent.parent)], call, at));
    }
  };
  expect_migration(migrations[0], "H2D", line[0], name_a, n * sizeof(float), "acquire device read",
                   nullptr);
  expect_migration(migrations[1], "H2D", line[1], name_b, n * sizeof(float), "acquire device read",
                   "transform");
  expect_migration(migrations[2], "D2H", line[3], name_a, 4096, "acquire host read", nullptr);
  expect_migration(migrations[3], "D2H", line[4], name_b, n * sizeof(float), "acquire host read",
                   nullptr);
  // The adapter call without a copy is still a range, around its two acquires.
  int calls_at_2 = 0;
  for (const Range& range : ranges) calls_at_2 += at_line(range, "transform", line[2]) ? 1 : 0;
  EXPECT_EQ(calls_at_2, 1);
  const std::vector<std::string> domains = nvtx::domains();  // one, however many units made it
  EXPECT_EQ(std::count(domains.begin(), domains.end(), "smartarray"), 1);
}

// Each kind of transfer that one process makes, each checked in all three sinks: the counters'
// difference by direction (globally and per device) equals the trace lines of that direction, and
// each trace line has one range naming the same direction, devices, bytes, array, reason and call
// site. Peer copies and staged reads need two devices (CTest's host.test_nvtx_2 runs, with and
// without peer access); with one device those parts are left out.
TEST(Nvtx, EveryKindOfTransferIsTheSameInTheCountersTheTraceAndTheRanges) {
  if (!tool_attached() || switched_off()) GTEST_SKIP() << "the run with the recorder";
  constexpr std::size_t n = 3000;
  constexpr std::size_t bytes = n * sizeof(float);
  const auto values = sa::test::random_values<float>(n);
  constexpr const char* stale_device = "device access of a stale copy";
  int line = 0;
  SmartArray<float> a(values);
  a.set_label("a");
  {  // H2D: a device read of the host's data
    const Sinks sinks;
    line = __LINE__ + 1;
    (void)std::as_const(a).device_view();
    sinks.expect({{"H2D", 1, bytes, stale_device}}, line);
  }
  sa::transform(a, Twice{}, a);  // a: 2 * values, on the device only
  {  // D2H: a host read of the device's data
    const Sinks sinks;
    line = __LINE__ + 1;
    const std::span<const float> host = std::as_const(a).host_view();
    sinks.expect({{"D2H", 1, bytes, "host read of a stale copy"}}, line);
    EXPECT_TRUE(std::equal(host.begin(), host.end(), times(values, 2.0F).begin()));
  }
  {  // D2D: sa::copy between arrays, into a poisoned destination
    SmartArray<float> b(n);
    sa::test::poison(b.host_view(Access::discard).data(), n);
    const Sinks sinks;
    line = __LINE__ + 1;
    sa::copy(b, a);
    sinks.expect({{"D2D", 1, bytes, "copy from another array"}}, line);
    EXPECT_EQ(host_copy(b), times(values, 2.0F));
  }
  {  // D2D: the copy of an array whose device copy is valid (counted on the new array)
    const Sinks sinks;
    const SmartArray<float> c(a);
    sinks.expect({{"D2D", 1, bytes, "copy of an array"}}, 0);
    EXPECT_EQ(host_copy(c), times(values, 2.0F));
  }
  {  // D2D: a device buffer that grows keeps the device's bytes; the host's tail goes up
    SmartArray<float> g(values);
    sa::transform(g, Twice{}, g);  // the host copy goes stale
    constexpr std::size_t tail = 500;
    g.resize(n + tail, 7.25F);
    const Sinks sinks;
    line = __LINE__ + 1;
    (void)std::as_const(g).device_view();
    sinks.expect({{"D2D", 1, bytes, "device buffer growth"},
                  {"H2D", 1, tail * sizeof(float), "device access of a host-appended tail"}},
                 line);
    std::vector<float> expected = times(values, 2.0F);
    expected.resize(n + tail, 7.25F);
    EXPECT_EQ(host_copy(g), expected);
  }
  sa::transform(a, Twice{}, a);  // a: 4 * values, on the device only
  {  // D2H: copy_to_host into a poisoned buffer of the caller (a's host copy stays stale)
    std::vector<float> out(n);
    sa::test::poison(out.data(), n);
    const Sinks sinks;
    line = __LINE__ + 1;
    sa::copy_to_host(std::as_const(a), std::span<float>(out));
    sinks.expect({{"D2H", 1, bytes, "copy_to_host"}}, line);
    EXPECT_EQ(out, times(values, 4.0F));
  }
  {  // prefetches of managed memory, where the device supports them (the host backend does)
    SmartArray<float> m(values, {.mode = sa::MemoryMode::managed});
    const bool prefetches = sa::device_properties().concurrent_managed_access;
    {
      const Sinks sinks;
      line = __LINE__ + 1;
      sa::transform(m, Twice{}, m);
      sinks.expect(prefetches ? std::vector<Expected>{{"prefetch to device", 1, bytes,
                                                       "device access after host writes"}}
                              : std::vector<Expected>{},
                   line);
    }
    const Sinks sinks;
    line = __LINE__ + 1;
    const std::span<const float> host = std::as_const(m).host_view();
    sinks.expect(prefetches ? std::vector<Expected>{{"prefetch to host", 1, bytes,
                                                     "host access after device writes"}}
                            : std::vector<Expected>{},
                 line);
    EXPECT_TRUE(std::equal(host.begin(), host.end(), times(values, 2.0F).begin()));
  }
  {  // out-of-core chunks: two arrays over the device budget go through the device in chunks
    constexpr std::size_t budget = std::size_t{1} << 20;
    constexpr std::size_t big = 200'000;  // 800 KB per array, 1.6 MB together
    const DeviceBudget limited(budget);
    const auto xs = sa::test::random_values<float>(big);
    const SmartArray<float> x(xs);
    SmartArray<float> y(big);
    sa::test::poison(y.host_view(Access::discard).data(), big);
    // The chunk size of core/detail/chunked_access.hpp: two slots of x's and y's chunks.
    const std::size_t chunk =
        sa::device_budget() / 2 / (sa::detail::chunk_slots * 2 * sizeof(float)) / 256 * 256;
    const std::uint64_t chunks = (big + chunk - 1) / chunk;
    ASSERT_GT(chunks, 1U);
    const Sinks sinks;
    line = __LINE__ + 1;
    sa::transform(sa::out(y), Twice{}, x);
    sinks.expect({{"H2D", chunks, big * sizeof(float), "out-of-core chunk"},
                  {"D2H", chunks, big * sizeof(float), "out-of-core chunk"}},
                 line);
    EXPECT_EQ(host_copy(y), times(xs, 2.0F));
  }
  if (sa::device_count() < 2) return;  // one device: nothing goes across devices
  const sa::Stream s0(sa::Device{0});
  const sa::Stream s1(sa::Device{1});
  constexpr const char* other_device = "device access of data held on another device";
  if (sa::peer_access(sa::Device{1}, sa::Device{0})) {  // P2P: a peer copy
    SmartArray<float> p(values);
    sa::transform(p, Twice{}, p, s0);
    const Sinks sinks;
    line = __LINE__ + 1;
    (void)std::as_const(p).device_view(s1);
    sinks.expect({{"P2P", 1, bytes, other_device}}, line);
    EXPECT_EQ(read_on(p, s1), times(values, 2.0F));
  }
  {  // a staged read: down from device 0 into the host copy, then up to device 1
    const NoPeerAccess off;
    SmartArray<float> r(values);
    sa::transform(r, Twice{}, r, s0);
    const Sinks sinks;
    line = __LINE__ + 1;
    (void)std::as_const(r).device_view(s1);
    constexpr const char* staged = "read across devices without peer access, through the host";
    sinks.expect({{"D2H", 1, bytes, staged},
                  {"staged read", 1, bytes, staged},
                  {"H2D", 1, bytes, other_device}},
                 line);
    EXPECT_EQ(read_on(r, s1), times(values, 2.0F));
  }
}

TEST(Nvtx, ACopyThatThrowsIsNeitherCountedNorTracedButItsRangeCloses) {
  if (!tool_attached() || switched_off()) GTEST_SKIP() << "the run with the recorder";
  const auto values = sa::test::random_values<float>(10000);
  const SmartArray<float> a(values);
  const sa::TransferStats before = sa::global_transfer_stats();
  const std::size_t first = nvtx::records().size();
  const std::size_t trace_start = read_file(trace_path).size();
  sa::testing::inject_failure(sa::testing::Fault::copy, 1);
  const int at = __LINE__ + 1;
  EXPECT_THROW((void)a.device_view(), sa::cuda_error);
  sa::testing::clear_injected_failures();
  EXPECT_TRUE(by_direction(sa::global_transfer_stats() - before).empty());
  EXPECT_TRUE(trace_lines_since(trace_start).empty());
  std::vector<Range> transfers;
  for (const Range& range : ranges_since(first)) {  // each one closed
    if (is_migration(range)) transfers.push_back(range);
  }
  ASSERT_EQ(transfers.size(), 1U);
  EXPECT_TRUE(named(transfers[0], "H2D device 0 (", at)) << transfers[0].open.message;
  EXPECT_EQ(host_copy(a), values);
}

TEST(Nvtx, LaunchIsARangeAroundItsAcquiresEvenWhenItThrows) {
  if (!tool_attached() || switched_off()) GTEST_SKIP() << "the run with the recorder";
  SmartArray<float> a(sa::test::random_values<float>(1000));
  const std::size_t first = nvtx::records().size();
  const std::size_t trace_start = read_file(trace_path).size();
  const int at = __LINE__ + 1;  // the launch's call site, on both backends
  const auto launch = [&] { sa::launch(add_one, 4, 256, sa::StreamRef{}, a); };
  if (sa::test::on_host_backend()) {
    EXPECT_THROW(launch(), sa::logic_error);
  } else {
    launch();
    sa::synchronize(sa::StreamRef{});
  }
  const std::vector<Range> ranges = ranges_since(first);
  const std::vector<Range> migrations = check_against_trace(ranges, trace_start);
  ASSERT_FALSE(ranges.empty());
  EXPECT_TRUE(at_line(ranges[0], "launch", at)) << ranges[0].open.message;
  // On the host backend the launch throws before it acquires anything.
  EXPECT_EQ(migrations.size(), sa::test::on_host_backend() ? 0U : 1U);
  EXPECT_EQ(ranges.size(), sa::test::on_host_backend() ? 1U : 3U);
}

TEST(Nvtx, SetNvtxEnabledFalseEmitsNoRange) {
  const bool was = sa::nvtx_enabled();
  sa::set_nvtx_enabled(false);
  EXPECT_FALSE(sa::nvtx_enabled());
  EXPECT_FALSE(sa::nvtx_recording());
  const std::size_t first = smartarray_events();
  SmartArray<float> a(sa::test::random_values<float>(512));
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 1});
    sa::transform(a, Twice{}, a);
    EXPECT_NE(std::as_const(a)[0], 0.0F);
  }
  EXPECT_EQ(smartarray_events(), first);
  sa::set_nvtx_enabled(was);
  EXPECT_EQ(sa::nvtx_enabled(), was);
  EXPECT_EQ(sa::nvtx_recording(), was && tool_attached());
}

TEST(Nvtx, SwitchedOffByTheEnvironmentNvtxIsNeverCalled) {
  if (!switched_off()) GTEST_SKIP() << "the run with SMARTARRAY_NVTX=0";
  EXPECT_FALSE(sa::nvtx_enabled());
  EXPECT_FALSE(sa::nvtx_recording());
  SmartArray<float> a(sa::test::random_values<float>(512));
  sa::transform(a, Twice{}, a);
  EXPECT_NE(std::as_const(a)[0], 0.0F);
  // The domain was never made, so NVTX never loaded the tool.
  EXPECT_EQ(nvtx::initializations(), 0);
  EXPECT_TRUE(nvtx::records().empty());
  EXPECT_TRUE(nvtx::domains().empty());
}

TEST(Nvtx, WithoutAToolEverythingWorksAndNothingIsRecorded) {
  if (tool_attached()) GTEST_SKIP() << "the run without a tool";
  EXPECT_EQ(sa::nvtx_enabled(), !switched_off());
  EXPECT_FALSE(sa::nvtx_recording());
  const auto values = sa::test::random_values<float>(3000);
  SmartArray<float> a(values);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 1});
    sa::transform(a, Twice{}, a);
    const std::span<const float> host = std::as_const(a).host_view();
    for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(host[i], 2.0F * values[i]) << i;
  }
  EXPECT_EQ(nvtx::initializations(), 0);
  EXPECT_TRUE(nvtx::records().empty());
}
