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

#include <vector>  // __cpp_lib_constexpr_vector

/// `constexpr` on the constructors of an empty array (`constinit` arrays), where the standard
/// library's std::vector, which the array's bookkeeping holds, can be constant-initialized:
/// libstdc++ 12, libc++ 15 and MSVC 19.29 on. With libstdc++ 11 (GCC 11) those constructors are
/// still noexcept and touch nothing, but are not constexpr.
#if defined(__cpp_lib_constexpr_vector)
#define SMARTARRAY_CONSTEXPR_EMPTY constexpr
#else
#define SMARTARRAY_CONSTEXPR_EMPTY
#endif

/// Debug-only checks (generation checks of views, foreign iterators) are on unless NDEBUG.
#if !defined(SMARTARRAY_DEBUG_CHECKS)
#if defined(NDEBUG)
#define SMARTARRAY_DEBUG_CHECKS 0
#else
#define SMARTARRAY_DEBUG_CHECKS 1
#endif
#endif

/// The inline namespace that holds SmartArray and DeviceView. A debug build's DeviceView carries
/// the stamp that its checks need and a release build's does not, so the two builds must never
/// share these types: with a namespace of each, translation units built both ways that pass an
/// array or a view to each other fail to link instead of misreading the view.
#if SMARTARRAY_DEBUG_CHECKS
#define SMARTARRAY_VIEW_ABI checked_views
#else
#define SMARTARRAY_VIEW_ABI unchecked_views
#endif

#include <cstddef>
#include <cstdint>
#include <source_location>

namespace smartarray {

/// @brief Default alignment of every allocation: 256 bytes, as cudaMalloc gives.
inline constexpr std::size_t default_alignment = 256;

/// @brief The most devices smartarray handles in one process (runtime/device.hpp).
inline constexpr int max_devices = 16;

#if defined(__cpp_lib_source_location)
/// Where an API call was made, for error messages and traces.
using source_location = std::source_location;
#else
/// std::source_location for standard libraries that declare it only with a builtin this compiler
/// lacks (libstdc++ 12 with clang 14, which builds the libFuzzer target): file, function and line.
class source_location {
 public:
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           const char* function = __builtin_FUNCTION(),
                                           std::uint_least32_t line = __builtin_LINE()) noexcept {
    source_location here;
    here.file_ = file;
    here.function_ = function;
    here.line_ = line;
    return here;
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr std::uint_least32_t column() const noexcept { return 0; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  std::uint_least32_t line_ = 0;
};
#endif

}  // namespace smartarray
