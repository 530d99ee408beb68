/**
 * @file runtime/detail/pinned_flags.hpp
 * @brief Private: the flags of pinned host allocations (cudaHostAlloc's), on their own so that the
 * array's storage options name them without the backend interface.
 */
#pragma once

namespace smartarray::detail {

/// Flags of pinned host allocations.
enum PinnedFlags : unsigned {
  pinned_default = 0,
  pinned_mapped = 1U << 0,          ///< device-accessible (cudaHostAllocMapped)
  pinned_portable = 1U << 1,        ///< pinned for every context (cudaHostAllocPortable)
  pinned_write_combined = 1U << 2,  ///< write-combined (cudaHostAllocWriteCombined)
};

}  // namespace smartarray::detail
