/**
 * @file core/detail/small_vector.hpp
 * @brief Private: `SmallVector`, the sequence that holds the residency state's runs and a copy
 * plan's copies in place, spilling to the heap only beyond a few.
 */
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

namespace smartarray::detail {

/// A sequence that holds `Inline` elements in place and spills to the heap beyond: the states and
/// plans of whole-array access never allocate. Elements are trivially copyable.
template <typename Element, std::size_t Inline>
class SmallVector {
 public:
  constexpr SmallVector() noexcept = default;
  constexpr void push_back(const Element& value) {
    if (heap_.empty() && size_ < Inline) {
      inline_[size_++] = value;
      return;
    }
    if (heap_.empty()) heap_.assign(inline_.begin(), inline_.begin() + size_);
    heap_.push_back(value);
    ++size_;
  }
  constexpr void clear() noexcept {
    heap_.clear();
    size_ = 0;
  }
  constexpr void pop_back() noexcept {
    if (!heap_.empty()) heap_.pop_back();
    --size_;
  }
  /// Keeps the first `count` (<= size()) elements.
  constexpr void truncate(std::size_t count) noexcept {
    if (!heap_.empty()) heap_.resize(count);
    size_ = count;
  }
  [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }
  [[nodiscard]] constexpr bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] constexpr const Element* data() const noexcept {
    return heap_.empty() ? inline_.data() : heap_.data();
  }
  [[nodiscard]] constexpr Element* data() noexcept {
    return heap_.empty() ? inline_.data() : heap_.data();
  }
  [[nodiscard]] constexpr const Element& operator[](std::size_t i) const noexcept {
    return data()[i];
  }
  [[nodiscard]] constexpr Element& operator[](std::size_t i) noexcept { return data()[i]; }
  [[nodiscard]] constexpr const Element& back() const noexcept { return data()[size_ - 1]; }
  [[nodiscard]] constexpr Element& back() noexcept { return data()[size_ - 1]; }
  [[nodiscard]] constexpr const Element* begin() const noexcept { return data(); }
  [[nodiscard]] constexpr const Element* end() const noexcept { return data() + size_; }
  friend constexpr bool operator==(const SmallVector& a, const SmallVector& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::array<Element, Inline> inline_{};
  std::vector<Element> heap_;
  std::size_t size_ = 0;
};

}  // namespace smartarray::detail
