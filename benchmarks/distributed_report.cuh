// bench_distributed's reporters: rank 0's console reporter, which also prints the medians of the
// alternated repetitions (each pair's ratio to its baseline, and the Jacobi contenders' times and
// gains from overlap), and the silent one of the other ranks. Included by bench_distributed.cu only
// (unnamed namespace).
#pragma once

#include "bench_main.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

/// The console reporter of rank 0, which also keeps every run's seconds per iteration and its
/// bus bandwidth, for the ratios printed at the end.
class Collector : public benchmark::ConsoleReporter {
 public:
  /// @param reps the repetitions of each contender; the Jacobi runs' grid and steps per run.
  Collector(int reps, std::size_t nx, std::size_t ny, int steps)
      : reps_(reps), grid_nx_(nx), grid_ny_(ny), steps_(steps) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || smartarray::bench::skipped(run)) continue;
      seconds_[run.benchmark_name()].push_back(run.real_accumulated_time /
                                               static_cast<double>(run.iterations));
      const auto bus = run.counters.find("bus_GBps");
      if (bus != run.counters.end()) bus_[run.benchmark_name()].push_back(bus->second.value);
      const auto rate = run.counters.find("items_per_second");
      if (rate != run.counters.end()) rate_[run.benchmark_name()].push_back(rate->second.value);
      const auto residual = run.counters.find("residual");
      if (residual != run.counters.end()) residual_[run.benchmark_name()] = residual->second.value;
    }
  }
  /// Each contender against the baseline of its pair: hand-written NCCL code ("<pair>/nccl/..."),
  /// or for the agreement the all-gather handshake it replaced ("agreement/allgather/...").
  void print_ratios() const {
    std::printf("\nMedians of %d alternated repetitions, each contender against its baseline:\n",
                reps_);
    for (const auto& [name, values] : seconds_) {
      const std::size_t at = name.find('/');
      const std::size_t end = name.find('/', at + 1);
      const std::string baseline = name.compare(0, at, "agreement") == 0 ? "/allgather" : "/nccl";
      if (name.compare(at, end - at, baseline) == 0) continue;
      const std::string other = name.substr(0, at) + baseline + name.substr(end);
      const auto hand = seconds_.find(other);
      if (hand == seconds_.end()) continue;
      std::printf("  %-44s time ratio %.3f", name.c_str(), median(values) / median(hand->second));
      const auto bus = bus_.find(name);
      const auto hand_bus = bus_.find(other);
      if (bus != bus_.end() && hand_bus != bus_.end()) {
        std::printf("  bus bandwidth %.1f / %.1f GB/s = %.1f%%", median(bus->second),
                    median(hand_bus->second), 100.0 * median(bus->second) / median(hand_bus->second));
      }
      const auto rate = rate_.find(name);
      const auto hand_rate = rate_.find(other);
      if (rate != rate_.end() && hand_rate != rate_.end()) {
        std::printf("  lattice updates %.3e / %.3e per s", median(rate->second),
                    median(hand_rate->second));
      }
      const auto residual = residual_.find(name);
      const auto hand_residual = residual_.find(other);
      if (residual != residual_.end() && hand_residual != residual_.end()) {
        std::printf("  residual %.6e / %.6e", residual->second, hand_residual->second);
      }
      std::printf("\n");
    }
  }

  /// For each configuration of the Jacobi contenders: each one's median time per step,
  /// smartarray's time with overlap against the hand-written one's, and the gains from overlap.
  void print_jacobi() const {
    const std::string prefix = "jacobi/smartarray_overlap";
    for (const auto& [name, values] : seconds_) {
      if (name.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string config = name.substr(prefix.size());
      const auto per_step = [&](const char* contender) {
        const auto found = seconds_.find("jacobi/" + std::string(contender) + config);
        return found == seconds_.end() ? 0.0 : median(found->second) / steps_;
      };
      const double hand = per_step("hand_overlap");
      const double hand_one = per_step("hand_one_stream");
      const double smart = per_step("smartarray_overlap");
      const double smart_one = per_step("smartarray_one_stream");
      if (hand == 0.0 || hand_one == 0.0 || smart_one == 0.0) continue;
      std::printf("\nJacobi %zu x %zu, %s, %d steps per run, medians of %d alternated runs:\n",
                  grid_nx_, grid_ny_, config.c_str() + 1, steps_, reps_);
      for (const char* contender :
           {"hand_overlap", "hand_one_stream", "smartarray_overlap", "smartarray_one_stream"}) {
        const auto residual = residual_.find("jacobi/" + std::string(contender) + config);
        std::printf("  %-22s %9.4f ms per step  residual %.6e\n", contender,
                    1e3 * per_step(contender),
                    residual == residual_.end() ? 0.0 : residual->second);
      }
      const double hand_gain = hand_one / hand - 1.0;
      const double smart_gain = smart_one / smart - 1.0;
      std::printf("  smartarray_overlap / hand_overlap: %.3f (target <= 1.05)\n", smart / hand);
      std::printf("  gain from overlap: hand %+.1f%%, smartarray %+.1f%%, smartarray / hand %.2f "
                  "(target >= 0.90 where the hand-written gain is above 5%%)\n",
                  100.0 * hand_gain, 100.0 * smart_gain, smart_gain / hand_gain);
    }
  }

 private:
  static double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  }
  std::map<std::string, std::vector<double>> seconds_;
  std::map<std::string, std::vector<double>> bus_;
  std::map<std::string, std::vector<double>> rate_;
  std::map<std::string, double> residual_;
  int reps_;
  std::size_t grid_nx_;
  std::size_t grid_ny_;
  int steps_;
};

/// The reporter of the other ranks: they run every benchmark and report nothing.
class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace
