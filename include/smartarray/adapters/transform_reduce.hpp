/**
 * @file adapters/transform_reduce.hpp
 * @brief `transform_reduce(a, b, init, reduce_op, transform_op, stream)`: folds `f(a[i], b[i])`
 *        (or `f(a[i])`) on the device in one pass over the inputs, with
 *        `std::transform_reduce`'s order of arguments.
 *
 * @code
 * struct Plus {
 *   SMARTARRAY_HOST_DEVICE double operator()(double x, double y) const { return x + y; }
 * };
 * struct Times {
 *   SMARTARRAY_HOST_DEVICE double operator()(float x, double y) const { return x * y; }
 * };
 * double dot = sa::transform_reduce(a, b, 0.0, Plus{}, Times{}, stream);  // one D2H, 8 bytes
 * double head = sa::transform_reduce(a.slice(0, k), b.slice(0, k), 0.0, Plus{}, Times{}, stream);
 * sa::transform_reduce(a, b, 0.0, Plus{}, Times{}, sa::out(r), stream);  // stays on the device
 * @endcode
 *
 * The inputs (arrays or slices, in any mix, of any element types) are acquired for `read` on the
 * stream as `transform`'s operands are: only the bytes that the device lacks are copied in. Each
 * transformed value is converted to `T`, the type of `init` and of the result, and folded with
 * `reduce_op(T, T)`, which must be associative and commutative. Both functors must be callable on
 * the host and the device (`__host__ __device__`). On the cuda backend the whole fold is one
 * kernel (the calling file must be compiled by nvcc): each block folds its share of the inputs,
 * and the last block to finish folds the blocks' partials and writes the result. On the host
 * backend the loop runs on the stream's worker thread. Three forms, as for `reduce`:
 * `transform_reduce` returns the value to the host (one device-to-host copy of `sizeof(T)` bytes,
 * the host waiting for the reduction only), `transform_reduce_async` returns a one-element array
 * valid on the device, and the form with a destination (`out(r)`, ...) writes into the device copy
 * of a one-element array of the caller's and returns at once. In the steady state none allocates:
 * the kernel's partials live in the stream's reduction scratch
 * (adapters/detail/reduction_scratch.hpp). Arrays that need more device memory together than the
 * device budget are folded in chunks (core/detail/chunked_access.hpp).
 */
#pragma once

#include <smartarray/adapters/detail/transform_reduce_kernel.hpp>
#include <smartarray/adapters/detail/adapter_traits.hpp>
#include <smartarray/adapters/detail/reduction_scratch.hpp>
#include <smartarray/adapters/for_each_index.hpp>
#include <smartarray/adapters/out.hpp>
#include <smartarray/adapters/reduce.hpp>
#include <smartarray/config.hpp>
#include <smartarray/core/detail/chunked_access.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/core/slice.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/error.hpp>
#include <smartarray/runtime/detail/stream_work.hpp>
#include <smartarray/runtime/device.hpp>
#include <smartarray/runtime/runtime.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/views/device_view.hpp>

#if defined(__CUDACC__)
#include <smartarray/runtime/detail/cuda_check.hpp>

#include <cub/block/block_reduce.cuh>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

