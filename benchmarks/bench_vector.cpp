// SmartArray<float> against std::vector<float> on host-valid data, both measured in the same run:
// each benchmark times the std::vector body and the SmartArray body alternately in every iteration
// and reports
// - `std_ns` and `smart_ns`: nanoseconds per element (per insert for BM_insert_middle);
// - `ratio`: SmartArray time over std::vector time (1.00 = as fast; the targets are 1.10
//   for push_back, range-for and sort, 1.5 for operator[]).
// The benchmark's own time column is the SmartArray time. Sizes 1e3, 1e6 and 1e8 elements; a size
// that does not fit in the available memory is skipped with the reason. Host code only: it builds
// with g++ and runs on either backend (on cuda the host copy is pinned, pooled memory).
#include "bench_main.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <random>
#include <smartarray/core/smart_array.hpp>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace sa = smartarray;

namespace {

using Clock = std::chrono::steady_clock;

/// Seconds that `body` takes.
template <typename Body>
double seconds(Body&& body) {
  const auto start = Clock::now();
  body();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Repetitions of a body over `n` elements that make one timed region last about 100 us or more,
/// so that the clock's overhead stays below 1%.
std::size_t repetitions(std::size_t n) { return std::max<std::size_t>(1, 100'000 / n); }

/// Bytes of memory the kernel reports available.
std::size_t available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    std::size_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

/// Skips the benchmark when `arrays` arrays of `n` floats (with growth slack) do not fit in memory.
bool skip_without_memory(benchmark::State& state, std::size_t n, std::size_t arrays) {
  const std::size_t needed = arrays * n * sizeof(float) * 5 / 4;
  const std::size_t available = available_bytes();
  if (available >= needed) return false;
  state.SkipWithError(("needs " + std::to_string(needed >> 20) + " MiB of memory, " +
                       std::to_string(available >> 20) + " MiB available")
                          .c_str());
  return true;
}

std::vector<float> random_floats(std::size_t n) {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(0.5F, 100.0F);
  std::vector<float> out(n);
  for (float& x : out) x = dist(rng);
  return out;
}

/// The two timings of one benchmark, reported per element together with their ratio.
struct Pair {
  double std_s = 0;
  double smart_s = 0;

  /// Times one iteration of each (std::vector first) and hands the SmartArray time to the state.
  template <typename StdBody, typename SmartBody>
  void time(benchmark::State& state, StdBody&& std_body, SmartBody&& smart_body) {
    std_s += seconds(std_body);
    const double smart = seconds(smart_body);
    smart_s += smart;
    state.SetIterationTime(smart);
  }

  void report(benchmark::State& state, std::size_t items_per_iteration) const {
    const double items = static_cast<double>(state.iterations() * items_per_iteration);
    state.counters["std_ns"] = std_s * 1e9 / items;
    state.counters["smart_ns"] = smart_s * 1e9 / items;
    state.counters["ratio"] = smart_s / std_s;
    state.SetItemsProcessed(static_cast<std::int64_t>(items));
  }
};

// The measured loops are functions of their own, for both containers alike, so that register
// allocation does not depend on what the harness inlines around them.
template <typename Container>
[[gnu::noinline]] void push_back_n(std::size_t n, std::size_t reps) {
  for (std::size_t r = 0; r < reps; ++r) {
    Container c;
    for (std::size_t i = 0; i < n; ++i) c.push_back(static_cast<float>(i));
    benchmark::DoNotOptimize(c);
  }
}

/// push_back n times into an empty container, growth and destruction included. One untimed round
/// first, so that both measure the steady state (for SmartArray: a warm pinned pool).
void BM_push_back(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  if (skip_without_memory(state, n, 3)) return;
  const std::size_t reps = repetitions(n);
  push_back_n<std::vector<float>>(n, 1);
  push_back_n<sa::SmartArray<float>>(n, 1);
  Pair pair;
  for (auto _ : state) {
    pair.time(
        state, [&] { push_back_n<std::vector<float>>(n, reps); },
        [&] { push_back_n<sa::SmartArray<float>>(n, reps); });
  }
  pair.report(state, n * reps);
}

template <typename Container, typename Value>
[[gnu::noinline]] Value range_for_sum(Container& c, std::size_t reps) {
  Value total = 0;
  for (std::size_t r = 0; r < reps; ++r) {
    Value sum = 0;
    for (Value x : c) sum += x;  // a non-const container: SmartArray's begin() marks the host once
    total += sum;
  }
  return total;
}

template <typename Container, typename Value>
[[gnu::noinline]] Value index_sum(Container& c, std::size_t reps) {
  Value total = 0;
  for (std::size_t r = 0; r < reps; ++r) {
    Value sum = 0;
    for (std::size_t i = 0; i < c.size(); ++i) sum += c[i];
    total += sum;
  }
  return total;
}

/// A sum over host-valid data, through `sum(container, reps)`.
template <typename Value, typename Sum>
void sum_benchmark(benchmark::State& state, Sum sum) {
  const auto n = static_cast<std::size_t>(state.range(0));
  if (skip_without_memory(state, n * sizeof(Value) / sizeof(float), 2)) return;
  const std::size_t reps = repetitions(n);
  std::vector<Value> reference(n);
  for (std::size_t i = 0; i < n; ++i) reference[i] = static_cast<Value>(i % 1000 + 1);
  std::vector<Value> v(reference.begin(), reference.end());
  sa::SmartArray<Value> a(reference.begin(), reference.end());
  reference = {};
  Pair pair;
  for (auto _ : state) {
    pair.time(
        state, [&] { benchmark::DoNotOptimize(sum(v, reps)); },
        [&] { benchmark::DoNotOptimize(sum(a, reps)); });
  }
  pair.report(state, n * reps);
}

/// `for (float x : c) sum += x`. Float addition is not reassociated, so both loops are bound by
/// the latency of the adds.
void BM_range_for_sum(benchmark::State& state) {
  sum_benchmark<float>(state, [](auto& c, std::size_t reps) {
    return range_for_sum<std::remove_reference_t<decltype(c)>, float>(c, reps);
  });
}

/// `for (i) sum += c[i]` over floats.
void BM_index_sum(benchmark::State& state) {
  sum_benchmark<float>(state, [](auto& c, std::size_t reps) {
    return index_sum<std::remove_reference_t<decltype(c)>, float>(c, reps);
  });
}

/// The range-for sum over 64-bit integers, which the compiler vectorizes over pointers.
void BM_range_for_sum_int(benchmark::State& state) {
  sum_benchmark<std::int64_t>(state, [](auto& c, std::size_t reps) {
    return range_for_sum<std::remove_reference_t<decltype(c)>, std::int64_t>(c, reps);
  });
}

/// `for (i) sum += c[i]` over 64-bit integers: std::vector's loop vectorizes; SmartArray's cannot,
/// because operator[]'s slow path is a call (docs/vector.md: use iterators or host_view() for
/// tight loops).
void BM_index_sum_int(benchmark::State& state) {
  sum_benchmark<std::int64_t>(state, [](auto& c, std::size_t reps) {
    return index_sum<std::remove_reference_t<decltype(c)>, std::int64_t>(c, reps);
  });
}

template <typename Container>
[[gnu::noinline]] void insert_middle(Container& c, std::size_t k) {
  for (std::size_t i = 0; i < k; ++i) c.insert(c.cbegin() + c.size() / 2, 1.5F);
}

template <typename Container>
[[gnu::noinline]] void sort_all(Container& c) {
  std::sort(c.begin(), c.end());
}

/// std::sort of random floats; the refill from the source is not timed.
void BM_sort(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  if (skip_without_memory(state, n, 3)) return;
  const std::vector<float> source = random_floats(n);
  std::vector<float> v(n);
  sa::SmartArray<float> a(n);
  Pair pair;
  for (auto _ : state) {
    std::copy(source.begin(), source.end(), v.begin());
    std::copy(source.begin(), source.end(), a.begin());
    pair.time(
        state, [&] { sort_all(v); }, [&] { sort_all(a); });
  }
  pair.report(state, n);
}

/// k inserts in the middle of an n-element array (each moves n/2 elements: O(n) per insert, so k
/// shrinks as n grows). Capacity is reserved, so that no insert reallocates; the refill is not
/// timed.
void BM_insert_middle(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  if (skip_without_memory(state, n, 3)) return;
  const std::size_t k = std::clamp<std::size_t>(10'000'000 / n, 1, 1000);
  const std::vector<float> source = random_floats(n);
  std::vector<float> v;
  sa::SmartArray<float> a;
  v.reserve(n + k);
  a.reserve(n + k);
  Pair pair;
  for (auto _ : state) {
    v.assign(source.begin(), source.end());
    a.assign(source.begin(), source.end());
    pair.time(
        state, [&] { insert_middle(v, k); }, [&] { insert_middle(a, k); });
    benchmark::DoNotOptimize(v.data());
    benchmark::DoNotOptimize(std::as_const(a).data());
  }
  pair.report(state, k);
}

void sizes(sa::bench::Benchmark* b) {
  b->Arg(1'000)->Arg(1'000'000)->Arg(100'000'000)->UseManualTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(BM_push_back)->Apply(sizes);
BENCHMARK(BM_range_for_sum)->Apply(sizes);
BENCHMARK(BM_sort)->Apply(sizes);
BENCHMARK(BM_index_sum)->Apply(sizes);
BENCHMARK(BM_insert_middle)->Apply(sizes);
BENCHMARK(BM_range_for_sum_int)->Apply(sizes);
BENCHMARK(BM_index_sum_int)->Apply(sizes);

SMARTARRAY_BENCHMARK_MAIN()
