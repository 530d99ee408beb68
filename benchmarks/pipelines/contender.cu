// The checks and `measure`, shared by every workload of bench_pipelines (see contender.cuh).
#include "pipelines/contender.cuh"

#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/runtime/stream.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>

namespace smartarray::bench::pipelines {
namespace {

int failed_run_count = 0;

}  // namespace

int failed_runs() { return failed_run_count; }

void Checks::transfers(std::uint64_t h2d, std::uint64_t d2h) {
  const TransferStats& made = timer_.timed_transfers();
  const auto timed = static_cast<std::uint64_t>(state_.iterations());
  state_.counters["h2d_per_call"] =
      static_cast<double>(made.h2d_count) / static_cast<double>(timed);
  state_.counters["d2h_per_call"] =
      static_cast<double>(made.d2h_count) / static_cast<double>(timed);
  if (made.h2d_count != h2d * timed || made.d2h_count != d2h * timed) {
    fail("expected " + std::to_string(h2d) + " H2D and " + std::to_string(d2h) +
         " D2H per call; smartarray made " + made.to_string() + " in " + std::to_string(timed) +
         " timed calls");
  }
}

void Checks::fail(const std::string& why) {
  ++failed_run_count;
  state_.SkipWithError(("FAILED: " + why).c_str());
}

void measure(benchmark::State& state, ContenderKind kind, Factory make) {
  if (cuda_only(kind) && !need_cuda(state)) return;
  const Stream stream;
  CallTimer timer(stream);
  const std::unique_ptr<Contender> contender = make(kind, stream);
  contender->set_up(static_cast<std::size_t>(state.range(0)));
  timer.run(state, [&] { contender->call(); }, contender->bytes_per_call());
  Checks checks(state, timer);
  contender->check(checks);
  contender->tear_down();
}

}  // namespace smartarray::bench::pipelines
