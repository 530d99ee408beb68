// StatisticsAdaptor: counts of the requests that pass through to an upstream resource.
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/statistics_adaptor.hpp>

#include "memory/request_counts.hpp"

namespace smartarray {

StatisticsAdaptor::StatisticsAdaptor(MemoryResource& upstream)
    : upstream_(upstream), pool_(dynamic_cast<PoolResource*>(&upstream)) {}

EvictableResource* StatisticsAdaptor::evictable() noexcept {
  return upstream_.evictable();
}

void* StatisticsAdaptor::do_allocate(StreamRef stream, std::size_t bytes, std::size_t alignment,
                                     bool host) {
  if (pool_ != nullptr) return pool_->allocate_counted(stream, bytes, alignment, host, &counts_);
  void* ptr = host ? upstream_.allocate_sync(bytes, alignment)
                   : upstream_.allocate(stream, bytes, alignment);
  if (ptr == nullptr) return nullptr;
  const std::lock_guard lock(mutex_);
  detail::count_allocation(counts_, bytes);
  return ptr;
}

void StatisticsAdaptor::do_deallocate(StreamRef stream, void* ptr, std::size_t bytes,
                                      std::size_t alignment, bool host) noexcept {
  if (ptr == nullptr) return;
  if (pool_ != nullptr) {
    pool_->deallocate_counted(stream, ptr, bytes, host, &counts_);
    return;
  }
  {
    const std::lock_guard lock(mutex_);
    detail::count_deallocation(counts_, bytes);
  }
  if (host) {
    upstream_.deallocate_sync(ptr, bytes, alignment);
  } else {
    upstream_.deallocate(stream, ptr, bytes, alignment);
  }
}

MemoryStats StatisticsAdaptor::stats() const {
  if (pool_ == nullptr) {
    const std::lock_guard lock(mutex_);
    return counts_;
  }
  MemoryStats stats = pool_->read_counted(counts_);
  const PoolUsage usage = pool_->usage();
  stats.has_pool = true;
  stats.upstream_allocations = usage.upstream_allocations;
  stats.reserved_bytes = usage.reserved_bytes;
  stats.largest_free_block = usage.largest_free_block;
  const std::size_t free_bytes = usage.reserved_bytes - usage.bytes_in_use;
  stats.fragmentation = free_bytes == 0 ? 0.0
                                        : 1.0 - static_cast<double>(usage.largest_free_block) /
                                                    static_cast<double>(free_bytes);
  return stats;
}

void StatisticsAdaptor::reset_peak() noexcept {
  if (pool_ != nullptr) {
    pool_->reset_counted_peaks(counts_);
    return;
  }
  const std::lock_guard lock(mutex_);
  detail::restart_peaks(counts_);
}

}  // namespace smartarray
