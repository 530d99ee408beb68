/**
 * @file diagnostics/testing.hpp
 * @brief Test hooks: fail the k-th allocation or copy, or turn peer access off, on either backend.
 *
 * Failures are injected at the backend seam (raw allocations and copies) and in pool allocations,
 * so that tests can prove that a failed operation throws and loses nothing.
 */
#pragma once

#include <cstdint>

namespace smartarray::testing {

/// @brief The kinds of operation that can be made to fail.
enum class Fault {
  allocation,  ///< any allocation: raw device, pinned or managed memory, and pool allocations
  copy,        ///< any copy or prefetch enqueued through the seam
};

/**
 * @brief Makes the `nth` (1-based) operation of kind `what` from now on throw.
 *
 * An allocation fails with `out_of_memory`; a copy fails with `cuda_error` (status -1). The hook
 * disarms itself after firing once. `nth == 0` disarms it.
 */
void inject_failure(Fault what, std::uint64_t nth);

/// @brief Disarms every injected failure.
void clear_injected_failures();

/// @brief How many operations of kind `what` have gone through the seam while a failure of that
///        kind was armed (for sweeps; disarmed operations are not counted).
[[nodiscard]] std::uint64_t operation_count(Fault what);

/// @brief True when an armed failure of kind `what` has not fired yet.
[[nodiscard]] bool failure_pending(Fault what);

/**
 * @brief With `false`, every two distinct devices count as unable to copy from each other
 *        directly (`peer_access` is false), so that reads across devices take the fallback through
 *        the host even where the hardware has peer access; `true` restores what the backend
 *        reports. On either backend.
 */
void set_peer_access_enabled(bool enabled);

}  // namespace smartarray::testing
