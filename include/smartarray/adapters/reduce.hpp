/**
 * @file adapters/reduce.hpp
 * @brief `reduce(a, init, op, stream)`: folds an array, or a slice of one, on the device and
 *        returns the value to the host, without copying the array back.
 *
 * The array is acquired for `read` on the stream (one copy in when its device copy is stale); a
 * slice (core/slice.hpp) is acquired for `read` in its range only (a copy in of the bytes of the
 * range that the device lacks), and only its elements are folded. On the cuda backend the fold is
 * `cub::DeviceReduce::Reduce` (the calling file must be compiled by nvcc); on the host backend
 * `op` runs on the stream's worker thread. Three forms:
 * - `reduce` returns the value: the last kernel writes it into a pinned slot of host memory
 *   (mapped into the device's address space where the device can map host memory; else a copy
 *   brings it there), and the host waits for an event recorded after the reduction, nothing
 *   else. That is the only device-to-host copy: `sizeof(T)` bytes, counted in the global
 *   counters and the device's, never in the reduced array's.
 * - `reduce_async` returns a one-element `SmartArray` that is valid on the device.
 * - `reduce(a, init, op, out(r), stream)` writes the result into the device copy of a one-element
 *   array of the caller's (or slice, or `out(...)` of one), and returns at once.
 *
 * In the steady state none of them takes memory: CUB's temporary storage is kept per device and
 * stream (adapters/detail/reduction_scratch.hpp) and the result slots are reused. The reduced
 * array may be destroyed before the result is read.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/views/device_view.hpp>
#include <smartarray/error.hpp>
#include <smartarray/adapters/for_each_index.hpp>
#include <smartarray/adapters/out.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/runtime/runtime.hpp>
#include <smartarray/core/slice.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/runtime/device.hpp>
#include <smartarray/runtime/detail/capture.hpp>
#include <smartarray/runtime/detail/stream_work.hpp>
#include <smartarray/adapters/detail/adapter_traits.hpp>
#include <smartarray/adapters/detail/reduction_scratch.hpp>
#include <smartarray/core/detail/chunked_access.hpp>

#if defined(__CUDACC__)
#include <smartarray/runtime/detail/cuda_check.hpp>

#include <cub/device/device_reduce.cuh>
#endif

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace smartarray {
namespace detail {

/// The destinations of a reduction's result: a writable SmartArray that outlives the call (an
/// lvalue), `out(a)`, `out(s)`, or a `Slice<T>` (a temporary too: a slice is a view).
template <typename D>
concept ReductionDestination = (is_smart_array_v<D> && std::is_lvalue_reference_v<D> &&
                                !std::is_const_v<std::remove_reference_t<D>>) ||
                               is_out_v<D> ||
                               (is_slice_v<D> &&
                                !std::is_const_v<typename std::remove_cvref_t<D>::element_type>);

/// The element type of a destination.
template <typename D>
struct DestinationValue {};
template <typename T>
struct DestinationValue<SmartArray<T>> {
  using type = T;
};
template <typename T>
struct DestinationValue<Out<T>> {
  using type = T;
};
template <typename T>
struct DestinationValue<Slice<T>> {
  using type = std::remove_const_t<T>;
};
template <typename D>
using destination_value_t = typename DestinationValue<std::remove_cvref_t<D>>::type;

/// Throws before anything moves when `destination` cannot take the result of `what`: a slice
/// outside its array (std::out_of_range), or a size other than 1 (std::length_error).
template <typename D>
void check_destination(const char* what, const D& destination) {
  check_in_range(destination);
  SMARTARRAY_EXPECTS(destination.size() == 1, std::length_error, what, ": the destination has ",
                     destination.size(), " elements; the result of a reduction takes exactly 1");
}

/// Throws logic_error naming `what` inside `sa::capture` on this thread: the host would wait for
/// a result that the graph has not computed (and a replay would write a slot long given back).
inline void refuse_result_wait_in_capture(const char* what) {
  if (active_capture() != nullptr) [[unlikely]] {
    refuse_in_capture(what,
                      "the host would wait for the result, which a capture does not compute; "
                      "capture the form that leaves it on the device (an _async call, or out(r))");
  }
}

/// The result that `result` brought back to the host (ReductionResult::read()).
template <typename T>
[[nodiscard]] T read_result(ReductionResult& result, const char* reason,
                            const smartarray::source_location& where) {
  T value;
  std::memcpy(static_cast<void*>(&value), result.read(reason, where), sizeof(T));
  return value;
}

#if defined(__CUDACC__)
/// `bytes` rounded up to the alignment of every allocation.
[[nodiscard]] constexpr std::size_t aligned_bytes(std::size_t bytes) noexcept {
  return (bytes + default_alignment - 1) / default_alignment * default_alignment;
}

/// Where the kernels' storage starts in a block of reduction scratch: after the ticket and a
/// device slot for a result of type T (copied from there into the host's slot when the device
/// cannot map host memory), 256-byte aligned.
template <typename T>
inline constexpr std::size_t reduction_storage_offset = reduction_ticket_bytes +
                                                        aligned_bytes(sizeof(T));
#endif

inline namespace SMARTARRAY_KERNEL_ABI {
#if defined(__CUDACC__)
/// `*target = fold(op, init, in[0, n))` with CUB on `stream`, where the target is `out` (device
/// memory) when given, else `result`'s slot. CUB's temporary storage is the stream's scratch.
template <typename T, typename Op>
void device_reduce(const T* in, std::size_t n, T init, Op op, T* out, ReductionResult* result,
                   StreamRef stream) {
  const Device device = stream_device(stream);
  const DeviceGuard on_device(device);
  const cudaStream_t cuda_stream = stream.cuda_stream();
  std::size_t temp_bytes = 0;
  SMARTARRAY_CUDA_TRY(cub::DeviceReduce::Reduce(nullptr, temp_bytes, in, static_cast<T*>(nullptr),
                                                n, op, init, cuda_stream),
                      "size the temporary storage of a reduce over ", n, " elements on stream ",
                      stream.handle());
  const ReductionScratch scratch(
      stream, device.ordinal, reduction_storage_offset<T> + std::max<std::size_t>(temp_bytes, 1));
  T* const staged = reinterpret_cast<T*>(scratch.data() + reduction_ticket_bytes);
  T* target = out != nullptr ? out : static_cast<T*>(result->target());
  if (target == nullptr) target = staged;
  SMARTARRAY_CUDA_TRY(cub::DeviceReduce::Reduce(scratch.data() + reduction_storage_offset<T>,
                                                temp_bytes, in, target, n, op, init, cuda_stream),
                      "reduce over ", n, " elements on stream ", stream.handle());
  if (target == staged) result->download(staged);
}
#endif

/// Queues `*target = fold(op, init, in[0, n))` on `stream`: the target is `out` (device memory)
/// when given, else `result`'s slot. Allocates nothing once the stream has reduced before.
template <typename T, typename Op>
void queue_reduce(const T* in, std::size_t n, T init, Op op, T* out, ReductionResult* result,
                  StreamRef stream) {
  if (backend() == BackendKind::host) {
    T* const target = out != nullptr ? out : static_cast<T*>(result->target());
    // The queued work holds the addresses, taken now while the views are valid: by the time it
    // runs, the array may be gone (its buffer is freed after this work), and a view of it would
    // say so.
    launch_host_func(stream, [in, n, target, init, op]() mutable {
      T accumulator = init;
      for (std::size_t i = 0; i < n; ++i) accumulator = op(accumulator, in[i]);
      *target = accumulator;
    });
    return;
  }
#if defined(__CUDACC__)
  device_reduce(in, n, init, op, out, result, stream);
#endif
}

/// The out-of-core path of every form: each chunk of `a` is folded on the device from its first
/// element (which the host holds) into one partial per chunk; the caller folds the partials from
/// its `init` (op is associative and commutative).
template <typename T, typename Op>
[[nodiscard]] SmartArray<T> fold_in_chunks(const Slice<const T>& a, Op op, StreamRef stream,
                                           const smartarray::source_location& where) {
  const ChunkedCall call("reduce", a.size(), sizeof(T), stream, where);
  const std::span<const T> host = a.host_view(std::nullopt, where);
  SmartArray<T> partials(call.chunks(), no_init);
  T* const parts = partials.device_view(Access::discard, stream, where).data();
  const std::size_t chunk = call.chunk();
  call.run(
      [&](std::size_t first, std::size_t count, StreamRef on, DeviceView<const T> in) {
        queue_reduce<T>(in.data() + 1, count - 1, host[first], op, parts + first / chunk, nullptr,
                        on);
      },
      a);
  return partials;
}

/// reduce of an array or a slice (both are read through `device_view(stream, where)`): the value
/// on the host. `reason` names the result's copy back in the trace.
template <typename T, typename A, typename Op>
[[nodiscard]] T reduce_to_host(const A& a, T init, Op op, StreamRef stream, const char* what,
                               const char* reason, const smartarray::source_location& where) {
  check_in_range(a);
  if (a.empty()) {
    check_stream(stream);
    return init;
  }
  require_kernel_compiler(what, a.size());
  refuse_result_wait_in_capture(what);
  if (exceeds_device_budget(stream, 0, chunk_operand(a))) {
    const SmartArray<T> partials = fold_in_chunks<T>(chunk_operand(a), op, stream, where);
    return reduce_to_host<T>(partials, init, std::move(op), stream, what, reason, where);
  }
  const DeviceView<const T> in = a.device_view(stream, where);
  ReductionResult result(stream, sizeof(T));
  queue_reduce<T>(in.data(), in.size(), init, std::move(op), nullptr, &result, stream);
  return read_result<T>(result, reason, where);
}

/// reduce_async of an array or a slice: the result in a new one-element array, valid on the
/// device.
template <typename T, typename A, typename Op>
[[nodiscard]] SmartArray<T> reduce_async_of(const A& a, T init, Op op, StreamRef stream,
                                            const smartarray::source_location& where) {
  check_in_range(a);
  if (a.empty()) {
    check_stream(stream);
    return SmartArray<T>(1, init);
  }
  require_kernel_compiler("reduce", a.size());
  if (exceeds_device_budget(stream, sizeof(T), chunk_operand(a))) {
    const SmartArray<T> partials = fold_in_chunks<T>(chunk_operand(a), op, stream, where);
    return reduce_async_of<T>(partials, init, std::move(op), stream, where);
  }
  SmartArray<T> result(1, no_init);
  const DeviceView<const T> in = a.device_view(stream, where);
  T* const out = result.device_view(Access::discard, stream, where).data();
  queue_reduce<T>(in.data(), in.size(), init, std::move(op), out, nullptr, stream);
  return result;
}

/// reduce into a destination (ReductionDestination) of an array or a slice: its device copy
/// holds the result once the stream gets there.
template <typename T, typename A, typename Op, typename D>
void reduce_into(const A& a, T init, Op op, D& destination, StreamRef stream,
                 const smartarray::source_location& where) {
  static_assert(std::is_same_v<destination_value_t<D>, T>,
                "reduce: the destination's element type must be the result's type (the array's)");
  check_in_range(a);
  check_destination("reduce", destination);
  require_kernel_compiler("reduce", a.size());
  if (!a.empty() && exceeds_device_budget(stream, 0, chunk_operand(a))) {
    const SmartArray<T> partials = fold_in_chunks<T>(chunk_operand(a), op, stream, where);
    reduce_into<T>(partials, init, std::move(op), destination, stream, where);
    return;
  }
  // An empty input acquires nothing; the kernel writes `init`.
  const T* const in = a.empty() ? nullptr : a.device_view(stream, where).data();
  T* const out = destination.device_view(Access::discard, stream, where).data();
  queue_reduce<T>(in, a.size(), init, std::move(op), out, nullptr, stream);
}
}  // namespace SMARTARRAY_KERNEL_ABI
}  // namespace detail

inline namespace SMARTARRAY_KERNEL_ABI {

/**
 * @brief Folds `a` with `op` on the device, starting from `init`, and leaves the result in a
 *        one-element array that is valid on the device (nothing is copied back yet, and no host
 *        memory is taken until the host reads it).
 *
 * The reduction is queued on `stream` and reads `a` later. `a` may be changed or destroyed before
 * the result is read: its device buffer is freed or rewritten in stream order, after the reduction
 * (a write on another stream waits for it), so the result is `a`'s contents at the call.
 *
 * @param a the array; acquired for `read` on `stream`.
 * @param init the initial value (also the result of an empty array).
 * @param op an associative and commutative `__host__ __device__` binary operation on `T`.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @return a one-element array holding the result.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws out_of_memory or cuda_error when an allocation, an acquire or the reduction fails.
 */
