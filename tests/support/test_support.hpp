// Shared helpers for the test suite: random non-zero data, poisoning, backend checks.
#pragma once

#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/runtime/runtime.hpp>
#include <smartarray/diagnostics/testing.hpp>

#include "support/gtest_compat.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

namespace smartarray::test {

/// A generator seeded from the test's name and a per-process random value, printed on failure.
inline std::mt19937_64& rng() {
  static std::mt19937_64 engine{std::random_device{}()};
  return engine;
}

/// `n` random values, never zero (zeros hide unwritten outputs).
/// The unsigned value of environment variable `name`, or `fallback` when it is unset or empty.
inline std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10) : fallback;
}

template <typename T>
std::vector<T> random_values(std::size_t n) {
  std::vector<T> out(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<T> dist(T(0.5), T(100));
    for (auto& v : out) v = std::uniform_int_distribution<int>(0, 1)(rng()) ? dist(rng()) : -dist(rng());
  } else {
    std::uniform_int_distribution<std::int64_t> dist(1, 1'000'000);
    for (auto& v : out) v = static_cast<T>(dist(rng()));
  }
  return out;
}

/// One random non-zero value.
template <typename T>
T random_value() {
  return random_values<T>(1)[0];
}

/// A recognizable poison pattern written over outputs before a test writes them.
template <typename T>
void poison(T* data, std::size_t n) {
  std::memset(static_cast<void*>(data), 0xA5, n * sizeof(T));
}

/// True on the host backend (where raw __global__ kernels cannot run).
inline bool on_host_backend() { return backend() == BackendKind::host; }

/// Arms nothing and clears every injected failure at the end of a scope.
struct ClearFaults {
  ~ClearFaults() { testing::clear_injected_failures(); }
};

/// The larger of two values, for reduce (cuda::maximum exists only from CCCL 2.8, CUDA 12.9).
template <typename T>
struct Maximum {
  SMARTARRAY_HOST_DEVICE T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};

/// The smaller of two values, for reduce (cuda::minimum: as Maximum).
template <typename T>
struct Minimum {
  SMARTARRAY_HOST_DEVICE T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};

}  // namespace smartarray::test
