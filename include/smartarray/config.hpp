/**
 * @file config.hpp
 * @brief Compiler portability macros shared by every public header.
 *
 * The public headers compile with nvcc and with a plain C++20 compiler. Code that kernels call is
 * marked SMARTARRAY_HOST_DEVICE, which is empty when no CUDA compiler is involved.
 */
#pragma once

#if defined(__CUDACC__)
#define SMARTARRAY_HOST_DEVICE __host__ __device__
#define SMARTARRAY_DEVICE __device__
#else
#define SMARTARRAY_HOST_DEVICE
#define SMARTARRAY_DEVICE
#endif

#if defined(__CUDA_ARCH__)
#define SMARTARRAY_IN_DEVICE_CODE 1
#else
#define SMARTARRAY_IN_DEVICE_CODE 0
#endif

/// Debug-only checks (generation checks of views, foreign iterators) are on unless NDEBUG.
#if !defined(SMARTARRAY_DEBUG_CHECKS)
#if defined(NDEBUG)
#define SMARTARRAY_DEBUG_CHECKS 0
#else
#define SMARTARRAY_DEBUG_CHECKS 1
#endif
#endif
