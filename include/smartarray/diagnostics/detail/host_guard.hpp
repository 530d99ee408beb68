/**
 * @file diagnostics/detail/host_guard.hpp
 * @brief Private: page protection of stale host copies (see smartarray/diagnostics/debug.hpp).
 */
#pragma once

#include <cstddef>
#include <cstdint>

namespace smartarray::detail {

/// The host's page size in bytes.
[[nodiscard]] std::size_t page_size() noexcept;

/// A protected range of one array's host copy.
struct GuardedPages {
  std::byte* begin = nullptr;
  std::size_t bytes = 0;
  /// The fault handler's record of the range.
  void* record = nullptr;
  [[nodiscard]] bool empty() const noexcept { return bytes == 0; }
};

/// Protects the whole pages inside [host, host + stale_bytes) and records what to say when they
/// are touched. Returns the protected range (empty when the guard is off or no page fits).
GuardedPages guard_stale_host(std::byte* host, std::size_t stale_bytes, std::uint64_t array_number,
                              const char* file, std::uint32_t line) noexcept;
/// Makes a guarded range accessible again and forgets it.
void unguard(GuardedPages& pages) noexcept;

}  // namespace smartarray::detail
