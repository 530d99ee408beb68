// Private: a memcpy spread over a few threads, for staging pageable transfers. One thread's
// memcpy moves a fraction of what PCIe carries (about 6 of 50 GB/s on the H100 machine); the
// staging copy of a pageable transfer would bound it at that.
#pragma once

#include <cstddef>

namespace smartarray::detail {

/// Copies `bytes` from `src` to `dst` (not overlapping). Large copies are split over a small pool
/// of worker threads (up to 7, half the cores) and the calling thread; small ones are one memcpy.
/// Returns when all is copied.
void parallel_copy(void* dst, const void* src, std::size_t bytes) noexcept;

}  // namespace smartarray::detail
