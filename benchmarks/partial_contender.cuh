// bench_partial's contenders: the values every call writes (value_at, Fill), the copies a call
// makes (Copies) and `Contender`, the interface of every workload's explicit and smartarray
// contenders. Included by bench_partial.cu only: like the rest of that binary, it defines its
// names in an unnamed namespace.
#pragma once

#include <smartarray/runtime/stream.hpp>

#include "bench_support.cuh"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace sa = smartarray;
using sa::bench::Raw;

namespace {

/// The value that call `call` puts at index `i`: 23 bits of a hash of both (splitmix64) as the
/// fraction of a float in [1, 2). Never zero, new in every call (a stale copy shows), and computed
/// exactly alike on the host and the device, so checks compare with ==.
SMARTARRAY_HOST_DEVICE inline float value_at(std::uint64_t i, std::uint64_t call) {
  std::uint64_t x = i + call * 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return 1.0F + static_cast<float>(x >> 41) * 0x1p-23F;
}

/// The writer kernel of every call: out[i] = value_at(i, call).
struct Fill {
  float* out;
  std::uint64_t call;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { out[i] = value_at(i, call); }
};

/// The reader kernel of boundary_update: reads every element and writes only where one is NaN
/// (none is), so that the reads cannot be optimized away and the array is left as it is.
struct FindNan {
  const float* in;
  int* flag;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const {
    if (in[i] != in[i]) *flag = 1;
  }
};

/// The copies that one call makes each way.
struct Copies {
  std::uint64_t h2d = 0;
  std::uint64_t h2d_bytes = 0;
  std::uint64_t d2h = 0;
  std::uint64_t d2h_bytes = 0;
};

/// The bytes of the tile of `tile` bytes that holds byte `offset` of an array of `size` bytes:
/// what element access copies for an element there.
std::uint64_t tile_bytes_at(std::size_t offset, std::size_t tile, std::size_t size) {
  const std::size_t begin = offset / tile * tile;
  return std::min(size, begin + tile) - begin;
}

/**
 * @brief One contender of one workload: `measure` sets it up, makes an untimed call and one timed
 *        call per iteration, checks it and tears it down.
 */
class Contender {
 public:
  /// @brief Works on `stream`.
  explicit Contender(sa::StreamRef stream) : stream_(stream), raw_(stream) {}
  virtual ~Contender() = default;
  Contender(const Contender&) = delete;
  Contender& operator=(const Contender&) = delete;

  /// @brief Allocates what a call over `n` floats works on.
  virtual void set_up(std::size_t n) = 0;
  /// @brief One call: the timed part. Returns with its work done.
  virtual void call() = 0;
  /// @brief The copies one call makes: explicit's by construction, smartarray's as the residency
  ///        contract promises them.
  [[nodiscard]] virtual Copies copies_per_call() const = 0;
  /// @brief True when the library makes the copies, so that the run checks them against its
  ///        counters.
  [[nodiscard]] virtual bool library_copies() const { return false; }
  /// @brief An empty string when the last call's results are right, else what is wrong.
  [[nodiscard]] virtual std::string check() = 0;
  /// @brief Frees what `set_up` allocated through `raw_`.
  virtual void tear_down() {}

 protected:
  sa::StreamRef stream_;
  Raw raw_;
  std::size_t n_ = 0;
  std::uint64_t call_ = 0;  // the calls made; the last one wrote value_at(i, call_)
};

/// "what [i] is x, the kernel wrote y" when `got` differs from the last call's value at `i`.
std::string compare(const char* what, std::size_t i, float got, std::uint64_t call) {
  const float expected = value_at(i, call);
  if (got == expected) return {};
  return std::string(what) + " [" + std::to_string(i) + "] is " + std::to_string(got) +
         ", call " + std::to_string(call) + " wrote " + std::to_string(expected);
}

}  // namespace
