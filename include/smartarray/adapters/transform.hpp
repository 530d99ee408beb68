/**
 * @file adapters/transform.hpp
 * @brief Elementwise `transform(out, f, ins...)` and `map(f, ins...)`: our counterpart of Numba's
 *        `@vectorize` ufuncs, with results that stay on the device.
 *
 * Each argument after `f` is an operand:
 * - a `SmartArray` is acquired for `read` on the stream (one copy in when its device copy is
 *   stale, none otherwise);
 * - a `Slice` (`Slice<T>` or `Slice<const T>`, core/slice.hpp) is acquired for `read` too, but
 *   only its range: the copy in moves only the bytes of the range that the device lacks;
 * - a `DeviceView` is used as it is (the caller acquired it);
 * - anything else is a scalar, broadcast to every element (it must be trivially copyable).
 *
 * Array and slice operands must all have the output's size (a slice's size is its count). The
 * output (`SmartArray`, `Slice<T>`, `out(a)`, `out(s)` or a `DeviceView`) is overwritten: it is
 * acquired with `discard`, so nothing is copied into it, or with `read_write` when its array is
 * also an operand's array (an in-place transform; for slices of one array this holds whatever
 * their ranges). Operands are acquired before the output. Element i of the output is computed
 * from element i of each operand only, so a slice operand that overlaps the output at another
 * offset may read elements that the transform has already overwritten. Slices are views: a
 * temporary one (`a.slice(first, count)`) is a valid operand or output.
 *
 * A last argument that is a stream (`StreamRef`, `Stream` or `cudaStream_t`) is the stream to run
 * on; otherwise the default stream. Any number of operands follow the functor; the migration trace
 * names the line of the `transform` or `map` call for the copies its operands need. On the cuda
 * backend the work is one kernel of one thread per element, or per 16-byte vector of elements when
 * the element types are small and every array starts on a 16-byte boundary
 * (adapters/detail/elementwise.hpp; the calling file must be compiled by nvcc). On the host backend
 * `f` runs on the stream's worker thread. `f` must be callable on the host and the device
 * (`__host__ __device__`, or a lambda marked `SMARTARRAY_HOST_DEVICE`).
 *
 * @code
 * struct Add { SMARTARRAY_HOST_DEVICE float operator()(float x, float y) const { return x + y; } };
 * sa::transform(sa::out(c), Add{}, a, b, stream);   // a, b: read; c: discard
 * auto d = sa::map(Add{}, c, 1.0f);                 // a new array, valid on the device only
 * sa::transform(c.slice(0, 10), Add{}, a.slice(0, 10), b.slice(5, 10));  // 10 elements each
 * @endcode
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/views/device_view.hpp>
#include <smartarray/error.hpp>
#include <smartarray/adapters/for_each_index.hpp>
#include <smartarray/adapters/out.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/adapters/detail/adapter_traits.hpp>
#include <smartarray/core/detail/array_factory.hpp>
#include <smartarray/core/detail/chunked_access.hpp>

#include <cuda/std/tuple>
#include <cuda/std/utility>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace smartarray {
namespace detail {

/// The size of an operand; `npos` for a scalar.
inline constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

template <typename A>
std::size_t operand_size(const A& operand) noexcept {
  if constexpr (is_elementwise_v<A>) {
    return operand.size();
  } else {
    return npos;
  }
}

/// The array behind an operand or output, to detect an in-place transform; nullptr for the rest.
/// A slice is its array: slices of one array count as in place whatever their ranges.
template <typename A>
const void* array_identity(const A& argument) noexcept {
  if constexpr (is_smart_array_v<A>) {
    return std::addressof(argument);
  } else if constexpr (is_slice_v<A> || is_out_v<A>) {
    return std::addressof(argument.array());
  } else {
    return nullptr;
  }
}

/// What the functor receives for an operand: an element reference or the scalar.
template <typename A>
struct OperandElement {
  using type = const std::remove_cvref_t<A>&;
};
template <typename T>
struct OperandElement<SmartArray<T>> {
  using type = const T&;
};
template <typename T>
struct OperandElement<Slice<T>> {
  using type = const std::remove_const_t<T>&;
};
template <typename T>
struct OperandElement<DeviceView<T>> {
  using type = T&;
};
template <typename A>
using operand_element_t = typename OperandElement<std::remove_cvref_t<A>>::type;

/// The value of an operand inside the kernel: a device view, or the scalar itself.
template <typename A>
auto device_operand(const A& operand, StreamRef stream, const smartarray::source_location& where) {
  if constexpr (is_smart_array_v<A> || is_slice_v<A>) {
    return operand.device_view(stream, where);
  } else {
    return operand;
  }
}

template <typename T>
SMARTARRAY_HOST_DEVICE T& element_at(const DeviceView<T>& view, std::size_t i) {
  return view[i];
}
template <typename S>
SMARTARRAY_HOST_DEVICE const S& element_at(const S& scalar, std::size_t) {
  return scalar;
}

/// The element type of a kernel operand: a view's element, or the scalar's type.
template <typename A>
struct KernelOperandElement {
  using type = A;
};
template <typename T>
struct KernelOperandElement<DeviceView<T>> {
  using type = std::remove_const_t<T>;
};
template <typename A>
using kernel_operand_element_t = typename KernelOperandElement<A>::type;

/// A view operand's V elements from `first`, loaded as one vector; a scalar as it is.
template <unsigned V, typename T>
SMARTARRAY_HOST_DEVICE auto vector_operand(const DeviceView<T>& view, std::size_t first) {
  return load_vector<V>(view, first);
}
template <unsigned V, typename S>
SMARTARRAY_HOST_DEVICE const S& vector_operand(const S& scalar, std::size_t) {
  return scalar;
}
/// Element k of what vector_operand() returned.
template <typename T, unsigned V>
SMARTARRAY_HOST_DEVICE const T& vector_element(const AlignedVector<T, V>& vector, unsigned k) {
  return vector.elements[k];
}
template <typename S>
SMARTARRAY_HOST_DEVICE const S& vector_element(const S& scalar, unsigned) {
  return scalar;
}

/// The widest element that TransformOp's vector form loads or stores (the output's and the view
/// operands'; scalars are broadcast, not loaded); 0 when it has no vector form: an element size
/// that is not a power of two, or a functor that does not take const elements (one that writes
/// through a non-const reference to a view's element).
template <typename F, typename R, typename... Operands>
constexpr std::size_t transform_vector_element_bytes() {
  if constexpr (!std::is_invocable_v<F&, const kernel_operand_element_t<Operands>&...>) {
    return 0;
  } else {
    std::size_t widest = sizeof(R);
    bool vectorizable = vector_elements(sizeof(R)) > 1;
    const auto take = [&](std::size_t bytes, bool is_view) {
      if (!is_view) return;
      widest = std::max(widest, bytes);
      vectorizable = vectorizable && vector_elements(bytes) > 1;
    };
    (take(sizeof(kernel_operand_element_t<Operands>), is_device_view_v<Operands>), ...);
    return vectorizable ? widest : 0;
  }
}

/// The per-element body: `out[i] = f(operands[i]...)`, scalars broadcast. Its vector form
/// (adapters/detail/elementwise.hpp) loads V elements of each view operand in one access, calls
/// `f` V times and stores the V results in one access.
template <typename F, typename R, typename... Operands>
struct TransformOp {
  F f;
  DeviceView<R> out;
  cuda::std::tuple<Operands...> operands;

  static constexpr std::size_t vector_element_bytes =
      transform_vector_element_bytes<F, R, Operands...>();

  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) {
    apply(i, cuda::std::index_sequence_for<Operands...>{});
  }
  template <std::size_t... I>
  SMARTARRAY_HOST_DEVICE void apply(std::size_t i, cuda::std::index_sequence<I...>) {
    out[i] = static_cast<R>(f(element_at(cuda::std::get<I>(operands), i)...));
  }

  /// True when the output and every view operand start on a vector boundary.
  [[nodiscard]] bool vector_aligned() const noexcept {
    return [this]<std::size_t... I>(std::index_sequence<I...>) {
      return detail::vector_aligned(out) && (operand_aligned(cuda::std::get<I>(operands)) && ...);
    }(std::index_sequence_for<Operands...>{});
  }

  template <unsigned V>
  SMARTARRAY_HOST_DEVICE void apply_vector(std::size_t first) {
    apply_vector<V>(first, cuda::std::index_sequence_for<Operands...>{});
  }
  template <unsigned V, std::size_t... I>
  SMARTARRAY_HOST_DEVICE void apply_vector(std::size_t first, cuda::std::index_sequence<I...>) {
    // Every load before any store: an in-place transform reads its elements before it writes them.
    const cuda::std::tuple<decltype(vector_operand<V>(cuda::std::get<I>(operands), first))...> in{
        vector_operand<V>(cuda::std::get<I>(operands), first)...};
    AlignedVector<R, V> result;
    for (unsigned k = 0; k < V; ++k) {
      result.elements[k] = static_cast<R>(f(vector_element(cuda::std::get<I>(in), k)...));
    }
    store_vector<V>(out, first, result);
  }

 private:
  template <typename A>
  static bool operand_aligned(const A& operand) noexcept {
    if constexpr (is_device_view_v<A>) {
      return detail::vector_aligned(operand);
    } else {
      return true;
    }
  }
};

template <typename A>
void check_operand_type() {
  static_assert(!is_out_v<A>,
                "transform/map: out() marks the output, which is the first argument of "
                "transform; operands are only read");
  static_assert(is_elementwise_v<A> || std::is_trivially_copyable_v<std::remove_cvref_t<A>>,
                "transform/map: an argument that is neither a SmartArray, a Slice nor a DeviceView "
                "is a scalar, broadcast to every element, and must be trivially copyable");
}

template <typename A>
void check_operand_size(const char* what, const A& operand, std::size_t index,
                        std::size_t expected, const char* expected_name) {
  const std::size_t size = operand_size(operand);
  SMARTARRAY_EXPECTS(size == npos || size == expected, logic_error, what, ": operand ", index,
                     " has ", size, " elements but ", expected_name, " has ", expected);
}

template <typename Output>
struct OutputTraits {
  static_assert(always_false_v<Output>,
                "transform: the output must be a non-const SmartArray, a Slice<T>, out(...) or a "
                "DeviceView<T>");
};
template <typename T>
struct OutputTraits<SmartArray<T>> {
  using value_type = T;
};
template <typename T>
struct OutputTraits<Slice<T>> {
  using value_type = std::remove_const_t<T>;
};
template <typename T>
struct OutputTraits<Out<T>> {
  using value_type = T;
};
template <typename T>
struct OutputTraits<DeviceView<T>> {
  static_assert(!std::is_const_v<T>, "transform: the output view must be writable");
  using value_type = T;
};

/// True when `Output` can be overwritten: a const DeviceView<T> or Slice<T> still writes through;
/// a const SmartArray and a Slice<const T> do not.
template <typename Output>
constexpr bool writable_output() {
  if constexpr (is_slice_v<Output>) {
    return !std::is_const_v<typename std::remove_cvref_t<Output>::element_type>;
  } else {
    return !std::is_const_v<std::remove_reference_t<Output>> || is_device_view_v<Output>;
  }
}

template <typename Output>
DeviceView<typename OutputTraits<std::remove_cvref_t<Output>>::value_type> acquire_output(
    Output& output, bool in_place, StreamRef stream, const smartarray::source_location& where) {
  if constexpr (is_device_view_v<Output>) {
    return output;
  } else {
    // An array, a slice (its range only) and out(...) share the device_view of an array.
    return output.device_view(in_place ? Access::read_write : Access::discard, stream, where);
  }
}

/// True when the last of `Args` names a stream.
template <typename... Args>
struct EndsWithStream : std::false_type {};
template <typename First, typename... Rest>
struct EndsWithStream<First, Rest...>
    : std::bool_constant<is_stream_v<std::tuple_element_t<sizeof...(Rest),
                                                          std::tuple<First, Rest...>>>> {};

/// Calls `body(stream, operands...)`, splitting a trailing stream off `args`.
template <typename Body, typename... Args>
decltype(auto) with_trailing_stream(Body&& body, Args&&... args) {
  if constexpr (EndsWithStream<Args...>::value) {
    auto all = std::forward_as_tuple(std::forward<Args>(args)...);
    const StreamRef stream = std::get<sizeof...(Args) - 1>(all);
    return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
      return body(stream, std::get<I>(all)...);
    }(std::make_index_sequence<sizeof...(Args) - 1>{});
  } else {
    return body(StreamRef{}, args...);
  }
}

/// The elements an output (an array, a slice or out(...)) overwrites, as a slice.
template <typename Output>
Slice<typename OutputTraits<std::remove_cvref_t<Output>>::value_type> output_slice(
    Output& output) {
  if constexpr (is_out_v<Output>) {
    return output.slice() ? *output.slice() : output.array().slice(0, output.array().size());
  } else if constexpr (is_slice_v<Output>) {
    return output;
  } else {
    return output.slice(0, output.size());
  }
}

inline namespace SMARTARRAY_KERNEL_ABI {
/// transform's out-of-core path: `output[i] = f(operands[i]...)`, chunk by chunk, where each
/// operand is a slice, a device view or a scalar (chunk_operand()); the output becomes valid on
/// the host only.
template <typename R, typename F, typename... Operands>
void transform_in_chunks(const Slice<R>& output, bool in_place, StreamRef stream,
                         const smartarray::source_location& where, const F& f,
                         const Operands&... operands) {
  const ChunkedCall call("transform", output.size(),
                         sizeof(R) + (chunk_bytes_of<Operands>() + ... + std::size_t{0}), stream,
                         where);
  call.run_into(
      output, in_place ? Access::read_write : Access::discard,
      [&f](std::size_t, std::size_t count, StreamRef on, DeviceView<R> out, auto... chunks) {
        for_each_index_on(count, TransformOp<F, R, decltype(chunks)...>{f, out, {chunks...}}, on);
      },
      operands...);
}

template <typename Output, typename F, typename... Ins>
void transform_on(const smartarray::source_location& where, StreamRef stream, Output& output, F f,
                  const Ins&... ins) {
  constexpr bool writable = writable_output<Output>();
  static_assert(writable,
                "transform: the output must be a non-const SmartArray, a Slice<T>, out(...) or a "
                "DeviceView<T>: a const array or a Slice<const T> cannot be overwritten");
  if constexpr (writable) {
    using R = typename OutputTraits<std::remove_cvref_t<Output>>::value_type;
    (check_operand_type<Ins>(), ...);
    const std::size_t n = output.size();
    std::size_t index = 0;
    (check_operand_size("transform", ins, ++index, n, "the output"), ...);
    check_in_range(output);
    (check_in_range(ins), ...);
    require_kernel_compiler("transform", n);
    const void* output_array = array_identity(output);
    const bool in_place =
        output_array != nullptr && ((array_identity(ins) == output_array) || ...);
    // Arrays that need more device memory together than the budget run in chunks.
    if constexpr (!is_device_view_v<Output>) {
      const Slice<R> target = output_slice(output);
      if (exceeds_device_budget(stream, 0, target, chunk_operand(ins)...)) {
        transform_in_chunks(target, in_place, stream, where, f, chunk_operand(ins)...);
        return;
      }
    }
    // Operands first, then the output: an in-place operand is read before it is overwritten.
    TransformOp<F, R, decltype(device_operand(ins, stream, where))...> op{
        f, {}, {device_operand(ins, stream, where)...}};
    op.out = acquire_output(output, in_place, stream, where);
    for_each_index_on(n, op, stream);
  }
}

/// transform(output, f, args...) called at `where`.
template <typename Output, typename F, typename... Args>
void transform_at(const smartarray::source_location& where, Output&& output, F f, Args&&... args) {
  with_trailing_stream(
      [&](StreamRef stream, const auto&... ins) { transform_on(where, stream, output, f, ins...); },
      std::forward<Args>(args)...);
}

/// How many arguments `map` takes after the functor (operands and a stream): each arity is an
/// overload of its own, so that the call site can be a defaulted last parameter while the result
/// stays exactly `SmartArray<R>` (see `transform` for the class that needs no overloads).
inline constexpr std::size_t max_elementwise_arguments = 8;

/// map(f, args...) called at `where`.
template <typename F, typename... Args>
[[nodiscard]] auto map_at(const smartarray::source_location& where, F f, Args&&... args) {
  const NvtxRange nvtx("map", where);
  return with_trailing_stream(
      [&](StreamRef stream, const auto&... ins) {
        static_assert((is_elementwise_v<decltype(ins)> || ...),
                      "map: at least one operand must be a SmartArray, a Slice or a DeviceView, "
                      "to size the result");
        using R =
            std::remove_cvref_t<std::invoke_result_t<F&, operand_element_t<decltype(ins)>...>>;
        static_assert(!std::is_void_v<R> && std::is_trivially_copyable_v<R>,
                      "map: the functor must return a trivially copyable value");
        std::size_t n = npos;
        ((n = (n == npos ? operand_size(ins) : n)), ...);
        std::size_t index = 0;
        (check_operand_size("map", ins, ++index, n, "the first array operand"), ...);
        (check_in_range(ins), ...);
        require_kernel_compiler("map", n);
        // Valid on the device only, written there on `stream` (the kernel below is its first
        // use): no memory on the host until it is read there. A result that does not fit the
        // device budget with the operands is made on the host, and filled in chunks.
        SmartArray<R> result = exceeds_device_budget(stream, n * sizeof(R), chunk_operand(ins)...)
                                   ? SmartArray<R>(n, no_init)
                                   : ArrayFactory::device_only<R>(n, stream, ArrayOptions{});
        transform_on(where, stream, result, f, ins...);
        return result;
      },
      std::forward<Args>(args)...);
}
}  // namespace SMARTARRAY_KERNEL_ABI

}  // namespace detail

inline namespace SMARTARRAY_KERNEL_ABI {

/**
 * @brief `out[i] = f(ins[i]...)` for every element, on the device; scalars broadcast.
 *
 * Called as a function: `sa::transform(out, f, ins..., stream)`. It is a class template whose
 * constructor does the work, because a constructor can take the caller's source location (for
 * the migration trace) as a defaulted parameter after any number of arguments; the deduction
 * guide below makes every call site deduce it. Callers never pass the location.
 *
 * @param output a non-const `SmartArray`, a `Slice<T>`, `out(a)`, `out(s)` or a `DeviceView<T>`;
 *        it is overwritten (acquired with `discard`, or `read_write` when its array is also an
 *        operand's array). A slice is overwritten in its range only.
 * @param f a `__host__ __device__` callable; its result converts to the output's element type.
 * @param args the operands (arrays, slices, views or scalars), then optionally the stream.
 * @param where the caller's source location.
 * @throws logic_error when an array or slice operand's size differs from the output's (nothing is
 *         acquired), or on the cuda backend when the caller was not compiled by nvcc.
 * @throws std::out_of_range when a slice no longer lies inside its array (the array shrank);
 *         nothing is acquired.
 * @throws out_of_memory or cuda_error when an acquire or the launch fails.
 */
