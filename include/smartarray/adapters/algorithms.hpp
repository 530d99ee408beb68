/**
 * @file adapters/algorithms.hpp
 * @brief Whole-array `copy(dst, src, stream)` and `fill(a, value, stream)` on the device.
 *
 * Both overwrite their destination, so it is acquired with `discard`: nothing is copied into it,
 * and its host copy becomes stale. `copy` is one device-to-device copy (counted as such) and works
 * from any compiler; `fill` is a grid-stride kernel through `for_each_index` (the calling file must
 * be compiled by nvcc on the cuda backend).
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/views/device_view.hpp>
#include <smartarray/error.hpp>
#include <smartarray/adapters/for_each_index.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/core/detail/array_factory.hpp>

#include <cstddef>
#include <memory>
#include <type_traits>

namespace smartarray {

/**
 * @brief Copies every element of `src` into `dst` on the device: `src` is acquired for `read`,
 *        `dst` with `discard`, then one device-to-device copy is queued on `stream`.
 * @param dst the destination; its size must equal `src.size()`.
 * @param src the source (copying an array onto itself does nothing).
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @throws logic_error when the sizes differ (nothing is acquired).
 * @throws out_of_memory or cuda_error when an acquire or the copy fails.
 */
template <typename T>
void copy(SmartArray<T>& dst, const SmartArray<T>& src, StreamRef stream = {},
          smartarray::source_location where = smartarray::source_location::current()) {
  SMARTARRAY_EXPECTS(dst.size() == src.size(), logic_error, "copy of ", src.size(),
                     " elements into an array of ", dst.size(),
                     " elements: the sizes must be equal");
  if (std::addressof(dst) == std::addressof(src) || src.empty()) return;
  const DeviceView<const T> from = src.device_view(stream, where);
  const DeviceView<T> to = dst.device_view(Access::discard, stream, where);
  detail::ArrayFactory::copy_device(dst, to, from, stream, where);
}

namespace detail {
template <typename T>
struct FillOp {
  DeviceView<T> view;
  T value;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { view[i] = value; }
};
}  // namespace detail

inline namespace SMARTARRAY_KERNEL_ABI {
/**
 * @brief Sets every element of `a` to `value` on the device; `a` is acquired with `discard`.
 * @param a the array.
 * @param value the value.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws out_of_memory or cuda_error when the acquire or the launch fails.
 */
template <typename T>
void fill(SmartArray<T>& a, std::type_identity_t<T> value, StreamRef stream = {},
          smartarray::source_location where = smartarray::source_location::current()) {
  if (a.empty()) return;
  detail::require_kernel_compiler("fill", a.size());
  for_each_index(a.size(), detail::FillOp<T>{a.device_view(Access::discard, stream, where), value},
                 stream);
}
}  // namespace SMARTARRAY_KERNEL_ABI

}  // namespace smartarray
