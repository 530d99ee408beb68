// Concurrency by range: kernels on disjoint halves of one array, on two streams.
//
// - BM_DisjointHalves: a compute-bound kernel over one half of an array, its grid limited to half
//   the SMs (one block per SM), so that two of them fill the GPU side by side. Contenders, each
//   timed once per iteration in rotating order (CUDA events around the whole of it):
//     smartarray_one    sa::launch over a.slice(0, n/2) on stream 1;
//     smartarray_both   the same, and sa::launch over a.slice(n/2, n/2) on stream 2;
//     hand_one, hand_both  the same kernels on raw device pointers, launched by hand.
//   Counters: each contender's median time (us), ratio = smartarray_both / smartarray_one
//   (target: at most 1.10: the second half runs beside the first), hand_ratio the same for the
//   hand-written launches (what the GPU allows), and both_vs_hand = smartarray_both / hand_both.
// - BM_PrefetchThenRead: a kernel writes an array of n floats (64 MiB at 2^24), its copy to the
//   host starts, the host works for 1 ms, then reads (sums) the whole array. Contenders, alternated
//   in every iteration, each timed from the end of the 1 ms to the end of the read:
//     smartarray  a.prefetch_to_host(stream), then a loop over std::as_const(a).host_view() (the
//                 view waits for the prefetch's copy; the loop reads host-valid data);
//     hand        cudaMemcpyAsync into pinned memory and an event, then cudaEventSynchronize and
//                 the same loop: a read of host-valid data plus the wait for the copy's remainder;
//     pool        the hand-written calls into a block of smartarray's pinned pool
//                 (sa::pinned_resource()) instead of cudaMallocHost memory: it tells a cost of the
//                 pool's memory from a cost of smartarray's calls;
//     array       the hand-written calls into the array's own host buffer (outside smartarray's
//                 bookkeeping: the array's next call writes the device copy whole, so the bytes
//                 written here are stale by then): it tells a cost of that buffer's memory from a
//                 cost of the calls.
//   Counters: smartarray_us, hand_us (medians), ratio = smartarray / hand (target: at most 1.10);
//   for each contender (smartarray_*, hand_*, pool_*, array_*) the median of its wait (*_wait_us:
//   the first host access, or the event synchronize), its read (*_read_us), the reading thread's
//   and the whole process's CPU time during the read (*_read_thread_cpu_us,
//   *_read_process_cpu_us), the reading thread's time runnable but not running during the read
//   (*_read_runqueue_us, from /proc/thread-self/schedstat; -1 where there is none) and, outside
//   the timed part, the read's minor page faults (*_read_faults) and the time of the same read
//   again (*_reread_us); and prefetch_call_us (the host time of the prefetch_to_host call),
//   host_pinned (1 when the array's host copy is pinned memory), host_flags (cudaHostGetFlags of
//   it), the NUMA node of each host buffer (*_node) and the calls whose host view was at another
//   address than the call before (smartarray_host_moves). Each call is checked: one D2H of the
//   whole array, and the sum of the values written.
#include "bench_main.hpp"
#include "bench_support.cuh"

#include <smartarray/runtime/detail/cuda_check.hpp>
#include <smartarray/smartarray.hpp>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::bench::median;
using sa::bench::need_cuda;

namespace {

/// `rounds` dependent multiply-adds per element, through a grid-stride loop: the SMs' arithmetic,
/// not the memory, bounds it.
__global__ void busy_kernel(sa::DeviceView<float> v, int rounds) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < v.size(); i += stride) {
    float x = v[i];
    for (int r = 0; r < rounds; ++r) x = x * 0.999F + 0.001F;
    v[i] = x;
  }
}

/// The hand-written launch: the same kernel body on a raw pointer.
__global__ void busy_raw(float* v, std::size_t n, int rounds) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    float x = v[i];
    for (int r = 0; r < rounds; ++r) x = x * 0.999F + 0.001F;
    v[i] = x;
  }
}

