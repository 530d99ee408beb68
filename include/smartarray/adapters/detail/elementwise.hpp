/**
 * @file adapters/detail/elementwise.hpp
 * @brief Private: the launch shape of the element-wise kernels (`for_each_index`, `transform`,
 *        `map`, `fill`) and the kernel that runs a body over it.
 *
 * A body does element i with `op(i)`. Bodies that also have a vector form (`transform`'s and
 * `fill`'s, see `ElementwiseBody`) may do several consecutive elements per thread, each operand
 * loaded and the output stored as one aligned vector access (16 bytes: LDG.128 / STG.128).
 *
 * The shape is the kernel a CUDA programmer writes by hand for a memory-bound element-wise loop:
 * one thread per element (or per vector), `ceil(units / 256)` blocks of 256 threads, 32-bit
 * indices while they cover the array. `elementwise_shape()` chooses it from the size, the widest
 * element type and the operands' alignment; the knobs below are its only inputs, measured by
 * `benchmarks/bench_stream.cu` against hand-written kernels of both shapes (`vec_vs_kernel` says
 * where the vector form wins).
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/views/device_view.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace smartarray::detail {

// --- The knobs -----------------------------------------------------------------------------------

/// Threads per block of the element-wise kernels.
inline constexpr unsigned elementwise_block = 256;
/// Bytes of one vector access: the widest load and store a thread makes.
inline constexpr std::size_t elementwise_vector_bytes = 16;
/// The widest element type that takes the vector form: 8 vectorizes double (2 elements per
/// thread) as well as float and int (4 per thread). On an H200 (bench_stream, 2^25 and 2^27
/// elements), 16-byte accesses moved 1.55-1.59x the bytes of one thread per float element for
/// copy and scale, 1.26-1.28x for add and triad, and for double 1.09-1.10x for copy and scale and
/// within 1% either way for add, triad and nstream.
inline constexpr std::size_t elementwise_vector_max_element_bytes = 8;
/// Fewer elements than this take one thread per element: such a call is bound by its launch, and
/// a grid of vectors would leave SMs without a block.
inline constexpr std::size_t elementwise_vector_min_elements = std::size_t{1} << 20;
/// The most elements that 32-bit indices cover, with room for the overshoot of the last block
/// and of the last vector.
inline constexpr std::size_t elementwise_narrow_max_elements =
    std::numeric_limits<std::uint32_t>::max() -
    std::size_t{elementwise_block} * elementwise_vector_bytes;
/// CUDA's limit on `gridDim.x`. Only arrays of more than 2^39 elements reach it; their threads then
/// loop over the rest (64-bit indices).
inline constexpr std::size_t elementwise_max_grid = std::numeric_limits<std::int32_t>::max();

// --- The shape -----------------------------------------------------------------------------------

/// Elements per vector access for elements of `element_bytes` bytes: 1 when the size is not a
/// power of two of at most 16 bytes (such elements take no vector form).
[[nodiscard]] constexpr unsigned vector_elements(std::size_t element_bytes) noexcept {
  const bool power_of_two = element_bytes != 0 && (element_bytes & (element_bytes - 1)) == 0;
  return power_of_two && element_bytes <= elementwise_vector_bytes
             ? static_cast<unsigned>(elementwise_vector_bytes / element_bytes)
             : 1U;
}

/// How an element-wise kernel covers n elements.
struct ElementwiseShape {
  /// Elements per thread: 1, or the elements of one vector access of the widest element type.
  unsigned elements_per_thread = 1;
  /// 64-bit indices, for arrays beyond `elementwise_narrow_max_elements`; the threads loop only
  /// when the grid is capped at `elementwise_max_grid`.
  bool wide_index = false;
  /// Blocks of `elementwise_block` threads.
  unsigned grid = 1;
};

/**
 * @brief The launch shape of an element-wise kernel over `n` elements (n > 0).
 * @param element_bytes the widest element type the body loads or stores; 0 when the body has no
 *        vector form (`for_each_index`'s `f(i)`).
 * @param aligned every pointer the body accesses is aligned to `elementwise_vector_bytes`.
 */
[[nodiscard]] constexpr ElementwiseShape elementwise_shape(std::size_t n, std::size_t element_bytes,
                                                           bool aligned) noexcept {
  const bool vector = aligned && element_bytes != 0 &&
                      element_bytes <= elementwise_vector_max_element_bytes &&
                      vector_elements(element_bytes) > 1 && n >= elementwise_vector_min_elements;
  const unsigned per_thread = vector ? vector_elements(element_bytes) : 1U;
  const std::size_t threads = n / per_thread + (n % per_thread != 0 ? 1 : 0);
  const std::size_t blocks =
      threads / elementwise_block + (threads % elementwise_block != 0 ? 1 : 0);
  return {per_thread, n > elementwise_narrow_max_elements,
          static_cast<unsigned>(std::min(blocks, elementwise_max_grid))};
}

// --- Vector access -------------------------------------------------------------------------------

/// V elements of T loaded or stored as one aligned access (`sizeof(T) * V` is a power of two of at
/// most 16 bytes).
template <typename T, unsigned V>
struct alignas(sizeof(T) * V) AlignedVector {
  T elements[V];
};

