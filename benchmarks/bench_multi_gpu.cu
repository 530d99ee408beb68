// A device-valid array read on a second device: SmartArray against a hand-written
// cudaMemcpyPeerAsync. Names are BM_peer_read/<contender>/<floats>:
// - smartarray: the array was written on device 0 (gpu_changed on a stream of device 0, outside
//   the timed call, makes device 1's copy stale); the timed call is device_view() on a stream of
//   device 1, which copies device 0's copy across, GPU to GPU;
// - explicit: cudaMemcpyPeerAsync of the same bytes between two buffers, with peer access enabled
//   as an expert enables it;
// - smartarray_no_peer: as smartarray with peer access turned off
//   (testing::set_peer_access_enabled), the fallback through the host copy: a copy down and one
//   up.
// Every call is timed with CUDA events on the stream of device 1. The smartarray contenders check
// the library's counts of every call: one peer copy and no host copy (or, without peer access, one
// down and one up), reported as the counters peer_per_call and host_copies_per_call. With one
// device every benchmark is skipped. On the host backend (SMARTARRAY_HOST_DEVICES=2) the times are
// CPU times of the emulated devices.
#include "bench_main.hpp"
#include "bench_support.cuh"

#include <smartarray/diagnostics/testing.hpp>
#include <smartarray/smartarray.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;

namespace {

/// Runs whose copies were not what the library promises: the exit status says so.
int failed_runs = 0;

/// True with two devices; otherwise marks the benchmark skipped.
bool need_two_devices(benchmark::State& state) {
  if (sa::device_count() >= 2) return true;
  state.SkipWithError(("needs two devices (the " + std::string(sa::to_string(sa::backend())) +
                       " backend has " + std::to_string(sa::device_count()) + ")")
                          .c_str());
  return false;
}

/// Checks the library's counts per call and reports them; marks the run failed on a surprise.
void check_copies(benchmark::State& state, const sa::TransferStats& made, bool peer) {
  const auto calls = static_cast<std::uint64_t>(state.iterations());
  const std::uint64_t host_copies = made.h2d_count + made.d2h_count;
  state.counters["peer_per_call"] =
      static_cast<double>(made.d2d_peer_count) / static_cast<double>(calls);
  state.counters["host_copies_per_call"] =
      static_cast<double>(host_copies) / static_cast<double>(calls);
  const bool expected = peer ? made.d2d_peer_count == calls && host_copies == 0
                             : made.d2d_peer_count == 0 && made.h2d_count == calls &&
                                   made.d2h_count == calls && made.staged_count == calls;
  if (!expected) {
    ++failed_runs;
    state.SkipWithError(("unexpected copies: " + made.to_string()).c_str());
  }
}

void smartarray_read(benchmark::State& state, bool peer) {
  if (!need_two_devices(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  if (peer && !sa::peer_access(sa::Device{1}, sa::Device{0})) {
    state.SkipWithError("devices 0 and 1 have no peer access");
    return;
  }
  sa::testing::set_peer_access_enabled(peer);
  {
    const sa::Stream writer(sa::Device{0});
    const sa::Stream reader(sa::Device{1});
    sa::SmartArray<float> a(sa::bench::random_floats(n));
    (void)a.device_view(Access::read, writer);
    sa::bench::CallTimer timer(reader);
    timer.run(
        state, [&] { a.gpu_changed(writer); },  // device 0 wrote it: device 1's copy is stale
        [&] { (void)std::as_const(a).device_view(reader); }, n * sizeof(float));
    check_copies(state, timer.timed_transfers(), peer);
  }
  sa::testing::set_peer_access_enabled(true);
}

void explicit_read(benchmark::State& state) {
  if (!need_two_devices(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::size_t bytes = n * sizeof(float);
  const bool cuda = sa::backend() == sa::BackendKind::cuda;
  const sa::Stream reader(sa::Device{1});
  void* src = nullptr;
  void* dst = nullptr;
  if (cuda) {
    int can = 0;
    SMARTARRAY_CUDA_TRY(cudaDeviceCanAccessPeer(&can, 1, 0), "ask for peer access");
    if (can == 0) {
      state.SkipWithError("devices 0 and 1 have no peer access");
      return;
    }
    for (const auto& [device, peer] : {std::pair{0, 1}, std::pair{1, 0}}) {
      SMARTARRAY_CUDA_TRY(cudaSetDevice(device), "select device ", device);
      const cudaError_t enabled = cudaDeviceEnablePeerAccess(peer, 0);
      if (enabled == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
      else SMARTARRAY_CUDA_TRY(enabled, "enable peer access of device ", device);
    }
    SMARTARRAY_CUDA_TRY(cudaSetDevice(0), "select device 0");
    SMARTARRAY_CUDA_TRY(cudaMalloc(&src, bytes), "cudaMalloc on device 0");
    SMARTARRAY_CUDA_TRY(cudaSetDevice(1), "select device 1");
    SMARTARRAY_CUDA_TRY(cudaMalloc(&dst, bytes), "cudaMalloc on device 1");
    SMARTARRAY_CUDA_TRY(cudaSetDevice(0), "select device 0");
  } else {
    src = sa::detail::runtime().allocate_device(bytes, 0);
    dst = sa::detail::runtime().allocate_device(bytes, 1);
  }
  {
    sa::bench::CallTimer timer(reader);
    timer.run(
        state,
        [&] {
          if (cuda) {
            SMARTARRAY_CUDA_TRY(
                cudaMemcpyPeerAsync(dst, 1, src, 0, bytes, reader.ref().cuda_stream()),
                "cudaMemcpyPeerAsync of ", bytes, " bytes");
          } else {
            sa::detail::runtime().copy_peer_async(dst, 1, src, 0, bytes, reader);
          }
        },
        bytes);
  }
  if (cuda) {
    SMARTARRAY_CUDA_TRY(cudaFree(src), "cudaFree");
    SMARTARRAY_CUDA_TRY(cudaFree(dst), "cudaFree");
  } else {
    sa::detail::runtime().free_device(src, 0);
    sa::detail::runtime().free_device(dst, 1);
  }
}

void register_benchmarks(bool quick) {
  const std::vector<std::int64_t> sizes =
      quick ? std::vector<std::int64_t>{1 << 18}
            : std::vector<std::int64_t>{1 << 22, 1 << 26, 1 << 28};  // 16 MiB, 256 MiB, 1 GiB
  for (const std::int64_t n : sizes) {
    benchmark::RegisterBenchmark("BM_peer_read/smartarray",
                                 [](benchmark::State& s) { smartarray_read(s, true); })
        ->Arg(n)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_peer_read/explicit", explicit_read)
        ->Arg(n)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_peer_read/smartarray_no_peer",
                                 [](benchmark::State& s) { smartarray_read(s, false); })
        ->Arg(n)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace

/// bench_multi_gpu [--quick] [Google Benchmark flags]: the published run, or with --quick one
/// small size (CTest's host.bench_multi_gpu_smoke). Exits non-zero when a run fails its checks.
int main(int argc, char** argv) {
  return sa::bench::run_main(argc, argv, register_benchmarks, &failed_runs);
}
