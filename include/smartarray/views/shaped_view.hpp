/**
 * @file views/shaped_view.hpp
 * @brief N-d views in C or F order: `cuda::std::mdspan` over a `DeviceView` or a host span, with
 *        Numba's `reshape`, `ravel`, `is_c_contiguous` and `is_f_contiguous`.
 *
 * A `ShapedView<T, Rank, Layout>` is a `cuda::std::mdspan` with run-time extents. It is trivially
 * copyable, so kernels take it by value and index it as `m(i, j)`. The same type views host memory
 * (`reshape(a.host_view(), ...)`) and device memory (`reshape(a.device_view(...), ...)`); which
 * side it points to is the caller's to know, as for a raw pointer.
 *
 * @code
 * auto m = sa::reshape(a.device_view(sa::Access::read_write, s), sa::c_order, rows, cols);
 * kernel<<<grid, block, 0, s.cuda_stream()>>>(m);   // m(i, j) is a[i * cols + j]
 * @endcode
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/views/device_view.hpp>
#include <smartarray/error.hpp>

#include <cuda/std/mdspan>
#include <cuda/std/span>

#include <cassert>
#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>

namespace smartarray {

/// @brief C order (row-major): the last index is contiguous.
using CLayout = cuda::std::layout_right;
/// @brief Fortran order (column-major): the first index is contiguous.
using FLayout = cuda::std::layout_left;
/// @brief The C-order tag: `reshape(view, c_order, rows, cols)`.
inline constexpr CLayout c_order{};
/// @brief The F-order tag: `reshape(view, f_order, rows, cols)`.
inline constexpr FLayout f_order{};

/**
 * @brief A `Rank`-dimensional view with run-time extents in `Layout` order.
 * @tparam T the element type (`const T` for a read-only view).
 * @tparam Rank the number of dimensions.
 * @tparam Layout `CLayout` (the default), `FLayout` or `cuda::std::layout_stride`.
 */
template <typename T, std::size_t Rank, typename Layout = CLayout>
using ShapedView = cuda::std::mdspan<T, cuda::std::dextents<std::size_t, Rank>, Layout>;

namespace detail {

template <typename L>
inline constexpr bool is_order_layout_v =
    std::is_same_v<L, CLayout> || std::is_same_v<L, FLayout>;

/// The product of `extents`, or `limit + 1` as soon as it exceeds `limit` (no overflow).
template <typename... Extents>
SMARTARRAY_HOST_DEVICE constexpr std::size_t extents_product(std::size_t limit,
                                                             Extents... extents) {
  std::size_t product = 1;
  bool over = false;
  for (const std::size_t e : {static_cast<std::size_t>(extents)...}) {
    if (e == 0) return 0;
    if (over || product > limit / e) {
      over = true;
    } else {
      product *= e;
    }
  }
  return over ? limit + 1 : product;
}

/// Writes "(4, 5, 6)".
template <typename... Extents>
std::string extents_string(Extents... extents) {
  std::string text = "(";
  const char* separator = "";
  for (const std::size_t e : {static_cast<std::size_t>(extents)...}) {
    text += separator + std::to_string(e);
    separator = ", ";
  }
  return text + ")";
}

/// Checks that `extents` hold exactly `size` elements: throws on the host, asserts in device code.
template <typename... Extents>
SMARTARRAY_HOST_DEVICE constexpr void check_reshape(const char* what, std::size_t size,
                                                    Extents... extents) {
  [[maybe_unused]] const bool fits = extents_product(size, extents...) == size;
#if SMARTARRAY_IN_DEVICE_CODE
  assert(fits && "reshape: the product of the extents must equal the size");
#else
  SMARTARRAY_EXPECTS(fits, logic_error, what, " of ", size, " elements to extents ",
                     extents_string(extents...), ": the product of the extents (",
                     extents_product(~std::size_t{0} - 1, extents...),
                     ") must equal the number of elements");
#endif
}

/// Strides in C order (`c == true`) or F order match those of `m`, skipping extents of 1 as
/// NumPy does.
template <typename M>
SMARTARRAY_HOST_DEVICE constexpr bool has_order_strides(const M& m, bool c) {
  constexpr std::size_t rank = M::rank();
  std::size_t expected = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    const std::size_t r = c ? rank - 1 - k : k;
    if (m.extent(r) == 0) return true;  // an empty view is contiguous in any order
  }
  for (std::size_t k = 0; k < rank; ++k) {
    const std::size_t r = c ? rank - 1 - k : k;
    if (m.extent(r) == 1) continue;
    if (static_cast<std::size_t>(m.stride(r)) != expected) return false;
    expected *= m.extent(r);
  }
  return true;
}

}  // namespace detail

/**
 * @brief True when the elements of `m` are contiguous in C order (NumPy's `flags.c_contiguous`):
 *        always for `CLayout`, and for other layouts when the strides say so.
 * @param m a strided mdspan (`CLayout`, `FLayout` or `layout_stride`).
 */
template <typename T, typename E, typename L, typename A>
SMARTARRAY_HOST_DEVICE constexpr bool is_c_contiguous(
    [[maybe_unused]] const cuda::std::mdspan<T, E, L, A>& m) {
  if constexpr (std::is_same_v<L, CLayout>) {
    return true;
  } else {
    return detail::has_order_strides(m, true);
  }
}

/**
 * @brief True when the elements of `m` are contiguous in F order (NumPy's `flags.f_contiguous`):
 *        always for `FLayout`, and for other layouts when the strides say so.
 * @param m a strided mdspan (`CLayout`, `FLayout` or `layout_stride`).
 */
