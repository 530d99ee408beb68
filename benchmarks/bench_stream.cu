// STREAM on SmartArrays against the best hand-written CUDA, and the copies and reductions around
// it: what each adapter costs against the code an expert writes without the library.
//
// Names (n in elements, except BM_copy_d2d's bytes):
// - BM_stream/<op>/<type>/<n>: BabelStream's kernels with s = 3, op copy (c = a), scale
//   (b = s c), add (c = a + b), triad (a = b + s c) and nstream (a += b + s c); type double or
//   float; n = 2^25 and 2^27. The contenders, interleaved in every iteration:
//     smartarray  sa::transform as docs/adapters.md teaches it (scalars as operands, out(...));
//     kernel      hand-written, one thread per element: ceil(n / 256) blocks of 256 threads and a
//                 32-bit index (bench_support.cuh's launch_one_thread_per_item);
//     kernel_vec  hand-written, one 16-byte vector per thread (4 floats or 2 doubles, loaded and
//                 stored as one access each, as float4 / double2 code does), the short tail
//                 element by element;
//     memcpy      cudaMemcpyAsync of one array, device to device: the device's copy bandwidth,
//                 the roof of every kernel here.
//   Device time: CUDA events around 8 back-to-back calls queued behind a 100 us spin kernel, so
//   that the host's submission of the calls is hidden. Counters, from the medians of the batches:
//   <contender>_GBps (bytes read and written per second; memcpy's counts the copy's read and
//   write); vs_kernel and vs_kernel_vec, smartarray's bandwidth over that contender's; vs_best,
//   over the faster of the two (target: at least 0.98); vec_vs_kernel, kernel_vec's over
//   kernel's (above 1: the vector form wins for this type, which is what the knob
//   elementwise_vector_max_element_bytes of adapters/detail/elementwise.hpp should say);
//   of_roof, smartarray's over memcpy's.
// - BM_stream/dot/<type>/<n>: the sum of a[i] b[i] through sa::transform_reduce(a, b, T{0},
//   Plus{}, Times{}, stream), against one_pass (hand-written: one kernel of 16-byte loads over a
//   grid that fills the device, each block's partial folded by the last block to finish, its
//   scratch allocated once) and cub (cub::DeviceReduce::Reduce over a transform iterator of the
//   products, its temporary storage allocated once). Each returns the value to the host: the
//   hand-written ones copy it into pinned memory and synchronize the stream, so a call is timed
//   by the host clock, round trip included, for all three. Counters: <contender>_GBps,
//   vs_one_pass (target: at least 0.97) and vs_cub.
// - BM_reduce/device/float/<n>: sa::reduce_async of a device-resident array against
//   cub::DeviceReduce::Sum with its temporary storage allocated once, device time as BM_stream's
//   (n = 2^25). Counters: smartarray_GBps, cub_GBps, vs_cub (target: at least 0.97).
// - BM_reduce/round_trip/float/<n>: sa::reduce of a device-resident array, the value returned to
//   the host, against cub::DeviceReduce::Sum, a 4-byte cudaMemcpyAsync into pinned memory and a
//   stream synchronize; host clock per call (n = 1e4 and 2^25). Counters: smartarray_us, cub_us,
//   ratio = smartarray / cub time (target at 1e4: at most 1.10), vs_cub = cub / smartarray time.
// - BM_copy_d2d/<bytes>: sa::copy between two device-resident arrays against cudaMemcpyAsync and
//   a hand-written copy kernel of one 16-byte vector per thread, from 64 KiB to 1 GiB, device time
//   as BM_stream's. Counters: <contender>_GBps (bytes read and written), vs_best (smartarray's
//   bandwidth over the faster hand-written one's) and kernel_vs_memcpy (above 1: the kernel is
//   faster at that size; where it is, sa::copy should take it: detail::device_copy_kernel_max_bytes
//   in adapters/algorithms.hpp).
//
// Every iteration times each contender once, in an order that rotates from one iteration to the
// next; the manual time of an iteration is the smartarray contender's. Every figure is a ratio of
// medians of the same run, and the targets phase of scripts/gpu_check.sh repeats the runs in
// random interleaved order (targets_stream.json).
//
// Inputs are device-resident from the start (written by a kernel, never zero) and the hand-written
// contenders work on the SmartArrays' own device buffers. Checks, before the timed iterations:
// every contender's output against the one-thread-per-element kernel's, and the results of the
// reductions against each other; a failed check fails the run ("FAILED: ...") and the exit status.
//
// Runs on both backends: the hand-written calls go through `Raw` (bench_support.cuh), the CUDA
// runtime on the cuda backend; on the host backend one_pass and cub are a serial loop.
// `--quick` runs small sizes briefly (CTest's host.bench_stream_smoke).
#include <smartarray/smartarray.hpp>
#include <smartarray/runtime/detail/cuda_check.hpp>

#include "bench_main.hpp"
#include "bench_support.cuh"
// bench_stream's parts, included by this file only.
#include "stream_data.cuh"
#include "stream_kernels.cuh"
#include "stream_reductions.cuh"
#include "stream_timing.cuh"

#include <benchmark/benchmark.h>
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime_api.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::bench::Raw;

namespace {

using sa::bench::fail_run;

// --- BM_stream/<op>/<type>/<n> -------------------------------------------------------------------

enum class StreamOp { copy, scale, add, triad, nstream };

/// The three arrays of STREAM, device-resident, and their device buffers for the hand-written
/// contenders.
template <typename T>
struct StreamArrays {
  StreamArrays(std::size_t n, const Raw& raw, sa::StreamRef stream)
      : a(device_values<T>(n, 1, raw, stream)),
        b(device_values<T>(n, 2, raw, stream)),
        c(device_values<T>(n, 3, raw, stream)),
        pa(a.device_view(Access::read_write, stream).data()),
        pb(b.device_view(Access::read_write, stream).data()),
        pc(c.device_view(Access::read_write, stream).data()) {}
  SmartArray<T> a, b, c;
  T* pa;
  T* pb;
  T* pc;
};

/// The four contenders of one STREAM kernel: smartarray's `transform`, the hand-written `body`
/// over one thread per element and over one vector per thread, and the copy of one array.
template <typename T, typename Body>
std::vector<Contender> stream_contenders(const Raw& raw, std::size_t n, Body body,
                                         std::function<void()> transform, T* roof_to,
                                         const T* roof_from) {
  const std::size_t vectors = (n + Vector16<T>::lanes - 1) / Vector16<T>::lanes;
  return {{"smartarray", std::move(transform)},
          {"kernel", [&raw, n, body] { raw.launch(n, body); }},
          {"kernel_vec",
           [&raw, vectors, n, body] { raw.launch(vectors, hand::ByVectors<T, Body>{body, n}); }},
          {"memcpy",
           [&raw, n, roof_to, roof_from] {
             raw.copy_on_device_async(roof_to, roof_from, n * sizeof(T));
           }}};
}

template <typename T>
void stream_kernel(benchmark::State& state, StreamOp op) {
  const auto n = static_cast<std::size_t>(state.range(0));
  sa::Stream stream;
  const Raw raw(stream);
  StreamArrays<T> x(n, raw, stream);
  const T s = 3;
  std::vector<Contender> contenders;
  T* out = nullptr;  // the array the kernel writes
  double arrays = 0;  // arrays read or written per call
  switch (op) {
    case StreamOp::copy:
      contenders = stream_contenders<T>(
          raw, n, hand::Copy<T>{x.pa, x.pc},
          [&] { sa::transform(sa::out(x.c), Copy<T>{}, x.a, stream); }, x.pc, x.pa);
      out = x.pc, arrays = 2;
      break;
    case StreamOp::scale:
      contenders = stream_contenders<T>(
          raw, n, hand::Scale<T>{x.pb, x.pc, s},
          [&] { sa::transform(sa::out(x.b), Scale<T>{}, s, x.c, stream); }, x.pb, x.pc);
      out = x.pb, arrays = 2;
      break;
    case StreamOp::add:
      contenders = stream_contenders<T>(
          raw, n, hand::Add<T>{x.pa, x.pb, x.pc},
          [&] { sa::transform(sa::out(x.c), Add<T>{}, x.a, x.b, stream); }, x.pc, x.pa);
      out = x.pc, arrays = 3;
      break;
    case StreamOp::triad:
      contenders = stream_contenders<T>(
          raw, n, hand::Triad<T>{x.pa, x.pb, x.pc, s},
          [&] { sa::transform(sa::out(x.a), Triad<T>{}, x.b, s, x.c, stream); }, x.pa, x.pb);
      out = x.pa, arrays = 3;
      break;
    case StreamOp::nstream:
      contenders = stream_contenders<T>(
          raw, n, hand::Nstream<T>{x.pa, x.pb, x.pc, s},
          [&] { sa::transform(x.a, Nstream<T>{}, x.a, x.b, s, x.c, stream); }, x.pa, x.pb);
      out = x.pa, arrays = 4;
      break;
  }
  // Check: each kernel from the same output contents (nstream reads its output) against the
  // one-thread-per-element kernel's result.
  {
    const DeviceBuffer<T> initial(raw, n);
    const DeviceBuffer<T> expected(raw, n);
    raw.copy_on_device_async(initial.get(), out, n * sizeof(T));
    const auto reset = [&] { raw.copy_on_device_async(out, initial.get(), n * sizeof(T)); };
    contenders[1].call();
    raw.copy_on_device_async(expected.get(), out, n * sizeof(T));
    for (const std::size_t k : {std::size_t{0}, std::size_t{2}}) {
      reset();
      contenders[k].call();
      if (!same_values(raw, out, expected.get(), n)) {
        return fail_run(state, contenders[k].name + " differs from kernel");
      }
    }
    reset();
    raw.synchronize();
  }
  BatchTimer timer(stream);
  const std::vector<double> t = interleave(state, contenders, timer, batch);
  const double bytes = arrays * static_cast<double>(n * sizeof(T));
  state.SetBytesProcessed(
      static_cast<std::int64_t>(static_cast<double>(state.iterations() * batch) * bytes));
  const double roof_bytes = 2.0 * static_cast<double>(n * sizeof(T));
  state.counters["smartarray_GBps"] = gbps(bytes, t[0]);
  state.counters["kernel_GBps"] = gbps(bytes, t[1]);
  state.counters["kernel_vec_GBps"] = gbps(bytes, t[2]);
  state.counters["memcpy_GBps"] = gbps(roof_bytes, t[3]);
  state.counters["vs_kernel"] = t[1] / t[0];
  state.counters["vs_kernel_vec"] = t[2] / t[0];
  state.counters["vs_best"] = std::min(t[1], t[2]) / t[0];
  state.counters["vec_vs_kernel"] = t[1] / t[2];
  state.counters["of_roof"] = gbps(bytes, t[0]) / gbps(roof_bytes, t[3]);
}

// --- BM_stream/dot/<type>/<n> --------------------------------------------------------------------

template <typename T>
void stream_dot(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  sa::Stream stream;
  const Raw raw(stream);
  const SmartArray<T> a = device_values<T>(n, 1, raw, stream);
  const SmartArray<T> b = device_values<T>(n, 2, raw, stream);
  const T* pa = a.device_view(stream).data();
  const T* pb = b.device_view(stream).data();
  const cudaStream_t s = stream.ref().cuda_stream();
  // The hand-written contenders' scratch, allocated once: the one-pass kernel's partials (one per
  // block of a grid that fills the device) and arrival counter, CUB's temporary storage, the
  // result on the device and in pinned memory.
  unsigned grid = 1;
  std::size_t cub_bytes = 1;
  const auto products = thrust::make_transform_iterator(thrust::counting_iterator<std::size_t>(0),
                                                        Product<T>{pa, pb});
  if (raw.cuda()) {
    int per_sm = 0;
    SMARTARRAY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                            &per_sm, dot_one_pass_kernel<T>, dot_block, 0),
                        "the occupancy of the one-pass dot");
    grid = static_cast<unsigned>(per_sm * sa::device_properties().multiprocessor_count);
    SMARTARRAY_CUDA_TRY(cub::DeviceReduce::Reduce(nullptr, cub_bytes, products,
                                                  static_cast<T*>(nullptr), static_cast<int>(n),
                                                  Plus{}, T{0}, s),
                        "size CUB's temporary storage");
  }
  const DeviceBuffer<T> partials(raw, grid);
  const DeviceBuffer<unsigned> arrived(raw, 1);
  const DeviceBuffer<std::byte> cub_temp(raw, cub_bytes);
  const DeviceBuffer<T> result(raw, 1);
  const PinnedBuffer<T> host(raw, 1);
  if (raw.cuda()) {
    SMARTARRAY_CUDA_TRY(cudaMemsetAsync(arrived.get(), 0, sizeof(unsigned), s), "zero a counter");
  }
  T sums[3] = {};
  const auto back_to_host = [&](T& sum) {
    raw.copy_to_host_async(host.get(), result.get(), sizeof(T));
    raw.synchronize();
    sum = *host.get();
  };
  const std::vector<Contender> contenders{
      {"smartarray", [&] { sums[0] = sa::transform_reduce(a, b, T{0}, Plus{}, Times{}, stream); }},
      {"one_pass",
       [&] {
         if (raw.cuda()) {
           dot_one_pass_kernel<T><<<grid, dot_block, 0, s>>>(pa, pb, n, partials.get(),
                                                             arrived.get(), result.get());
           SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch the one-pass dot");
         } else {
           raw.launch(1, SerialSum<T>{pa, pb, n, result.get()});
         }
         back_to_host(sums[1]);
       }},
      {"cub", [&] {
         if (raw.cuda()) {
           std::size_t bytes = cub_bytes;
           SMARTARRAY_CUDA_TRY(cub::DeviceReduce::Reduce(cub_temp.get(), bytes, products,
                                                         result.get(), static_cast<int>(n), Plus{},
                                                         T{0}, s),
                               "CUB's dot");
         } else {
           raw.launch(1, SerialSum<T>{pa, pb, n, result.get()});
         }
         back_to_host(sums[2]);
       }}};
  for (const Contender& c : contenders) c.call();
  if (!same_sum(sums[0], sums[1]) || !same_sum(sums[2], sums[1])) {
    return fail_run(state, "the dot products differ: smartarray " + std::to_string(sums[0]) +
                           ", one_pass " + std::to_string(sums[1]) + ", cub " +
                           std::to_string(sums[2]));
  }
  const std::vector<double> t = interleave(state, contenders, round_trip_seconds, 1);
  const double bytes = 2.0 * static_cast<double>(n * sizeof(T));
  state.SetBytesProcessed(
      static_cast<std::int64_t>(static_cast<double>(state.iterations()) * bytes));
  state.counters["smartarray_GBps"] = gbps(bytes, t[0]);
  state.counters["one_pass_GBps"] = gbps(bytes, t[1]);
  state.counters["cub_GBps"] = gbps(bytes, t[2]);
  state.counters["vs_one_pass"] = t[1] / t[0];
  state.counters["vs_cub"] = t[2] / t[0];
}

// --- BM_reduce/<device|round_trip>/float/<n> -----------------------------------------------------

void reduce_device(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  sa::Stream stream;
  Reductions r(n, stream);
  const float want = r.cub_sum_to_host();
  const SmartArray<float> result = sa::reduce_async(r.array(), 0.0F, Plus{}, stream);
  const float got = result.host_view()[0];
  if (!same_sum(got, want)) {
    return fail_run(state, "reduce_async's sum " + std::to_string(got) + " differs from CUB's " +
                           std::to_string(want));
  }
  const std::vector<Contender> contenders{
      {"smartarray",
       [&] {
         const SmartArray<float> sum = sa::reduce_async(r.array(), 0.0F, Plus{}, stream);
         benchmark::DoNotOptimize(sum);
       }},
      {"cub", [&] { r.cub_sum(); }}};
  BatchTimer timer(stream);
  const std::vector<double> t = interleave(state, contenders, timer, batch);
  const double bytes = static_cast<double>(n * sizeof(float));
  state.SetBytesProcessed(
      static_cast<std::int64_t>(static_cast<double>(state.iterations() * batch) * bytes));
  state.counters["smartarray_GBps"] = gbps(bytes, t[0]);
  state.counters["cub_GBps"] = gbps(bytes, t[1]);
  state.counters["vs_cub"] = t[1] / t[0];
}

void reduce_round_trip(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  sa::Stream stream;
  Reductions r(n, stream);
  float sums[2] = {};
  const std::vector<Contender> contenders{
      {"smartarray", [&] { sums[0] = sa::reduce(r.array(), 0.0F, Plus{}, stream); }},
      {"cub", [&] { sums[1] = r.cub_sum_to_host(); }}};
  for (const Contender& c : contenders) c.call();
  if (!same_sum(sums[0], sums[1])) {
    return fail_run(state, "reduce's sum " + std::to_string(sums[0]) + " differs from CUB's " +
                           std::to_string(sums[1]));
  }
  const std::vector<double> t = interleave(state, contenders, round_trip_seconds, 1);
  state.SetBytesProcessed(static_cast<std::int64_t>(
      static_cast<double>(state.iterations()) * static_cast<double>(n * sizeof(float))));
  state.counters["smartarray_us"] = t[0] * 1e6;
  state.counters["cub_us"] = t[1] * 1e6;
  state.counters["ratio"] = t[0] / t[1];
  state.counters["vs_cub"] = t[1] / t[0];
}

// --- BM_copy_d2d/<bytes> -------------------------------------------------------------------------

void copy_d2d(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::size_t n = bytes / sizeof(float);
  sa::Stream stream;
  const Raw raw(stream);
  const SmartArray<float> src = device_values<float>(n, 1, raw, stream);
  SmartArray<float> dst = device_values<float>(n, 2, raw, stream);
  const float* from = src.device_view(stream).data();
  float* to = dst.device_view(Access::read_write, stream).data();
  const std::size_t vectors = bytes / sizeof(Vector16<float>);
  const std::vector<Contender> contenders{
      {"smartarray", [&] { sa::copy(dst, src, stream); }},
      {"memcpy", [&] { raw.copy_on_device_async(to, from, bytes); }},
      {"kernel", [&] {
         raw.launch(vectors, hand::ByVectors<float, hand::Copy<float>>{{from, to}, n});
       }}};
  for (const Contender& c : contenders) {
    raw.launch(n, Hash<float>{to, 9});
    c.call();
    if (!same_values(raw, to, from, n)) return fail_run(state, c.name + " copied wrong values");
  }
  BatchTimer timer(stream);
  const std::vector<double> t = interleave(state, contenders, timer, batch);
  const double moved = 2.0 * static_cast<double>(bytes);
  state.SetBytesProcessed(
      static_cast<std::int64_t>(static_cast<double>(state.iterations() * batch) * moved));
  state.counters["smartarray_GBps"] = gbps(moved, t[0]);
  state.counters["memcpy_GBps"] = gbps(moved, t[1]);
  state.counters["kernel_GBps"] = gbps(moved, t[2]);
  state.counters["vs_best"] = std::min(t[1], t[2]) / t[0];
  state.counters["kernel_vs_memcpy"] = t[1] / t[2];
}