template <typename T, typename Op>
[[nodiscard]] SmartArray<T> reduce_async(
    const SmartArray<T>& a, std::type_identity_t<T> init, Op op, StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("reduce_async", where);
  return detail::reduce_async_of<T>(a, init, std::move(op), stream, where);
}

/**
 * @brief Folds the elements of slice `s` on the device, as `reduce_async` of an array does: only
 *        the slice's range is acquired (its missing bytes copied in) and folded.
 *
 * The array may be changed or destroyed before the result is read, as for an array.
 *
 * @param s the slice (`Slice<T>` or `Slice<const T>`, a temporary too); acquired for `read` on
 *        `stream`, in its range only.
 * @param init the initial value (also the result of an empty slice).
 * @param op an associative and commutative `__host__ __device__` binary operation on `T`.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @return a one-element array holding the result.
 * @throws std::out_of_range when the slice no longer lies inside its array (the array shrank).
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws out_of_memory or cuda_error when an allocation, an acquire or the reduction fails.
 */
template <typename T, typename Op>
[[nodiscard]] SmartArray<std::remove_const_t<T>> reduce_async(
    Slice<T> s, std::type_identity_t<std::remove_const_t<T>> init, Op op, StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("reduce_async", where);
  return detail::reduce_async_of<std::remove_const_t<T>>(s, init, std::move(op), stream, where);
}

