/**
 * @file memory/pool_resource.hpp
 * @brief `PoolResource`: a stream-ordered, best-fit pool over any upstream resource.
 *
 * The pool takes large chunks from its upstream and carves them into blocks:
 * - **Best fit.** Free blocks are indexed by (size, address), so a request finds the smallest block
 *   that fits in O(log n). Sizes are rounded up to 256 bytes and every block is 256-byte aligned.
 *   A block is split on allocation and merged with its free neighbours on release, but only inside
 *   one upstream chunk.
 * - **Stream-ordered reuse.** A block freed on stream A is reused at once by allocations on A. A
 *   request on stream B, when nothing else fits, takes it at once if A has completed its work,
 *   else only after making B wait for A's work up to now (the host does not block). The event for
 *   that wait is recorded lazily, at that moment, so the same-stream path never pays for an event.
 *   A host request (`allocate_sync`) takes a block freed on a stream only once the stream's work up
 *   to the release has completed, so a pinned block is never handed to a host writer while a copy
 *   still reads it. Blocks released with `deallocate_sync` are reusable by anyone at once.
 *   Before a stream that released blocks is destroyed, the pools must forget it: every pool
 *   subscribes to the streams that the runtime forgets (`forget_stream`, `Stream`'s destructor).
 * - **Growth and the out-of-memory chain.** A miss grows the pool from upstream by a chunk (see
 *   `PoolOptions`). When growth fails (upstream out of memory, or the hard limit), the pool waits
 *   for its pending stream-ordered releases and searches again, then calls the eviction hooks
 *   (`EvictableResource`; they run after the pending releases were waited for), then returns wholly
 *   free chunks and grows again. It repeats the hooks while a round of them gives bytes back to
 *   the pool, and throws `out_of_memory` after the first round that gives back nothing, whatever
 *   the hooks report.
 *
 * Every member is thread-safe.
 */
#pragma once

#include <smartarray/memory/evictable_resource.hpp>
#include <smartarray/runtime/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace smartarray {

struct MemoryStats;

/// @brief How a `PoolResource` grows.
struct PoolOptions {
  /// Bytes taken from upstream at construction (0: none until the first allocation).
  std::size_t initial_size = 0;
  /// The smallest growth step, in bytes. A request larger than this gets a chunk of its own size.
  std::size_t chunk_size = std::size_t{2} << 20;
  /// Steps grow with the pool (each one as large as the pool already is), up to this many bytes.
  std::size_t max_chunk_size = std::size_t{1} << 30;
  /// A hard limit on the bytes held from upstream; none when empty.
  std::optional<std::size_t> maximum_size;
  /// The pool's name in error messages ("device 0 pool", "pinned pool").
  std::string name = "pool";
};

/// @brief A snapshot of a pool's use of memory, taken under its lock.
struct PoolUsage {
  std::size_t bytes_in_use = 0;            ///< bytes of live blocks (sizes rounded up to 256)
  std::size_t reserved_bytes = 0;          ///< bytes held from upstream
  std::size_t largest_free_block = 0;      ///< the largest block a request could get without growth
  std::uint64_t upstream_allocations = 0;  ///< chunks ever taken from upstream
  std::uint64_t upstream_releases = 0;     ///< chunks ever returned to upstream
  std::size_t chunk_count = 0;             ///< chunks held now
};

/**
 * @brief A stream-ordered best-fit pool over an upstream `MemoryResource` (see the file comment).
 */
class PoolResource final : public EvictableResource {
 public:
  /**
   * @brief Builds a pool over `upstream`, which must outlive it.
   * @param upstream where chunks come from and go back to.
   * @param options growth steps, initial size and hard limit.
   * @throws logic_error when the initial size exceeds the hard limit.
   * @throws out_of_memory when the initial chunk cannot be allocated.
   */
  explicit PoolResource(MemoryResource& upstream, PoolOptions options = {});
  /// @brief Returns every chunk to upstream, after waiting for the device when blocks released on
  ///        streams may still be in use.
  ~PoolResource() override;
  PoolResource(const PoolResource&) = delete;
  PoolResource& operator=(const PoolResource&) = delete;

  /// @brief The upstream's kind of memory.
  [[nodiscard]] MemoryKind kind() const noexcept override;
  /// @brief The upstream resource.
  [[nodiscard]] MemoryResource& upstream() const noexcept;
  /// @brief The options the pool was built with (`maximum_size` as built: see maximum_size()).
  [[nodiscard]] const PoolOptions& options() const noexcept;
  /// @brief The hard limit on the bytes held from upstream now; none when empty.
  [[nodiscard]] std::optional<std::size_t> maximum_size() const;
  /**
   * @brief Changes the hard limit (rounded down to the pool's granularity, `default_alignment`
   *        bytes). Memory held above a lowered limit stays until trim() or an eviction gives it
   *        back; the pool only stops growing past it.
   * @param bytes the new limit; none when empty.
   */
  void set_maximum_size(std::optional<std::size_t> bytes);
  /**
   * @brief Waits for pending stream-ordered releases, then returns every wholly free chunk to
   *        upstream.
   * @return the bytes returned.
   * @throws cuda_error when waiting for a stream fails.
   */
  std::size_t trim();

  /**
   * @brief Makes the blocks released on `stream` reusable by anyone, so that the pool never records
   *        an event on that stream again. Call it once the stream's work is done and before the
   *        stream is destroyed (`smartarray::forget_stream` does it for every pool).
   * @param stream a stream whose queued work has all completed.
   */
  void forget_stream(StreamRef stream) noexcept;

  /// @brief Bytes of live blocks (rounded up to 256).
  [[nodiscard]] std::size_t bytes_in_use() const;
  /// @brief Bytes held from upstream.
  [[nodiscard]] std::size_t reserved_bytes() const;
  /// @brief The largest free block (on any stream).
  [[nodiscard]] std::size_t largest_free_block() const;
  /// @brief Chunks ever taken from upstream.
  [[nodiscard]] std::uint64_t upstream_allocation_count() const;
  /// @brief All the figures at once, consistent with each other.
  [[nodiscard]] PoolUsage usage() const;

 private:
  struct State;

  friend class StatisticsAdaptor;

  void* do_allocate(StreamRef stream, std::size_t bytes, std::size_t alignment, bool host) override;
  void do_deallocate(StreamRef stream, void* ptr, std::size_t bytes, std::size_t alignment,
                     bool host) noexcept override;
  /// A StatisticsAdaptor's requests: its counts change inside the pool's critical section, so
  /// that counting costs no atomic operation of its own. `counts` may be null (plain requests).
  void* allocate_counted(StreamRef stream, std::size_t bytes, std::size_t alignment, bool host,
                         MemoryStats* counts);
  void deallocate_counted(StreamRef stream, void* ptr, std::size_t bytes, bool host,
                          MemoryStats* counts) noexcept;
  /// `counts` read, or its peaks restarted, under the pool's lock.
  [[nodiscard]] MemoryStats read_counted(const MemoryStats& counts) const;
  void reset_counted_peaks(MemoryStats& counts) const;

  std::unique_ptr<State> state_;
};

}  // namespace smartarray
