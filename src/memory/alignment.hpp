// Alignment rules shared by the memory resources (private to src/memory).
#pragma once

#include <smartarray/error.hpp>
#include <smartarray/memory/memory_resource.hpp>

#include <cstddef>
#include <cstdint>

namespace smartarray::detail {

/// Every resource guarantees `default_alignment` (256 bytes, what cudaMalloc gives) and no more.
inline constexpr std::size_t max_alignment = default_alignment;

/// Throws logic_error unless `alignment` is a power of two no larger than 256.
inline void check_alignment(std::size_t alignment, const char* what) {
  SMARTARRAY_EXPECTS(
      alignment != 0 && (alignment & (alignment - 1)) == 0 && alignment <= max_alignment,
      logic_error, what, ": alignment ", alignment, " is not a power of two of at most ",
      max_alignment, " bytes");
}

/// True when `ptr` is a multiple of `alignment` (a power of two).
[[nodiscard]] inline bool is_aligned(const void* ptr, std::size_t alignment) noexcept {
  return (reinterpret_cast<std::uintptr_t>(ptr) & (alignment - 1)) == 0;
}

}  // namespace smartarray::detail