/**
 * @brief Folds `a` with `op` on the device, starting from `init`, and returns the result to the
 *        host. The host waits for the reduction only (an event recorded after it), never for the
 *        stream's later work or the whole device.
 *
 * The array itself is never copied back: the only device-to-host copy is the `sizeof(T)`-byte
 * result, which the reduction's last kernel writes into a pinned slot (directly, where the device
 * maps host memory). Once the stream has reduced before, the call allocates nothing: no pool
 * request, no array (adapters/detail/reduction_scratch.hpp).
 *
 * @param a the array; acquired for `read` on `stream`.
 * @param init the initial value (also the result of an empty array).
 * @param op an associative and commutative `__host__ __device__` binary operation on `T`, for
 *        example `cuda::std::plus<T>{}`.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @return the folded value.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc, and inside
 *         `sa::capture` (the host would wait for a result that the capture does not compute).
 * @throws out_of_memory or cuda_error when an allocation, an acquire, the reduction or the copy
 *         back fails.
 */
template <typename T, typename Op>
[[nodiscard]] T reduce(const SmartArray<T>& a, std::type_identity_t<T> init, Op op,
                       StreamRef stream = {},
                       smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("reduce", where);
  return detail::reduce_to_host<T>(a, init, std::move(op), stream, "reduce", "the result of reduce",
                                   where);
}

