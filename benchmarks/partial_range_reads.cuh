// bench_partial's workloads of host reads of a range: slice_read (1000 elements from the
// middle) and range_for (a range-for over the whole array), each with its explicit and
// smartarray contenders. Included by bench_partial.cu only: like the rest of that binary, it
// defines its names in an unnamed namespace.
#pragma once

#include <smartarray/core/slice.hpp>
#include <smartarray/core/smart_array.hpp>

#include "bench_support.cuh"
#include "partial_contender.cuh"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

namespace sa = smartarray;
using sa::Access;

namespace {

// --- slice_read ----------------------------------------------------------------------------------

/// A kernel writes the array, the host reads `slice_elements` elements from its middle.
class SliceRead : public Contender {
 public:
  using Contender::Contender;
  static constexpr std::size_t slice_elements = 1000;

  std::string check() override {
    for (std::size_t j = 0; j < read_.size(); ++j) {
      std::string why = compare("the slice's element", first() + j, read_[j], call_);
      if (!why.empty()) return why;
    }
    return read_.size() == slice_elements ? std::string{} : "the slice read is not 1000 elements";
  }

 protected:
  [[nodiscard]] std::size_t first() const { return n_ / 2; }

  std::span<const float> read_;  // the elements the last call read
};

class SliceReadExplicit final : public SliceRead {
 public:
  using SliceRead::SliceRead;
  void set_up(std::size_t n) override {
    n_ = n;
    device_ = raw_.allocate_device<float>(n);
    pinned_ = raw_.allocate_pinned<float>(slice_elements);
  }
  void call() override {
    raw_.launch(n_, Fill{device_, ++call_});
    raw_.copy_to_host_async(pinned_, device_ + first(), slice_elements * sizeof(float));
    raw_.synchronize();
    read_ = {pinned_, slice_elements};
  }
  [[nodiscard]] Copies copies_per_call() const override {
    return {.d2h = 1, .d2h_bytes = slice_elements * sizeof(float)};
  }
  void tear_down() override {
    raw_.free_device(device_);
    raw_.free_pinned(pinned_);
  }

 private:
  float* device_ = nullptr;
  float* pinned_ = nullptr;
};

class SliceReadSmart final : public SliceRead {
 public:
  using SliceRead::SliceRead;
  void set_up(std::size_t n) override {
    n_ = n;
    array_ = sa::SmartArray<float>(n, sa::no_init);
  }
  void call() override {
    raw_.launch(n_, Fill{array_.device_view(Access::discard, stream_).data(), ++call_});
    // For reading: only the slice's bytes are copied, and the device copy stays valid.
    read_ = std::as_const(array_).slice(first(), slice_elements).host_view();
  }
  [[nodiscard]] Copies copies_per_call() const override {
    return {.d2h = 1, .d2h_bytes = slice_elements * sizeof(float)};
  }
  [[nodiscard]] bool library_copies() const override { return true; }

 private:
  sa::SmartArray<float> array_;
};

// --- range_for -----------------------------------------------------------------------------------

/// The host loop of range_for, one function for both contenders, so that both run the same code
/// over their ranges: the sum of the elements' bit patterns. Integer additions have no order, so
/// the loop runs at the speed of memory (the compiler vectorizes it). A sum of the floats
/// themselves is one chain of dependent additions, 4 cycles per element: 15-22 ms of the call at
/// 1.6e7 that moved with the VM's clock, which was 0.84x-1.09x of explicit from run to run.
template <typename Range>
[[gnu::noinline]] std::uint64_t range_for_sum(const Range& range) {
  std::uint64_t sum = 0;
  for (float x : range) sum += std::bit_cast<std::uint32_t>(x);
  return sum;
}

/// A kernel writes the array, the host sums all of it.
class RangeFor : public Contender {
 public:
  using Contender::Contender;

  /// The sum of the bit patterns of the last call's values.
  std::string check() override {
    std::uint64_t expected = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      expected += std::bit_cast<std::uint32_t>(value_at(i, call_));
    }
    if (sum_ == expected) return {};
    return "the host's sum is " + std::to_string(sum_) + ", the values call " +
           std::to_string(call_) + " wrote sum to " + std::to_string(expected);
  }

 protected:
  std::uint64_t sum_ = 0;
};

class RangeForExplicit final : public RangeFor {
 public:
  using RangeFor::RangeFor;
  void set_up(std::size_t n) override {
    n_ = n;
    device_ = raw_.allocate_device<float>(n);
    pinned_ = raw_.allocate_pinned<float>(n);
  }
  void call() override {
    raw_.launch(n_, Fill{device_, ++call_});
    raw_.copy_to_host_async(pinned_, device_, n_ * sizeof(float));
    raw_.synchronize();
    sum_ = range_for_sum(std::span<const float>(pinned_, n_));
  }
  [[nodiscard]] Copies copies_per_call() const override {
    return {.d2h = 1, .d2h_bytes = n_ * sizeof(float)};
  }
  void tear_down() override {
    raw_.free_device(device_);
    raw_.free_pinned(pinned_);
  }

 private:
  float* device_ = nullptr;
  float* pinned_ = nullptr;
};

class RangeForSmart final : public RangeFor {
 public:
  using RangeFor::RangeFor;
  void set_up(std::size_t n) override {
    n_ = n;
    array_ = sa::SmartArray<float>(n, sa::no_init);
  }
  void call() override {
    raw_.launch(n_, Fill{array_.device_view(Access::discard, stream_).data(), ++call_});
    sum_ = range_for_sum(std::as_const(array_));
  }
  [[nodiscard]] Copies copies_per_call() const override {
    return {.d2h = 1, .d2h_bytes = n_ * sizeof(float)};
  }
  [[nodiscard]] bool library_copies() const override { return true; }

 private:
  sa::SmartArray<float> array_;
};

}  // namespace
