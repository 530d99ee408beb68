/**
 * @file memory/memory_mode.hpp
 * @brief `MemoryMode`: how a SmartArray stores its data and moves it between host and device.
 *
 * The mode changes the mechanism, never the API: every mode keeps the residency contract of
 * DESIGN.md (an acquire makes its side valid; work is ordered through events), and only the
 * transfers differ. docs/numba.md says when to use which.
 */
#pragma once

namespace smartarray {

/// @brief The storage policy of one array, chosen at construction (`ArrayOptions::mode`).
enum class MemoryMode {
  /// Pinned, pooled host storage plus a separate pooled device copy; a stale side is refreshed
  /// with one DMA copy. The default.
  explicit_copy,
  /// One pinned, mapped host buffer that kernels read and write over the bus. Nothing is ever
  /// copied (0 H2D, 0 D2H); host access still waits for this array's device work. Best for data
  /// that the device touches once.
  mapped,
  /// One managed (unified) allocation. An acquire prefetches it to the acquiring side instead of
  /// copying (counted as prefetches). A host acquire that may write, after a prefetch to the
  /// host, takes the pages' first-write faults at once, on several threads. Without
  /// `concurrentManagedAccess` it still works, because a host access always waits for this
  /// array's device work first.
  managed,
  /// Plain pageable host storage plus a pooled device copy. Transfers are staged through pinned
  /// pool blocks in chunks, with the staging memcpy of one chunk overlapping the DMA of another.
  /// For host data that must not be pinned (very large arrays, or many of them).
  pageable,
};

/// @brief The name of `mode`, for messages.
[[nodiscard]] constexpr const char* to_string(MemoryMode mode) noexcept {
  switch (mode) {
    case MemoryMode::explicit_copy: return "explicit";
    case MemoryMode::mapped: return "mapped";
    case MemoryMode::managed: return "managed";
    case MemoryMode::pageable: return "pageable";
  }
  return "unknown";
}

}  // namespace smartarray