template <typename Output, typename F, typename... Args>
class transform {
 public:
  transform(Output&& output, F f, Args&&... args,  // NOLINT(google-explicit-constructor)
            smartarray::source_location where = smartarray::source_location::current()) {
    const detail::NvtxRange nvtx("transform", where);
    detail::transform_at(where, output, f, std::forward<Args>(args)...);
  }
};
template <typename Output, typename F, typename... Args>
transform(Output&&, F, Args&&...) -> transform<Output, F, Args...>;

/**
 * @brief A new array with `f(ins[i]...)` for every element, computed on the device (our
 *        `@vectorize` call). The result is valid on the device only and takes no host memory:
 *        reading it on the host allocates the host copy and copies it back once.
 *
 * One overload per number of arguments after `f`, from 1 to 8, each ending with the caller's
 * source location (for the migration trace), which callers never pass.
 *
 * @param f a `__host__ __device__` callable returning a trivially copyable value.
 * @param a1 the first operand (at least one operand is an array, a slice or a view; scalars
 *        broadcast).
 * @param where the caller's source location.
 * @return the results, sized as the array and slice operands.
 * @throws logic_error when the array and slice operands' sizes differ (nothing is acquired), or on
 *         the cuda backend when the caller was not compiled by nvcc.
 * @throws std::out_of_range when a slice no longer lies inside its array (the array shrank);
 *         nothing is acquired.
 * @throws out_of_memory or cuda_error when an allocation, an acquire or the launch fails.
 */