/**
 * @brief Folds the elements of slice `s` on the device and returns the result to the host, as
 *        `reduce` of an array does: only the slice's range is acquired and folded, and the only
 *        device-to-host copy is the `sizeof(T)`-byte result.
 *
 * @param s the slice (`Slice<T>` or `Slice<const T>`, a temporary too); acquired for `read` on
 *        `stream`, in its range only.
 * @param init the initial value (also the result of an empty slice).
 * @param op an associative and commutative `__host__ __device__` binary operation on `T`.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @return the folded value.
 * @throws std::out_of_range when the slice no longer lies inside its array (the array shrank).
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc, and inside
 *         `sa::capture`.
 * @throws out_of_memory or cuda_error when an allocation, an acquire, the reduction or the copy
 *         back fails.
 */
template <typename T, typename Op>
[[nodiscard]] std::remove_const_t<T> reduce(
    Slice<T> s, std::type_identity_t<std::remove_const_t<T>> init, Op op, StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("reduce", where);
  return detail::reduce_to_host<std::remove_const_t<T>>(s, init, std::move(op), stream, "reduce",
                                                        "the result of reduce", where);
}

/**
 * @brief Folds `a` with `op` on the device, starting from `init`, into `destination`'s device
 *        copy, and returns at once: the form of a loop that allocates nothing.
 *
 * `destination` is acquired with `discard` after `a` is acquired: nothing is copied into it, and
 * its host copy becomes stale. A later host read of it copies `sizeof(T)` bytes back. `a` may be
 * changed or destroyed before then, as for `reduce_async`.
 *
 * @code
 * sa::SmartArray<float> total(1);
 * for (int step = 0; step < steps; ++step) sa::reduce(a, 0.0f, Plus{}, sa::out(total), stream);
 * float last = std::as_const(total)[0];   // D2H 1 (4 B)
 * @endcode
 *
 * @param a the array; acquired for `read` on `stream`.
 * @param init the initial value (also the result of an empty array).
 * @param op an associative and commutative `__host__ __device__` binary operation on `T`.
 * @param destination a writable one-element `SmartArray<T>` (an lvalue), `out(r)`, `out(s)` or a
 *        `Slice<T>` of one element.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @throws std::length_error naming the destination's size when it is not 1, and
 *         std::out_of_range when a destination slice no longer lies inside its array, before
 *         anything moves.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws out_of_memory or cuda_error when an allocation, an acquire or the reduction fails.
 */