/// True when `view` starts on a vector boundary.
template <typename T>
[[nodiscard]] bool vector_aligned(const DeviceView<T>& view) noexcept {
  // Element 0's address without a debug build's view check: the view was just acquired.
  return reinterpret_cast<std::uintptr_t>(&view[0]) % elementwise_vector_bytes == 0;
}

/// The V elements of `view` from `first`, in one access.
template <unsigned V, typename T>
SMARTARRAY_HOST_DEVICE AlignedVector<std::remove_const_t<T>, V> load_vector(
    const DeviceView<T>& view, std::size_t first) {
  return *reinterpret_cast<const AlignedVector<std::remove_const_t<T>, V>*>(&view[first]);
}

/// Stores `values` into the V elements of `view` from `first`, in one access.
template <unsigned V, typename T>
SMARTARRAY_HOST_DEVICE void store_vector(const DeviceView<T>& view, std::size_t first,
                                         const AlignedVector<T, V>& values) {
  *reinterpret_cast<AlignedVector<T, V>*>(&view[first]) = values;
}

/**
 * @brief A body with a vector form: `op(i)` does element i, and
 *        `op.template apply_vector<V>(first)` does the V elements from `first` with one vector
 *        access per array operand, where `V == vector_elements(Op::vector_element_bytes)`.
 *
 * `vector_element_bytes` is the widest element type it loads or stores (0: no vector form after
 * all), and `vector_aligned()` says whether every pointer it accesses is aligned for vectors.
 */
template <typename Op>
concept ElementwiseBody = requires(const Op& op) {
  { Op::vector_element_bytes } -> std::convertible_to<std::size_t>;
  { op.vector_aligned() } -> std::convertible_to<bool>;
};

/// The shape of `op` over `n` elements: its vector form when it has one.
template <typename Op>
[[nodiscard]] ElementwiseShape elementwise_shape_of(std::size_t n, const Op& op) noexcept {
  if constexpr (ElementwiseBody<Op>) {
    if constexpr (Op::vector_element_bytes != 0) {
      return elementwise_shape(n, Op::vector_element_bytes, op.vector_aligned());
    }
  }
  return elementwise_shape(n, 0, false);
}

/// Elements per thread of `Op`'s vector form; 1 without one, or when elementwise_shape() never
/// takes it (its elements are wider than `elementwise_vector_max_element_bytes`): then its vector
/// kernel is not even compiled.
template <typename Op>
[[nodiscard]] constexpr unsigned vector_width_of() noexcept {
  if constexpr (ElementwiseBody<Op>) {
    return Op::vector_element_bytes <= elementwise_vector_max_element_bytes
               ? vector_elements(Op::vector_element_bytes)
               : 1U;
  } else {
    return 1;
  }
}

// --- The kernel ----------------------------------------------------------------------------------

#if defined(__CUDACC__)
/// Unit `t` of the work: element t, or the V elements from t * V (the last unit may be short, and
/// then goes element by element).
template <unsigned V, typename Index, typename Op>
__device__ __forceinline__ void elementwise_unit(Op& op, Index t, Index n) {
  if constexpr (V == 1) {
    op(static_cast<std::size_t>(t));
  } else {
    const Index first = t * V;
    if (first + V <= n) {
      op.template apply_vector<V>(static_cast<std::size_t>(first));
    } else {
      for (Index i = first; i < n; ++i) op(static_cast<std::size_t>(i));
    }
  }
}

/// `units` units of V elements over `n` elements, one per thread: the grid covers them all, except
/// beyond `elementwise_max_grid` blocks (64-bit indices only), where each thread loops.
template <unsigned V, typename Index, typename Op>
__global__ void elementwise_kernel(Index n, Index units, Op op) {
  if constexpr (sizeof(Index) == sizeof(std::uint32_t)) {
    const Index t = blockIdx.x * elementwise_block + threadIdx.x;
    if (t < units) elementwise_unit<V>(op, t, n);
  } else {
    const Index stride = Index{gridDim.x} * elementwise_block;
    for (Index t = Index{blockIdx.x} * elementwise_block + threadIdx.x; t < units; t += stride) {
      elementwise_unit<V>(op, t, n);
    }
  }
}

/// Enqueues `op` over `n` elements (n > 0) in `shape` on `stream`, whose device is current. The
/// caller checks the launch.
template <typename Op>
void launch_elementwise(std::size_t n, const Op& op, const ElementwiseShape& shape,
                        cudaStream_t stream) {
  constexpr unsigned vector = vector_width_of<Op>();
  const auto launch = [&]<unsigned V>() {
    const std::size_t units = n / V + (n % V != 0 ? 1 : 0);
    if (shape.wide_index) {
      elementwise_kernel<V, std::size_t>
          <<<shape.grid, elementwise_block, 0, stream>>>(n, units, op);
    } else {
      elementwise_kernel<V, std::uint32_t><<<shape.grid, elementwise_block, 0, stream>>>(
          static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(units), op);
    }
  };
  if constexpr (vector > 1) {
    if (shape.elements_per_thread == vector) {
      launch.template operator()<vector>();
      return;
    }
  }
  launch.template operator()<1>();
}
#endif

}  // namespace smartarray::detail
