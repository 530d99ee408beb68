/**
 * @file core/slice.hpp
 * @brief `Slice<T>`: a range of a SmartArray whose acquires move only that range.
 */
#pragma once

#include <smartarray/core/smart_array.hpp>
#include <smartarray/detail/type_traits.hpp>

#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

namespace smartarray {
namespace detail {
/// Tags the constructor of a slice whose range was checked already.
struct UncheckedRange {};
}  // namespace detail

inline namespace SMARTARRAY_VIEW_ABI {

/**
 * @brief The elements [first, first + count) of a SmartArray: a non-owning, trivially copyable
 *        handle whose acquires copy only the bytes of that range that the side lacks, and whose
 *        writes mark only that range stale on the other side.
 *
 * Made by `a.slice(first, count)` (a `Slice<const T>` from a const array) and by `s.slice(first,
 * count)` of another slice. `launch`, `transform`, `map`, `reduce`, `copy` and `fill` take a slice
 * wherever they take an array, with the same intent rules: a `Slice<const T>` is read, a
 * `Slice<T>` bound to a non-const kernel parameter is read and written, and `out(s)` is
 * overwritten without a copy in.
 *
 * A slice names its array, not the array's buffer: it stays usable across the array's
 * reallocations, and each acquire checks that the range is still inside the array. The views it
 * hands out are the array's views, which debug builds check as any other after a reallocation.
 * The array must outlive the slice, as a container outlives its iterators.
 *
 * @tparam T the element type; `const T` for a read-only slice.
 */
template <typename T>
class Slice {
 public:
  using value_type = std::remove_const_t<T>;  ///< the array's element type
  using element_type = T;                     ///< the element type with the slice's constness
  using size_type = std::size_t;              ///< element counts and indices
  /// The array a slice of this type refers to.
  using array_type =
      std::conditional_t<std::is_const_v<T>, const SmartArray<value_type>, SmartArray<value_type>>;

  /**
   * @brief The elements [first, first + count) of `array`.
   * @param array the array, which must outlive the slice.
   * @param first the first element.
   * @param count the number of elements.
   * @throws std::out_of_range naming the range and the size when the range leaves the array.
   */
  Slice(array_type& array, size_type first, size_type count)
      : array_(std::addressof(array)), first_(first), count_(count) {
    check_range();
  }
  /// @brief A writable slice converts to a read-only one of the same range.
  /// @param other the writable slice.
  template <typename U>
    requires(std::is_same_v<const U, T> && !std::is_const_v<U>)
  Slice(const Slice<U>& other) noexcept  // NOLINT(google-explicit-constructor)
      : array_(other.array_), first_(other.first_), count_(other.count_) {}

  /// @brief The number of elements.
  [[nodiscard]] constexpr size_type size() const noexcept { return count_; }
  /// @brief True when the slice has no element.
  [[nodiscard]] constexpr bool empty() const noexcept { return count_ == 0; }
  /// @brief The index of the slice's first element in the array.
  [[nodiscard]] constexpr size_type first() const noexcept { return first_; }
  /// @brief The array.
  [[nodiscard]] constexpr array_type& array() const noexcept { return *array_; }

  /**
   * @brief The elements [first, first + count) of this slice (a slice of a slice).
   * @param first the first element, relative to this slice.
   * @param count the number of elements.
   * @throws std::out_of_range naming the range and the slice's size when it leaves the slice.
   */
  [[nodiscard]] Slice slice(size_type first, size_type count) const {
    SMARTARRAY_EXPECTS(first <= count_ && count <= count_ - first, std::out_of_range,
                       "Slice::slice(", first, ", ", count, "): the elements [", first, ", ",
                       first + count, ") leave the slice of ", count_,
                       " elements");
    return Slice(*array_, first_ + first, count, detail::UncheckedRange{});
  }

  /**
   * @brief The slice's host elements, made valid for `access`: only the bytes of the range that
   *        the host lacks are copied, and a writer marks only the range stale on the device.
   * @param access read, read_write or discard.
   * @param stream the stream that carries a needed copy (default: the last device writer's).
   * @param where the caller's source location, for the migration trace.
   * @throws std::out_of_range when the array no longer holds the range.
   */
  [[nodiscard]] std::span<T> host_view(
      Access access = Access::read_write, std::optional<StreamRef> stream = std::nullopt,
      smartarray::source_location where = smartarray::source_location::current()) const
    requires(!std::is_const_v<T>)
  {
    return {element_pointer(acquire(Side::host, access, stream, where)), count_};
  }
  /// @brief The slice's host elements for reading (see the writable overload).
  /// @param stream the stream that carries a needed copy.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] std::span<const value_type> host_view(
      std::optional<StreamRef> stream = std::nullopt,
      smartarray::source_location where = smartarray::source_location::current()) const
    requires(std::is_const_v<T>)
  {
    return {element_pointer(acquire(Side::host, Access::read, stream, where)), count_};
  }

  /**
   * @brief The slice's device elements, made valid for `access` on `stream`, as a view for
   *        kernels; ordered on `stream` as the array's device views are.
   * @param access read, read_write or discard.
   * @param stream the stream the work runs on.
   * @param where the caller's source location, for the migration trace.
   * @throws std::out_of_range when the array no longer holds the range.
   */
  [[nodiscard]] DeviceView<T> device_view(
      Access access, StreamRef stream = {},
      smartarray::source_location where = smartarray::source_location::current()) const
    requires(!std::is_const_v<T>)
  {
    // The acquire first: the stamp is the one it handed out.
    T* const elements = element_pointer(acquire(Side::device, access, stream, where));
    return DeviceView<T>(elements, count_, array_->view_stamp());
  }
  /// @brief The slice's device elements for reading on `stream`.
  /// @param stream the stream the work runs on.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] DeviceView<const value_type> device_view(
      StreamRef stream = {},
      smartarray::source_location where = smartarray::source_location::current()) const {
    // The acquire first: the stamp is the one it handed out.
    const value_type* const elements =
        element_pointer(acquire(Side::device, Access::read, stream, where));
    return DeviceView<const value_type>(elements, count_, array_->view_stamp());
  }

