// bench_partial's out_of_core workload: y = x + call over arrays larger than the device budget,
// the library's chunked calls against a hand-written double-buffered loop, each a contender.
// Included by bench_partial.cu only: like the rest of that binary, it defines its names in an
// unnamed namespace.
#pragma once

#include <smartarray/adapters/transform.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/runtime/stream.hpp>

#include "bench_support.cuh"
#include "partial_contender.cuh"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace sa = smartarray;
using sa::Access;
using sa::bench::Raw;

namespace {

// --- out_of_core ---------------------------------------------------------------------------------

/// y = x + call over arrays of four times the device budget each: the arrays live on the host and
/// stream through the device in chunks.
struct AddCall {
  float add;
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return x + add; }
};
/// The hand-written loop's kernel over one chunk.
struct AddCallChunk {
  const float* x;
  float* y;
  float add;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { y[i] = x[i] + add; }
};

/// The device budget of an out_of_core run over `n` floats per array: a quarter of one array.
std::size_t out_of_core_budget(std::size_t n) { return n * sizeof(float) / 4; }

/// The chunk of the library's out-of-core calls (core/detail/chunked_access.hpp) for two float
/// arrays: a buffer per array and slot within half the budget, a multiple of 256 elements. The
/// hand-written loop uses the same chunks, double-buffered.
std::size_t out_of_core_chunk(std::size_t n) {
  return out_of_core_budget(n) / 2 / (sa::detail::chunk_slots * 2 * sizeof(float)) / 256 * 256;
}

class OutOfCore : public Contender {
 public:
  using Contender::Contender;
  std::string check() override {
    for (std::size_t i = 0; i < n_; i += 4099) {
      const float expected = value_at(i, 0) + static_cast<float>(call_);
      if (y_[i] != expected) {
        return "y[" + std::to_string(i) + "] is " + std::to_string(y_[i]) + ", call " +
               std::to_string(call_) + " made " + std::to_string(expected);
      }
    }
    return {};
  }
  [[nodiscard]] Copies copies_per_call() const override {
    const std::size_t chunks = (n_ + out_of_core_chunk(n_) - 1) / out_of_core_chunk(n_);
    return {.h2d = chunks, .h2d_bytes = n_ * sizeof(float), .d2h = chunks,
            .d2h_bytes = n_ * sizeof(float)};
  }

 protected:
  /// Writes x's values (value_at(i, 0)) on the host.
  void fill_x(float* x) const {
    for (std::size_t i = 0; i < n_; ++i) x[i] = value_at(i, 0);
  }
  std::span<const float> y_;
};

class OutOfCoreExplicit final : public OutOfCore {
 public:
  using OutOfCore::OutOfCore;
  void set_up(std::size_t n) override {
    n_ = n;
    chunk_ = out_of_core_chunk(n);
    x_ = raw_.allocate_pinned<float>(n);
    y_pinned_ = raw_.allocate_pinned<float>(n);
    for (float*& buffer : buffers_) buffer = raw_.allocate_device<float>(chunk_);
    fill_x(x_);
    y_ = {y_pinned_, n};
  }
  /// Double buffering by hand: chunk k on stream k % 2 with its own pair of buffers.
  void call() override {
    ++call_;
    const Raw* raws[2] = {&raw_, &second_raw_};
    for (std::size_t first = 0, k = 0; first < n_; first += chunk_, ++k) {
      const std::size_t b = k % 2;
      const std::size_t count = std::min(chunk_, n_ - first);
      raws[b]->copy_to_device_async(buffers_[2 * b], x_ + first, count * sizeof(float));
      raws[b]->launch(count, AddCallChunk{buffers_[2 * b], buffers_[2 * b + 1],
                                          static_cast<float>(call_)});
      raws[b]->copy_to_host_async(y_pinned_ + first, buffers_[2 * b + 1], count * sizeof(float));
    }
    raw_.synchronize();
    second_raw_.synchronize();
  }
  void tear_down() override {
    for (float* buffer : buffers_) raw_.free_device(buffer);
    raw_.free_pinned(x_);
    raw_.free_pinned(y_pinned_);
  }

 private:
  sa::Stream second_stream_;
  Raw second_raw_{second_stream_};
  std::size_t chunk_ = 0;
  float* x_ = nullptr;
  float* y_pinned_ = nullptr;
  float* buffers_[4] = {};  // x and y of stream 0, then of stream 1
};

class OutOfCoreSmart final : public OutOfCore {
 public:
  using OutOfCore::OutOfCore;
  void set_up(std::size_t n) override {
    n_ = n;
    previous_budget_ = sa::default_device_pool().maximum_size();
    sa::set_device_budget(out_of_core_budget(n));
    (void)sa::default_device_pool().trim();
    x_ = sa::SmartArray<float>(n, sa::no_init);
    fill_x(x_.host_view(Access::discard).data());
    y_array_ = sa::SmartArray<float>(n, sa::no_init);
  }
  void call() override {
    sa::transform(y_array_, AddCall{static_cast<float>(++call_)}, x_, stream_);
    y_ = std::as_const(y_array_).host_view();
  }
  [[nodiscard]] bool library_copies() const override { return true; }
  void tear_down() override {
    x_ = {};
    y_array_ = {};
    sa::set_device_budget(previous_budget_);
  }

 private:
  std::optional<std::size_t> previous_budget_;
  sa::SmartArray<float> x_;
  sa::SmartArray<float> y_array_;
};

}  // namespace