template <typename T, typename Op, typename D>
  requires detail::ReductionDestination<D>
void reduce(const SmartArray<T>& a, std::type_identity_t<T> init, Op op, D&& destination,
            StreamRef stream = {},
            smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("reduce", where);
  detail::reduce_into<T>(a, init, std::move(op), destination, stream, where);
}

/**
 * @brief Folds the elements of slice `s` on the device into `destination`'s device copy, as
 *        `reduce(a, init, op, destination, stream)` of an array does.
 *
 * @param s the slice (`Slice<T>` or `Slice<const T>`, a temporary too); acquired for `read` on
 *        `stream`, in its range only.
 * @param init the initial value (also the result of an empty slice).
 * @param op an associative and commutative `__host__ __device__` binary operation on `T`.
 * @param destination a writable one-element `SmartArray<T>` (an lvalue), `out(r)`, `out(s)` or a
 *        `Slice<T>` of one element.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @throws std::length_error naming the destination's size when it is not 1, and
 *         std::out_of_range when a slice no longer lies inside its array, before anything moves.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws out_of_memory or cuda_error when an allocation, an acquire or the reduction fails.
 */
template <typename T, typename Op, typename D>
  requires detail::ReductionDestination<D>
void reduce(Slice<T> s, std::type_identity_t<std::remove_const_t<T>> init, Op op, D&& destination,
            StreamRef stream = {},
            smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("reduce", where);
  detail::reduce_into<std::remove_const_t<T>>(s, init, std::move(op), destination, stream, where);
}

}  // namespace SMARTARRAY_KERNEL_ABI
}  // namespace smartarray
