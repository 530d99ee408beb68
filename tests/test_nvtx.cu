// NVTX ranges (diagnostics/nvtx.hpp), recorded through NVTX's own injection interface by the
// tests' recorder (support/nvtx_recorder.cpp), without Nsight Systems: their nesting and call
// sites, launch's range, and the switches. CTest runs this binary with NVTX_INJECTION64_PATH
// naming the recorder (host.test_nvtx, cuda.test_nvtx), once more with SMARTARRAY_NVTX=0 as well
// (host.test_nvtx_off), once without a tool (host.test_nvtx_no_tool), and with the recorder on two
// emulated devices, with and without peer access (host.test_nvtx_2, host.test_nvtx_2_no_peer).
// Each test is about one of those runs and skips in the others.
//
// The migration ranges are checked against the transfer events as the trace writes them: one
// range per event, with the same direction, device, bytes, reason, array and call site, each inside
// the range of the acquire that made it, itself inside the adapter call's range. That every kind of
// transfer is the same in the counters, the trace and the ranges is test_nvtx_transfers.cu's.
#include "support/nvtx_ranges.hpp"
#include "support/nvtx_recorder.hpp"
#include "support/test_support.hpp"

#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
namespace nvtx = smartarray::test::nvtx;
using nvtx::at_line;
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
using sa::SmartArray;

namespace {

/// The events of the smartarray domain so far.
std::size_t smartarray_events() {
  const std::vector<nvtx::Record> records = nvtx::records();
  return static_cast<std::size_t>(
      std::count_if(records.begin(), records.end(),
                    [](const nvtx::Record& r) { return r.domain == "smartarray"; }));
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
