// The headline benchmark: SmartArray against naive copies, expert explicit copies, Unified Memory
// (with and without prefetch), mapped memory and Thrust, on the same workloads in one run.
//
// Every timed iteration is one "call" of the workload, bracketed by CUDA events on an idle stream
// (so the host overhead of each contender is inside the measurement) and synchronized at its end.
// On the host backend, the host clock brackets the call and a synchronize instead.
// Names are BM_<workload>/<contender>/<n>; scripts/bench_report.py turns the JSON into
// docs/benchmarks.md with ratios against explicit and naive. Every run checks the contender's
// results against a host reference, and the smartarray contender's copies per call against the
// residency contract; a failed check fails the run and the exit status.
//
// naive, explicit and smartarray run on both backends: their hand-written calls go through `Raw`,
// which is the CUDA runtime itself on the cuda backend. managed, mapped and Thrust need CUDA and
// are skipped on the host backend. `--demo` is the README demo: a short run of add, chain10 and
// iterative, printed as one table per workload (see main).
//
// This file registers the benchmarks and holds main. The workloads are in pipelines/, one file
// each: every contender of a workload is a class derived from `Contender`, and `measure` times and
// checks any of them (pipelines/contender.cuh); pipelines/demo_printer.cpp prints the demo.
#include "bench_main.hpp"
#include "pipelines/contender.cuh"
#include "pipelines/demo_printer.hpp"
#include "pipelines/workloads.cuh"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sa = smartarray;
namespace pipelines = smartarray::bench::pipelines;

namespace {

using pipelines::Transfer;

/// The workloads that the seven contenders run, in the order they are registered.
const std::pair<const char*, pipelines::Factory> workloads[] = {
    {"add", pipelines::make_add},
    {"gaussian", pipelines::make_gaussian},
    {"polar", pipelines::make_polar},
    {"chain10", pipelines::make_chain},
    {"iterative", pipelines::make_iterative},
};

/// The sizes each workload runs at, by workload; a workload with none is left out.
using Sizes = std::map<std::string, std::vector<std::int64_t>>;

/// The published run.
const Sizes full_sizes{{"add", {100'000, 1'000'000, 16'000'000}},
                       {"gaussian", {1'000'000}},
                       {"polar", {1'000'000}},
                       {"chain10", {1'000'000, 16'000'000}},
                       {"iterative", {1'000'000}},
                       {"bandwidth", {4 << 10, 1 << 20, 16 << 20, 256 << 20}}};
/// The README demo (--demo).
const Sizes demo_sizes{
    {"add", {100'000, 1'000'000}}, {"chain10", {1'000'000}}, {"iterative", {1'000'000}}};
/// The demo's CTest run (--demo --quick).
const Sizes quick_sizes{
    {"add", {10'000, 100'000}}, {"chain10", {100'000}}, {"iterative", {100'000}}};

void register_all(const Sizes& sizes) {
  auto add = [&](const std::string& workload, const std::string& contender, auto fn) {
    const auto it = sizes.find(workload);
    if (it == sizes.end()) return;
    auto* b = benchmark::RegisterBenchmark(("BM_" + workload + "/" + contender).c_str(), fn);
    for (auto n : it->second) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  };
  for (const auto& [name, kind] : pipelines::contender_kinds) {
    for (const auto& [workload, make] : workloads) {
      add(workload, name,
          [kind = kind, make = make](benchmark::State& s) { pipelines::measure(s, kind, make); });
    }
  }
  const std::pair<const char*, Transfer> transfers[] = {
      {"smartarray", Transfer::smartarray},
      {"pinned_memcpy", Transfer::pinned_memcpy},
      {"pageable_memcpy", Transfer::pageable_memcpy}};
  for (const auto& [name, how] : transfers) {
    add("bandwidth", name, [how = how](benchmark::State& s) { pipelines::bandwidth(s, how); });
  }
}

/// True when `flag` is among the arguments.
bool given(int argc, char** argv, const char* flag) {
  return std::any_of(argv + 1, argv + argc,
                     [&](const char* arg) { return std::strcmp(arg, flag) == 0; });
}

}  // namespace

/// bench_pipelines [Google Benchmark flags]: the published run.
/// bench_pipelines --demo [--quick] [flags]: the README demo, printed as tables (--quick: smaller
/// sizes and runs, for CTest).
/// Exits non-zero when a run fails its checks.
int main(int argc, char** argv) {
  const bool demo = given(argc, argv, "--demo");
  const bool quick = demo && given(argc, argv, "--quick");
  char min_time[] = "--benchmark_min_time=0.05";
  char quick_min_time[] = "--benchmark_min_time=0.01";
  std::vector<char*> args{argv[0]};
  if (demo) args.push_back(quick ? quick_min_time : min_time);  // flags given later override it
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!(demo && arg == "--demo") && !(quick && arg == "--quick")) args.push_back(argv[i]);
  }
  if (!sa::bench::initialize(args)) return 1;
  sa::bench::add_provenance();
  if (demo) {
    register_all(quick ? quick_sizes : demo_sizes);
    pipelines::print_demo_header();
    std::vector<std::string> columns;  // the contenders, in the order of the published tables
    for (const auto& [name, _] : pipelines::contender_kinds) columns.emplace_back(name);
    pipelines::DemoReporter reporter(std::move(columns));
    benchmark::RunSpecifiedBenchmarks(&reporter);
    reporter.print();
  } else {
    register_all(full_sizes);
    benchmark::RunSpecifiedBenchmarks();
  }
  benchmark::Shutdown();
  return pipelines::failed_runs() == 0 ? 0 : 1;
}