template <typename F, typename A1>
[[nodiscard]] auto map(F f, A1&& a1,
                       smartarray::source_location where = smartarray::source_location::current()) {
  return detail::map_at(where, f, std::forward<A1>(a1));
}
/// @brief map with 2 arguments after `f`: operands, the last one possibly the stream.
template <typename F, typename A1, typename A2>
[[nodiscard]] auto map(F f, A1&& a1, A2&& a2,
                       smartarray::source_location where = smartarray::source_location::current()) {
  return detail::map_at(where, f, std::forward<A1>(a1), std::forward<A2>(a2));
}
/// @brief map with 3 arguments after `f`: operands, the last one possibly the stream.
template <typename F, typename A1, typename A2, typename A3>
[[nodiscard]] auto map(F f, A1&& a1, A2&& a2, A3&& a3,
                       smartarray::source_location where = smartarray::source_location::current()) {
  return detail::map_at(where, f, std::forward<A1>(a1), std::forward<A2>(a2), std::forward<A3>(a3));
}
/// @brief map with 4 arguments after `f`: operands, the last one possibly the stream.
template <typename F, typename A1, typename A2, typename A3, typename A4>
[[nodiscard]] auto map(F f, A1&& a1, A2&& a2, A3&& a3, A4&& a4,
                       smartarray::source_location where = smartarray::source_location::current()) {
  return detail::map_at(where, f, std::forward<A1>(a1), std::forward<A2>(a2), std::forward<A3>(a3),
                        std::forward<A4>(a4));
}
/// @brief map with 5 arguments after `f`: operands, the last one possibly the stream.
template <typename F, typename A1, typename A2, typename A3, typename A4, typename A5>
[[nodiscard]] auto map(F f, A1&& a1, A2&& a2, A3&& a3, A4&& a4, A5&& a5,
                       smartarray::source_location where = smartarray::source_location::current()) {
  return detail::map_at(where, f, std::forward<A1>(a1), std::forward<A2>(a2), std::forward<A3>(a3),
                        std::forward<A4>(a4), std::forward<A5>(a5));
}
/// @brief map with 6 arguments after `f`: operands, the last one possibly the stream.
template <typename F, typename A1, typename A2, typename A3, typename A4, typename A5, typename A6>
[[nodiscard]] auto map(F f, A1&& a1, A2&& a2, A3&& a3, A4&& a4, A5&& a5, A6&& a6,
                       smartarray::source_location where = smartarray::source_location::current()) {
  return detail::map_at(where, f, std::forward<A1>(a1), std::forward<A2>(a2), std::forward<A3>(a3),
                        std::forward<A4>(a4), std::forward<A5>(a5), std::forward<A6>(a6));
}
/// @brief map with 7 arguments after `f`: operands, the last one possibly the stream.
template <typename F, typename A1, typename A2, typename A3, typename A4, typename A5, typename A6,
          typename A7>