namespace smartarray {
namespace detail {

inline namespace SMARTARRAY_KERNEL_ABI {
/// Queues `*target = fold(op, init, read(i) for i in [0, n))` on `stream`, in one pass: the
/// target is `out` (device memory) when given, else `result`'s slot. Allocates nothing once the
/// stream has reduced before.
template <typename T, typename Read, typename Op>
void queue_transform_reduce(std::size_t n, Read read, T init, Op op, T* out,
                            ReductionResult* result, StreamRef stream) {
  if (backend() == BackendKind::host) {
    T* const target = out != nullptr ? out : static_cast<T*>(result->target());
    // The queued work holds the addresses taken at the call (see reduce).
    launch_host_func(stream, [n, read, init, op, target]() mutable {
      T accumulator = init;
      for (std::size_t i = 0; i < n; ++i) accumulator = op(accumulator, read(i));
      *target = accumulator;
    });
    return;
  }
#if defined(__CUDACC__)
  device_transform_reduce(n, std::move(read), init, std::move(op), out, result, stream);
#endif
}

/// The out-of-core path of every form: each chunk of the inputs (slices, all of one size) is
/// folded on the device from its first transformed element (computed on the host, which holds
/// the inputs whole) into one partial per chunk; the caller folds the partials from its `init`.
template <typename T, typename R, typename F, typename... Slices>
[[nodiscard]] SmartArray<T> transform_fold_in_chunks(const R& reduce_op, const F& transform_op,
                                                     StreamRef stream,
                                                     const smartarray::source_location& where,
                                                     const Slices&... ins) {
  const std::size_t n = std::get<0>(std::forward_as_tuple(ins...)).size();
  const ChunkedCall call("transform_reduce", n,
                         (sizeof(typename Slices::value_type) + ... + std::size_t{0}), stream,
                         where);
  const auto hosts = std::make_tuple(
      Slice<const typename Slices::value_type>(ins).host_view(std::nullopt, where)...);
  SmartArray<T> partials(call.chunks(), no_init);
  T* const parts = partials.device_view(Access::discard, stream, where).data();
  const std::size_t chunk = call.chunk();
  call.run(
      [&](std::size_t first, std::size_t count, StreamRef on, const auto&... chunks) {
        F head_op = transform_op;
        const T head = std::apply(
            [&](const auto&... host) { return static_cast<T>(head_op(host[first]...)); }, hosts);
        queue_transform_reduce<T>(count - 1, transformed<T>(transform_op, (chunks.data() + 1)...),
                                  head, reduce_op, parts + first / chunk, nullptr, on);
      },
      ins...);
  return partials;
}

/// transform_reduce's value on the host.
template <typename T, typename R, typename F, typename... Ins>
[[nodiscard]] T transform_reduce_to_host(StreamRef stream, const smartarray::source_location& where,
                                         T init, R reduce_op, F transform_op, const Ins&... ins) {
  check_reduction_value<T>();
  constexpr const char* reason = "the result of transform_reduce";
  const std::size_t n = checked_inputs("transform_reduce", ins...);
  if (n == 0) {
    check_stream(stream);
    return init;
  }
  require_kernel_compiler("transform_reduce", n);
  refuse_result_wait_in_capture("transform_reduce");
  if (exceeds_device_budget(stream, 0, chunk_operand(ins)...)) {
    const SmartArray<T> partials =
        transform_fold_in_chunks<T>(reduce_op, transform_op, stream, where, chunk_operand(ins)...);
    return reduce_to_host<T>(partials, init, std::move(reduce_op), stream, "transform_reduce",
                             reason, where);
  }
  auto read = read_on_device<T>(std::move(transform_op), stream, where, ins...);
  ReductionResult result(stream, sizeof(T));
  queue_transform_reduce<T>(n, std::move(read), init, std::move(reduce_op), nullptr, &result,
                            stream);
  return read_result<T>(result, reason, where);
}

/// transform_reduce_async: the value in a new one-element array, valid on the device.
template <typename T, typename R, typename F, typename... Ins>
[[nodiscard]] SmartArray<T> transform_reduce_async_of(StreamRef stream,
                                                      const smartarray::source_location& where,
                                                      T init, R reduce_op, F transform_op,
                                                      const Ins&... ins) {
  check_reduction_value<T>();
  const std::size_t n = checked_inputs("transform_reduce", ins...);
  if (n == 0) {
    check_stream(stream);
    return SmartArray<T>(1, init);
  }
  require_kernel_compiler("transform_reduce", n);
  if (exceeds_device_budget(stream, sizeof(T), chunk_operand(ins)...)) {
    const SmartArray<T> partials =
        transform_fold_in_chunks<T>(reduce_op, transform_op, stream, where, chunk_operand(ins)...);
    return reduce_async_of<T>(partials, init, std::move(reduce_op), stream, where);
  }
  SmartArray<T> result(1, no_init);
  auto read = read_on_device<T>(std::move(transform_op), stream, where, ins...);
  T* const out = result.device_view(Access::discard, stream, where).data();
  queue_transform_reduce<T>(n, std::move(read), init, std::move(reduce_op), out, nullptr, stream);
  return result;
}

/// transform_reduce into a destination (ReductionDestination): its device copy holds the value
/// once the stream gets there.
template <typename T, typename R, typename F, typename D, typename... Ins>
void transform_reduce_into(StreamRef stream, const smartarray::source_location& where, T init,
                           R reduce_op, F transform_op, D& destination, const Ins&... ins) {
  check_reduction_value<T>();
  static_assert(std::is_same_v<destination_value_t<D>, T>,
                "transform_reduce: the destination's element type must be the result's type (the "
                "type of init)");
  const std::size_t n = checked_inputs("transform_reduce", ins...);
  check_destination("transform_reduce", destination);
  require_kernel_compiler("transform_reduce", n);
  if (n != 0 && exceeds_device_budget(stream, 0, chunk_operand(ins)...)) {
    const SmartArray<T> partials =
        transform_fold_in_chunks<T>(reduce_op, transform_op, stream, where, chunk_operand(ins)...);
    reduce_into<T>(partials, init, std::move(reduce_op), destination, stream, where);
    return;
  }
  // Inputs first, then the destination: an input that shares the destination's array is read
  // before it is overwritten. Empty inputs acquire nothing; the kernel writes `init`.
  auto read = read_on_device<T>(std::move(transform_op), stream, where, ins...);
  T* const out = destination.device_view(Access::discard, stream, where).data();
  queue_transform_reduce<T>(n, std::move(read), init, std::move(reduce_op), out, nullptr, stream);
}
}  // namespace SMARTARRAY_KERNEL_ABI

}  // namespace detail

inline namespace SMARTARRAY_KERNEL_ABI {

/**
 * @brief `fold(reduce_op, init, T(transform_op(a[i], b[i])) for every i)`, computed on the device
 *        in one pass over `a` and `b`, returned to the host: `std::transform_reduce` of two
 *        ranges.
 *
 * The inputs are acquired for `read` on `stream` (only the bytes the device lacks are copied in);
 * the only other copy is the result's: one device-to-host copy of `sizeof(T)` bytes, which the
 * kernel writes into a pinned slot (directly, where the device maps host memory). The host waits
 * for the reduction only. Once the stream has reduced before, nothing is allocated.
 *
 * @param a the first input: a `SmartArray` or a `Slice` (`Slice<T>` or `Slice<const T>`, a
 *        temporary too); acquired for `read` on `stream`, a slice in its range only.
 * @param b the second input, as `a`, of `a`'s size; its element type may differ from `a`'s.
 * @param init the initial value, of the result's type `T` (also the result of empty inputs).
 * @param reduce_op an associative and commutative `__host__ __device__` binary operation on `T`.
 * @param transform_op a `__host__ __device__` callable taking an element of `a` and one of `b`,
 *        whose result converts to `T`.
 * @param stream the stream to run on (`sa::Stream`, `sa::StreamRef`, `cudaStream_t`).
 * @param where the caller's source location, for the migration trace.
 * @return the folded value.
 * @throws std::length_error naming both sizes when the inputs' sizes differ, and std::out_of_range
 *         when a slice no longer lies inside its array: before anything is acquired.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc, and inside
 *         `sa::capture` (the host would wait for a result that the capture does not compute).
 * @throws out_of_memory or cuda_error when an allocation, an acquire, the reduction or the copy
 *         back fails.
 */
template <typename A, typename B, typename T, typename ReduceOp, typename TransformOp>
  requires detail::ReductionInput<A> && detail::ReductionInput<B> && detail::ReductionValue<T>
[[nodiscard]] T transform_reduce(
    const A& a, const B& b, T init, ReduceOp reduce_op, TransformOp transform_op,
    StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("transform_reduce", where);
  return detail::transform_reduce_to_host<T>(stream, where, init, std::move(reduce_op),
                                             std::move(transform_op), a, b);
}

/**
 * @brief `fold(reduce_op, init, T(transform_op(a[i])) for every i)`, computed on the device in one
 *        pass over `a`, returned to the host: `std::transform_reduce` of one range.
 *
 * @param a the input: a `SmartArray` or a `Slice`; acquired for `read` on `stream`.
 * @param init the initial value, of the result's type `T` (also the result of an empty input).
 * @param reduce_op an associative and commutative `__host__ __device__` binary operation on `T`.
 * @param transform_op a `__host__ __device__` callable taking an element of `a`, whose result
 *        converts to `T`.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @return the folded value.
 * @throws std::out_of_range when a slice no longer lies inside its array, before anything is
 *         acquired.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc, and inside
 *         `sa::capture`.
 * @throws out_of_memory or cuda_error when an allocation, an acquire, the reduction or the copy
 *         back fails.
 */
template <typename A, typename T, typename ReduceOp, typename TransformOp>
  requires detail::ReductionInput<A> && detail::ReductionValue<T>
[[nodiscard]] T transform_reduce(
    const A& a, T init, ReduceOp reduce_op, TransformOp transform_op, StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("transform_reduce", where);
  return detail::transform_reduce_to_host<T>(stream, where, init, std::move(reduce_op),
                                             std::move(transform_op), a);
}

/**
 * @brief transform_reduce of two inputs into `destination`'s device copy; returns at once (the
 *        form of a loop that allocates nothing).
 *
 * The inputs are acquired first, then `destination` with `discard`: nothing is copied into it,
 * and its host copy becomes stale. A later host read of it copies `sizeof(T)` bytes back.
 *
 * @param a the first input (an array or a slice).
 * @param b the second input, of `a`'s size.
 * @param init the initial value, of the result's type `T`.
 * @param reduce_op an associative and commutative `__host__ __device__` binary operation on `T`.
 * @param transform_op a `__host__ __device__` callable on an element of `a` and one of `b`.
 * @param destination a writable one-element `SmartArray<T>` (an lvalue), `out(r)`, `out(s)` or a
 *        `Slice<T>` of one element.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @throws std::length_error naming both sizes when the inputs' sizes differ, or the destination's
 *         size when it is not 1; std::out_of_range when a slice no longer lies inside its array:
 *         before anything moves.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws out_of_memory or cuda_error when an allocation, an acquire or the reduction fails.
 */
template <typename A, typename B, typename T, typename ReduceOp, typename TransformOp, typename D>
  requires detail::ReductionInput<A> && detail::ReductionInput<B> && detail::ReductionValue<T> &&
      detail::ReductionDestination<D>
void transform_reduce(const A& a, const B& b, T init, ReduceOp reduce_op, TransformOp transform_op,
                      D&& destination, StreamRef stream = {},
                      smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("transform_reduce", where);
  detail::transform_reduce_into<T>(stream, where, init, std::move(reduce_op),
                                   std::move(transform_op), destination, a, b);
}

/**
 * @brief transform_reduce of one input into `destination`'s device copy; returns at once.
 *
 * @param a the input (an array or a slice).
 * @param init the initial value, of the result's type `T`.
 * @param reduce_op an associative and commutative `__host__ __device__` binary operation on `T`.
 * @param transform_op a `__host__ __device__` callable on an element of `a`.
 * @param destination a writable one-element `SmartArray<T>` (an lvalue), `out(r)`, `out(s)` or a
 *        `Slice<T>` of one element.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @throws std::length_error naming the destination's size when it is not 1, and std::out_of_range
 *         when a slice no longer lies inside its array: before anything moves.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws out_of_memory or cuda_error when an allocation, an acquire or the reduction fails.
 */
template <typename A, typename T, typename ReduceOp, typename TransformOp, typename D>
  requires detail::ReductionInput<A> && detail::ReductionValue<T> && detail::ReductionDestination<D>
void transform_reduce(const A& a, T init, ReduceOp reduce_op, TransformOp transform_op,
                      D&& destination, StreamRef stream = {},
                      smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("transform_reduce", where);
  detail::transform_reduce_into<T>(stream, where, init, std::move(reduce_op),
                                   std::move(transform_op), destination, a);
}

/**
 * @brief transform_reduce of two inputs, the result left in a one-element array that is valid on
 *        the device (nothing is copied back yet, and no host memory is taken until the host reads
 *        it), as `reduce_async` leaves it.
 *
 * The inputs may be changed or destroyed before the result is read: the result is their contents
 * at the call.
 *
 * @param a the first input (an array or a slice).
 * @param b the second input, of `a`'s size.
 * @param init the initial value, of the result's type `T`.
 * @param reduce_op an associative and commutative `__host__ __device__` binary operation on `T`.
 * @param transform_op a `__host__ __device__` callable on an element of `a` and one of `b`.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @return a one-element array holding the result.
 * @throws std::length_error naming both sizes when the inputs' sizes differ, and std::out_of_range
 *         when a slice no longer lies inside its array: before anything is acquired.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws out_of_memory or cuda_error when an allocation, an acquire or the reduction fails.
 */
template <typename A, typename B, typename T, typename ReduceOp, typename TransformOp>
  requires detail::ReductionInput<A> && detail::ReductionInput<B> && detail::ReductionValue<T>
[[nodiscard]] SmartArray<T> transform_reduce_async(
    const A& a, const B& b, T init, ReduceOp reduce_op, TransformOp transform_op,
    StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("transform_reduce_async", where);
  return detail::transform_reduce_async_of<T>(stream, where, init, std::move(reduce_op),
                                              std::move(transform_op), a, b);
}

/**
 * @brief transform_reduce of one input, the result left in a one-element array that is valid on
 *        the device, as `reduce_async` leaves it.
 *
 * @param a the input (an array or a slice).
 * @param init the initial value, of the result's type `T`.
 * @param reduce_op an associative and commutative `__host__ __device__` binary operation on `T`.
 * @param transform_op a `__host__ __device__` callable on an element of `a`.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @return a one-element array holding the result.
 * @throws std::out_of_range when a slice no longer lies inside its array, before anything is
 *         acquired.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws out_of_memory or cuda_error when an allocation, an acquire or the reduction fails.
 */
template <typename A, typename T, typename ReduceOp, typename TransformOp>
  requires detail::ReductionInput<A> && detail::ReductionValue<T>
[[nodiscard]] SmartArray<T> transform_reduce_async(
    const A& a, T init, ReduceOp reduce_op, TransformOp transform_op, StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("transform_reduce_async", where);
  return detail::transform_reduce_async_of<T>(stream, where, init, std::move(reduce_op),
                                              std::move(transform_op), a);
}

}  // namespace SMARTARRAY_KERNEL_ABI
}  // namespace smartarray
