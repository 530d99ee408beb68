/**
 * @file core/host_iterator.hpp
 * @brief `HostIterator<T>`: the iterator type of `SmartArray<T>`, a pointer into the host copy
 *        wrapped in a class.
 *
 * A class, not a raw pointer, so that what compiles on a `std::vector` iterator compiles here too:
 * `--a.end()` and `++a.begin()` (the increment of a prvalue, which a raw pointer does not allow),
 * and no implicit conversion to or from `T*`. It is a `std::contiguous_iterator`:
 * `std::to_address(it)` (or `&*it`) gives the pointer, and ranges of it are copied with one memcpy.
 * A mutable iterator converts to the const one, and the two compare with each other. Every member
 * is a constexpr inline one-liner over the pointer, so optimized code is the same as over a raw
 * pointer.
 */
#pragma once

#include <compare>
#include <cstddef>
#include <iterator>
#include <memory>
#include <type_traits>

namespace smartarray {

/**
 * @brief A random-access, contiguous iterator over `T` elements of a host copy (`T` may be const).
 * @tparam T the element type; `HostIterator<const T>` is the const iterator.
 */
template <typename T>
class HostIterator {
 public:
  using iterator_concept = std::contiguous_iterator_tag;    ///< a contiguous iterator
  using iterator_category = std::random_access_iterator_tag;  ///< for legacy algorithms
  using value_type = std::remove_cv_t<T>;                  ///< the element type
  using difference_type = std::ptrdiff_t;                  ///< the distance between iterators
  using pointer = T*;                                      ///< the address of an element
  using reference = T&;                                    ///< an element

  /// @brief A singular iterator (compares equal only to other singular iterators).
  constexpr HostIterator() noexcept = default;
  /// @brief The iterator at `at`.
  /// @param at a pointer into a host copy.
  constexpr explicit HostIterator(pointer at) noexcept : at_(at) {}
  /// @brief A mutable iterator converts to a const one.
  /// @param other the mutable iterator.
  template <typename U>
    requires(std::is_same_v<const U, T> && !std::is_const_v<U>)
  constexpr HostIterator(  // NOLINT(google-explicit-constructor)
      const HostIterator<U>& other) noexcept
      : at_(other.base()) {}

  /// @brief The pointer this iterator wraps.
  [[nodiscard]] constexpr pointer base() const noexcept { return at_; }

  /// @brief The element.
  [[nodiscard]] constexpr reference operator*() const noexcept { return *at_; }
  /// @brief The element's address.
  [[nodiscard]] constexpr pointer operator->() const noexcept { return at_; }
  /// @brief The element `n` places on.
  /// @param n the offset.
  [[nodiscard]] constexpr reference operator[](difference_type n) const noexcept { return at_[n]; }

  /// @brief Moves to the next element.
  constexpr HostIterator& operator++() noexcept {
    ++at_;
    return *this;
  }
  /// @brief Moves to the next element and returns the old position.
  constexpr HostIterator operator++(int) noexcept { return HostIterator(at_++); }
  /// @brief Moves to the previous element.
  constexpr HostIterator& operator--() noexcept {
    --at_;
    return *this;
  }
  /// @brief Moves to the previous element and returns the old position.
  constexpr HostIterator operator--(int) noexcept { return HostIterator(at_--); }
  /// @brief Moves `n` elements on.
  /// @param n the offset.
  constexpr HostIterator& operator+=(difference_type n) noexcept {
    at_ += n;
    return *this;
  }
  /// @brief Moves `n` elements back.
  /// @param n the offset.
  constexpr HostIterator& operator-=(difference_type n) noexcept {
    at_ -= n;
    return *this;
  }

  /// @brief The iterator `n` elements after `it`.
  [[nodiscard]] friend constexpr HostIterator operator+(HostIterator it,
                                                        difference_type n) noexcept {
    return HostIterator(it.at_ + n);
  }
  /// @brief The iterator `n` elements after `it`.
  [[nodiscard]] friend constexpr HostIterator operator+(difference_type n,
                                                        HostIterator it) noexcept {
    return HostIterator(it.at_ + n);
  }
  /// @brief The iterator `n` elements before `it`.
  [[nodiscard]] friend constexpr HostIterator operator-(HostIterator it,
                                                        difference_type n) noexcept {
    return HostIterator(it.at_ - n);
  }

 private:
  pointer at_ = nullptr;
};

/// @brief True when both name the same element (a mutable and a const iterator compare too).
template <typename A, typename B>
  requires std::is_same_v<std::remove_const_t<A>, std::remove_const_t<B>>
[[nodiscard]] constexpr bool operator==(const HostIterator<A>& a,
                                        const HostIterator<B>& b) noexcept {
  return a.base() == b.base();
}
/// @brief The order of the elements in memory; `<`, `<=`, `>` and `>=` are rewritten from it.
template <typename A, typename B>
  requires std::is_same_v<std::remove_const_t<A>, std::remove_const_t<B>>
[[nodiscard]] constexpr std::strong_ordering operator<=>(const HostIterator<A>& a,
                                                         const HostIterator<B>& b) noexcept {
  return std::compare_three_way{}(a.base(), b.base());
}
/// @brief The number of elements from `b` to `a`.
template <typename A, typename B>
  requires std::is_same_v<std::remove_const_t<A>, std::remove_const_t<B>>
[[nodiscard]] constexpr std::ptrdiff_t operator-(const HostIterator<A>& a,
                                                 const HostIterator<B>& b) noexcept {
  return a.base() - b.base();
}

static_assert(std::contiguous_iterator<HostIterator<int>>);
static_assert(std::contiguous_iterator<HostIterator<const int>>);
static_assert(std::is_trivially_copyable_v<HostIterator<int>>);

}  // namespace smartarray
