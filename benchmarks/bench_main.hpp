// The main of every benchmark binary, and the provenance each run records.
//
// Every binary's JSON (--benchmark_out) carries, in Google Benchmark's "context" object, where its
// figures come from: the git commit, the GPU, its driver, the CUDA runtime and toolkit, CCCL, the
// backend and the build. scripts/bench_report.py prints it above each table of
// docs/benchmarks.md. The console output shows the same lines in its header.
//
// Defined in bench_main.cpp, which is compiled once and linked into every benchmark.
#pragma once

#include "bench_compat.hpp"

#include <string>
#include <utility>
#include <vector>

namespace smartarray::bench {

/// The provenance of this run as (key, value) pairs, the keys as they appear in the JSON context:
/// git_commit, smartarray_version, build_type, backend, gpu_name, gpu_compute_capability,
/// gpu_driver, cuda_driver, cuda_runtime, cuda_toolkit, cuda_architectures, cccl_version,
/// google_benchmark. The git commit is $SMARTARRAY_GIT_COMMIT when set, else the commit of the
/// source tree when the benchmarks were built ("-dirty" when it had uncommitted changes), else
/// "unknown". On the host backend the GPU and driver fields read "none (host backend)". Selects
/// the backend if nothing has yet.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> provenance();

/// Adds `provenance()` to Google Benchmark's context (the JSON "context" and the console header).
/// Call it before RunSpecifiedBenchmarks.
void add_provenance();

/// Google Benchmark's Initialize over `args` (argv without its terminating null), with the
/// --benchmark_min_time flags made portable (bench_compat.hpp). Leaves in `args` what
/// Initialize did not consume; returns false, after printing them, when that is more than argv[0].
[[nodiscard]] bool initialize(std::vector<char*>& args);

/// A whole benchmark main: initialize, call `register_benchmarks` (when given), add the
/// provenance, run the registered benchmarks, shut down. Returns the exit status.
int run_main(int argc, char** argv, void (*register_benchmarks)() = nullptr);

/// A whole benchmark main that takes `--quick` (small sizes, 0.01 s per run: the CTest smoke runs;
/// a --benchmark_min_time given too wins): initialize, call `register_benchmarks(quick)`, add the
/// provenance, run, shut down. Returns 1 when `*failures` is not zero afterwards (the count of
/// runs that failed their checks, `&failed_runs` below or the binary's own).
int run_main(int argc, char** argv, void (*register_benchmarks)(bool quick),
             const int* failures);

/// The runs of this process that failed a check of their results (fail_run()).
inline int failed_runs = 0;

/// Fails the current run: skipped with "FAILED: <why>" and counted in `failed_runs`, which
/// `run_main(..., &failed_runs)` turns into the exit status.
inline void fail_run(benchmark::State& state, const std::string& why) {
  ++failed_runs;
  state.SkipWithError(("FAILED: " + why).c_str());
}

}  // namespace smartarray::bench

/// Defines main() as `smartarray::bench::run_main`; use instead of BENCHMARK_MAIN().
#define SMARTARRAY_BENCHMARK_MAIN()                                   \
  int main(int argc, char** argv) { return ::smartarray::bench::run_main(argc, argv); }
