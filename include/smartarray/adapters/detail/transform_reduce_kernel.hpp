/**
 * @file adapters/detail/transform_reduce_kernel.hpp
 * @brief Private: what `transform_reduce` folds and how (adapters/transform_reduce.hpp): the
 *        concepts of its arguments, the readers of one or two inputs' transformed elements, and
 *        under nvcc the one-pass kernel (16-byte loads where every input allows, a block
 *        reduction, the last block folding the partials into the result).
 */
#pragma once

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


/// The inputs of transform_reduce: arrays and slices.
template <typename A>
concept ReductionInput = is_smart_array_v<A> || is_slice_v<A>;

/// The type of transform_reduce's `init` (and result): anything that is no input, destination or
/// stream. (It must also be trivially copyable, which the call checks with a message.)
template <typename T>
concept ReductionValue = !ReductionInput<T> && !is_out_v<T> && !is_stream_v<T>;

/// True when inputs of types A, More... can be read by 16-byte vectors: as many elements of each
/// in one vector, at least 2.
template <typename A, typename... More>
inline constexpr bool vector_readable = ((sizeof(More) == sizeof(A)) && ...) && sizeof(A) <= 8 &&
                                        16 % sizeof(A) == 0;

/// The elements of each input in one 16-byte vector access; 0 when the inputs are read one
/// element at a time.
template <typename A, typename... More>
inline constexpr unsigned vector_lanes = vector_readable<A, More...>
                                             ? static_cast<unsigned>(16 / sizeof(A))
                                             : 0U;

/// The elements of one 16-byte vector access.
template <typename A>
struct alignas(16) Vector16 {
  A lane[16 / sizeof(A)];
};

/// `T(f(a[i]))`: the transformed element i of one input. When `lanes` is not 0 it also folds the
/// transformed elements of vector v (elements [v lanes, (v + 1) lanes)), read in one access.
template <typename T, typename F, typename A>
struct TransformedElement {
  static constexpr unsigned lanes = vector_lanes<A>;
  const A* a;
  F f;
  SMARTARRAY_HOST_DEVICE T operator()(std::size_t i) { return static_cast<T>(f(a[i])); }
  template <typename Op>
  SMARTARRAY_HOST_DEVICE T fold_vector(std::size_t v, Op& op) {
    const Vector16<A> x = reinterpret_cast<const Vector16<A>*>(a)[v];
    T folded = static_cast<T>(f(x.lane[0]));
    for (unsigned k = 1; k < lanes; ++k) folded = op(folded, static_cast<T>(f(x.lane[k])));
    return folded;
  }
  /// True when the kernel may read the input by vectors: its elements start 16-byte aligned.
  [[nodiscard]] bool vector_aligned() const noexcept {
    return reinterpret_cast<std::uintptr_t>(a) % 16 == 0;
  }
};

/// `T(f(a[i], b[i]))`: the transformed element i of two inputs, and, when `lanes` is not 0, the
/// fold of vector v of them, as TransformedElement.
template <typename T, typename F, typename A, typename B>
struct TransformedPair {
  static constexpr unsigned lanes = vector_lanes<A, B>;
  const A* a;
  const B* b;
  F f;
  SMARTARRAY_HOST_DEVICE T operator()(std::size_t i) { return static_cast<T>(f(a[i], b[i])); }
  template <typename Op>
  SMARTARRAY_HOST_DEVICE T fold_vector(std::size_t v, Op& op) {
    const Vector16<A> x = reinterpret_cast<const Vector16<A>*>(a)[v];
    const Vector16<B> y = reinterpret_cast<const Vector16<B>*>(b)[v];
    T folded = static_cast<T>(f(x.lane[0], y.lane[0]));
    for (unsigned k = 1; k < lanes; ++k) {
      folded = op(folded, static_cast<T>(f(x.lane[k], y.lane[k])));
    }
    return folded;
  }
  [[nodiscard]] bool vector_aligned() const noexcept {
    return reinterpret_cast<std::uintptr_t>(a) % 16 == 0 &&
           reinterpret_cast<std::uintptr_t>(b) % 16 == 0;
  }
};

/// The functor that reads transformed element i from the inputs' elements at `data...`.
template <typename T, typename F, typename A>
[[nodiscard]] TransformedElement<T, F, A> transformed(F f, const A* a) {
  return {a, std::move(f)};
}
template <typename T, typename F, typename A, typename B>
[[nodiscard]] TransformedPair<T, F, A, B> transformed(F f, const A* a, const B* b) {
  return {a, b, std::move(f)};
}

/// The inputs' common size. Throws before anything is acquired: std::length_error naming both
/// sizes when they differ, std::out_of_range when a slice no longer lies inside its array.
template <typename A, typename... Rest>
std::size_t checked_inputs(const char* what, const A& a, const Rest&... rest) {
  if constexpr (sizeof...(Rest) == 1) {
    const auto& b = (rest, ...);
    SMARTARRAY_EXPECTS(a.size() == b.size(), std::length_error, what, ": the inputs have ",
                       a.size(), " and ", b.size(), " elements; they must have as many");
  }
  check_in_range(a);
  (check_in_range(rest), ...);
  return a.size();
}

