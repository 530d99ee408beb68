// Counters, the ExpectTransfers guard and the migration trace: each line names the array by its
// number and label, and the line of the user's call that caused the copy, whatever the call. Each
// line names the device, whatever the number of devices: these tests work on the current device,
// device 0 (no test changes it), so the lines they look for read "device 0".
#include "support/functors.hpp"
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/smartarray.hpp>

#include <cuda/std/functional>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;

namespace {
// The trace sink is read once, on the first migration of the process: set it before any test runs.
const std::string trace_path = [] {
  std::string path = ::testing::TempDir() + "smartarray_trace_" + std::to_string(::getpid()) + ".log";
  std::remove(path.c_str());
  ::setenv("SMARTARRAY_TRACE", path.c_str(), 1);
  return path;
}();

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using smartarray::test::Add;

/// The trace lines written since `start` (a length of the trace file).
std::vector<std::string> trace_lines_since(std::size_t start) {
  std::istringstream text(read_file(trace_path).substr(start));
  std::vector<std::string> lines;
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  return lines;
}

/// The number of trace lines since `start` that name this file's `line` and contain `part`.
std::size_t lines_at(std::size_t start, int line, const std::string& part) {
  const std::string site = "test_observability.cu:" + std::to_string(line);
  std::size_t count = 0;
  for (const std::string& text : trace_lines_since(start)) {
    const std::size_t at = text.rfind(site);
    if (at != std::string::npos && at + site.size() == text.size() &&
        text.find(part) != std::string::npos) {
      ++count;
    }
  }
  return count;
}

/// "array #<id>", as the trace names `a`.
template <typename T>
std::string named(const SmartArray<T>& a) {
  return "array #" + std::to_string(a.id()) + " ";
}
}  // namespace

TEST(Observability, TraceNamesDirectionBytesReasonAndCallSite) {
  ASSERT_TRUE(sa::trace_enabled());
  SmartArray<double> a(sa::test::random_values<double>(300));
  const int line = __LINE__ + 1;
  (void)std::as_const(a).device_view();
  const std::string trace = read_file(trace_path);
  EXPECT_NE(trace.find("H2D device 0 2400 B"), std::string::npos) << trace;
  EXPECT_NE(trace.find("device access of a stale copy"), std::string::npos) << trace;
  EXPECT_NE(trace.find("test_observability.cu:" + std::to_string(line)), std::string::npos) << trace;
}

TEST(Observability, GlobalAndPerArrayCountersAgree) {
  const auto values = sa::test::random_values<int>(1000);
  SmartArray<int> a(values);
  SmartArray<int> b(values);
  const auto before = sa::global_transfer_stats();
  (void)std::as_const(a).device_view();
  (void)b.device_view(Access::read_write);
  (void)std::as_const(b).host_view();
  const auto global = sa::global_transfer_stats() - before;
  EXPECT_EQ(global.h2d_count, 2U);
  EXPECT_EQ(global.h2d_bytes, 8000U);
  EXPECT_EQ(global.d2h_count, 1U);
  EXPECT_EQ(global.d2h_bytes, 4000U);
  EXPECT_EQ(a.transfer_stats().h2d_count, 1U);
  EXPECT_EQ(a.transfer_stats().d2h_count, 0U);
  EXPECT_EQ(b.transfer_stats().h2d_count, 1U);
  EXPECT_EQ(b.transfer_stats().d2h_count, 1U);
  EXPECT_GE(b.transfer_stats().wait_count, 1U);
}

TEST(Observability, ExpectTransfersReportsEachMismatch) {
  std::string reported;
  auto previous = sa::set_expect_transfers_handler([&](const std::string& m) { reported = m; });
  {
    SmartArray<float> a(sa::test::random_values<float>(64));
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0, .h2d_bytes = 100});
    (void)std::as_const(a).device_view();
    EXPECT_NE(expect.mismatch(), "");
  }
  sa::set_expect_transfers_handler(std::move(previous));
  EXPECT_NE(reported.find("h2d copies: expected 2, observed 1"), std::string::npos) << reported;
  EXPECT_NE(reported.find("h2d bytes: expected 100, observed 256"), std::string::npos) << reported;
  EXPECT_NE(reported.find("test_observability.cu"), std::string::npos) << reported;
}

