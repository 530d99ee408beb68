// The README demo's output (see demo_printer.hpp): a short run, printed as one table per workload.
#include "pipelines/demo_printer.hpp"

#include <smartarray/runtime/runtime.hpp>

#include "bench_compat.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace smartarray::bench::pipelines {
namespace {

const std::pair<const char*, const char*> demo_workloads[] = {
    {"add", "c = a + b; the host wrote a and b once, c stays on the device"},
    {"chain10", "the host writes x, 10 kernels y = a x + y / 2, the host reads y"},
    {"iterative", "a relaxation kernel and a sum; the host reads the sum every call"},
};

using Run = benchmark::BenchmarkReporter::Run;
/// The runs of one workload at one size, by contender.
using Row = std::map<std::string, const Run*>;

std::string format(const char* spec, double value) {
  char text[32];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

/// 1000000 as "1,000,000".
std::string with_commas(std::int64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

/// The measured run of `who`, or null when it failed or did not run.
const Run* measured(const Row& row, const std::string& who) {
  const auto it = row.find(who);
  return it == row.end() || skipped(*it->second) ? nullptr : it->second;
}

double microseconds(const Run& run) {
  return run.GetAdjustedRealTime() * 1e6 / benchmark::GetTimeUnitMultiplier(run.time_unit);
}

std::string ratio(const Row& row, const std::string& a, const std::string& b, const char* spec) {
  const Run* x = measured(row, a);
  const Run* y = measured(row, b);
  return x != nullptr && y != nullptr ? format(spec, microseconds(*x) / microseconds(*y)) : "-";
}

/// The cells of one table row: n, each column's time, the ratios, smartarray's copies per call.
std::vector<std::string> cells(std::int64_t n, const Row& row,
                               const std::vector<std::string>& columns) {
  std::vector<std::string> out{with_commas(n)};
  for (const std::string& who : columns) {
    const Run* run = measured(row, who);
    out.push_back(run != nullptr ? format("%.1f", microseconds(*run))
                  : row.contains(who) ? "FAILED"
                                      : "-");
  }
  out.push_back(ratio(row, "smartarray", "explicit", "%.3fx"));
  out.push_back(ratio(row, "naive", "smartarray", "%.1fx"));
  const Run* smart = measured(row, "smartarray");
  for (const char* counter : {"h2d_per_call", "d2h_per_call"}) {
    out.push_back(smart != nullptr ? format("%g", smart->counters.at(counter).value) : "-");
  }
  return out;
}

void add_once(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

/// Prints `rows` (the first is the header) as right-aligned columns.
void print_columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      std::printf(c == 0 ? "%*s" : "  %*s", static_cast<int>(widths[c]), row[c].c_str());
    }
    std::printf("\n");
  }
}

}  // namespace

void print_demo_header() {
  std::printf("bench_pipelines --demo: a short run of the headline benchmark "
              "(docs/benchmarks.md)\n");
  std::printf("backend: %s, device: %s\n", to_string(backend()), device_properties().name.c_str());
  if (backend() == BackendKind::host) {
    std::printf("note: these are CPU times of the host backend's emulated device, not GPU times\n");
  }
  std::printf("each time is the mean of one call in microseconds (%s);\n",
              backend() == BackendKind::cuda
                  ? "CUDA events on an idle stream, synchronized per call"
                  : "the host clock around the call and a synchronize");
  std::printf("H2D/call and D2H/call are the smartarray contender's copies per call\n");
  std::fflush(stdout);
}

DemoReporter::DemoReporter(std::vector<std::string> contenders)
    : contenders_(std::move(contenders)) {}

bool DemoReporter::ReportContext(const Context& /*context*/) { return true; }

void DemoReporter::ReportRuns(const std::vector<Run>& runs) {
  for (const Run& run : runs) {
    if (run.run_type == Run::RT_Iteration) runs_.push_back(run);
  }
}

void DemoReporter::print() const {
  std::map<std::pair<std::string, std::int64_t>, Row> rows;  // by workload and n
  std::vector<std::string> ran;                              // contenders that ran
  std::map<std::string, std::vector<std::string>> not_run;   // contenders, by reason
  std::vector<std::string> failures;
  for (const Run& run : runs_) {
    const std::string& name = run.run_name.function_name;  // BM_<workload>/<contender>
    const std::size_t slash = name.find('/');
    const std::string who = name.substr(slash + 1);
    rows[{name.substr(3, slash - 3), std::stoll(run.run_name.args)}][who] = &run;
    const bool skipped = bench::skipped(run);
    const std::string& message = skip_message(run);
    const bool failed = skipped && message.starts_with("FAILED");
    if (skipped && !failed) {
      add_once(not_run[message], who);
      continue;
    }
    add_once(ran, who);
    if (failed) failures.push_back(run.benchmark_name() + ": " + message);
  }
  std::vector<std::string> columns;  // in the order of the published tables
  for (const std::string& who : contenders_) {
    if (std::find(ran.begin(), ran.end(), who) != ran.end()) columns.push_back(who);
  }
  for (const auto& [workload, what] : demo_workloads) {
    std::vector<std::vector<std::string>> table{{"n"}};
    table[0].insert(table[0].end(), columns.begin(), columns.end());
    table[0].insert(table[0].end(),
                    {"smartarray/explicit", "naive/smartarray", "H2D/call", "D2H/call"});
    for (const auto& [key, row] : rows) {
      if (key.first == workload) table.push_back(cells(key.second, row, columns));
    }
    if (table.size() == 1) continue;
    std::printf("\n%s: %s\n", workload, what);
    print_columns(table);
  }
  std::printf("\n");
  for (const auto& [reason, who] : not_run) {
    std::string names;
    for (const std::string& w : who) names += (names.empty() ? "" : ", ") + w;
    std::printf("not run, %s: %s\n", reason.c_str(), names.c_str());
  }
  for (const std::string& failure : failures) std::printf("%s\n", failure.c_str());
  if (failures.empty()) {
    std::printf("all results match the host reference; smartarray made the copies it promises\n");
  }
}

}  // namespace smartarray::bench::pipelines
