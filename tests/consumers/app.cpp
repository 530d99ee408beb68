// A consumer compiled by a plain C++ compiler, in a project that does not enable CUDA: linking
// smartarray::smartarray is all it does (no flags, no include paths). It runs y = 3x + y and a sum
// on random data on the backend that SMARTARRAY_BACKEND picks (the consumer tests: host), checks
// both against a host loop and exits non-zero on a mismatch.
#include <smartarray/smartarray.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

static_assert(__cplusplus >= 202002L, "smartarray::smartarray must bring C++20");

namespace sa = smartarray;

namespace {

struct Saxpy {
  std::int64_t a;
  SMARTARRAY_HOST_DEVICE std::int64_t operator()(std::int64_t x, std::int64_t y) const {
    return a * x + y;
  }
};

}  // namespace

int main() {
  constexpr std::size_t n = 100000;
  std::mt19937_64 rng(20240611);
  std::uniform_int_distribution<std::int64_t> dist(-1000, 1000);
  std::vector<std::int64_t> xs(n), ys(n);
  for (auto& v : xs) v = dist(rng);
  for (auto& v : ys) v = dist(rng);

  sa::SmartArray<std::int64_t> x(xs), y(ys);
  sa::Stream stream;
  sa::transform(y, Saxpy{3}, x, y, stream);
  const std::int64_t sum = sa::reduce(y, std::int64_t{0}, std::plus<std::int64_t>{}, stream);

  std::int64_t expected_sum = 0;
  std::size_t mismatches = 0;
  const auto result = y.host_view(stream);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t expected = 3 * xs[i] + ys[i];
    expected_sum += expected;
    if (result[i] != expected) ++mismatches;
  }
  std::printf("C++ consumer (%s backend): sum(3x + y) = %lld (expected %lld), %zu mismatches\n",
              sa::to_string(sa::backend()), static_cast<long long>(sum),
              static_cast<long long>(expected_sum), mismatches);
  return sum == expected_sum && mismatches == 0 ? 0 : 1;
}
