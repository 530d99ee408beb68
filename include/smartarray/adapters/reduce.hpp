/**
 * @file adapters/reduce.hpp
 * @brief `reduce(a, init, op, stream)`: folds an array, or a slice of one, on the device and
 *        returns the value to the host, without copying the array back.
 *
 * The array is acquired for `read` on the stream (one copy in when its device copy is stale); a
 * slice (core/slice.hpp) is acquired for `read` in its range only (a copy in of the bytes of the
 * range that the device lacks), and only its elements are folded. On the cuda backend the fold is
 * `cub::DeviceReduce::Reduce` with its temporary storage from the device pool (the calling file
 * must be compiled by nvcc); on the host backend `op` runs on the stream's worker thread. The
 * result is written into a one-element `SmartArray` on the device: `reduce_async` returns that
 * array, and `reduce` reads it, which is the only device-to-host copy: `sizeof(T)` bytes, counted
 * in the global counters and in the result array's counters, never in the reduced array's. The
 * reduced array may be destroyed before the result is read.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/views/device_view.hpp>
#include <smartarray/error.hpp>
#include <smartarray/adapters/for_each_index.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/runtime/runtime.hpp>
#include <smartarray/core/slice.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/runtime/detail/stream_work.hpp>
#include <smartarray/core/detail/chunked_access.hpp>

#if defined(__CUDACC__)
#include <smartarray/runtime/detail/cuda_check.hpp>

#include <cub/device/device_reduce.cuh>
#endif

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

namespace smartarray {
namespace detail {
#if defined(__CUDACC__)
inline namespace SMARTARRAY_KERNEL_ABI {
/// `out[0] = fold(op, init, in...)` with CUB, its temporary storage taken from the device pool.
template <typename T, typename Op>
void device_reduce(DeviceView<const T> in, DeviceView<T> out, T init, Op op, StreamRef stream) {
  const DeviceGuard on_device(stream_device(stream));
  const cudaStream_t cuda_stream = stream.cuda_stream();
  std::size_t temp_bytes = 0;
  SMARTARRAY_CUDA_TRY(cub::DeviceReduce::Reduce(nullptr, temp_bytes, in.data(), out.data(),
                                                in.size(), op, init, cuda_stream),
                      "size the temporary storage of a reduce over ", in.size(),
                      " elements on stream ", stream.handle());
  // A null temporary would turn the second call into another size query.
  temp_bytes = std::max<std::size_t>(temp_bytes, 1);
  MemoryResource& pool = device_resource(stream_device(stream).ordinal);
  void* temp = pool.allocate(stream, temp_bytes);
  struct Release {
    MemoryResource& pool;
    StreamRef stream;
    void* block;
    std::size_t bytes;
    ~Release() { pool.deallocate(stream, block, bytes); }
  } release{pool, stream, temp, temp_bytes};
  SMARTARRAY_CUDA_TRY(cub::DeviceReduce::Reduce(temp, temp_bytes, in.data(), out.data(), in.size(),
                                                op, init, cuda_stream),
                      "reduce over ", in.size(), " elements on stream ", stream.handle());
}
}  // namespace SMARTARRAY_KERNEL_ABI
#endif

inline namespace SMARTARRAY_KERNEL_ABI {
/// `*out = fold(op, first, in...)`, queued on `stream`, for the reduction of one chunk.
template <typename T, typename Op>
void fold_chunk(DeviceView<const T> in, T* out, T first, Op op, StreamRef stream) {
  if (backend() == BackendKind::host) {
    launch_host_func(stream, [in, out, first, op]() mutable {
      T accumulator = first;
      for (std::size_t i = 0; i < in.size(); ++i) accumulator = op(accumulator, in[i]);
      *out = accumulator;
    });
    return;
  }
#if defined(__CUDACC__)
  device_reduce(in, DeviceView<T>(out, 1), first, op, stream);
#endif
}

template <typename T, typename A, typename Op>
[[nodiscard]] SmartArray<T> reduce_async_of(const A& a, T init, Op op, StreamRef stream,
                                            const smartarray::source_location& where);

/// reduce_async's out-of-core path: each chunk is folded on the device from its first element
/// (which the host holds), into one partial result per chunk, and the partials are folded from
/// `init` (op is associative and commutative).
template <typename T, typename Op>
[[nodiscard]] SmartArray<T> reduce_in_chunks(const Slice<const T>& a, T init, Op op,
                                             StreamRef stream,
                                             const smartarray::source_location& where) {
  const ChunkedCall call("reduce", a.size(), sizeof(T), stream, where);
  const std::span<const T> host = a.host_view(std::nullopt, where);
  SmartArray<T> partials(call.chunks(), no_init);
  T* const parts = partials.device_view(Access::discard, stream, where).data();
  const std::size_t chunk = call.chunk();
  call.run(
      [&](std::size_t first, std::size_t count, StreamRef on, DeviceView<const T> in) {
        fold_chunk(DeviceView<const T>(in.data() + 1, count - 1), parts + first / chunk,
                   host[first], op, on);
      },
      a);
  return reduce_async_of<T>(partials, init, std::move(op), stream, where);
}

/// reduce_async of an array or a slice: both are read through `device_view(stream, where)`.
template <typename T, typename A, typename Op>
[[nodiscard]] SmartArray<T> reduce_async_of(const A& a, T init, Op op, StreamRef stream,
                                            const smartarray::source_location& where) {
  if (a.empty()) {
    check_stream(stream);
    return SmartArray<T>(1, init);
  }
  require_kernel_compiler("reduce", a.size());
  if (exceeds_device_budget(stream, sizeof(T), chunk_operand(a))) {
    return reduce_in_chunks<T>(chunk_operand(a), init, std::move(op), stream, where);
  }
  SmartArray<T> result(1, no_init);
  const DeviceView<const T> in = a.device_view(stream, where);
  const DeviceView<T> out = result.device_view(Access::discard, stream, where);
  if (backend() == BackendKind::host) {
    // The queued work holds the addresses, taken now while the views are valid: by the time it
    // runs, `a` may be gone (its buffer is freed after this work), and a view of it would say so.
    launch_host_func(
        stream, [data = in.data(), n = in.size(), result = out.data(), init, op]() mutable {
          T accumulator = init;
          for (std::size_t i = 0; i < n; ++i) accumulator = op(accumulator, data[i]);
          *result = accumulator;
        });
    return result;
  }
#if defined(__CUDACC__)
  device_reduce(in, out, init, op, stream);
#endif
  return result;
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
 *        host. The host waits for the reduction only, never for the whole device.
 *
 * The array itself is never copied back: the only device-to-host copy is the `sizeof(T)`-byte
 * result.
 *
 * @param a the array; acquired for `read` on `stream`.
 * @param init the initial value (also the result of an empty array).
 * @param op an associative and commutative `__host__ __device__` binary operation on `T`, for
 *        example `cuda::std::plus<T>{}`.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @return the folded value.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws out_of_memory or cuda_error when an allocation, an acquire, the reduction or the copy
 *         back fails.
 */
template <typename T, typename Op>
[[nodiscard]] T reduce(const SmartArray<T>& a, std::type_identity_t<T> init, Op op,
                       StreamRef stream = {},
                       smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("reduce", where);
  const SmartArray<T> result = detail::reduce_async_of<T>(a, init, std::move(op), stream, where);
  return result.host_view(stream, where)[0];
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
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws out_of_memory or cuda_error when an allocation, an acquire, the reduction or the copy
 *         back fails.
 */
template <typename T, typename Op>
[[nodiscard]] std::remove_const_t<T> reduce(
    Slice<T> s, std::type_identity_t<std::remove_const_t<T>> init, Op op, StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("reduce", where);
  const SmartArray<std::remove_const_t<T>> result =
      detail::reduce_async_of<std::remove_const_t<T>>(s, init, std::move(op), stream, where);
  return result.host_view(stream, where)[0];
}

}  // namespace SMARTARRAY_KERNEL_ABI
}  // namespace smartarray
