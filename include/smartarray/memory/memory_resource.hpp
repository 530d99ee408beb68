/**
 * @file memory/memory_resource.hpp
 * @brief The memory-resource interface, shaped after CCCL's `cuda::mr`.
 *
 * A resource hands out blocks in a stream-ordered way: `allocate(stream, bytes, align)` returns a
 * block usable by work queued on `stream` after the call; `deallocate(stream, ptr, bytes, align)`
 * says that the block's last use was queued on `stream`. The synchronous forms use the host as the
 * "stream": the block is usable by the host at once, and is free when the call returns.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/runtime/detail/capture.hpp>

#include <cstddef>

namespace smartarray {

class EvictableResource;

/// @brief Where the memory of a resource can be touched.
enum class MemoryKind {
  device,  ///< device memory (cudaMalloc)
  pinned,  ///< page-locked host memory (cudaMallocHost)
  managed, ///< unified memory (cudaMallocManaged)
  mapped,  ///< pinned host memory mapped into the device address space
};

/**
 * @brief Abstract stream-ordered memory resource.
 *
 * Implementations are thread-safe. Zero-byte allocations return nullptr, and freeing nullptr is a
 * no-op.
 */
class MemoryResource {
 public:
  virtual ~MemoryResource() = default;

  /**
   * @brief Allocates `bytes` usable by work queued on `stream` after this call.
   * @throws out_of_memory naming the bytes when the request cannot be met.
   */
  [[nodiscard]] void* allocate(StreamRef stream, std::size_t bytes,
                               std::size_t alignment = default_alignment) {
    return do_allocate(stream, bytes, alignment, false);
  }
  /// @brief Releases a block whose last use was queued on `stream`. Inside `sa::capture` on the
  /// calling thread, the graph keeps the block instead (captured work may use it at every replay)
  /// and releases it when it is destroyed.
  void deallocate(StreamRef stream, void* ptr, std::size_t bytes,
                  std::size_t alignment = default_alignment) noexcept {
    if (detail::CaptureState* const capture = detail::active_capture()) [[unlikely]] {
      if (ptr != nullptr && keep_for_graph(*capture, {this, stream, ptr, bytes, alignment})) return;
    }
    do_deallocate(stream, ptr, bytes, alignment, false);
  }
  /**
   * @brief Allocates `bytes` that the host may touch at once: no queued work still uses them.
   * @throws out_of_memory naming the bytes when the request cannot be met.
   */
  [[nodiscard]] void* allocate_sync(std::size_t bytes, std::size_t alignment = default_alignment) {
    return do_allocate(StreamRef{}, bytes, alignment, true);
  }
  /// @brief Releases a block that no queued work uses any more.
  void deallocate_sync(void* ptr, std::size_t bytes,
                       std::size_t alignment = default_alignment) noexcept {
    do_deallocate(StreamRef{}, ptr, bytes, alignment, true);
  }

  /// @brief The kind of memory handed out.
  [[nodiscard]] virtual MemoryKind kind() const noexcept = 0;
  /// @brief True when memory from one can be freed through the other.
  [[nodiscard]] virtual bool is_equal(const MemoryResource& other) const noexcept {
    return this == &other;
  }
  /// @brief The resource whose out-of-memory path serves this one's allocations and calls
  ///        eviction hooks: itself for an `EvictableResource`, the one under a
  ///        `StatisticsAdaptor`; nullptr when there is none (nothing is evicted for it).
  [[nodiscard]] virtual EvictableResource* evictable() noexcept { return nullptr; }

 private:
  /// Hands `block` to the capture; false (release it now) when there is no memory to note it in.
  static bool keep_for_graph(detail::CaptureState& capture, const detail::KeptBlock& block) noexcept;

 protected:
  /// `host` is true for the synchronous forms: the block is for (or comes back from) the host.
  virtual void* do_allocate(StreamRef stream, std::size_t bytes, std::size_t alignment,
                            bool host) = 0;
  virtual void do_deallocate(StreamRef stream, void* ptr, std::size_t bytes,
                             std::size_t alignment, bool host) noexcept = 0;
};

}  // namespace smartarray