template <typename T, typename E, typename L, typename A>
SMARTARRAY_HOST_DEVICE constexpr bool is_f_contiguous(
    [[maybe_unused]] const cuda::std::mdspan<T, E, L, A>& m) {
  if constexpr (std::is_same_v<L, FLayout>) {
    return true;
  } else {
    return detail::has_order_strides(m, false);
  }
}

/**
 * @brief Views the elements of `view` as an N-d array with the given extents and order.
 *
 * Works on the host and in device code.
 *
 * @param view the contiguous elements (a `DeviceView`, or a `cuda::std::span`).
 * @param layout `c_order` or `f_order`.
 * @param extents one extent per dimension.
 * @throws logic_error (host) when the product of the extents differs from `view.size()`; in device
 *         code this is an assert.
 */
template <typename T, typename Layout, std::integral... Extents>
  requires(sizeof...(Extents) >= 1 && detail::is_order_layout_v<Layout>)
[[nodiscard]] SMARTARRAY_HOST_DEVICE constexpr ShapedView<T, sizeof...(Extents), Layout> reshape(
    DeviceView<T> view, Layout layout, Extents... extents) {
  (void)layout;
  detail::check_reshape("reshape", view.size(), extents...);
  return ShapedView<T, sizeof...(Extents), Layout>(view.data(),
                                                   static_cast<std::size_t>(extents)...);
}

/// @copydoc reshape(DeviceView<T>, Layout, Extents...)
template <typename T, std::size_t N, typename Layout, std::integral... Extents>
  requires(sizeof...(Extents) >= 1 && detail::is_order_layout_v<Layout>)
[[nodiscard]] SMARTARRAY_HOST_DEVICE constexpr ShapedView<T, sizeof...(Extents), Layout> reshape(
    cuda::std::span<T, N> view, Layout layout, Extents... extents) {
  return reshape(DeviceView<T>(view.data(), view.size()), layout, extents...);
}

/**
 * @brief Views the elements of a host span (for example `a.host_view()`) as an N-d array.
 * @param view the contiguous host elements.
 * @param layout `c_order` or `f_order`.
 * @param extents one extent per dimension.
 * @throws logic_error when the product of the extents differs from `view.size()`.
 */
template <typename T, std::size_t N, typename Layout, std::integral... Extents>
  requires(sizeof...(Extents) >= 1 && detail::is_order_layout_v<Layout>)
[[nodiscard]] ShapedView<T, sizeof...(Extents), Layout> reshape(std::span<T, N> view,
                                                               Layout layout,
                                                               Extents... extents) {
  detail::check_reshape("reshape", view.size(), extents...);
  (void)layout;
  return ShapedView<T, sizeof...(Extents), Layout>(view.data(),
                                                   static_cast<std::size_t>(extents)...);
}

/**
 * @brief The elements of a contiguous `m` as a 1-d span, in memory order (Numba's `ravel()` of a
 *        contiguous array; no copy is made).
 * @param m a view contiguous in C or F order.
 * @throws logic_error (host) when `m` is contiguous in neither order, where a ravel would need a
 *         copy; in device code this is an assert.
 */
template <typename T, typename E, typename L, typename A>
[[nodiscard]] SMARTARRAY_HOST_DEVICE constexpr cuda::std::span<T> ravel(
    const cuda::std::mdspan<T, E, L, A>& m) {
  [[maybe_unused]] const bool contiguous = is_c_contiguous(m) || is_f_contiguous(m);
#if SMARTARRAY_IN_DEVICE_CODE
  assert(contiguous && "ravel: the view is contiguous in neither C nor F order");
#else
  SMARTARRAY_EXPECTS(contiguous, logic_error, "ravel of a rank-", E::rank(),
                     " view that is contiguous in neither C nor F order: it would need a copy");
#endif
  return cuda::std::span<T>(m.data_handle(), m.size());
}

/**
 * @brief Gives a contiguous `m` new extents and order, without a copy (Numba's `reshape` of a
 *        device array).
 *
 * As in Numba, only a reshape that keeps the memory order is allowed: a C-contiguous view reshapes
 * in C order, an F-contiguous one in F order (a 1-d view in both).
 *
 * @param m a contiguous view.
 * @param layout `c_order` or `f_order`.
 * @param extents one extent per dimension.
 * @throws logic_error (host) when the product of the extents differs from `m.size()`, or when `m`
 *         is not contiguous in the requested order; in device code these are asserts.
 */
template <typename T, typename E, typename L, typename A, typename Layout,
          std::integral... Extents>
  requires(sizeof...(Extents) >= 1 && detail::is_order_layout_v<Layout>)
[[nodiscard]] SMARTARRAY_HOST_DEVICE constexpr ShapedView<T, sizeof...(Extents), Layout> reshape(
    const cuda::std::mdspan<T, E, L, A>& m, Layout layout, Extents... extents) {
  [[maybe_unused]] const bool same_order =
      std::is_same_v<Layout, CLayout> ? is_c_contiguous(m) : is_f_contiguous(m);
#if SMARTARRAY_IN_DEVICE_CODE
  assert(same_order && "reshape: the view is not contiguous in the requested order");
#else
  SMARTARRAY_EXPECTS(same_order, logic_error, "reshape of a rank-", E::rank(), " view to ",
                     std::is_same_v<Layout, CLayout> ? "C" : "F",
                     " order: the view is not contiguous in that order, so it would need a copy");
#endif
  return reshape(DeviceView<T>(m.data_handle(), m.size()), layout, extents...);
}

}  // namespace smartarray
