// Range-granular residency: SmartArray against hand-written explicit copies when the host reads or
// writes a small part of an array that the device works on (core/slice.hpp; element access by
// tiles, ArrayOptions::tile).
//
// Names are BM_<workload>/<contender>/<n>, contenders `explicit` (cudaMemcpyAsync on pinned memory
// and cudaStreamSynchronize, through `Raw`) and `smartarray`. Every call starts with a kernel that
// writes all n floats with fresh values (`value_at`, never zero, different in every call):
// - scalar_read: the host then reads the middle element. explicit: a 4-byte D2H copy; smartarray:
//   `std::as_const(a)[n / 2]`, which fetches the element's tile. n = 1e6, 1.6e7, 1e8; target: at
//   most 1.2x explicit.
// - boundary_update: the host writes 32 elements at each end, then a kernel reads all n (writing
//   only where it finds a NaN, so that the reads stay). The first kernel writes the initial values
//   once, before the calls. explicit: the 64 values in pinned memory, two 128-byte H2D copies;
//   smartarray: `a[i] = v`, which marks only the two end tiles stale on the device, and a device
//   view for reading, which copies those two tiles. n = 1e6, 1.6e7, 1e8; target: at most 1.2x.
// - slice_read: the host then reads 1000 elements from the middle. explicit: one 4000-byte D2H
//   copy; smartarray: the host view of `a.slice(n / 2, 1000)` for reading, which copies the same
//   4000 bytes. n = 1.6e7; target: at most 1.2x.
// - range_for: the host then sums the whole array in a range-for (the elements' bit patterns, in
//   integers: a loop at the speed of memory). explicit: a D2H copy of the array into pinned
//   memory and the same loop over it; smartarray: `for (float x : std::as_const(a))`, one D2H
//   copy of the array. n = 1.6e7; target: at most 1.05x.
// - copy_latency/<bytes> (explicit only): one D2H copy of 4 B to 4 MiB into pinned memory and a
//   synchronize. Its time per copy and bytes per second show where a copy's fixed cost meets its
//   transfer time.
// - scalar_read/smartarray_tile16k and boundary_update/smartarray_tile16k: the smartarray
//   contender with 16 KiB tiles instead of the default 4 KiB, for the choice of the default
//   (docs/residency.md).
//
// A timed iteration is one call, bracketed by the host clock: every call returns with its work
// done (the host holds what it read, or the last kernel finished), so this is the call's wall
// time, host and device together, as the user waits for it. One untimed call first takes the
// allocations and module loads out. scripts/bench_report.py divides smartarray by explicit of the
// same run, and the targets phase of scripts/gpu_check.sh runs them again as interleaved
// repetitions.
//
// Checks: each run checks the last call's results (the host read what the kernel wrote; the
// device holds what the host wrote) and the smartarray contender's copies in every timed call,
// counted by the library (global_transfer_stats()): scalar_read one tile D2H, boundary_update
// the two end tiles H2D, slice_read and range_for exactly their bytes D2H, and nothing else. A
// failed check fails the run ("FAILED: ...") and the exit status. Counters: the copies and bytes
// per call each way (h2d_per_call, d2h_per_call, h2d_bytes_per_call, d2h_bytes_per_call):
// smartarray's as counted, explicit's as its code makes them.
//
// Runs on both backends: the hand-written calls go through `Raw` (bench_support.cuh), the CUDA
// runtime itself on the cuda backend. `--quick` runs small sizes briefly, for CTest's
// host.bench_partial_smoke.
#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/runtime/stream.hpp>

#include "bench_main.hpp"
#include "bench_support.cuh"
// bench_partial's contenders and workloads, included by this file only.
#include "partial_contender.cuh"
#include "partial_element_access.cuh"
#include "partial_out_of_core.cuh"
#include "partial_range_reads.cuh"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::bench::Raw;