/// An input's elements on the device, acquired for `read` on `stream`; none for no elements.
template <typename A>
[[nodiscard]] const typename A::value_type* input_on_device(
    const A& input, StreamRef stream, const smartarray::source_location& where) {
  return input.empty() ? nullptr : input.device_view(stream, where).data();
}

/// The functor that reads transformed element i of the inputs on the device, which it acquires
/// for `read` on `stream`, in order (a braced list is evaluated left to right).
template <typename T, typename F, typename... Ins>
[[nodiscard]] auto read_on_device(F f, StreamRef stream, const smartarray::source_location& where,
                                  const Ins&... ins) {
  const std::tuple<const typename Ins::value_type*...> data{input_on_device(ins, stream, where)...};
  return std::apply(
      [&f](const auto*... elements) { return transformed<T>(std::move(f), elements...); }, data);
}

template <typename T>
void check_reduction_value() {
  static_assert(std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>,
                "transform_reduce: the type of init, which is the result's, must be trivially "
                "copyable and default constructible");
}

#if defined(__CUDACC__)
inline namespace SMARTARRAY_KERNEL_ABI {
/// The threads of a block of the one-pass kernel.
inline constexpr unsigned one_pass_block = 256;

/// `*p`, read from L2: another block of the same kernel wrote it, and this SM's L1 is not
/// coherent with that write.
template <typename T>
__device__ T load_past_l1(const T* p) {
  T value;
  if constexpr (sizeof(T) % sizeof(unsigned long long) == 0 &&
                alignof(T) >= alignof(unsigned long long)) {
    constexpr std::size_t words = sizeof(T) / sizeof(unsigned long long);
    unsigned long long bits[words];
    for (std::size_t k = 0; k < words; ++k) {
      bits[k] = __ldcg(reinterpret_cast<const unsigned long long*>(p) + k);
    }
    memcpy(&value, bits, sizeof(T));
  } else if constexpr (sizeof(T) % sizeof(unsigned) == 0 && alignof(T) >= alignof(unsigned)) {
    constexpr std::size_t words = sizeof(T) / sizeof(unsigned);
    unsigned bits[words];
    for (std::size_t k = 0; k < words; ++k) {
      bits[k] = __ldcg(reinterpret_cast<const unsigned*>(p) + k);
    }
    memcpy(&value, bits, sizeof(T));
  } else {
    const volatile unsigned char* bytes = reinterpret_cast<const volatile unsigned char*>(p);
    unsigned char* into = reinterpret_cast<unsigned char*>(&value);
    for (std::size_t k = 0; k < sizeof(T); ++k) into[k] = bytes[k];
  }
  return value;
}

/**
 * `*out = fold(op, init, read(i) for i in [0, n))` in one kernel. The work comes in units: single
 * elements, or with `Vectors` 16-byte vectors of `Read::lanes` elements of every input (the last
 * n % lanes elements go to thread 0). Each thread folds a grid-stride share of the units, four
 * in flight at a time; each block folds its threads' values with CUB's block reduction and
 * stores its partial; the last block to take a ticket folds the partials and writes `out`. The
 * ticket, zero before the kernel, is zero again after it (`atomicInc` wraps), so that the next
 * kernel on the stream may use it without a reset. The grid is never larger than the blocks of
 * units, so every block has work.
 */
template <typename T, typename Read, typename Op, bool Vectors>
__global__ void __launch_bounds__(one_pass_block)
    one_pass_reduce_kernel(std::size_t n, Read read, Op op, T init, T* partials, unsigned* ticket,
                           T* out) {
  using BlockReduce = cub::BlockReduce<T, static_cast<int>(one_pass_block)>;
  __shared__ typename BlockReduce::TempStorage storage;
  __shared__ bool last_block;
  if (n == 0) {
    if (threadIdx.x == 0) *out = init;
    return;
  }
  const auto unit = [&](std::size_t u) -> T {
    if constexpr (Vectors) {
      return read.fold_vector(u, op);
    } else {
      return read(u);
    }
  };
  const std::size_t units = Vectors ? n / Read::lanes : n;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * one_pass_block;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * one_pass_block;
  std::size_t u = first + threadIdx.x;
  T accumulator{};
  if (u < units) {
    accumulator = unit(u);
    for (u += stride; u + 3 * stride < units; u += 4 * stride) {
      const T v0 = unit(u);
      const T v1 = unit(u + stride);
      const T v2 = unit(u + 2 * stride);
      const T v3 = unit(u + 3 * stride);
      accumulator = op(accumulator, op(op(v0, v1), op(v2, v3)));
    }
    for (; u < units; u += stride) accumulator = op(accumulator, unit(u));
    if constexpr (Vectors) {
      if (blockIdx.x == 0 && threadIdx.x == 0) {
        for (std::size_t i = units * Read::lanes; i < n; ++i) {
          accumulator = op(accumulator, read(i));
        }
      }
    }
  }
  const std::size_t left = units - first;
  const int valid = static_cast<int>(left < one_pass_block ? left : one_pass_block);
  const T block_total = BlockReduce(storage).Reduce(accumulator, op, valid);
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) *out = op(init, block_total);
    return;
  }
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = block_total;
    __threadfence();  // the partial is visible to every block before the ticket counts it
    last_block = atomicInc(ticket, gridDim.x - 1) == gridDim.x - 1;
  }
  __syncthreads();  // also before `storage` is used again
  if (!last_block) return;
  __threadfence();
  T folded{};
  if (threadIdx.x < gridDim.x) {
    folded = load_past_l1(partials + threadIdx.x);
    for (unsigned k = threadIdx.x + one_pass_block; k < gridDim.x; k += one_pass_block) {
      folded = op(folded, load_past_l1(partials + k));
    }
  }
  const int partial_threads =
      static_cast<int>(gridDim.x < one_pass_block ? gridDim.x : one_pass_block);
  const T total = BlockReduce(storage).Reduce(folded, op, partial_threads);
  if (threadIdx.x == 0) *out = op(init, total);
}

