// NVTX ranges (diagnostics/nvtx.hpp), recorded through NVTX's own injection interface by the
// tests' recorder (support/nvtx_recorder.cpp), without Nsight Systems. CTest runs this binary with
// NVTX_INJECTION64_PATH naming the recorder (host.test_nvtx, cuda.test_nvtx), once more with
// SMARTARRAY_NVTX=0 as well (host.test_nvtx_off), and once without a tool (host.test_nvtx_no_tool).
// Each test is about one of those runs and skips in the others.
//
// The migration ranges are checked against the transfer events as the trace writes them: one
// range per event, with the same direction, device, bytes, reason, array and call site, each inside
// the range of the acquire that made it, itself inside the adapter call's range.
#include "support/test_support.hpp"

#include "support/nvtx_recorder.hpp"

#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <regex>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace sa = smartarray;
namespace nvtx = smartarray::test::nvtx;
using sa::Access;
using sa::SmartArray;

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

struct Twice {
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return 2.0F * x; }
};

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
