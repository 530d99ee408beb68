/**
 * @file adapters/algorithms.hpp
 * @brief `copy(dst, src, stream)` and `fill(a, value, stream)` on the device, of whole arrays or of
 *        slices (core/slice.hpp).
 *
 * Both overwrite their destination, so it is acquired with `discard`: nothing is copied into it,
 * and its host copy becomes stale (for a slice, in the slice's range only). `copy` is one
 * device-to-device copy (counted as such) and works from any compiler: under nvcc, a copy of at
 * most `device_copy_kernel_max_bytes` between 16-byte aligned ranges is a copy kernel of 16 bytes
 * per thread, which beats `cudaMemcpyAsync` at those sizes, and anything else `cudaMemcpyAsync`.
 * `fill` is an element-wise kernel through `for_each_index` (the calling file must be compiled by
 * nvcc on the cuda backend).
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/views/device_view.hpp>
#include <smartarray/error.hpp>
#include <smartarray/adapters/for_each_index.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/adapters/detail/adapter_traits.hpp>
#include <smartarray/core/detail/chunked_access.hpp>
#include <smartarray/core/detail/array_factory.hpp>
#include <smartarray/runtime/detail/stream_work.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>

namespace smartarray {
namespace detail {

/// The array of a copy argument: the array itself, or a slice's array.
template <typename A>
auto& array_of(A& argument) noexcept {
  if constexpr (is_slice_v<A>) {
    return argument.array();
  } else {
    return argument;
  }
}
/// The index in its array of a copy argument's first element.
template <typename A>
std::size_t first_of(const A& argument) noexcept {
  if constexpr (is_slice_v<A>) {
    return argument.first();
  } else {
    return 0;
  }
}

/// The elements of a writable array or slice, as a slice.
template <typename A>
auto writable_slice(A& argument) {
  if constexpr (is_slice_v<A>) {
    return argument;
  } else {
    return argument.slice(0, argument.size());
  }
}

/// Device-to-device copies of at most this many bytes, between ranges that both start on a
/// 16-byte boundary, are a copy kernel (`copy_by_kernel`); larger or unaligned ones are
/// `cudaMemcpyAsync`. `bench_stream`'s `BM_copy_d2d` times both at each size (`kernel_vs_memcpy`).
inline constexpr std::size_t device_copy_kernel_max_bytes = std::size_t{1} << 26;

/// True when copy() of `bytes` bytes takes the copy kernel (under nvcc, on the cuda backend).
[[nodiscard]] constexpr bool device_copy_uses_kernel(std::size_t bytes, bool aligned) noexcept {
  return aligned && bytes <= device_copy_kernel_max_bytes;
}

#if defined(__CUDACC__)
/// `vectors` 16-byte vectors from `src` to `dst`, one per thread, then the `tail` last bytes (fewer
/// than 16), one per thread of the first threads. `Vector` is `uint4`.
template <typename Vector>
__global__ void copy_vectors_kernel(Vector* dst, const Vector* src, std::uint32_t vectors,
                                    std::byte* tail_dst, const std::byte* tail_src,
                                    std::uint32_t tail) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < vectors) dst[i] = src[i];
  if (i < tail) tail_dst[i] = tail_src[i];
}

/// Enqueues the copy of `bytes` bytes (at most device_copy_kernel_max_bytes, both ends 16-byte
/// aligned) on `stream` as copy_vectors_kernel: ArrayCore's copier for copy().
inline void copy_by_kernel(std::byte* dst, const std::byte* src, std::size_t bytes,
                           StreamRef stream) {
  constexpr unsigned block = 256;
  const auto vectors = static_cast<std::uint32_t>(bytes / sizeof(uint4));
  const auto tail = static_cast<std::uint32_t>(bytes % sizeof(uint4));
  const std::size_t body = std::size_t{vectors} * sizeof(uint4);
  const std::uint32_t threads = std::max(vectors, tail);
  const DeviceGuard on_device(stream_device(stream));
  copy_vectors_kernel<<<(threads + block - 1) / block, block, 0, stream.cuda_stream()>>>(
      reinterpret_cast<uint4*>(dst), reinterpret_cast<const uint4*>(src), vectors, dst + body,
      src + body, tail);
  SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch the copy kernel of ", bytes,
                      " bytes device to device on stream ", stream.handle());
}
#endif

// copy() has one body under nvcc (which may take the copy kernel) and another without: they live
// in the compiler's inline namespace, as the kernel adapters do (for_each_index.hpp).
inline namespace SMARTARRAY_KERNEL_ABI {
/// The copier of copy(): the copy kernel where device_copy_uses_kernel() says so (only under nvcc,
/// on the cuda backend), else nothing (the runtime's cudaMemcpyAsync).
template <typename T>
[[nodiscard]] ArrayCore::DeviceCopier device_copier(
    [[maybe_unused]] const DeviceView<T>& to, [[maybe_unused]] const DeviceView<const T>& from) {
#if defined(__CUDACC__)
  const bool aligned = reinterpret_cast<std::uintptr_t>(&to[0]) % sizeof(uint4) == 0 &&
                       reinterpret_cast<std::uintptr_t>(&from[0]) % sizeof(uint4) == 0;
  if (backend() == BackendKind::cuda && device_copy_uses_kernel(from.size_bytes(), aligned)) {
    return &copy_by_kernel;
  }
#endif
  return nullptr;
}

/// copy() of any mix of arrays and slices (`Dst` is writable; the element types match).
template <typename Dst, typename Src>
void copy_elements(Dst& dst, const Src& src, StreamRef stream,
                   const smartarray::source_location& where) {
  using T = typename Dst::value_type;
  const NvtxRange nvtx("copy", where);
  SMARTARRAY_EXPECTS(dst.size() == src.size(), logic_error, "copy of ", src.size(),
                     " elements into ", is_slice_v<Dst> ? "a slice of " : "an array of ",
                     dst.size(), " elements: the sizes must be equal");
  check_in_range(dst);
  check_in_range(src);
  const std::size_t to_first = first_of(dst);
  const std::size_t from_first = first_of(src);
  if (static_cast<const void*>(std::addressof(array_of(dst))) ==
      static_cast<const void*>(std::addressof(array_of(src)))) {
    if (to_first == from_first) {  // onto itself
      check_stream(stream);
      return;
    }
    // One device-to-device copy between overlapping bytes would be undefined.
    SMARTARRAY_EXPECTS(to_first >= from_first + src.size() || from_first >= to_first + dst.size(),
                       logic_error, "copy of the elements [", from_first, ", ",
                       from_first + src.size(), ") of an array onto its elements [", to_first,
                       ", ", to_first + dst.size(), "): the ranges overlap");
  }
  if (src.empty()) {
    check_stream(stream);
    return;
  }
  if (exceeds_device_budget(stream, 0, chunk_operand(dst), chunk_operand(src))) {
    // Arrays that together do not fit the device budget are copied on the host: the source's
    // host copy is made whole, and one parallel memcpy writes the destination's, which becomes
    // valid on the host only. No device memory is used.
    const std::span<const T> from =
        Slice<const T>(chunk_operand(src)).host_view(std::nullopt, where);
    const std::span<T> to = writable_slice(dst).host_view(Access::discard, std::nullopt, where);
    parallel_copy(to.data(), from.data(), from.size_bytes());
    return;
  }
  const DeviceView<const T> from = src.device_view(stream, where);
  const DeviceView<T> to = dst.device_view(Access::discard, stream, where);
  ArrayFactory::copy_device(array_of(dst), to, from, stream, where, device_copier(to, from));
}
}  // namespace SMARTARRAY_KERNEL_ABI

/// True for the arguments that copy() takes as a destination or a source: arrays and slices.
template <typename A>
inline constexpr bool is_copy_argument_v = is_smart_array_v<A> || is_slice_v<A>;

/// True when copy() may overwrite `Dst` (a forwarding reference's type): a `Slice<T>`, whatever
/// the handle's constness, or a non-const array that outlives the call.
template <typename Dst>
constexpr bool writable_destination() {
  if constexpr (is_slice_v<Dst>) {
    return !std::is_const_v<typename std::remove_cvref_t<Dst>::element_type>;
  } else {
    return !std::is_const_v<std::remove_reference_t<Dst>> && std::is_lvalue_reference_v<Dst>;
  }
}

}  // namespace detail

inline namespace SMARTARRAY_KERNEL_ABI {

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
  detail::copy_elements(dst, src, stream, where);
}

/**
 * @brief Copies every element of `src` into `dst` on the device, where either is a slice (and the
 *        other a slice or an array): only the source's range is acquired for `read` and only the
 *        destination's range with `discard`, then one device-to-device copy of the range is
 *        queued on `stream`, counted on the destination's array.
 * @param dst the destination: a non-const `SmartArray` or a `Slice<T>` (a temporary slice too);
 *        its size must equal `src.size()`. Outside a slice, its array keeps its values and their
 *        residency.
 * @param src the source: a `SmartArray`, a `Slice<T>` or a `Slice<const T>`. Copying a slice onto
 *        itself (same array, same range) does nothing.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @throws logic_error when the sizes differ, or when `dst` and `src` are different but overlapping
 *         ranges of one array (nothing is acquired).
 * @throws std::out_of_range when a slice no longer lies inside its array (the array shrank);
 *         nothing is acquired.
 * @throws out_of_memory or cuda_error when an acquire or the copy fails.
 */
