// The one place where the benchmarks meet the differences between Google Benchmark versions
// (1.6 to 1.9; Debian 12 ships 1.7.1, Ubuntu 24.04 ships 1.8.3). Everything else in benchmarks/
// uses the API that all of them share.
//
// What differs, and what this header does about it:
// - A run's skip state. Up to 1.7 a BenchmarkReporter::Run has `bool error_occurred` and
//   `std::string error_message`; from 1.8 on it has `skipped` (an enum: NotSkipped,
//   SkippedWithMessage, SkippedWithError) and `skip_message`. `skipped(run)` and
//   `skip_message(run)` read whichever the installed version has, chosen by a requires-expression
//   on the member, not by a version macro (1.6 and 1.7 define none).
// - The type that BENCHMARK() and RegisterBenchmark() return, which Apply() callbacks take:
//   `benchmark::internal::Benchmark` up to 1.9, `benchmark::Benchmark` after (the old name stays
//   as a deprecated alias, which -Werror turns into an error). `Benchmark` below is whatever
//   RegisterBenchmark returns.
// - --benchmark_min_time: a number of seconds up to 1.7 ("0.2"); from 1.8 on "0.2s" (or "100x"
//   iterations), where a bare number still works but logs a warning per benchmark, and 1.7 rejects
//   "0.2s" as an unrecognized flag. `portable_min_time_flags` rewrites the flag for the installed
//   version, so scripts can pass either form.
// The rest of what the benchmarks use is the same in 1.6 to 1.9: State (range, iterations,
// counters, SetIterationTime, SetBytesProcessed, SetItemsProcessed, SkipWithError, which takes a
// const char* up to 1.7 and a std::string from 1.8, so callers pass a C string), the builder
// (Arg, Args, ArgName, Apply, Name, Unit, UseManualTime, UseRealTime, Repetitions,
// ReportAggregatesOnly), RegisterBenchmark, Initialize (1.8 adds a defaulted third parameter),
// ReportUnrecognizedArguments, RunSpecifiedBenchmarks, Shutdown, AddCustomContext,
// GetTimeUnitMultiplier, BenchmarkReporter (ReportContext, ReportRuns, Run::run_name,
// run_type, counters, GetAdjustedRealTime) and DoNotOptimize on non-const lvalues and rvalues
// (1.8 deprecates the const-lvalue overload, which the benchmarks do not use).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <deque>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace smartarray::bench {

/// The benchmark registration type (`benchmark::internal::Benchmark` or `benchmark::Benchmark`).
using Benchmark = std::remove_pointer_t<decltype(benchmark::RegisterBenchmark(
    static_cast<const char*>(nullptr), static_cast<void (*)(benchmark::State&)>(nullptr)))>;

namespace compat {

/// True when the run type has 1.8's `skipped` / `skip_message` (a template, so that the
/// requires-expression may name a member that does not exist).
template <typename Run>
inline constexpr bool has_skip_message = requires(const Run& run) {
  run.skip_message;
  run.skipped;
};

}  // namespace compat

/// True when Google Benchmark is 1.8 or later (runs report `skipped` instead of `error_occurred`).
inline constexpr bool benchmark_1_8_or_later =
    compat::has_skip_message<benchmark::BenchmarkReporter::Run>;

/// True when the run was skipped, with an error (SkipWithError) or, from 1.8 on, with a message.
template <typename Run>
[[nodiscard]] bool skipped(const Run& run) {
  if constexpr (compat::has_skip_message<Run>) {
    return static_cast<bool>(run.skipped);
  } else {
    return run.error_occurred;
  }
}

/// The message of a skipped run (empty when it ran).
template <typename Run>
[[nodiscard]] const std::string& skip_message(const Run& run) {
  if constexpr (compat::has_skip_message<Run>) {
    return run.skip_message;
  } else {
    return run.error_message;
  }
}

/// `--benchmark_min_time=VALUE` in the form the installed version parses: "0.2s" from 1.8 on,
/// "0.2" before. Values that are neither a plain number nor a number with an `s` suffix (1.8's
/// "100x") are left as they are.
[[nodiscard]] inline std::string portable_min_time_flag(std::string_view arg) {
  constexpr std::string_view prefix = "--benchmark_min_time=";
  if (!arg.starts_with(prefix)) return std::string(arg);
  std::string value(arg.substr(prefix.size()));
  const bool suffixed = !value.empty() && value.back() == 's';
  const std::string number = suffixed ? value.substr(0, value.size() - 1) : value;
  char* end = nullptr;
  std::strtod(number.c_str(), &end);
  if (number.empty() || end == nullptr || *end != '\0') return std::string(arg);
  return std::string(prefix) + number + (benchmark_1_8_or_later ? "s" : "");
}

/// Rewrites every --benchmark_min_time flag of `args` with `portable_min_time_flag`; the new
/// strings live in `storage` (a deque: appending moves no element), which must outlive `args`.
inline void portable_min_time_flags(std::vector<char*>& args, std::deque<std::string>& storage) {
  for (char*& arg : args) {
    if (arg == nullptr || !std::string_view(arg).starts_with("--benchmark_min_time=")) continue;
    storage.push_back(portable_min_time_flag(arg));
    arg = storage.back().data();
  }
}

}  // namespace smartarray::bench