namespace {

using sa::bench::fail_run;

// --- measuring -----------------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;

/// Makes one contender of one workload, working on `stream`.
using Factory = std::unique_ptr<Contender> (*)(sa::StreamRef stream);

template <typename C>
std::unique_ptr<Contender> make(sa::StreamRef stream) {
  return std::make_unique<C>(stream);
}

/// Publishes the copies per call, and fails the run when a library contender's copies, counted by
/// the library over the timed calls, differ from the ones it promises.
void check_copies(benchmark::State& state, const Contender& contender,
                  const sa::TransferStats& made) {
  const Copies promised = contender.copies_per_call();
  const auto calls = static_cast<std::uint64_t>(state.iterations());
  Copies reported = promised;
  if (contender.library_copies() && calls != 0) {
    reported = {made.h2d_count / calls, made.h2d_bytes / calls, made.d2h_count / calls,
                made.d2h_bytes / calls};
  }
  state.counters["h2d_per_call"] = static_cast<double>(reported.h2d);
  state.counters["d2h_per_call"] = static_cast<double>(reported.d2h);
  state.counters["h2d_bytes_per_call"] = static_cast<double>(reported.h2d_bytes);
  state.counters["d2h_bytes_per_call"] = static_cast<double>(reported.d2h_bytes);
  if (!contender.library_copies()) return;
  if (made.h2d_count != promised.h2d * calls || made.h2d_bytes != promised.h2d_bytes * calls ||
      made.d2h_count != promised.d2h * calls || made.d2h_bytes != promised.d2h_bytes * calls ||
      made.d2d_count != 0) {
    fail_run(state, "expected " + std::to_string(promised.h2d) + " H2D (" +
                    std::to_string(promised.h2d_bytes) + " B) and " +
                    std::to_string(promised.d2h) + " D2H (" + std::to_string(promised.d2h_bytes) +
                    " B) per call; smartarray made " + made.to_string() + " in " +
                    std::to_string(calls) + " timed calls");
  }
}

/// One run of a contender at n = state.range(0): set up, one untimed call, then one call per
/// iteration timed by the host clock, checked and torn down.
void measure(benchmark::State& state, Factory factory) {
  const sa::Stream stream;
  const std::unique_ptr<Contender> contender = factory(stream);
  contender->set_up(static_cast<std::size_t>(state.range(0)));
  contender->call();
  const sa::TransferStats before = sa::global_transfer_stats();
  for (auto _ : state) {
    const auto start = Clock::now();
    contender->call();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  check_copies(state, *contender, sa::global_transfer_stats() - before);
  if (std::string why = contender->check(); !why.empty()) fail_run(state, why);
  contender->tear_down();
}

/// copy_latency: one D2H copy of state.range(0) bytes into pinned memory and a synchronize, per
/// iteration.
void copy_latency(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const sa::Stream stream;
  const Raw raw(stream);
  const std::size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
  float* device = raw.allocate_device<float>(floats);
  float* pinned = raw.allocate_pinned<float>(floats);
  raw.launch(floats, Fill{device, 1});  // copies read written memory
  raw.synchronize();
  for (auto _ : state) {
    const auto start = Clock::now();
    raw.copy_to_host_async(pinned, device, bytes);
    raw.synchronize();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  raw.free_device(device);
  raw.free_pinned(pinned);
}

/// pinned_h2d: one host-to-device copy of state.range(0) floats from pinned memory, the bandwidth
/// that out_of_core is measured against.
void pinned_h2d(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const sa::Stream stream;
  const Raw raw(stream);
  float* device = raw.allocate_device<float>(n);
  float* pinned = raw.allocate_pinned<float>(n);
  std::fill(pinned, pinned + n, 1.5F);
  for (auto _ : state) {
    const auto start = Clock::now();
    raw.copy_to_device_async(device, pinned, n * sizeof(float));
    raw.synchronize();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  raw.free_device(device);
  raw.free_pinned(pinned);
}

/// pinned_duplex: a host-to-device copy and a device-to-host copy of state.range(0) floats each,
/// from and to pinned memory, on two streams at once: what the copy engines reach when out-of-core
/// calls run both ways together.
void pinned_duplex(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const sa::Stream up_stream;
  const sa::Stream down_stream;
  const Raw up(up_stream);
  const Raw down(down_stream);
  float* device_in = up.allocate_device<float>(n);
  float* device_out = up.allocate_device<float>(n);
  float* pinned_in = up.allocate_pinned<float>(n);
  float* pinned_out = up.allocate_pinned<float>(n);
  std::fill(pinned_in, pinned_in + n, 1.5F);
  up.launch(n, Fill{device_out, 1});  // the download reads written memory
  up.synchronize();
  for (auto _ : state) {
    const auto start = Clock::now();
    up.copy_to_device_async(device_in, pinned_in, n * sizeof(float));
    down.copy_to_host_async(pinned_out, device_out, n * sizeof(float));
    up.synchronize();
    down.synchronize();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  up.free_device(device_in);
  up.free_device(device_out);
  up.free_pinned(pinned_in);
  up.free_pinned(pinned_out);
}

/// The workloads: their explicit and smartarray contenders.
struct Workload {
  const char* name;
  Factory explicit_copies;
  Factory smartarray;
};
const Workload workloads[] = {
    {"scalar_read", make<ScalarReadExplicit>, make<ScalarReadSmart<>>},
    {"boundary_update", make<BoundaryUpdateExplicit>, make<BoundaryUpdateSmart<>>},
    {"slice_read", make<SliceReadExplicit>, make<SliceReadSmart>},
    {"range_for", make<RangeForExplicit>, make<RangeForSmart>},
    {"out_of_core", make<OutOfCoreExplicit>, make<OutOfCoreSmart>},
};

/// The sizes each workload runs at (bytes for copy_latency), by workload.
using Sizes = std::map<std::string, std::vector<std::int64_t>>;

/// The published run.
const Sizes full_sizes{{"scalar_read", {1'000'000, 16'000'000, 100'000'000}},
                       {"boundary_update", {1'000'000, 16'000'000, 100'000'000}},
                       {"slice_read", {16'000'000}},
                       {"range_for", {16'000'000}},
                       {"out_of_core", {1 << 28}},
                       {"pinned_h2d", {1 << 28}},
                       {"pinned_duplex", {1 << 28}},
                       {"copy_latency",
                        {4, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}}};
/// CTest's smoke (--quick): arrays of less than one tile (10,000 floats: the tiles are clipped at
/// the end, and the two end tiles are one) and of several.
const Sizes quick_sizes{{"scalar_read", {10'000, 100'000}},
                        {"boundary_update", {10'000, 100'000}},
                        {"slice_read", {100'000}},
                        {"range_for", {100'000}},
                        {"out_of_core", {1 << 21}},
                        {"pinned_h2d", {1 << 21}},
                        {"pinned_duplex", {1 << 21}},
                        {"copy_latency", {4, 64 << 10}}};

/// The workloads whose calls take milliseconds (range_for, out_of_core and its bandwidth bounds,
/// 20-25 ms) run at least this long per repetition in the published run, whatever
/// --benchmark_min_time says: at the scripts' 0.1-0.2 s a repetition averages only 4-12 calls.
constexpr double long_call_min_time = 1.0;
const std::set<std::string> long_calls{"range_for", "out_of_core", "pinned_h2d", "pinned_duplex"};

void register_all(const Sizes& sizes, bool quick) {
  const auto add = [&](const std::string& workload, const std::string& name, auto fn) {
    auto* b = benchmark::RegisterBenchmark(("BM_" + name).c_str(), fn);
    for (const std::int64_t n : sizes.at(workload)) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
    if (!quick && long_calls.contains(workload)) b->MinTime(long_call_min_time);
  };
  for (const Workload& w : workloads) {
    const std::string name = w.name;
    add(name, name + "/explicit",
        [f = w.explicit_copies](benchmark::State& s) { measure(s, f); });
    add(name, name + "/smartarray", [f = w.smartarray](benchmark::State& s) { measure(s, f); });
  }
  // The default tile against a larger one (docs/residency.md).
  add("scalar_read", "scalar_read/smartarray_tile16k",
      [](benchmark::State& s) { measure(s, make<ScalarReadSmart<16 << 10>>); });
  add("boundary_update", "boundary_update/smartarray_tile16k",
      [](benchmark::State& s) { measure(s, make<BoundaryUpdateSmart<16 << 10>>); });
  add("copy_latency", "copy_latency", copy_latency);
  add("pinned_h2d", "pinned_h2d", pinned_h2d);
  add("pinned_duplex", "pinned_duplex", pinned_duplex);
}

}  // namespace

/// bench_partial [--quick] [Google Benchmark flags]: the published run, or with --quick small sizes
/// and short runs (CTest's host.bench_partial_smoke). Exits non-zero when a run fails its checks.
int main(int argc, char** argv) {
  return sa::bench::run_main(
      argc, argv, [](bool quick) { register_all(quick ? quick_sizes : full_sizes, quick); },
      &sa::bench::failed_runs);
}