// Every kind of transfer that one process makes (H2D, D2H, D2D, device buffer growth,
// copy_to_host, managed prefetches, out-of-core chunks, and across two devices peer copies and
// staged reads), each the same in all three sinks of transfer events: the counters (globally and
// per device), the trace and the NVTX ranges recorded by the tests' recorder
// (support/nvtx_recorder.cpp); and a copy that throws, which is neither counted nor traced but
// whose range closes. CTest runs this binary as it runs test_nvtx (test_nvtx.cu says which runs):
// its tests are about the runs with the recorder and skip in the others.
#include "support/nvtx_ranges.hpp"
#include "support/nvtx_recorder.hpp"
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/diagnostics/testing.hpp>
#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
namespace nvtx = smartarray::test::nvtx;
using nvtx::is_migration;
using nvtx::migration_message;
using nvtx::named;
using nvtx::Range;
using nvtx::ranges_since;
using nvtx::read_file;
using nvtx::switched_off;
using nvtx::tool_attached;
using nvtx::trace_line;
using nvtx::trace_lines_since;
using nvtx::trace_path;
using nvtx::Twice;
using sa::Access;
using sa::SmartArray;
using sa::test::host_copy;

namespace {

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
    const std::string site = nvtx::call_site(check, line);
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

}  // namespace

// Each kind of transfer that one process makes, each checked in all three sinks: the counters'
// difference by direction (globally and per device) equals the trace lines of that direction, and
// each trace line has one range naming the same direction, devices, bytes, array, reason and call
// site. Peer copies and staged reads need two devices (CTest's host.test_nvtx_transfers_2 runs,
// with and without peer access); with one device those parts are left out.
TEST(NvtxTransfers, EveryKindOfTransferIsTheSameInTheCountersTheTraceAndTheRanges) {
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

TEST(NvtxTransfers, ACopyThatThrowsIsNeitherCountedNorTracedButItsRangeCloses) {
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