  /**
   * @brief `SmartArray::prefetch_to_host` of the slice's elements only.
   * @param stream the stream of the copies.
   * @param where the caller's source location, for the migration trace.
   * @throws std::out_of_range naming the range and the size when the array no longer holds it.
   */
  Prefetch prefetch_to_host(
      StreamRef stream = {},
      smartarray::source_location where = smartarray::source_location::current()) const {
    check_range();
    return Prefetch(array_->core_.prefetch_to_host(bytes(), stream, where));
  }
  /**
   * @brief `SmartArray::prefetch_to_device` of the slice's elements only.
   * @param stream the stream of the copies, on the device that receives them.
   * @param where the caller's source location, for the migration trace.
   * @throws std::out_of_range naming the range and the size when the array no longer holds it.
   */
  void prefetch_to_device(
      StreamRef stream = {},
      smartarray::source_location where = smartarray::source_location::current()) const {
    check_range();
    static_cast<void>(
        array_->core_.acquire_range(Side::device, Access::read, bytes(), stream, where));
  }
  /**
   * @brief `SmartArray::discard` of the slice's elements only.
   * @param where the caller's source location, for messages.
   * @throws std::out_of_range naming the range and the size when the array no longer holds it.
   */
  void discard(smartarray::source_location where = smartarray::source_location::current()) const
    requires(!std::is_const_v<T>)
  {
    check_range();
    array_->core_.discard(bytes(), where);
  }

 private:
  template <typename>
  friend class Slice;
  Slice(array_type& array, size_type first, size_type count, detail::UncheckedRange) noexcept
      : array_(std::addressof(array)), first_(first), count_(count) {}

  void check_range() const {
    SMARTARRAY_EXPECTS(first_ <= array_->size() && count_ <= array_->size() - first_,
                       std::out_of_range, "SmartArray slice ", range_text(),
                       " leaves the array of ", array_->size(), " elements");
  }
  /// "[first, end)", or the offset and length when the end does not fit in a size_type.
  [[nodiscard]] std::string range_text() const {
    if (count_ <= std::numeric_limits<size_type>::max() - first_) {
      return detail::concat("[", first_, ", ", first_ + count_, ")");
    }
    return detail::concat("at ", first_, " of ", count_, " elements");
  }
  /// The side's buffer, made valid for `access` on the slice's bytes.
  std::byte* acquire(Side side, Access access, std::optional<StreamRef> stream,
                     const smartarray::source_location& where) const {
    check_range();
    const bool checked = access == Access::read && SMARTARRAY_DEBUG_CHECKS != 0;
    if (side == Side::device && !stream) stream = StreamRef{};
    return array_->core_.acquire_range(side, access, bytes(), stream, where, checked);
  }
  /// The slice's bytes in the array.
  [[nodiscard]] detail::ByteRange bytes() const noexcept {
    return {first_ * sizeof(value_type), (first_ + count_) * sizeof(value_type)};
  }
  /// The slice's first element in `buffer` (null when the buffer is).
  [[nodiscard]] T* element_pointer(std::byte* buffer) const noexcept {
    return buffer == nullptr ? nullptr : reinterpret_cast<T*>(buffer) + first_;
  }

  array_type* array_;
  size_type first_;
  size_type count_;
};

template <typename T>
Slice<T> SmartArray<T>::slice(size_type first, size_type count) {
  return Slice<T>(*this, first, count);
}
template <typename T>
Slice<const T> SmartArray<T>::slice(size_type first, size_type count) const {
  return Slice<const T>(*this, first, count);
}

}  // namespace SMARTARRAY_VIEW_ABI

namespace detail {
/// True for `Slice<T>` and `Slice<const T>` with any cv-ref qualification.
template <typename A>
inline constexpr bool is_slice_v = is_specialization_v<A, Slice>;
}  // namespace detail
}  // namespace smartarray
