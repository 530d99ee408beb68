/**
 * @file interop/thrust.hpp
 * @brief `sa::interop::device_begin(a, access, stream)` and `device_end(a, access, stream)`: a
 *        SmartArray's device copy as a `thrust::device_ptr` range, acquired with the given access
 *        intent.
 *
 * Any Thrust algorithm then works on the array with the right residency: the range is valid on the
 * device before the algorithm runs, and the host copy is marked stale when the access writes.
 *
 * @code
 * sa::SmartArray<int> keys(values);                                       // host-valid
 * auto policy = thrust::cuda::par_nosync.on(stream.ref().cuda_stream());
 * thrust::sort(policy, sa::interop::device_begin(keys, sa::Access::read_write, stream),
 *              sa::interop::device_end(keys, sa::Access::read_write, stream));  // one copy in
 * int first = std::as_const(keys)[0];                                     // one copy back
 * @endcode
 *
 * Pass Thrust the same stream as `device_begin`, through `thrust::cuda::par.on(s)` or
 * `thrust::cuda::par_nosync.on(s)`: the acquire orders the array's earlier work before that
 * stream only. Thrust's device system is CUDA, so this header needs nvcc and the cuda backend; it
 * is not part of the umbrella header.
 */
#pragma once

#if !defined(__CUDACC__)
#error "smartarray/interop/thrust.hpp needs nvcc: Thrust's device system is CUDA"
#endif

#include <smartarray/config.hpp>
#include <smartarray/error.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/runtime/runtime.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>

#include <thrust/device_ptr.h>

namespace smartarray::detail {
inline void require_thrust_backend(const char* what, Access access) {
  SMARTARRAY_EXPECTS(backend() == BackendKind::cuda, logic_error, what, "(", to_string(access),
                     "): Thrust's device system is CUDA, and the active backend is host");
}
inline void require_writing_access(const char* what, Access access) {
  SMARTARRAY_EXPECTS(access != Access::read, logic_error, what,
                     "(a, Access::read) on a non-const array would hand out a writable range: "
                     "call ", what, "(std::as_const(a), stream) for a read-only range");
}
}  // namespace smartarray::detail

namespace smartarray::interop {

/**
 * @brief The first element of `a`'s device copy, acquired for `read` on `stream`.
 * @param a the array.
 * @param stream the stream that the Thrust algorithm runs on.
 * @param where the caller's source location, for the migration trace.
 * @throws logic_error on the host backend.
 * @throws out_of_memory or cuda_error when the acquire fails.
 */
template <typename T>
[[nodiscard]] thrust::device_ptr<const T> device_begin(
    const SmartArray<T>& a, StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  detail::require_thrust_backend("device_begin", Access::read);
  return thrust::device_ptr<const T>(a.device_view(stream, where).data());
}

/**
 * @brief One past the last element of `a`'s device copy, acquired for `read` on `stream`.
 * @param a the array.
 * @param stream the stream that the Thrust algorithm runs on.
 * @param where the caller's source location, for the migration trace.
 * @throws logic_error on the host backend.
 * @throws out_of_memory or cuda_error when the acquire fails.
 */
template <typename T>
[[nodiscard]] thrust::device_ptr<const T> device_end(
    const SmartArray<T>& a, StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  return device_begin(a, stream, where) + static_cast<std::ptrdiff_t>(a.size());
}

/**
 * @brief The first element of `a`'s device copy, acquired with `access` on `stream`: a writable
 *        range whose writes make the host copy stale.
 * @param a the array.
 * @param access `read_write` (the old contents are copied in if stale) or `discard` (nothing is
 *        copied in). For `read`, use the const overload.
 * @param stream the stream that the Thrust algorithm runs on.
 * @param where the caller's source location, for the migration trace.
 * @throws logic_error for `Access::read`, or on the host backend.
 * @throws out_of_memory or cuda_error when the acquire fails.
 */
template <typename T>
[[nodiscard]] thrust::device_ptr<T> device_begin(
    SmartArray<T>& a, Access access, StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  detail::require_writing_access("device_begin", access);
  detail::require_thrust_backend("device_begin", access);
  return thrust::device_ptr<T>(a.device_view(access, stream, where).data());
}

/**
 * @brief One past the last element of `a`'s device copy, acquired with `access` on `stream`.
 *        Repeating the acquire of `device_begin` copies nothing.
 * @param a the array.
 * @param access `read_write` or `discard`, as given to `device_begin`.
 * @param stream the stream that the Thrust algorithm runs on.
 * @param where the caller's source location, for the migration trace.
 * @throws logic_error for `Access::read`, or on the host backend.
 * @throws out_of_memory or cuda_error when the acquire fails.
 */
template <typename T>
[[nodiscard]] thrust::device_ptr<T> device_end(
    SmartArray<T>& a, Access access, StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  detail::require_writing_access("device_end", access);
  return device_begin(a, access, stream, where) + static_cast<std::ptrdiff_t>(a.size());
}

}  // namespace smartarray::interop
