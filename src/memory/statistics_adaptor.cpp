// StatisticsAdaptor: lock-free counts of the requests that pass through to an upstream resource.
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/statistics_adaptor.hpp>

namespace smartarray {
namespace {

/// Raises `peak` to `value` unless it is already higher.
void raise_peak(std::atomic<std::size_t>& peak, std::size_t value) noexcept {
  std::size_t seen = peak.load(std::memory_order_relaxed);
  while (seen < value && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

StatisticsAdaptor::StatisticsAdaptor(MemoryResource& upstream)
    : upstream_(upstream), pool_(dynamic_cast<PoolResource*>(&upstream)) {}

void* StatisticsAdaptor::do_allocate(StreamRef stream, std::size_t bytes, std::size_t alignment,
                                     bool host) {
  void* ptr = host ? upstream_.allocate_sync(bytes, alignment)
                   : upstream_.allocate(stream, bytes, alignment);
  if (ptr == nullptr) return nullptr;
  raise_peak(peak_bytes_, current_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes);
  raise_peak(peak_count_, current_count_.fetch_add(1, std::memory_order_relaxed) + 1);
  total_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  total_count_.fetch_add(1, std::memory_order_relaxed);
  return ptr;
}

void StatisticsAdaptor::do_deallocate(StreamRef stream, void* ptr, std::size_t bytes,
                                      std::size_t alignment, bool host) noexcept {
  if (ptr == nullptr) return;
  current_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  current_count_.fetch_sub(1, std::memory_order_relaxed);
  if (host) {
    upstream_.deallocate_sync(ptr, bytes, alignment);
  } else {
    upstream_.deallocate(stream, ptr, bytes, alignment);
  }
}

MemoryStats StatisticsAdaptor::stats() const {
  MemoryStats stats;
  stats.current_bytes = current_bytes_.load(std::memory_order_relaxed);
  stats.current_count = current_count_.load(std::memory_order_relaxed);
  stats.peak_bytes = peak_bytes_.load(std::memory_order_relaxed);
  stats.peak_count = peak_count_.load(std::memory_order_relaxed);
  stats.total_bytes = total_bytes_.load(std::memory_order_relaxed);
  stats.total_count = total_count_.load(std::memory_order_relaxed);
  if (pool_ != nullptr) {
    const PoolUsage usage = pool_->usage();
    stats.has_pool = true;
    stats.upstream_allocations = usage.upstream_allocations;
    stats.reserved_bytes = usage.reserved_bytes;
    stats.largest_free_block = usage.largest_free_block;
    const std::size_t free_bytes = usage.reserved_bytes - usage.bytes_in_use;
    stats.fragmentation = free_bytes == 0 ? 0.0
                                          : 1.0 - static_cast<double>(usage.largest_free_block) /
                                                      static_cast<double>(free_bytes);
  }
  return stats;
}

void StatisticsAdaptor::reset_peak() noexcept {
  peak_bytes_.store(current_bytes_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  peak_count_.store(current_count_.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

}  // namespace smartarray
