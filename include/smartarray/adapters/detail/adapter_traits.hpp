/**
 * @file adapters/detail/adapter_traits.hpp
 * @brief Type traits shared by the adapters (private): what kind of argument a call received.
 */
#pragma once

#include <smartarray/views/device_view.hpp>
#include <smartarray/core/slice.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/detail/type_traits.hpp>

#include <type_traits>

namespace smartarray {
template <typename T>
class Out;
}  // namespace smartarray

namespace smartarray::detail {

/// True for `SmartArray<T>` with any cv-ref qualification.
template <typename A>
inline constexpr bool is_smart_array_v = is_specialization_v<A, SmartArray>;

/// True for `Out<T>` (made by `out(a)`) with any cv-ref qualification.
template <typename A>
inline constexpr bool is_out_v = is_specialization_v<A, Out>;

/// True for the types that name a stream: `StreamRef`, `Stream` and, under CUDA, `cudaStream_t`.
template <typename A>
inline constexpr bool is_stream_v = std::is_same_v<std::remove_cvref_t<A>, StreamRef> ||
                                    std::is_same_v<std::remove_cvref_t<A>, Stream>
#if SMARTARRAY_HAS_CUDA_TYPES
                                    || std::is_same_v<std::remove_cvref_t<A>, cudaStream_t>
#endif
    ;

/// True for the arguments that hold elements (arrays, slices and views); anything else is a scalar.
template <typename A>
inline constexpr bool is_elementwise_v =
    is_smart_array_v<A> || is_slice_v<A> || is_device_view_v<A>;

/// Throws std::out_of_range, as its acquire would, when `argument` is a slice (or `out(s)`) whose
/// array no longer holds its range; anything else passes. The adapters check every slice before
/// they acquire anything, so that such a call copies nothing.
template <typename A>
void check_in_range(const A& argument) {
  if constexpr (is_slice_v<A>) {
    // A slice's constructor checks its range, with the message of an acquire.
    (void)std::remove_cvref_t<A>(argument.array(), argument.first(), argument.size());
  } else if constexpr (is_out_v<A>) {
    if (argument.slice()) check_in_range(*argument.slice());
  }
}

/// An argument as out-of-core access takes it (core/detail/chunked_access.hpp): an array as the
/// slice of all its elements, out(...) as the slice it overwrites, views and scalars as they are.
template <typename A>
decltype(auto) chunk_operand(const A& argument) {
  if constexpr (is_smart_array_v<A>) {
    return argument.slice(0, argument.size());
  } else if constexpr (is_out_v<A>) {
    return argument.slice() ? *argument.slice()
                            : argument.array().slice(0, argument.array().size());
  } else {
    return (argument);
  }
}

/// For static_asserts that must fire only when a template is instantiated.
template <typename...>
inline constexpr bool always_false_v = false;

}  // namespace smartarray::detail
