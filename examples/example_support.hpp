// Shared by the examples: the --quick flag, the skip rules of CTest (exit code 77) and the check of
// a result against its host reference.
#pragma once

#include <smartarray/smartarray.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

namespace example {

namespace sa = smartarray;

/// CTest reads this exit code as "skipped".
inline constexpr int skipped = 77;

/// True when the command line has `name` (for example "--time").
inline bool flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return true;
  }
  return false;
}

/// The integer after `name` on the command line (for example "--nx 4098"), else `fallback`.
inline long option(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::strtol(argv[i + 1], nullptr, 10);
  }
  return fallback;
}

/// True when the command line asks for the small sizes that CTest uses.
inline bool quick(int argc, char** argv) { return flag(argc, argv, "--quick"); }

/// True (after saying why) when the cuda backend was asked for but there is no device.
inline bool cuda_missing() {
  const char* wanted = std::getenv("SMARTARRAY_BACKEND");
  if (wanted != nullptr && std::strcmp(wanted, "cuda") == 0 && !sa::cuda_device_available()) {
    std::printf("no CUDA device: skipped\n");
    return true;
  }
  return false;
}

/// True (after saying why) when the active backend cannot run raw __global__ kernels.
inline bool raw_kernels_unavailable() {
  if (cuda_missing()) return true;
  if (sa::backend() != sa::BackendKind::cuda) {
    std::printf("this example launches raw __global__ kernels, which need the cuda backend "
                "(active: %s): skipped\n",
                sa::to_string(sa::backend()));
    return true;
  }
  return false;
}

/// Prints the backend and device once.
inline void print_backend() {
  std::printf("backend: %s, device: %s\n", sa::to_string(sa::backend()),
              sa::device_properties().name.c_str());
}

/// Compares `got` with `expected` within `tolerance` (relative, with an absolute floor of the same
/// size); prints the first mismatch and returns false on one.
template <typename T>
bool matches(const char* what, std::span<const T> got, const std::vector<T>& expected,
             double tolerance = 0) {
  if (got.size() != expected.size()) {
    std::printf("MISMATCH in %s: %zu results, %zu expected\n", what, got.size(), expected.size());
    return false;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    const double e = static_cast<double>(expected[i]);
    if (std::fabs(g - e) > tolerance * std::fmax(1.0, std::fabs(e))) {
      std::printf("MISMATCH in %s at %zu: %.9g, host reference %.9g\n", what, i, g, e);
      return false;
    }
  }
  std::printf("%s: %zu results match the host reference\n", what, got.size());
  return true;
}

/// Checks that `stats` has the given copy counts; prints and returns false otherwise.
inline bool transfers_are(const char* what, const sa::TransferStats& stats, std::uint64_t h2d,
                          std::uint64_t d2h) {
  if (stats.h2d_count == h2d && stats.d2h_count == d2h) {
    std::printf("%s: %llu H2D, %llu D2H, as expected\n", what,
                static_cast<unsigned long long>(h2d), static_cast<unsigned long long>(d2h));
    return true;
  }
  std::printf("UNEXPECTED transfers in %s: %s (expected %llu H2D, %llu D2H)\n", what,
              stats.to_string().c_str(), static_cast<unsigned long long>(h2d),
              static_cast<unsigned long long>(d2h));
  return false;
}

}  // namespace example
