// bench_stream's buffers and data: raw device and pinned scratch for the hand-written
// contenders, the device-written inputs (never zero) and the checks of results against each
// other. Included by bench_stream.cu only: like the rest of that binary, it defines its names in
// an unnamed namespace.
#pragma once

#include <smartarray/smartarray.hpp>

#include "bench_support.cuh"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::bench::Raw;

namespace {

// --- device buffers and data ---------------------------------------------------------------------

/// `count` elements of raw device memory for the hand-written contenders' scratch.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer(const Raw& raw, std::size_t count)
      : raw_(raw), data_(raw.allocate_device<T>(std::max<std::size_t>(count, 1))) {}
  ~DeviceBuffer() { raw_.free_device(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] T* get() const noexcept { return data_; }

 private:
  const Raw& raw_;
  T* data_;
};

/// `count` elements of pinned host memory, for results that come back to the host.
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer(const Raw& raw, std::size_t count)
      : raw_(raw), data_(raw.allocate_pinned<T>(count)) {}
  ~PinnedBuffer() { raw_.free_pinned(data_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  [[nodiscard]] T* get() const noexcept { return data_; }

 private:
  const Raw& raw_;
  T* data_;
};

/// x[i] in [0.5, 1.5), a hash of i and the seed: never zero, no host work at any size.
template <typename T>
struct Hash {
  T* x;
  std::uint32_t seed;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const {
    const auto h = static_cast<std::uint32_t>(i) * 2654435761U + seed * 40503U;
    x[i] = T(0.5) + static_cast<T>((h >> 8) % 1000U) / T(1000);
  }
};

/// An array of `n` values valid on the device only, written by a kernel.
template <typename T>
SmartArray<T> device_values(std::size_t n, std::uint32_t seed, const Raw& raw,
                            sa::StreamRef stream) {
  SmartArray<T> x(n, sa::no_init);
  raw.launch(n, Hash<T>{x.device_view(Access::discard, stream).data(), seed});
  return x;
}

/// Sets `*differ` when got[i] and want[i] differ by more than a few units in the last place.
template <typename T>
struct Differ {
  const T* got;
  const T* want;
  unsigned* differ;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const {
    const T magnitude = want[i] < T(0) ? -want[i] : want[i];
    const T tolerance = T(4) * std::numeric_limits<T>::epsilon() * magnitude;
    const T difference = got[i] - want[i];
    if (!(difference <= tolerance && -difference <= tolerance)) *differ = 1U;
  }
};

/// True when the `n` elements at `got` equal those at `want` (to a few units in the last place).
template <typename T>
bool same_values(const Raw& raw, const T* got, const T* want, std::size_t n) {
  const DeviceBuffer<unsigned> flag(raw, 1);
  const PinnedBuffer<unsigned> host(raw, 1);
  *host.get() = 0;
  raw.copy_to_device_async(flag.get(), host.get(), sizeof(unsigned));
  raw.launch(n, Differ<T>{got, want, flag.get()});
  raw.copy_to_host_async(host.get(), flag.get(), sizeof(unsigned));
  raw.synchronize();
  return *host.get() == 0;
}

/// True when two sums of the same values agree, given their different orders of summation.
template <typename T>
bool same_sum(T x, T y) {
  const T tolerance = std::is_same_v<T, float> ? T(1e-3) : T(1e-9);
  const T magnitude = std::max(x < 0 ? -x : x, y < 0 ? -y : y);
  return (x < y ? y - x : x - y) <= tolerance * magnitude;
}

template <typename T>
const char* type_name() {
  return std::is_same_v<T, float> ? "float" : "double";
}

}  // namespace
