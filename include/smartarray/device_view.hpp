/**
 * @file device_view.hpp
 * @brief `DeviceView<T>`: the trivially copyable (pointer, size) view that kernels take by value.
 */
#pragma once

#include <smartarray/config.hpp>

#include <cuda/std/span>

#include <cstddef>
#include <type_traits>

namespace smartarray {

/**
 * @brief A non-owning view of an array's device copy. Kernels take it by value.
 *
 * `DeviceView<const T>` is a read-only view. A `DeviceView<T>` converts to `DeviceView<const T>`
 * and to `cuda::std::span<T>`. It is valid until the array is resized, reallocated or destroyed,
 * or until the host side is acquired for writing.
 */
template <typename T>
class DeviceView {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using size_type = std::size_t;
  using pointer = T*;
  using reference = T&;
  using iterator = T*;

  /// @brief An empty view.
  constexpr DeviceView() noexcept = default;
  /// @brief A view of `size` elements at device address `data`.
  SMARTARRAY_HOST_DEVICE constexpr DeviceView(T* data, size_type size) noexcept
      : data_(data), size_(size) {}
  /// @brief A mutable view converts to a read-only one.
  template <typename U>
    requires(std::is_same_v<const U, T> && !std::is_const_v<U>)
  SMARTARRAY_HOST_DEVICE constexpr DeviceView(DeviceView<U> other) noexcept  // NOLINT
      : data_(other.data()), size_(other.size()) {}

  /// @brief Element `i` (unchecked).
  SMARTARRAY_HOST_DEVICE constexpr reference operator[](size_type i) const noexcept {
    return data_[i];
  }
  /// @brief The device address of the first element.
  SMARTARRAY_HOST_DEVICE constexpr pointer data() const noexcept { return data_; }
  /// @brief The number of elements.
  SMARTARRAY_HOST_DEVICE constexpr size_type size() const noexcept { return size_; }
  /// @brief The number of bytes.
  SMARTARRAY_HOST_DEVICE constexpr size_type size_bytes() const noexcept {
    return size_ * sizeof(T);
  }
  /// @brief True when the view has no elements.
  SMARTARRAY_HOST_DEVICE constexpr bool empty() const noexcept { return size_ == 0; }
  /// @brief Device iterators (plain pointers).
  SMARTARRAY_HOST_DEVICE constexpr iterator begin() const noexcept { return data_; }
  SMARTARRAY_HOST_DEVICE constexpr iterator end() const noexcept { return data_ + size_; }
  /// @brief The same view as a `cuda::std::span`.
  SMARTARRAY_HOST_DEVICE constexpr cuda::std::span<T> span() const noexcept {
    return cuda::std::span<T>(data_, size_);
  }
  SMARTARRAY_HOST_DEVICE constexpr operator cuda::std::span<T>() const noexcept {  // NOLINT
    return span();
  }

 private:
  T* data_ = nullptr;
  size_type size_ = 0;
};

static_assert(std::is_trivially_copyable_v<DeviceView<float>>);
static_assert(std::is_trivially_copyable_v<DeviceView<const float>>);

}  // namespace smartarray
