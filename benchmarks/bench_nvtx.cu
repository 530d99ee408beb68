// The cost of smartarray's NVTX ranges with no tool attached: the host time of a call with the
// ranges on against the same call with them off (sa::set_nvtx_enabled), in the same run.
//
// - BM_NvtxLaunch/arrays:K: sa::launch of an empty kernel taking K device-resident SmartArrays of
//   1024 floats (every acquire is the fast path). Needs the cuda backend (a raw kernel cannot run
//   on the host backend).
// - BM_NvtxTransform/arrays:1: sa::transform(a, identity, a) over one such array (an adapter
//   range, two acquire ranges and a kernel); it also runs on the host backend, where its functor
//   runs on the stream's worker thread.
//
// Each iteration times a batch of 100 calls with the ranges on and a batch with them off (the
// order flips every iteration), each followed by a stream synchronize outside the timing.
// Counters, per call: on_ns and off_ns (medians over the batches), nvtx_ns (the median of each
// iteration's on - off; target: under 20 ns), and recording (1 when a tool records the ranges,
// as under `nsys profile`: then nvtx_ns is the cost of recording, not the figure of the target).
#include <smartarray/smartarray.hpp>

#include "bench_main.hpp"
#include "bench_support.cuh"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace sa = smartarray;
using sa::Access;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int batch = 100;  // calls per timed batch; far below the launch queue's depth
constexpr std::size_t elements = 1024;

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples.empty() ? 0 : samples[samples.size() / 2];
}

__global__ void empty1(sa::DeviceView<float>) {}
__global__ void empty4(sa::DeviceView<const float>, sa::DeviceView<const float>,
                       sa::DeviceView<float>, sa::DeviceView<float>) {}

struct Identity {
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return x; }
};

/// `count` arrays of `elements` floats, valid and written on the device of `stream`.
std::vector<sa::SmartArray<float>> device_arrays(std::size_t count, sa::StreamRef stream) {
  std::vector<sa::SmartArray<float>> arrays;
  for (std::size_t i = 0; i < count; ++i) {
    arrays.emplace_back(sa::bench::random_floats(elements, static_cast<unsigned>(i)));
    (void)arrays.back().device_view(Access::read_write, stream);
  }
  sa::synchronize(stream);
  return arrays;
}

/// Times `call` in batches with the ranges on and off, alternately, and sets the counters.
template <typename Call>
void on_against_off(benchmark::State& state, sa::StreamRef stream, Call&& call) {
  const bool was_enabled = sa::nvtx_enabled();
  std::vector<double> on_ns;
  std::vector<double> off_ns;
  std::vector<double> differences;
  bool on_first = true;
  for (auto _ : state) {
    double per_call[2] = {0, 0};  // on, off
    for (const bool enabled : {on_first, !on_first}) {
      sa::set_nvtx_enabled(enabled);
      const auto start = Clock::now();
      for (int k = 0; k < batch; ++k) call();
      per_call[enabled ? 0 : 1] =
          std::chrono::duration<double, std::nano>(Clock::now() - start).count() / batch;
      sa::synchronize(stream);
    }
    on_ns.push_back(per_call[0]);
    off_ns.push_back(per_call[1]);
    differences.push_back(per_call[0] - per_call[1]);
    on_first = !on_first;
  }
  sa::set_nvtx_enabled(true);
  state.counters["recording"] = sa::nvtx_recording() ? 1 : 0;
  sa::set_nvtx_enabled(was_enabled);
  state.counters["on_ns"] = median(on_ns);
  state.counters["off_ns"] = median(off_ns);
  state.counters["nvtx_ns"] = median(differences);
}

void BM_NvtxLaunch(benchmark::State& state) {
  if (!sa::bench::need_cuda(state)) return;
  const auto count = static_cast<std::size_t>(state.range(0));
  sa::Stream stream;
  auto arrays = device_arrays(count, stream);
  on_against_off(state, stream, [&] {
    if (count == 1) sa::launch(empty1, 1, 32, stream, arrays[0]);
    if (count == 4) sa::launch(empty4, 1, 32, stream, arrays[0], arrays[1], arrays[2], arrays[3]);
  });
}
BENCHMARK(BM_NvtxLaunch)->ArgName("arrays")->Arg(1)->Arg(4)->UseRealTime();

void BM_NvtxTransform(benchmark::State& state) {
  sa::Stream stream;
  auto arrays = device_arrays(1, stream);
  sa::SmartArray<float>& a = arrays[0];
  on_against_off(state, stream, [&] { sa::transform(a, Identity{}, a, stream); });
}
BENCHMARK(BM_NvtxTransform)->ArgName("arrays")->Arg(1)->UseRealTime();

}  // namespace

SMARTARRAY_BENCHMARK_MAIN();