TEST(Observability, ExpectTransfersOnOneArrayIgnoresOthers) {
  SmartArray<float> a(sa::test::random_values<float>(64));
  SmartArray<float> b(sa::test::random_values<float>(64));
  sa::ExpectTransfers expect(a.counters(), {.h2d = 1});
  (void)std::as_const(a).device_view();
  (void)std::as_const(b).device_view();
  EXPECT_EQ(expect.mismatch(), "");
}

TEST(Observability, TraceNamesTheCallersLineForAdapters) {
  const std::size_t start = read_file(trace_path).size();
  const auto va = sa::test::random_values<float>(256);
  const auto vb = sa::test::random_values<float>(256);
  const SmartArray<float> a(va), b(vb);
  SmartArray<float> c(256);
  const int transform_line = __LINE__ + 1;
  sa::transform(sa::out(c), Add{}, a, b);
  EXPECT_EQ(lines_at(start, transform_line, named(a) + "(device access of a stale copy)"), 1U);
  EXPECT_EQ(lines_at(start, transform_line, named(b) + "(device access of a stale copy)"), 1U);
  const SmartArray<float> d(va), e(vb);
  const int map_line = __LINE__ + 1;
  const SmartArray<float> m = sa::map(Add{}, d, e);
  EXPECT_EQ(lines_at(start, map_line, "H2D device 0 1024 B"), 2U);
  const int read_line = __LINE__ + 1;
  EXPECT_EQ(std::as_const(m)[0], va[0] + vb[0]);
  EXPECT_EQ(lines_at(start, read_line, named(m) + "(host read of a stale copy)"), 1U);
  const SmartArray<float> f(va);
  const int reduce_line = __LINE__ + 1;
  (void)sa::reduce(f, 0.0F, cuda::std::plus<float>{});
  EXPECT_EQ(lines_at(start, reduce_line, "H2D device 0 1024 B " + named(f)), 1U);
  for (const std::string& line : trace_lines_since(start)) {
    EXPECT_EQ(line.find(".hpp:"), std::string::npos) << line;
  }
}

TEST(Observability, TraceNamesTheCallersLineForElementAccessAndVectorOperations) {
  const std::size_t start = read_file(trace_path).size();
  const auto values = sa::test::random_values<float>(64);
  SmartArray<float> a(values);
  const auto stale = [&] { sa::test::scale_on_device(a); };  // the host copy goes stale
  std::vector<int> lines;
  stale();
  lines.push_back(__LINE__ + 1);
  (void)std::as_const(a)[3];
  stale();
  lines.push_back(__LINE__ + 1);
  a[3] = 1.5F;
  stale();
  lines.push_back(__LINE__ + 1);
  (void)a.at(2);
  stale();
  lines.push_back(__LINE__ + 1);
  (void)std::as_const(a).front();
  stale();
  lines.push_back(__LINE__ + 1);
  (void)a.back();
  stale();
  lines.push_back(__LINE__ + 1);
  for (const float x : std::as_const(a)) (void)x;
  stale();
  lines.push_back(__LINE__ + 1);
  (void)a.data();
  stale();
  lines.push_back(__LINE__ + 1);
  a.insert(a.cbegin() + 1, 2.5F);
  stale();
  lines.push_back(__LINE__ + 1);
  a.emplace(a.cbegin() + 1, 3.5F);
  stale();
  lines.push_back(__LINE__ + 1);
  a.erase(a.cbegin() + 1);
  stale();
  const SmartArray<float> other(std::vector<float>(a.size(), 1.0F));  // == of equal sizes reads
  lines.push_back(__LINE__ + 1);
  (void)(a == other);
  stale();
  lines.push_back(__LINE__ + 1);
  (void)(a < other);
  stale();
  lines.push_back(__LINE__ + 1);
  (void)erase_if(a, [](float x) { return x < 0; });
  stale();
  lines.push_back(__LINE__ + 1);
  (void)sa::copy_to_host(a);
  for (const int line : lines) {
    EXPECT_EQ(lines_at(start, line, "D2H device 0 "), 1U) << "no trace line names line " << line;
  }
  for (const std::string& line : trace_lines_since(start)) {
    EXPECT_EQ(line.find(".hpp:"), std::string::npos) << line;
  }
}