/// The time of `work` (queued on `first` and `second`) from an event on `first` until both
/// streams are done, in microseconds.
class PairTimer {
 public:
  PairTimer(cudaStream_t first, cudaStream_t second) : first_(first), second_(second) {
    for (cudaEvent_t* event : {&start_, &joined_, &stop_}) {
      SMARTARRAY_CUDA_TRY(cudaEventCreate(event), "create a timing event");
    }
  }
  ~PairTimer() {
    for (cudaEvent_t event : {start_, joined_, stop_}) cudaEventDestroy(event);
  }
  PairTimer(const PairTimer&) = delete;
  PairTimer& operator=(const PairTimer&) = delete;

  double time(const std::function<void()>& work) {
    SMARTARRAY_CUDA_TRY(cudaEventRecord(start_, first_), "record the start");
    SMARTARRAY_CUDA_TRY(cudaStreamWaitEvent(second_, start_), "start the second stream");
    work();
    SMARTARRAY_CUDA_TRY(cudaEventRecord(joined_, second_), "record the second stream's end");
    SMARTARRAY_CUDA_TRY(cudaStreamWaitEvent(first_, joined_), "join the second stream");
    SMARTARRAY_CUDA_TRY(cudaEventRecord(stop_, first_), "record the stop");
    SMARTARRAY_CUDA_TRY(cudaEventSynchronize(stop_), "wait for the stop");
    float ms = 0;
    SMARTARRAY_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_), "read the time");
    return static_cast<double>(ms) * 1000.0;
  }

 private:
  cudaStream_t first_;
  cudaStream_t second_;
  cudaEvent_t start_{};
  cudaEvent_t joined_{};
  cudaEvent_t stop_{};
};

void BM_DisjointHalves(benchmark::State& state) {
  if (!need_cuda(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const int rounds = static_cast<int>(state.range(1));
  const std::size_t half_n = n / 2;
  const int sms = sa::device_properties().multiprocessor_count;
  const int grid = std::max(1, sms / 2);  // half_n the SMs, one block each
  constexpr int block = 1024;
  sa::Stream s1;
  sa::Stream s2;
  const auto first = static_cast<cudaStream_t>(static_cast<sa::StreamRef>(s1).handle());
  const auto second = static_cast<cudaStream_t>(static_cast<sa::StreamRef>(s2).handle());
  sa::SmartArray<float> a(sa::bench::random_floats(n));
  float* raw = nullptr;
  SMARTARRAY_CUDA_TRY(cudaMalloc(&raw, n * sizeof(float)), "allocate the hand-written array");
  SMARTARRAY_CUDA_TRY(cudaMemset(raw, 0, n * sizeof(float)), "clear the hand-written array");
  (void)a.device_view(Access::read_write, s1);
  SMARTARRAY_CUDA_TRY(cudaDeviceSynchronize(), "settle");
  PairTimer timer(first, second);
  const std::vector<std::function<void()>> contenders{
      [&] { sa::launch(busy_kernel, grid, block, s1, a.slice(0, half_n), rounds); },
      [&] {
        sa::launch(busy_kernel, grid, block, s1, a.slice(0, half_n), rounds);
        sa::launch(busy_kernel, grid, block, s2, a.slice(half_n, n - half_n), rounds);
      },
      [&] { busy_raw<<<grid, block, 0, first>>>(raw, half_n, rounds); },
      [&] {
        busy_raw<<<grid, block, 0, first>>>(raw, half_n, rounds);
        busy_raw<<<grid, block, 0, second>>>(raw + half_n, n - half_n, rounds);
      },
  };
  std::vector<std::vector<double>> samples(contenders.size());
  for (std::size_t c = 0; c < contenders.size(); ++c) timer.time(contenders[c]);  // warm up
  std::size_t turn = 0;
  for (auto _ : state) {
    double total = 0;
    for (std::size_t k = 0; k < contenders.size(); ++k) {
      const std::size_t c = (turn + k) % contenders.size();
      const double us = timer.time(contenders[c]);
      samples[c].push_back(us);
      total += us;
    }
    ++turn;
    state.SetIterationTime(total / 1e6);
  }
  SMARTARRAY_CUDA_TRY(cudaFree(raw), "free the hand-written array");
  const double one = median(samples[0]);
  const double both = median(samples[1]);
  const double hand_one = median(samples[2]);
  const double hand_both = median(samples[3]);
  state.counters["smartarray_one_us"] = one;
  state.counters["smartarray_both_us"] = both;
  state.counters["hand_one_us"] = hand_one;
  state.counters["hand_both_us"] = hand_both;
  state.counters["ratio"] = both / one;
  state.counters["hand_ratio"] = hand_both / hand_one;
  state.counters["both_vs_hand"] = both / hand_both;
}

/// v[i] = seed + (i % 1024): fresh values in every call, the same on both sides.
__global__ void write_kernel(sa::DeviceView<float> v, float seed) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < v.size()) v[i] = seed + static_cast<float>(i % 1024);
}
__global__ void write_raw(float* v, std::size_t n, float seed) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) v[i] = seed + static_cast<float>(i % 1024);
}

/// The host's other work: 1 ms of spinning.
void work_for_1ms() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
  while (std::chrono::steady_clock::now() < until) {
  }
}

/// The user and system CPU time between two getrusage() calls, in microseconds.
double cpu_us_between(const rusage& before, const rusage& after) {
  const auto us = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + t.tv_usec; };
  return us(after.ru_utime) - us(before.ru_utime) + us(after.ru_stime) - us(before.ru_stime);
}

/// The calling thread's time runnable but waiting for a CPU so far, in microseconds (the second
/// field of /proc/thread-self/schedstat), or -1 where the kernel does not say.
double runqueue_us() {
  std::FILE* file = std::fopen("/proc/thread-self/schedstat", "r");
  if (file == nullptr) return -1.0;
  unsigned long long running = 0;
  unsigned long long waiting = 0;
  const int got = std::fscanf(file, "%llu %llu", &running, &waiting);
  std::fclose(file);
  return got == 2 ? static_cast<double>(waiting) / 1e3 : -1.0;
}

template <typename Range>
double sum_of(const Range& values) {
  double sum = 0;
  for (const float x : values) sum += x;
  return sum;
}

void BM_PrefetchThenRead(benchmark::State& state) {
  if (!need_cuda(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::size_t bytes = n * sizeof(float);
  constexpr unsigned block = 256;
  const auto grid = static_cast<unsigned>((n + block - 1) / block);
  sa::Stream s;
  const auto stream = static_cast<cudaStream_t>(static_cast<sa::StreamRef>(s).handle());
  sa::SmartArray<float> a(sa::bench::random_floats(n));
  float* device = nullptr;
  float* pinned = nullptr;
  auto* const pool_block = static_cast<float*>(sa::pinned_resource().allocate_sync(bytes));
  cudaEvent_t copied{};
  SMARTARRAY_CUDA_TRY(cudaMalloc(&device, bytes), "allocate the hand-written device array");
  SMARTARRAY_CUDA_TRY(cudaMallocHost(&pinned, bytes), "allocate the hand-written host array");
  SMARTARRAY_CUDA_TRY(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming), "create an event");
  using Clock = std::chrono::steady_clock;
  float seed = 1.0F;
  // The exact sum of write_kernel's values (n is a multiple of 1024; every term is an integer).
  const auto expected = [&] {
    return static_cast<double>(n) * seed + static_cast<double>(n / 1024) * (1023.0 * 1024 / 2);
  };
  // One call of each contender: the host time of the prefetch call (smartarray), and from the end
  // of the 1 ms of other work, the wait for the copy (the first host access, for smartarray) and
  // the read of host-valid data.
  struct Sample {
    double prefetch_us = 0;
    double wait_us = 0;
    double read_us = 0;
    double read_faults = 0;          ///< the minor page faults the read took
    double read_thread_cpu_us = 0;   ///< the reading thread's CPU time during the read
    double read_process_cpu_us = 0;  ///< every thread's CPU time during the read
    double read_runqueue_us = 0;     ///< the reading thread's time waiting for a CPU in the read
    double reread_us = 0;            ///< the same read again, of the same (now warm) data
  };
  // The read of `values` into `sample`: its time, its page faults, and the time of a second read.
  const auto read_into = [&](Sample& sample, std::span<const float> values) {
    rusage before{};
    rusage thread_before{};
    getrusage(RUSAGE_SELF, &before);
    getrusage(RUSAGE_THREAD, &thread_before);
    const double queued_before = runqueue_us();
    const auto read = Clock::now();
    const double sum = sum_of(values);
    sample.read_us = sa::bench::micros_since(read);
    const double queued_after = runqueue_us();
    sample.read_runqueue_us = queued_before < 0 ? -1.0 : queued_after - queued_before;
    rusage after{};
    rusage thread_after{};
    getrusage(RUSAGE_THREAD, &thread_after);
    getrusage(RUSAGE_SELF, &after);
    sample.read_faults = static_cast<double>(after.ru_minflt - before.ru_minflt);
    sample.read_thread_cpu_us = cpu_us_between(thread_before, thread_after);
    sample.read_process_cpu_us = cpu_us_between(before, after);
    const auto again = Clock::now();
    const double second = sum_of(values);
    sample.reread_us = sa::bench::micros_since(again);
    return second == sum ? sum : -1.0;
  };
  const float* last_view = std::as_const(a).data();
  int host_moves = 0;
  const auto smartarray_call = [&] {
    Sample sample;
    sa::launch(write_kernel, grid, block, s, sa::out(a), seed);
    const std::uint64_t d2h = a.transfer_stats().d2h_count;
    const auto call = Clock::now();
    const sa::Prefetch prefetch = a.prefetch_to_host(s);
    sample.prefetch_us = sa::bench::micros_since(call);
    work_for_1ms();
    const auto start = Clock::now();
    const std::span<const float> values = std::as_const(a).host_view();
    sample.wait_us = sa::bench::micros_since(start);
    if (values.data() != last_view) ++host_moves;
    last_view = values.data();
    const double sum = read_into(sample, values);
    if (a.transfer_stats().d2h_count != d2h + 1) state.SkipWithError("not one D2H per call");
    if (sum != expected()) state.SkipWithError("smartarray's sum is wrong");
    return sample;
  };
  const auto hand_call = [&](float* host) {
    Sample sample;
    write_raw<<<grid, block, 0, stream>>>(device, n, seed);
    SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream),
                        "copy to the host");
    SMARTARRAY_CUDA_TRY(cudaEventRecord(copied, stream), "record the copy's end");
    work_for_1ms();
    const auto start = Clock::now();
    SMARTARRAY_CUDA_TRY(cudaEventSynchronize(copied), "wait for the copy");
    sample.wait_us = sa::bench::micros_since(start);
    const double sum = read_into(sample, std::span<const float>(host, n));
    if (sum != expected()) state.SkipWithError("the hand-written sum is wrong");
    return sample;
  };
  std::vector<Sample> smartarray_samples;
  std::vector<Sample> hand_samples;
  std::vector<Sample> pool_samples;
  std::vector<Sample> array_samples;
  auto* const array_buffer = const_cast<float*>(std::as_const(a).data());
  const std::vector<std::function<void()>> contenders{
      [&] { array_samples.push_back(hand_call(array_buffer)); },
      [&] { smartarray_samples.push_back(smartarray_call()); },
      [&] { hand_samples.push_back(hand_call(pinned)); },
      [&] { pool_samples.push_back(hand_call(pool_block)); },
  };
  for (const auto& contender : contenders) contender();  // warm up each
  smartarray_samples.clear();
  host_moves = 0;
  hand_samples.clear();
  pool_samples.clear();
  array_samples.clear();
  std::size_t turn = 0;
  for (auto _ : state) {
    for (std::size_t k = 0; k < contenders.size(); ++k) {
      contenders[(turn + k) % contenders.size()]();
    }
    ++turn;
    seed += 1.0F;
    double total = 0;
    for (const auto* samples :
         {&smartarray_samples, &hand_samples, &pool_samples, &array_samples}) {
      total += samples->back().wait_us + samples->back().read_us;
    }
    state.SetIterationTime(total / 1e6);
  }
  // Whether the array's host copy is pinned memory, as the hand-written one is.
  cudaPointerAttributes where{};
  SMARTARRAY_CUDA_TRY(cudaPointerGetAttributes(&where, std::as_const(a).data()),
                      "ask where the host copy is");
  SMARTARRAY_CUDA_TRY(cudaEventDestroy(copied), "destroy the event");
  // The NUMA node of each host buffer's first page (-1 where the kernel does not say).
  const auto node_of = [](const void* address) {
    int node = -1;
    const long got = syscall(SYS_get_mempolicy, &node, nullptr, 0UL, const_cast<void*>(address),
                             3UL /* MPOL_F_NODE | MPOL_F_ADDR */);
    return got == 0 ? static_cast<double>(node) : -1.0;
  };
  state.counters["array_node"] = node_of(std::as_const(a).data());
  state.counters["hand_node"] = node_of(pinned);
  state.counters["pool_node"] = node_of(pool_block);
  SMARTARRAY_CUDA_TRY(cudaFreeHost(pinned), "free the hand-written host array");
  sa::pinned_resource().deallocate_sync(pool_block, bytes);
  SMARTARRAY_CUDA_TRY(cudaFree(device), "free the hand-written device array");
  const auto median_of = [](const std::vector<Sample>& samples, double Sample::*part) {
    std::vector<double> values;
    for (const Sample& sample : samples) values.push_back(sample.*part);
    return median(values);
  };
  std::vector<double> smartarray_total;
  std::vector<double> hand_total;
  for (const Sample& x : smartarray_samples) smartarray_total.push_back(x.wait_us + x.read_us);
  for (const Sample& y : hand_samples) hand_total.push_back(y.wait_us + y.read_us);
  state.counters["smartarray_us"] = median(smartarray_total);
  state.counters["hand_us"] = median(hand_total);
  state.counters["ratio"] = median(smartarray_total) / median(hand_total);
  // Each part's median, for each contender: <contender>_<part>.
  const std::pair<const char*, const std::vector<Sample>*> contender_samples[] = {
      {"smartarray", &smartarray_samples},
      {"hand", &hand_samples},
      {"pool", &pool_samples},
      {"array", &array_samples}};
  const std::pair<const char*, double Sample::*> parts[] = {
      {"wait_us", &Sample::wait_us},
      {"read_us", &Sample::read_us},
      {"reread_us", &Sample::reread_us},
      {"read_faults", &Sample::read_faults},
      {"read_thread_cpu_us", &Sample::read_thread_cpu_us},
      {"read_process_cpu_us", &Sample::read_process_cpu_us},
      {"read_runqueue_us", &Sample::read_runqueue_us}};
  for (const auto& [contender, samples] : contender_samples) {
    for (const auto& [part, member] : parts) {
      state.counters[std::string(contender) + "_" + part] = median_of(*samples, member);
    }
  }
  state.counters["prefetch_call_us"] = median_of(smartarray_samples, &Sample::prefetch_us);
  state.counters["host_pinned"] = where.type == cudaMemoryTypeHost ? 1 : 0;
  state.counters["smartarray_host_moves"] = host_moves;
  // cudaHostAlloc's flags of the host copy's block (-1 where the driver does not say).
  unsigned flags = 0;
  state.counters["host_flags"] =
      cudaHostGetFlags(&flags, const_cast<float*>(std::as_const(a).data())) == cudaSuccess
          ? static_cast<double>(flags)
          : -1.0;
  (void)cudaGetLastError();
}

void register_benchmarks(bool quick) {
  auto* b = benchmark::RegisterBenchmark("BM_DisjointHalves", BM_DisjointHalves)
                ->UseManualTime()
                ->Unit(benchmark::kMicrosecond);
  if (quick) {
    b->Args({1 << 16, 16});
  } else {
    b->Args({1 << 24, 256});
  }
  auto* prefetch = benchmark::RegisterBenchmark("BM_PrefetchThenRead", BM_PrefetchThenRead)
                       ->UseManualTime()
                       ->Unit(benchmark::kMicrosecond);
  prefetch->Arg(quick ? 1 << 16 : 1 << 24);
}

}  // namespace

int main(int argc, char** argv) {
  return sa::bench::run_main(argc, argv, register_benchmarks, &sa::bench::failed_runs);
}
