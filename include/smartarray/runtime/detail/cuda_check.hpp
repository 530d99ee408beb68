/**
 * @file runtime/detail/cuda_check.hpp
 * @brief The one checking macro for CUDA runtime calls (private).
 */
#pragma once

#include <smartarray/error.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace smartarray::detail {
/// Throws `out_of_memory` for allocation failures and `cuda_error` otherwise, with a message that
/// names the operation, the call, the CUDA error name and the source location.
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const std::string& what,
                                   const char* file, int line);
}  // namespace smartarray::detail

/**
 * @brief Checks a CUDA runtime call. `...` describes the operation (streamable parts), for example
 *        `SMARTARRAY_CUDA_TRY(cudaMalloc(&p, n), "allocate device memory of ", n, " bytes")`.
 */
#define SMARTARRAY_CUDA_TRY(call, ...)                                                         \
  do {                                                                                         \
    const cudaError_t smartarray_status_ = (call);                                             \
    if (smartarray_status_ != cudaSuccess) [[unlikely]] {                                      \
      ::smartarray::detail::throw_cuda_error(smartarray_status_, #call,                        \
                                             ::smartarray::detail::concat(__VA_ARGS__),        \
                                             __FILE__, __LINE__);                              \
    }                                                                                          \
  } while (false)

/// Logs (never throws) a failing CUDA call; for destructors and other noexcept paths.
#define SMARTARRAY_CUDA_LOG(call, what)                                                        \
  do {                                                                                         \
    const cudaError_t smartarray_status_ = (call);                                             \
    if (smartarray_status_ != cudaSuccess) [[unlikely]] {                                      \
      ::smartarray::detail::log_cuda_error(smartarray_status_, #call, what, __FILE__, __LINE__); \
    }                                                                                          \
  } while (false)

namespace smartarray::detail {
/// Prints a failed call on stderr (for noexcept paths).
void log_cuda_error(cudaError_t status, const char* call, const char* what, const char* file,
                    int line) noexcept;
}  // namespace smartarray::detail
