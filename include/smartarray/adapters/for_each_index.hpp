/**
 * @file adapters/for_each_index.hpp
 * @brief `for_each_index(n, f, stream)`: runs `f(i)` for every i in [0, n) on the device.
 *
 * On the cuda backend this is a kernel of one thread per index: `ceil(n / 256)` blocks of 256
 * threads, 32-bit indices while they cover n (adapters/detail/elementwise.hpp has the shape and
 * its knobs). The calling file must be compiled by nvcc, and `f` must be `__host__ __device__`.
 * On the host backend `f` runs on the stream's worker thread, in order with the stream's other
 * work.
 *
 * The adapters that launch kernels of their own (this one, `transform`, `map`, `fill`, `reduce`)
 * have one body under nvcc and another, which can only throw on the cuda backend, under a plain C++
 * compiler. They live in the inline namespace `SMARTARRAY_KERNEL_ABI`, named after the compiler,
 * so that a program that mixes both kinds of files never has the linker merge the two bodies.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/error.hpp>
#include <smartarray/runtime/runtime.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/runtime/detail/stream_work.hpp>
#include <smartarray/adapters/detail/elementwise.hpp>

#if defined(__CUDACC__)
#include <smartarray/runtime/detail/cuda_check.hpp>
#endif

#include <cstddef>
#include <utility>

#if defined(__CUDACC__)
#define SMARTARRAY_KERNEL_ABI compiled_by_nvcc
#else
#define SMARTARRAY_KERNEL_ABI compiled_without_nvcc
#endif

namespace smartarray {
namespace detail {
inline namespace SMARTARRAY_KERNEL_ABI {
/// Throws before anything is acquired when `what` needs a kernel that the calling file cannot
/// launch: on the cuda backend, a file not compiled by nvcc.
inline void require_kernel_compiler([[maybe_unused]] const char* what,
                                    [[maybe_unused]] std::size_t n) {
#if !defined(__CUDACC__)
  SMARTARRAY_EXPECTS(backend() != BackendKind::cuda, logic_error, what, " over ", n,
                     " elements on the cuda backend: the calling file must be compiled by nvcc "
                     "to launch a kernel");
#endif
}

/// for_each_index() without its NVTX range: the kernels of the other adapters, inside theirs. A
/// body with a vector form (`ElementwiseBody`: transform's and fill's) may take several elements
/// per thread; `f(i)` alone takes one.
template <typename F>
void for_each_index_on(std::size_t n, F f, StreamRef stream) {
  if (n == 0) {
    detail::check_stream(stream);
    return;
  }
  if (backend() == BackendKind::host) {
    detail::launch_host_func(stream, [n, f]() mutable {
      for (std::size_t i = 0; i < n; ++i) f(i);
    });
    return;
  }
#if defined(__CUDACC__)
  const DeviceGuard on_device(stream_device(stream));
  const ElementwiseShape shape = elementwise_shape_of(n, f);
  launch_elementwise(n, f, shape, stream.cuda_stream());
  SMARTARRAY_CUDA_TRY(cudaGetLastError(), "launch an element-wise kernel over ", n,
                      " elements (", shape.grid, " blocks of ", elementwise_block, " threads, ",
                      shape.elements_per_thread, " elements each) on stream ", stream.handle());
#else
  require_kernel_compiler("for_each_index", n);
#endif
}
}  // namespace SMARTARRAY_KERNEL_ABI
}  // namespace detail

inline namespace SMARTARRAY_KERNEL_ABI {

/**
 * @brief Runs `f(i)` for i in [0, n) on the device of the active backend, queued on `stream`.
 * @param n the number of indices.
 * @param f the `__host__ __device__` callable, taking a `std::size_t`.
 * @param stream the stream to run on.
 * @param where the caller's source location, for the NVTX range of the call.
 * @throws logic_error on the cuda backend when the caller was not compiled by nvcc.
 * @throws cuda_error when the launch fails.
 */
template <typename F>
void for_each_index(std::size_t n, F f, StreamRef stream = {},
                    smartarray::source_location where = smartarray::source_location::current()) {
  const detail::NvtxRange nvtx("for_each_index", where);
  detail::for_each_index_on(n, std::move(f), stream);
}

}  // namespace SMARTARRAY_KERNEL_ABI
}  // namespace smartarray
