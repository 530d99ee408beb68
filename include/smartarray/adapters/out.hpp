/**
 * @file adapters/out.hpp
 * @brief `out(a)`, `out(s)`: marks an array or a slice argument of an adapter as overwritten, so
 *        that its device copy is acquired with `Access::discard` and nothing is copied in.
 *
 * It is the counterpart of the `out=` argument of Numba's ufuncs; `launch` and `transform` take it.
 */
#pragma once

#include <smartarray/core/slice.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/views/device_view.hpp>
#include <smartarray/adapters/detail/adapter_traits.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>

namespace smartarray {

/**
 * @brief An array, or a slice of one, that a kernel or an adapter overwrites entirely. Made by
 *        `out(a)` or `out(s)`.
 * @tparam T the element type of the array.
 */
template <typename T>
class Out {
 public:
  /// @brief Wraps `array`, which must outlive the call that takes this wrapper.
  explicit Out(SmartArray<T>& array) noexcept : array_(std::addressof(array)) {}
  /// @brief Wraps `slice`, whose array must outlive the call that takes this wrapper.
  explicit Out(Slice<T> slice) noexcept : array_(std::addressof(slice.array())), slice_(slice) {}

  /// @brief The wrapped array (for `out(s)`, the slice's array).
  [[nodiscard]] SmartArray<T>& array() const noexcept { return *array_; }
  /// @brief For `out(s)`, the slice, whose elements alone are overwritten; none for `out(a)`.
  [[nodiscard]] const std::optional<Slice<T>>& slice() const noexcept { return slice_; }
  /// @brief The number of elements overwritten: the array's size now, or the slice's.
  [[nodiscard]] std::size_t size() const noexcept {
    return slice_ ? slice_->size() : array_->size();
  }
  /**
   * @brief The overwritten elements on the device, acquired for `access` on `stream`: the whole
   *        array's device copy, or only the slice's range of it.
   * @param access discard, or read_write when the call also reads the array.
   * @param stream the stream the work runs on.
   * @param where the caller's source location, for the migration trace.
   * @throws std::out_of_range for `out(s)` when the array no longer holds the slice's range.
   */
  [[nodiscard]] DeviceView<T> device_view(
      Access access, StreamRef stream = {},
      smartarray::source_location where = smartarray::source_location::current()) const {
    return slice_ ? slice_->device_view(access, stream, where)
                  : array_->device_view(access, stream, where);
  }

 private:
  SmartArray<T>* array_;
  /// The range of `out(s)`; none for `out(a)`, which follows the array's size up to the call.
  std::optional<Slice<T>> slice_;
};

/**
 * @brief Marks `argument` as overwritten by the call it is passed to: `Access::discard`, no copy
 *        in.
 * @param argument a writable `SmartArray` (an lvalue: it must outlive the call), or a `Slice<T>`
 *        (a temporary one too: a slice is a view). Its old contents are not read. A const array
 *        and a `Slice<const T>` are compile errors.
 */
template <typename A>
[[nodiscard]] auto out(A&& argument) noexcept {
  using Argument = std::remove_reference_t<A>;
  static_assert(detail::is_smart_array_v<A> || detail::is_slice_v<A>,
                "out(a) takes a SmartArray or a Slice<T>");
  if constexpr (detail::is_smart_array_v<A>) {
    static_assert(!std::is_const_v<Argument>,
                  "out(a) needs a writable SmartArray: a const array cannot be overwritten");
    static_assert(std::is_lvalue_reference_v<A>,
                  "out(a) needs an array that outlives the call, not a temporary");
    if constexpr (!std::is_const_v<Argument> && std::is_lvalue_reference_v<A>) {
      return Out<typename Argument::value_type>(argument);
    }
  } else if constexpr (detail::is_slice_v<A>) {
    static_assert(!std::is_const_v<typename Argument::element_type>,
                  "out(s) needs a writable Slice<T>: a Slice<const T> cannot be overwritten");
    if constexpr (!std::is_const_v<typename Argument::element_type>) {
      return Out<typename Argument::value_type>(argument);
    }
  }
}

}  // namespace smartarray