TEST(Observability, TraceNamesArraysByNumberAndLabelNotByAddress) {
  const std::size_t start = read_file(trace_path).size();
  SmartArray<double> weights(sa::test::random_values<double>(100));
  weights.set_label("weights");
  EXPECT_EQ(weights.label(), "weights");
  const std::uint64_t id = weights.id();
  EXPECT_NE(id, 0U);
  EXPECT_EQ(weights.id(), id);  // stable
  const int line = __LINE__ + 1;
  (void)std::as_const(weights).device_view();
  const std::string expected =
      "H2D device 0 800 B array #" + std::to_string(id) + " \"weights\" (device access";
  EXPECT_EQ(lines_at(start, line, expected), 1U);
  // The number and the label stay with the object; a copy is a new array with a number of its own.
  SmartArray<double> other(weights);
  EXPECT_NE(other.id(), id);
  EXPECT_EQ(other.label(), "");
  weights.swap(other);
  EXPECT_EQ(weights.id(), id);
  EXPECT_EQ(weights.label(), "weights");
  const SmartArray<double> taken(std::move(weights));  // the label goes with the value
  EXPECT_EQ(taken.label(), "weights");
  EXPECT_NE(taken.id(), id);
  EXPECT_EQ(weights.label(), "");  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(weights.id(), id);
  SmartArray<double> assigned(3, 1.5);
  assigned.set_label("old");
  const std::uint64_t assigned_id = assigned.id();
  SmartArray<double> source(other);
  source.set_label("moved");
  assigned = std::move(source);  // move assignment too: the label goes with the value
  EXPECT_EQ(assigned.label(), "moved");
  EXPECT_EQ(assigned.id(), assigned_id);
  EXPECT_EQ(source.label(), "");  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(source.empty());
  weights.set_label("w");
  weights.set_label("");
  EXPECT_EQ(weights.label(), "");
  for (const std::string& text : trace_lines_since(start)) {
    EXPECT_EQ(text.find("0x"), std::string::npos) << text;
  }
}

TEST(Observability, MessagesCountOnceEachWayAndTheTraceNamesTheirPeer) {
  // The distributed layer records each message as one event; here two are recorded directly.
  const SmartArray<int> a(sa::test::random_values<int>(1024));
  const std::size_t start = read_file(trace_path).size();
  const std::uint64_t sent_bytes = 4 * (1 + sa::test::random_value<std::uint32_t>() % 1000);
  std::string reported;
  auto previous = sa::set_expect_transfers_handler([&](const std::string& m) { reported = m; });
  const int line = __LINE__ + 2;
  {
    const sa::source_location here = sa::source_location::current();
    sa::ExpectTransfers expect(
        {.sent = 1, .received = 1, .sent_bytes = sent_bytes, .received_bytes = 512});
    sa::ExpectTransfers wrong({.sent = 2});
    sa::detail::emit_transfer({.kind = sa::detail::TransferKind::sent, .bytes = sent_bytes,
                               .reason = "halo", .array_id = a.id(), .label = nullptr,
                               .where = here, .device = -1, .peer = 1},
                              nullptr);
    sa::detail::emit_transfer({.kind = sa::detail::TransferKind::received, .bytes = 512,
                               .reason = "recv", .array_id = a.id(), .label = nullptr,
                               .where = here, .device = -1, .peer = 3},
                              nullptr);
    EXPECT_EQ(expect.mismatch(), "");
    EXPECT_NE(expect.observed().to_string().find("sent 1 (" + std::to_string(sent_bytes) +
                                                 " B), received 1 (512 B)"),
              std::string::npos)
        << expect.observed().to_string();
  }
  sa::set_expect_transfers_handler(std::move(previous));
  EXPECT_NE(reported.find("messages sent: expected 2, observed 1"), std::string::npos)
      << reported;
  EXPECT_NE(reported.find("messages received: expected 0, observed 1"), std::string::npos)
      << reported;
  EXPECT_EQ(lines_at(start, line, "SEND " + std::to_string(sent_bytes) + " B to rank 1 (halo) " +
                                      named(a)),
            1U);
  EXPECT_EQ(lines_at(start, line, "RECV 512 B from rank 3 (recv) " + named(a)), 1U);
  // The device counters count copies into and out of a device's memory, not messages.
  EXPECT_EQ(sa::device_transfer_stats(0).sent_count, 0U);
}
