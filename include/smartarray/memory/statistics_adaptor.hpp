/**
 * @file memory/statistics_adaptor.hpp
 * @brief `StatisticsAdaptor`: counts what passes through it to an upstream resource.
 *
 * It counts the bytes that callers asked for (not the pool's rounded sizes): current, peak and
 * total, in bytes and in allocations. Over a `PoolResource` it also reports the pool's figures:
 * chunks taken from upstream, reserved bytes, the largest free block and fragmentation.
 */
#pragma once

#include <smartarray/memory/memory_resource.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace smartarray {

class PoolResource;

/// @brief A snapshot of a `StatisticsAdaptor`'s counts.
struct MemoryStats {
  std::size_t current_bytes = 0;  ///< bytes of live allocations
  std::size_t current_count = 0;  ///< live allocations
  std::size_t peak_bytes = 0;     ///< the most `current_bytes` has been (since `reset_peak`)
  std::size_t peak_count = 0;     ///< the most `current_count` has been (since `reset_peak`)
  std::uint64_t total_bytes = 0;  ///< bytes of every allocation ever made
  std::uint64_t total_count = 0;  ///< allocations ever made

  bool has_pool = false;                   ///< the upstream is a pool: the fields below are set
  std::uint64_t upstream_allocations = 0;  ///< chunks the pool took from its upstream
  std::size_t reserved_bytes = 0;          ///< bytes the pool holds from its upstream
  std::size_t largest_free_block = 0;      ///< the largest block the pool has free
  /// 1 - largest free block / free reserved bytes: 0 when all free memory is one block, near 1
  /// when it is scattered in small pieces. 0 when nothing is free.
  double fragmentation = 0.0;
};

/**
 * @brief Forwards to an upstream resource and counts allocations. Thread-safe.
 *
 * Over a `PoolResource` the counts change inside the pool's own critical section, so counting
 * adds no lock and no atomic operation to a request. Over any other upstream the adaptor takes a
 * lock of its own around the counts (not around the upstream's call).
 */
class StatisticsAdaptor final : public MemoryResource {
 public:
  /**
   * @brief Counts the traffic to `upstream`, which must outlive the adaptor.
   * @param upstream the resource that serves the requests; a `PoolResource` adds its figures.
   */
  explicit StatisticsAdaptor(MemoryResource& upstream);

  /// @brief The upstream's kind of memory.
  [[nodiscard]] MemoryKind kind() const noexcept override { return upstream_.kind(); }
  /// @brief The upstream resource.
  [[nodiscard]] MemoryResource& upstream() const noexcept { return upstream_; }
  /// @brief The upstream as a pool, or nullptr when it is not one.
  [[nodiscard]] PoolResource* pool() const noexcept { return pool_; }
  /// @brief The upstream's evictable resource (the pool, when the upstream is one).
  [[nodiscard]] EvictableResource* evictable() noexcept override;

  /// @brief The counts now (and the pool's figures, when the upstream is a pool).
  [[nodiscard]] MemoryStats stats() const;
  /// @brief Restarts the peaks from the current values.
  void reset_peak() noexcept;

 private:
  void* do_allocate(StreamRef stream, std::size_t bytes, std::size_t alignment, bool host) override;
  void do_deallocate(StreamRef stream, void* ptr, std::size_t bytes, std::size_t alignment,
                     bool host) noexcept override;

  MemoryResource& upstream_;
  PoolResource* pool_;
  /// The request counts (the pool fields unused): guarded by the pool's lock, or by mutex_.
  MemoryStats counts_;
  mutable std::mutex mutex_;
};

}  // namespace smartarray