template <typename Dst, typename Src>
  requires((detail::is_slice_v<Dst> || detail::is_slice_v<Src>) &&
           detail::is_copy_argument_v<Dst> && detail::is_copy_argument_v<Src>)
void copy(Dst&& dst, const Src& src, StreamRef stream = {},
          smartarray::source_location where = smartarray::source_location::current()) {
  constexpr bool same_type =
      std::is_same_v<typename std::remove_cvref_t<Dst>::value_type, typename Src::value_type>;
  static_assert(same_type, "copy: the destination's element type differs from the source's");
  constexpr bool writable = detail::writable_destination<Dst>();
  static_assert(writable,
                "copy: the destination must be a non-const SmartArray (not a temporary) or a "
                "Slice<T>: a const array or a Slice<const T> cannot be overwritten");
  if constexpr (same_type && writable) detail::copy_elements(dst, src, stream, where);
}

}  // namespace SMARTARRAY_KERNEL_ABI

namespace detail {
/// fill's body: `view[i] = value`; its vector form stores V copies of the value in one access.
template <typename T>
struct FillOp {
  DeviceView<T> view;
  T value;

  static constexpr std::size_t vector_element_bytes =
      vector_elements(sizeof(T)) > 1 ? sizeof(T) : 0;

  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { view[i] = value; }
  [[nodiscard]] bool vector_aligned() const noexcept { return detail::vector_aligned(view); }
  template <unsigned V>
  SMARTARRAY_HOST_DEVICE void apply_vector(std::size_t first) const {
    AlignedVector<T, V> values;
    for (unsigned k = 0; k < V; ++k) values.elements[k] = value;
    store_vector<V>(view, first, values);
  }
};
}  // namespace detail

