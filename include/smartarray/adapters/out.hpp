/**
 * @file adapters/out.hpp
 * @brief `out(a)`: marks an array argument of an adapter as overwritten, so that its device copy
 *        is acquired with `Access::discard` and nothing is copied in.
 *
 * It is the counterpart of the `out=` argument of Numba's ufuncs; `launch` and `transform` take it.
 */
#pragma once

#include <smartarray/core/smart_array.hpp>
#include <smartarray/adapters/detail/adapter_traits.hpp>

#include <memory>
#include <type_traits>

namespace smartarray {

/**
 * @brief An array that a kernel or an adapter overwrites entirely. Made by `out(a)`.
 * @tparam T the element type of the array.
 */
template <typename T>
class Out {
 public:
  /// @brief Wraps `array`, which must outlive the call that takes this wrapper.
  explicit Out(SmartArray<T>& array) noexcept : array_(std::addressof(array)) {}
  /// @brief The wrapped array.
  [[nodiscard]] SmartArray<T>& array() const noexcept { return *array_; }

 private:
  SmartArray<T>* array_;
};

/**
 * @brief Marks `array` as overwritten by the call it is passed to: `Access::discard`, no copy in.
 * @param array a writable `SmartArray`; its old contents are not read. A const array is a compile
 *        error.
 */
template <typename A>
[[nodiscard]] auto out(A& array) noexcept {
  static_assert(detail::is_smart_array_v<A>, "out(a) takes a SmartArray");
  static_assert(!std::is_const_v<A>,
                "out(a) needs a writable SmartArray: a const array cannot be overwritten");
  return Out<typename A::value_type>(array);
}

}  // namespace smartarray
