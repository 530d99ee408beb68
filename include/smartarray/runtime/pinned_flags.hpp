/**
 * @file runtime/pinned_flags.hpp
 * @brief The flags of page-locked host memory (`cudaHostAlloc`'s and `cudaHostRegister`'s), which
 *        `PinnedMemoryResource` and the arrays' storage options take.
 *
 * @code
 * sa::PinnedMemoryResource mapped(sa::pinned_mapped | sa::pinned_portable);
 * @endcode
 */
#pragma once

namespace smartarray {

/// @brief Flags of pinned host allocations, combined with `|` into an `unsigned`.
enum PinnedFlags : unsigned {
  pinned_default = 0,               ///< plain page-locked memory
  pinned_mapped = 1U << 0,          ///< device-accessible (cudaHostAllocMapped)
  pinned_portable = 1U << 1,        ///< pinned for every context (cudaHostAllocPortable)
  pinned_write_combined = 1U << 2,  ///< write-combined (cudaHostAllocWriteCombined)
};

}  // namespace smartarray
