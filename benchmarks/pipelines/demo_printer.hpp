// The output of the README demo (bench_pipelines --demo): a header, then the runs of a short run
// printed as one table per workload.
#pragma once

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace smartarray::bench::pipelines {

/// Prints what the demo runs on (backend, device) and what its times and counters are.
void print_demo_header();

/// Collects the runs of the demo instead of printing them as they come.
class DemoReporter : public benchmark::BenchmarkReporter {
 public:
  /// Tables with a column for each contender of `contenders` (their benchmark names, in the order
  /// of the published tables) that ran.
  explicit DemoReporter(std::vector<std::string> contenders);

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;

  /// Prints one table per workload, then the contenders that did not run and the failed checks.
  void print() const;

 private:
  std::vector<std::string> contenders_;
  std::vector<Run> runs_;
};

}  // namespace smartarray::bench::pipelines