/// Blocks of one_pass_reduce_kernel<T, Read, Op, Vectors> resident on one SM of `device`, asked
/// once.
template <typename T, typename Read, typename Op, bool Vectors>
int one_pass_blocks_per_sm(int device) {
  static std::array<std::atomic<int>, max_devices> known{};
  int blocks = known[static_cast<std::size_t>(device)].load(std::memory_order_relaxed);
  if (blocks == 0) {
    SMARTARRAY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                            &blocks, one_pass_reduce_kernel<T, Read, Op, Vectors>,
                            static_cast<int>(one_pass_block), 0),
                        "query the occupancy of transform_reduce's kernel on device ", device);
    blocks = blocks > 0 ? blocks : 1;
    known[static_cast<std::size_t>(device)].store(blocks, std::memory_order_relaxed);
  }
  return blocks;
}

/// one_pass_reduce_kernel<..., Vectors> over `units` units on `stream`, into `out` (device
/// memory) when given, else into `result`'s slot; its partials and ticket in the stream's
/// reduction scratch. The grid fills the device once at most.
template <bool Vectors, typename T, typename Read, typename Op>
void launch_one_pass_reduce(std::size_t n, std::size_t units, Read read, T init, Op op, T* out,
                            ReductionResult* result, StreamRef stream) {
  const Device device = stream_device(stream);
  const DeviceGuard on_device(device);
  const cudaStream_t cuda_stream = stream.cuda_stream();
  const std::size_t most_blocks =
      static_cast<std::size_t>(one_pass_blocks_per_sm<T, Read, Op, Vectors>(device.ordinal)) *
      static_cast<std::size_t>(device_properties(device).multiprocessor_count);
  const std::size_t wanted = (units + one_pass_block - 1) / one_pass_block;
  const auto grid = static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, most_blocks)));
  // Sized for the largest grid, so that the stream's block never grows with n.
  ReductionScratch scratch(stream, device.ordinal,
                           reduction_storage_offset<T> + most_blocks * sizeof(T));
  auto* const ticket = reinterpret_cast<unsigned*>(scratch.data());
  if (scratch.ticket_unset()) {
    SMARTARRAY_CUDA_TRY(cudaMemsetAsync(ticket, 0, sizeof(unsigned), cuda_stream),
                        "zero the ticket of transform_reduce on stream ", stream.handle());
    scratch.note_ticket_zeroed();
  }
  T* const staged = reinterpret_cast<T*>(scratch.data() + reduction_ticket_bytes);
  T* target = out != nullptr ? out : static_cast<T*>(result->target());
  if (target == nullptr) target = staged;
  one_pass_reduce_kernel<T, Read, Op, Vectors><<<grid, one_pass_block, 0, cuda_stream>>>(
      n, read, op, init, reinterpret_cast<T*>(scratch.data() + reduction_storage_offset<T>), ticket,
      target);
  SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch transform_reduce over ", n,
                      " elements on stream ", stream.handle());
  if (target == staged) result->download(staged);
}

/// The one-pass reduction on the cuda backend: by 16-byte vectors when every input's elements
/// allow it (a whole number of them in 16 bytes, the same for each input, 16-byte aligned: whole
/// arrays always are, slices when their first element is), else element by element.
template <typename T, typename Read, typename Op>
void device_transform_reduce(std::size_t n, Read read, T init, Op op, T* out,
                             ReductionResult* result, StreamRef stream) {
  if constexpr (Read::lanes != 0) {
    if (n >= Read::lanes && read.vector_aligned()) {
      launch_one_pass_reduce<true>(n, n / Read::lanes, std::move(read), init, std::move(op), out,
                                   result, stream);
      return;
    }
  }
  launch_one_pass_reduce<false>(n, n, std::move(read), init, std::move(op), out, result, stream);
}
}  // namespace SMARTARRAY_KERNEL_ABI
#endif

}  // namespace detail
}  // namespace smartarray
