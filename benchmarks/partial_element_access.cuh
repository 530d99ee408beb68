// bench_partial's workloads of element access by tiles: scalar_read (the host reads one
// element) and boundary_update (the host writes the elements at both ends), each with its
// explicit and smartarray contenders. Included by bench_partial.cu only: like the rest of that
// binary, it defines its names in an unnamed namespace.
#pragma once

#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>

#include "bench_support.cuh"
#include "partial_contender.cuh"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;

namespace {

// --- scalar_read ---------------------------------------------------------------------------------

/// A kernel writes the array, the host reads its middle element.
class ScalarRead : public Contender {
 public:
  using Contender::Contender;
  std::string check() override { return compare("the element read", n_ / 2, got_, call_); }

 protected:
  float got_ = 0;
};

class ScalarReadExplicit final : public ScalarRead {
 public:
  using ScalarRead::ScalarRead;
  void set_up(std::size_t n) override {
    n_ = n;
    device_ = raw_.allocate_device<float>(n);
    pinned_ = raw_.allocate_pinned<float>(1);
  }
  void call() override {
    raw_.launch(n_, Fill{device_, ++call_});
    raw_.copy_to_host_async(pinned_, device_ + n_ / 2, sizeof(float));
    raw_.synchronize();
    got_ = *pinned_;
  }
  [[nodiscard]] Copies copies_per_call() const override { return {.d2h = 1, .d2h_bytes = 4}; }
  void tear_down() override {
    raw_.free_device(device_);
    raw_.free_pinned(pinned_);
  }

 private:
  float* device_ = nullptr;
  float* pinned_ = nullptr;
};

/// Arrays of `TileBytes` tiles; 0 is the default tile.
template <std::size_t TileBytes>
sa::SmartArray<float> tiled_array(std::size_t n) {
  sa::ArrayOptions options;
  if constexpr (TileBytes != 0) options.tile = sa::TileSize(TileBytes);
  return sa::SmartArray<float>(n, sa::no_init, sa::Allocator<float>(options));
}

template <std::size_t TileBytes = 0>
class ScalarReadSmart final : public ScalarRead {
 public:
  using ScalarRead::ScalarRead;
  void set_up(std::size_t n) override {
    n_ = n;
    array_ = tiled_array<TileBytes>(n);
  }
  void call() override {
    raw_.launch(n_, Fill{array_.device_view(Access::discard, stream_).data(), ++call_});
    got_ = std::as_const(array_)[n_ / 2];
  }
  [[nodiscard]] Copies copies_per_call() const override {
    const std::size_t tile = array_.get_allocator().options().tile.bytes();
    return {.d2h = 1, .d2h_bytes = tile_bytes_at(n_ / 2 * sizeof(float), tile, n_ * sizeof(float))};
  }
  [[nodiscard]] bool library_copies() const override { return true; }

 private:
  sa::SmartArray<float> array_;
};

// --- boundary_update -----------------------------------------------------------------------------

/// boundary_update's host writes: this many elements at each end of the array.
constexpr std::size_t edge = 32;

/// The array index of the k-th of the 2 x `edge` elements that boundary_update writes.
SMARTARRAY_HOST_DEVICE inline std::size_t boundary_index(std::size_t k, std::size_t n) {
  return k < edge ? k : n - 2 * edge + k;
}

/// boundary_update's check, on the device: out[k] = in[boundary_index(k, n)].
struct GatherBoundary {
  const float* in;
  float* out;
  std::size_t n;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t k) const { out[k] = in[boundary_index(k, n)]; }
};

/// The host writes `edge` elements at each end of the array, then a kernel reads all of it.
class BoundaryUpdate : public Contender {
 public:
  using Contender::Contender;

  /// Checks the device copy: the 2 x `edge` elements that a kernel reads there are the host's.
  std::string check() override {
    float* gathered = raw_.allocate_device<float>(2 * edge);
    raw_.launch(2 * edge, GatherBoundary{device_data(), gathered, n_});
    std::vector<float> got(2 * edge);
    raw_.copy_to_host_async(got.data(), gathered, 2 * edge * sizeof(float));
    raw_.synchronize();
    raw_.free_device(gathered);
    for (std::size_t k = 0; k < 2 * edge; ++k) {
      std::string why = compare("the device's element", index(k), got[k], call_);
      if (!why.empty()) return why;
    }
    return {};
  }

 protected:
  [[nodiscard]] std::size_t index(std::size_t k) const { return boundary_index(k, n_); }
  /// The device copy of the array, for the check.
  [[nodiscard]] virtual const float* device_data() = 0;

  int* nan_flag_ = nullptr;  // where FindNan writes; never read
};

class BoundaryUpdateExplicit final : public BoundaryUpdate {
 public:
  using BoundaryUpdate::BoundaryUpdate;
  void set_up(std::size_t n) override {
    n_ = n;
    device_ = raw_.allocate_device<float>(n);
    pinned_ = raw_.allocate_pinned<float>(2 * edge);
    nan_flag_ = raw_.allocate_device<int>(1);
    raw_.launch(n, Fill{device_, 0});
    raw_.synchronize();
  }
  void call() override {
    ++call_;
    for (std::size_t k = 0; k < 2 * edge; ++k) pinned_[k] = value_at(index(k), call_);
    raw_.copy_to_device_async(device_, pinned_, edge * sizeof(float));
    raw_.copy_to_device_async(device_ + n_ - edge, pinned_ + edge, edge * sizeof(float));
    raw_.launch(n_, FindNan{device_, nan_flag_});
    raw_.synchronize();
  }
  [[nodiscard]] Copies copies_per_call() const override {
    return {.h2d = 2, .h2d_bytes = 2 * edge * sizeof(float)};
  }
  void tear_down() override {
    raw_.free_device(device_);
    raw_.free_device(nan_flag_);
    raw_.free_pinned(pinned_);
  }

 private:
  const float* device_data() override { return device_; }

  float* device_ = nullptr;
  float* pinned_ = nullptr;
};

template <std::size_t TileBytes = 0>
class BoundaryUpdateSmart final : public BoundaryUpdate {
 public:
  using BoundaryUpdate::BoundaryUpdate;
  void set_up(std::size_t n) override {
    n_ = n;
    array_ = tiled_array<TileBytes>(n);
    nan_flag_ = raw_.allocate_device<int>(1);
    raw_.launch(n, Fill{array_.device_view(Access::discard, stream_).data(), 0});
    raw_.synchronize();
  }
  void call() override {
    ++call_;
    for (std::size_t k = 0; k < 2 * edge; ++k) array_[index(k)] = value_at(index(k), call_);
    raw_.launch(n_, FindNan{std::as_const(array_).device_view(stream_).data(), nan_flag_});
    raw_.synchronize();
  }
  /// The two end tiles, H2D; one copy where they touch or are one tile (the stale bytes are then
  /// one run).
  [[nodiscard]] Copies copies_per_call() const override {
    const std::size_t tile = array_.get_allocator().options().tile.bytes();
    const std::size_t size = n_ * sizeof(float);
    const std::uint64_t first = tile_bytes_at(0, tile, size);
    const std::uint64_t last = tile_bytes_at(size - 1, tile, size);
    if (first + last >= size) return {.h2d = 1, .h2d_bytes = size};
    return {.h2d = 2, .h2d_bytes = first + last};
  }
  [[nodiscard]] bool library_copies() const override { return true; }
  void tear_down() override { raw_.free_device(nan_flag_); }

 private:
  const float* device_data() override { return std::as_const(array_).device_view(stream_).data(); }

  sa::SmartArray<float> array_;
};

}  // namespace
