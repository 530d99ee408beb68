// A consumer compiled by nvcc: linking smartarray::smartarray is all it does (no flags, no include
// paths); C++20 and nvcc's --extended-lambda come with the target. It runs y = 3x + y with a
// __host__ __device__ lambda and a sum with cuda::std::plus on random data on the backend that
// SMARTARRAY_BACKEND picks (the consumer tests: host), checks both against a host loop and exits
// non-zero on a mismatch.
#include <smartarray/smartarray.hpp>

#include <cuda/std/functional>

#include <concepts>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <vector>

static_assert(__cplusplus >= 202002L, "smartarray::smartarray must bring C++20 to nvcc");

namespace sa = smartarray;

namespace {

template <std::integral T>  // C++20 in the consumer's own code
std::vector<T> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<T> dist(-1000, 1000);
  std::vector<T> values(n);
  for (auto& v : values) v = dist(rng);
  return values;
}

}  // namespace

int main() {
  constexpr std::size_t n = 100000;
  const auto xs = random_values<std::int64_t>(n, 1);
  const auto ys = random_values<std::int64_t>(n, 2);

  auto x = sa::SmartArray<std::int64_t>(std::span<const std::int64_t>(xs));
  sa::SmartArray<std::int64_t> y(ys);
  sa::Stream stream;
  const std::int64_t a = 3;
  const auto saxpy = [a] __host__ __device__(std::int64_t xi, std::int64_t yi) {
    return a * xi + yi;
  };
  sa::transform(y, saxpy, x, y, stream);
  const std::int64_t sum = sa::reduce(y, std::int64_t{0}, cuda::std::plus<std::int64_t>{}, stream);

  std::int64_t expected_sum = 0;
  std::size_t mismatches = 0;
  const auto result = y.host_view(stream);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t expected = a * xs[i] + ys[i];
    expected_sum += expected;
    if (result[i] != expected) ++mismatches;
  }
  std::printf("CUDA consumer (%s backend): sum(3x + y) = %lld (expected %lld), %zu mismatches\n",
              sa::to_string(sa::backend()), static_cast<long long>(sum),
              static_cast<long long>(expected_sum), mismatches);
  return sum == expected_sum && mismatches == 0 ? 0 : 1;
}
