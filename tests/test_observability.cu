// Counters, the ExpectTransfers guard and the migration trace.
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

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
}  // namespace

TEST(Observability, TraceNamesDirectionBytesReasonAndCallSite) {
  ASSERT_TRUE(sa::trace_enabled());
  SmartArray<double> a(sa::test::random_values<double>(300));
  const int line = __LINE__ + 1;
  (void)std::as_const(a).device_view();
  const std::string trace = read_file(trace_path);
  EXPECT_NE(trace.find("H2D 2400 B"), std::string::npos) << trace;
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
