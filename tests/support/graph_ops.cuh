// Shared by the graph tests: the functors and host references of their pipelines.
#pragma once

#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace smartarray::test::graphs {

using u32 = std::uint32_t;
constexpr std::size_t tile = 4096;  // the default tile, in bytes
constexpr std::size_t n = 8 * tile / sizeof(u32);

struct Axpy {
  u32 a;
  SMARTARRAY_HOST_DEVICE u32 operator()(u32 x, u32 y) const { return a * x + y; }
};
struct Mix {
  SMARTARRAY_HOST_DEVICE u32 operator()(u32 x, u32 y) const { return (x ^ y) + 7U; }
};
struct Plus {
  SMARTARRAY_HOST_DEVICE u32 operator()(u32 a, u32 b) const { return a + b; }
};

/// Two arrays of fresh random values, valid on the host, and their values.
struct RandomPair {
  std::vector<u32> xs = random_values<u32>(n);
  std::vector<u32> ys = random_values<u32>(n);
  SmartArray<u32> x{xs};
  SmartArray<u32> y{ys};
};

/// The host reference of `rounds` axpy steps.
inline std::vector<u32> axpy(u32 a, const std::vector<u32>& x, std::vector<u32> y, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = a * x[i] + y[i];
  }
  return y;
}

/// The issue's chain: ten axpy steps on the captured stream.
inline Graph capture_chain(StreamRef stream, SmartArray<u32>& x, SmartArray<u32>& y, u32 a) {
  return capture(stream, [&](StreamRef s) {
    for (int k = 0; k < 10; ++k) transform(y, Axpy{a}, x, y, s);
  });
}

inline std::uint64_t waits() { return global_counters().snapshot().wait_count; }

}  // namespace smartarray::test::graphs