[[nodiscard]] auto map(F f, A1&& a1, A2&& a2, A3&& a3, A4&& a4, A5&& a5, A6&& a6, A7&& a7,
                       smartarray::source_location where = smartarray::source_location::current()) {
  return detail::map_at(where, f, std::forward<A1>(a1), std::forward<A2>(a2), std::forward<A3>(a3),
                        std::forward<A4>(a4), std::forward<A5>(a5), std::forward<A6>(a6),
                        std::forward<A7>(a7));
}
/// @brief map with 8 arguments after `f`: operands, the last one possibly the stream.
template <typename F, typename A1, typename A2, typename A3, typename A4, typename A5, typename A6,
          typename A7, typename A8>
[[nodiscard]] auto map(F f, A1&& a1, A2&& a2, A3&& a3, A4&& a4, A5&& a5, A6&& a6, A7&& a7, A8&& a8,
                       smartarray::source_location where = smartarray::source_location::current()) {
  return detail::map_at(where, f, std::forward<A1>(a1), std::forward<A2>(a2), std::forward<A3>(a3),
                        std::forward<A4>(a4), std::forward<A5>(a5), std::forward<A6>(a6),
                        std::forward<A7>(a7), std::forward<A8>(a8));
}
/// @brief More arguments than the overloads take: a compile error that says so.
template <typename F, typename... Args>
  requires(sizeof...(Args) > detail::max_elementwise_arguments)
void map(F, Args&&...) {
  static_assert(detail::always_false_v<F>,
                "map takes at most 8 arguments after the functor (operands and a stream)");
}

}  // namespace SMARTARRAY_KERNEL_ABI
}  // namespace smartarray
