/**
 * @file views/device_view.hpp
 * @brief `DeviceView<T>`: the trivially copyable (pointer, size) view that kernels take by value.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/detail/type_traits.hpp>
#include <smartarray/diagnostics/detail/view_registry.hpp>

#include <cuda/std/span>

#include <cstddef>
#include <type_traits>

namespace smartarray {
inline namespace SMARTARRAY_VIEW_ABI {

template <typename T>
class SmartArray;

/**
 * @brief A non-owning view of an array's device copy. Kernels take it by value.
 *
 * `DeviceView<const T>` is a read-only view. A `DeviceView<T>` converts to `DeviceView<const T>`
 * and to `cuda::std::span<T>`. It is valid until the array is resized, reallocated or destroyed,
 * or until the host side is acquired for writing.
 *
 * Debug builds (SMARTARRAY_DEBUG_CHECKS) check that on the host: `data()`, `begin()`, `end()`,
 * `span()` and the conversion to a span throw logic_error, naming the array, the operation and
 * what happened to the array, when a view of a SmartArray is used after it stopped being valid.
 * Device code and `operator[]` are never checked; views made from a raw pointer are not tracked.
 * Only debug builds carry the stamp that the check needs: a release view is the pointer and the
 * size (16 bytes on 64-bit machines).
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
      : data_(other.data_), size_(other.size_) {
#if SMARTARRAY_DEBUG_CHECKS
    stamp_ = other.stamp_;
#endif
  }

  /// @brief Element `i` (unchecked).
  SMARTARRAY_HOST_DEVICE constexpr reference operator[](size_type i) const noexcept {
    return data_[i];
  }
  /// @brief The device address of the first element.
  /// @throws logic_error in debug builds, on the host, when the view is no longer valid.
  SMARTARRAY_HOST_DEVICE constexpr pointer data() const {
    check("DeviceView::data()");
    return data_;
  }
  /// @brief The number of elements.
  SMARTARRAY_HOST_DEVICE constexpr size_type size() const noexcept { return size_; }
  /// @brief The number of bytes.
  SMARTARRAY_HOST_DEVICE constexpr size_type size_bytes() const noexcept {
    return size_ * sizeof(T);
  }
  /// @brief True when the view has no elements.
  SMARTARRAY_HOST_DEVICE constexpr bool empty() const noexcept { return size_ == 0; }
  /// @brief Device iterators (plain pointers).
  /// @throws logic_error in debug builds, on the host, when the view is no longer valid.
  SMARTARRAY_HOST_DEVICE constexpr iterator begin() const {
    check("DeviceView::begin()");
    return data_;
  }
  SMARTARRAY_HOST_DEVICE constexpr iterator end() const {
    check("DeviceView::end()");
    return data_ + size_;
  }
  /// @brief The same view as a `cuda::std::span`.
  /// @throws logic_error in debug builds, on the host, when the view is no longer valid.
  SMARTARRAY_HOST_DEVICE constexpr cuda::std::span<T> span() const {
    check("DeviceView::span()");
    return cuda::std::span<T>(data_, size_);
  }
  SMARTARRAY_HOST_DEVICE constexpr operator cuda::std::span<T>() const {  // NOLINT
    return span();
  }

 private:
  template <typename>
  friend class DeviceView;
  template <typename>
  friend class SmartArray;
  template <typename>
  friend class Slice;

  SMARTARRAY_HOST_DEVICE constexpr DeviceView(T* data, size_type size,
                                              [[maybe_unused]] detail::ViewStamp stamp) noexcept
      : data_(data), size_(size) {
#if SMARTARRAY_DEBUG_CHECKS
    stamp_ = stamp;
#endif
  }

  SMARTARRAY_HOST_DEVICE constexpr void check([[maybe_unused]] const char* operation) const {
#if SMARTARRAY_DEBUG_CHECKS && !SMARTARRAY_IN_DEVICE_CODE
    if (!std::is_constant_evaluated() && stamp_.slot != 0) {
      detail::check_view(stamp_, size_, operation);
    }
#endif
  }

  T* data_ = nullptr;
  size_type size_ = 0;
#if SMARTARRAY_DEBUG_CHECKS
  /// Only debug builds check views, so only their views carry the stamp.
  detail::ViewStamp stamp_{};
#endif
};

static_assert(std::is_trivially_copyable_v<DeviceView<float>>);
static_assert(std::is_trivially_copyable_v<DeviceView<const float>>);
#if !SMARTARRAY_DEBUG_CHECKS
// What a kernel parameter costs: the pointer and the size, nothing else.
static_assert(sizeof(DeviceView<float>) == sizeof(float*) + sizeof(std::size_t));
#endif

}  // inline namespace SMARTARRAY_VIEW_ABI

namespace detail {
/// True for `DeviceView<T>` with any cv-ref qualification.
template <typename A>
inline constexpr bool is_device_view_v = is_specialization_v<A, DeviceView>;
}  // namespace detail
}  // namespace smartarray
