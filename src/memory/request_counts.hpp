// Private: the request counts of a StatisticsAdaptor, changed under a lock (the pool's, or the
// adaptor's own over other upstreams).
#pragma once

#include <smartarray/memory/statistics_adaptor.hpp>

#include <algorithm>
#include <cstddef>

namespace smartarray::detail {

inline void count_allocation(MemoryStats& counts, std::size_t bytes) noexcept {
  counts.current_bytes += bytes;
  ++counts.current_count;
  counts.peak_bytes = std::max(counts.peak_bytes, counts.current_bytes);
  counts.peak_count = std::max(counts.peak_count, counts.current_count);
  counts.total_bytes += bytes;
  ++counts.total_count;
}

inline void count_deallocation(MemoryStats& counts, std::size_t bytes) noexcept {
  counts.current_bytes -= bytes;
  --counts.current_count;
}

inline void restart_peaks(MemoryStats& counts) noexcept {
  counts.peak_bytes = counts.current_bytes;
  counts.peak_count = counts.current_count;
}

}  // namespace smartarray::detail