inline namespace SMARTARRAY_KERNEL_ABI {
template <typename T>
void fill(Slice<T> s, std::type_identity_t<std::remove_const_t<T>> value, StreamRef stream = {},
          smartarray::source_location where = smartarray::source_location::current());

/**
 * @brief Sets every element of `a` to `value` on the device, as the fill of its whole slice:
 *        `a` is acquired with `discard`.
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
  fill(a.slice(0, a.size()), value, stream, where);
}

/**
 * @brief Sets every element of slice `s` to `value` on the device; only the slice's range is
 *        acquired with `discard`, and the rest of the array keeps its values and their residency.
 * @param s a `Slice<T>` (a temporary one too); a `Slice<const T>` is a compile error.
 * @param value the value.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the migration trace.
 * @throws std::out_of_range when the slice no longer lies inside its array (the array shrank).
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws out_of_memory or cuda_error when the acquire or the launch fails.
 */
template <typename T>
void fill(Slice<T> s, std::type_identity_t<std::remove_const_t<T>> value, StreamRef stream,
          smartarray::source_location where) {
  static_assert(!std::is_const_v<T>,
                "fill: a Slice<const T> cannot be written: fill a Slice<T> (a.slice(...) of a "
                "non-const array)");
  if constexpr (!std::is_const_v<T>) {
    const detail::NvtxRange nvtx("fill", where);
    if (s.empty()) {
      detail::check_stream(stream);
      return;
    }
    if (detail::exceeds_device_budget(stream, 0, s)) {
      // A range whose array does not fit the device budget is filled on the host, which then
      // alone holds it: no device memory, no copy.
      const std::span<T> host = s.host_view(Access::discard, std::nullopt, where);
      std::fill(host.begin(), host.end(), value);
      return;
    }
    detail::require_kernel_compiler("fill", s.size());
    detail::for_each_index_on(
        s.size(), detail::FillOp<T>{s.device_view(Access::discard, stream, where), value}, stream);
  }
}
}  // namespace SMARTARRAY_KERNEL_ABI

}  // namespace smartarray
