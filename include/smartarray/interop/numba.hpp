/**
 * @file interop/numba.hpp
 * @brief Counterparts of Numba's CUDA memory API (`cuda.to_device`, `device_array`,
 *        `copy_to_host`, `as_cuda_array`, `pinned_array`, `mapped_array`), as free functions over
 *        `SmartArray`. docs/numba.md maps each Numba call to its counterpart.
 *
 * Namespace `smartarray` (`sa::to_device`, `sa::device_array`), not `smartarray::interop`: these
 * functions name no type of another library, they take and return SmartArrays and mirror Numba's
 * `cuda.*` names, which are the library's own vocabulary. The interop layer's other bridges name
 * CCCL's, RMM's or Thrust's types and live in `smartarray::interop`.
 *
 * `cuda.pinned(ary)` is `HostRegistration` (host_registration.hpp); `cuda.stream()`,
 * `synchronize()` and `auto_synchronize()` are `Stream`, `synchronize()` and `AutoSynchronize`
 * (stream.hpp).
 */
#pragma once

#include <smartarray/error.hpp>
#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/core/detail/array_factory.hpp>

#include <cstddef>
#include <ranges>
#include <span>
#include <vector>

namespace smartarray {

/**
 * @brief Numba's `cuda.to_device(ary, stream)`: a copy of `range` that is valid on the device (and
 *        on the host), uploaded on `stream`.
 * @param range a contiguous range of trivially copyable elements.
 * @param stream the stream of the upload (one H2D in explicit and pageable modes, none in mapped
 *        mode, a prefetch in managed mode).
 * @param options the array's resources and memory mode.
 * @param where the caller's source location, for the migration trace.
 */
template <std::ranges::contiguous_range R>
[[nodiscard]] SmartArray<std::remove_cv_t<std::ranges::range_value_t<R>>> to_device(
    const R& range, StreamRef stream = {}, const ArrayOptions& options = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  using T = std::remove_cv_t<std::ranges::range_value_t<R>>;
  const detail::NvtxRange nvtx("to_device", where);
  SmartArray<T> array(std::span<const T>(std::ranges::data(range), std::ranges::size(range)),
                      options);
  (void)array.device_view(Access::read, stream, where);
  return array;
}

/**
 * @brief Numba's `cuda.device_array(n, dtype)`: `n` uninitialized elements valid on the device
 *        only. In explicit and pageable modes no host memory is allocated until the host needs it.
 * @param n the number of elements.
 * @param stream the stream on which the device buffer is first used.
 * @param options the array's resources and memory mode.
 * @throws std::length_error when `n` exceeds max_size().
 */
template <typename T>
[[nodiscard]] SmartArray<T> device_array(std::size_t n, StreamRef stream = {},
                                         const ArrayOptions& options = {}) {
  return detail::ArrayFactory::device_only<T>(n, stream, options);
}

/**
 * @brief Numba's `cuda.device_array_like(ary)`: a device-only array with the size and memory mode
 *        of `like` (its contents are not copied).
 */
template <typename T>
[[nodiscard]] SmartArray<T> device_array_like(const SmartArray<T>& like, StreamRef stream = {}) {
  return device_array<T>(like.size(), stream, ArrayOptions{.mode = like.memory_mode()});
}

/**
 * @brief Numba's `d.copy_to_host(stream=...)`: the elements in a new vector. Copies from the device
 *        when the host copy is stale (one D2H) without making the host copy valid.
 * @param where the caller's source location, for the migration trace.
 */
template <typename T>
[[nodiscard]] std::vector<T> copy_to_host(
    const SmartArray<T>& array, StreamRef stream = {},
    smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("copy_to_host", where);
  std::vector<T> out(array.size());
  array.copy_to(std::span<T>(out), stream, true, where);
  return out;
}

/**
 * @brief Numba's `d.copy_to_host(ary, stream)`: the elements into `dest`, done when this returns.
 * @param where the caller's source location, for the migration trace.
 * @throws std::length_error when `dest` holds fewer elements than `array` (naming both sizes).
 */
template <typename T>
void copy_to_host(const SmartArray<T>& array, std::span<T> dest, StreamRef stream = {},
                  smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("copy_to_host", where);
  array.copy_to(dest, stream, true, where);
}

/**
 * @brief The asynchronous twin of `copy_to_host(array, dest, stream)`: returns once the copy is
 *        queued on `stream`. `dest` must stay alive, and must not be read, until `stream` is
 *        synchronized (`synchronize(stream)` or an `AutoSynchronize` scope). Pageable `dest`
 *        memory may make the copy synchronous on the cuda backend; pinned or registered memory
 *        keeps it asynchronous.
 * @throws std::length_error when `dest` holds fewer elements than `array` (naming both sizes).
 */
template <typename T>
void copy_to_host_async(
    const SmartArray<T>& array, std::span<T> dest, StreamRef stream,
    smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("copy_to_host_async", where);
  array.copy_to(dest, stream, false, where);
}

/**
 * @brief Numba's `cuda.as_cuda_array(obj)`: a device-valid array over `n` elements of external
 *        device memory at `ptr`. Nothing is copied and the memory is never freed by the array;
 *        it must outlive the array's use of it. Growth beyond `n` moves the data to pooled device
 *        memory (one D2D) and leaves the external buffer as it was.
 * @param options resources; the mode must be explicit or pageable.
 * @throws logic_error when `ptr` is null and `n` is not zero, or for the mapped and managed modes.
 */
template <typename T>
[[nodiscard]] SmartArray<T> wrap_device(T* ptr, std::size_t n, const ArrayOptions& options = {}) {
  return detail::ArrayFactory::wrap<T>(ptr, n, options);
}

/**
 * @brief Numba's `cuda.pinned_array(n)`: `n` value-initialized elements whose host storage is
 *        pinned (explicit mode, with no pageable fallback).
 * @throws out_of_memory (or the resource's error) when pinned memory cannot be had.
 */
template <typename T>
[[nodiscard]] SmartArray<T> pinned_array(std::size_t n, ArrayOptions options = {}) {
  options.mode = MemoryMode::explicit_copy;
  options.require_pinned = true;
  return SmartArray<T>(n, options);
}

/**
 * @brief Numba's `cuda.mapped_array(n, portable, wc)`: `n` value-initialized elements in mapped
 *        mode: kernels access the pinned host buffer directly and nothing is ever copied.
 * @param portable pinned for every CUDA context.
 * @param write_combined write-combined memory: fast for the device to read, very slow for the host
 *        to read.
 */
template <typename T>
[[nodiscard]] SmartArray<T> mapped_array(std::size_t n, bool portable = false,
                                         bool write_combined = false) {
  return SmartArray<T>(n, ArrayOptions{.mode = MemoryMode::mapped,
                                       .portable = portable,
                                       .write_combined = write_combined});
}

}  // namespace smartarray