// --- registration --------------------------------------------------------------------------------

struct Sizes {
  std::vector<std::int64_t> stream;      // elements
  std::vector<std::int64_t> reduce;      // elements, device time
  std::vector<std::int64_t> round_trip;  // elements, result to the host
  std::vector<std::int64_t> copy;        // bytes, multiples of 16
};

/// The published run.
const Sizes full_sizes{{std::int64_t{1} << 25, std::int64_t{1} << 27},
                       {std::int64_t{1} << 25},
                       {10'000, std::int64_t{1} << 25},
                       {std::int64_t{1} << 16, std::int64_t{1} << 18, std::int64_t{1} << 20,
                        std::int64_t{1} << 22, std::int64_t{1} << 24, std::int64_t{1} << 26,
                        std::int64_t{1} << 28, std::int64_t{1} << 30}};
/// CTest's smoke (--quick): a size with a short last vector, and one without.
const Sizes quick_sizes{{(std::int64_t{1} << 12) + 3, std::int64_t{1} << 14},
                        {std::int64_t{1} << 14},
                        {10'000},
                        {std::int64_t{1} << 16}};

template <typename T>
void register_type(const Sizes& sizes) {
  const std::pair<const char*, StreamOp> ops[] = {{"copy", StreamOp::copy},
                                                  {"scale", StreamOp::scale},
                                                  {"add", StreamOp::add},
                                                  {"triad", StreamOp::triad},
                                                  {"nstream", StreamOp::nstream}};
  for (const auto& [name, op] : ops) {
    auto* b = benchmark::RegisterBenchmark(
        (std::string("BM_stream/") + name + "/" + type_name<T>()).c_str(),
        [op = op](benchmark::State& state) { stream_kernel<T>(state, op); });
    for (const std::int64_t n : sizes.stream) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  auto* dot = benchmark::RegisterBenchmark(
      (std::string("BM_stream/dot/") + type_name<T>()).c_str(), stream_dot<T>);
  for (const std::int64_t n : sizes.stream) dot->Arg(n);
  dot->UseManualTime()->Unit(benchmark::kMicrosecond);
}

void register_all(const Sizes& sizes) {
  register_type<double>(sizes);
  register_type<float>(sizes);
  auto* device = benchmark::RegisterBenchmark("BM_reduce/device/float", reduce_device);
  for (const std::int64_t n : sizes.reduce) device->Arg(n);
  device->UseManualTime()->Unit(benchmark::kMicrosecond);
  auto* round_trip = benchmark::RegisterBenchmark("BM_reduce/round_trip/float", reduce_round_trip);
  for (const std::int64_t n : sizes.round_trip) round_trip->Arg(n);
  round_trip->UseManualTime()->Unit(benchmark::kMicrosecond);
  auto* copy = benchmark::RegisterBenchmark("BM_copy_d2d", copy_d2d);
  for (const std::int64_t bytes : sizes.copy) copy->Arg(bytes);
  copy->UseManualTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

/// bench_stream [--quick] [Google Benchmark flags]: the published run, or with --quick small sizes
/// and short runs (CTest's host.bench_stream_smoke). Exits non-zero when a run fails its checks.
int main(int argc, char** argv) {
  return sa::bench::run_main(
      argc, argv, [](bool quick) { register_all(quick ? quick_sizes : full_sizes); },
      &sa::bench::failed_runs);
}