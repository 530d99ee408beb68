/**
 * @file memory/upstream_resources.hpp
 * @brief The raw resources at the bottom of every pool: device, pinned host and managed memory.
 *
 * Each one is a thin wrapper over the backend, so it is counted and
 * fault-injectable on both backends. Every call goes to the backend: these resources are slow
 * (a `cudaMalloc` costs 100 us or more) and are meant to sit under a `PoolResource`.
 *
 * Raw memory is freed at once, so a stream-ordered `deallocate` first waits for the work queued on
 * its stream: that work may still use the block.
 */
#pragma once

#include <smartarray/runtime/pinned_flags.hpp>
#include <smartarray/memory/memory_resource.hpp>

#include <cstddef>

namespace smartarray {

/**
 * @brief Memory of one device straight from the backend (`cudaMalloc` / `cudaFree`).
 *
 * Blocks are aligned to at least 256 bytes. Alignments above 256 are refused. Streams given to a
 * stream-ordered call must be streams of the resource's device.
 */
class DeviceMemoryResource final : public MemoryResource {
 public:
  /// @brief Memory of `device` (checked at the first allocation).
  explicit DeviceMemoryResource(Device device = Device{}) noexcept : device_(device.ordinal) {}
  /// @brief Device memory.
  [[nodiscard]] MemoryKind kind() const noexcept override { return MemoryKind::device; }
  /// @brief The device whose memory this is.
  [[nodiscard]] Device device() const noexcept { return Device{device_}; }
  /// @brief True for any `DeviceMemoryResource` of the same device: all free the same way.
  [[nodiscard]] bool is_equal(const MemoryResource& other) const noexcept override;

 private:
  void* do_allocate(StreamRef stream, std::size_t bytes, std::size_t alignment, bool host) override;
  void do_deallocate(StreamRef stream, void* ptr, std::size_t bytes, std::size_t alignment,
                     bool host) noexcept override;

  int device_;
};

/**
 * @brief Page-locked host memory straight from the backend (`cudaHostAlloc` / `cudaFreeHost`).
 *
 * The flags choose mapped (device-accessible), portable and write-combined memory. Blocks are
 * page-aligned on the cuda backend and at least 256-byte aligned on both.
 */
class PinnedMemoryResource final : public MemoryResource {
 public:
  /**
   * @brief A resource whose blocks are allocated with `flags`.
   * @param flags a combination of `PinnedFlags` (mapped, portable, write-combined).
   */
  explicit PinnedMemoryResource(unsigned flags = pinned_default) noexcept : flags_(flags) {}

  /// @brief `mapped` when the flags include `pinned_mapped`, else `pinned`.
  [[nodiscard]] MemoryKind kind() const noexcept override {
    return (flags_ & pinned_mapped) != 0 ? MemoryKind::mapped : MemoryKind::pinned;
  }
  /// @brief The `PinnedFlags` of every block.
  [[nodiscard]] unsigned flags() const noexcept { return flags_; }
  /// @brief True for any `PinnedMemoryResource` with the same flags.
  [[nodiscard]] bool is_equal(const MemoryResource& other) const noexcept override;

 private:
  void* do_allocate(StreamRef stream, std::size_t bytes, std::size_t alignment, bool host) override;
  void do_deallocate(StreamRef stream, void* ptr, std::size_t bytes, std::size_t alignment,
                     bool host) noexcept override;

  unsigned flags_;
};

/**
 * @brief Unified (managed) memory straight from the backend (`cudaMallocManaged` / `cudaFree`).
 *
 * A request larger than the device's free memory throws `out_of_memory` without reaching the
 * driver: oversubscribing managed memory can hang the GPU.
 */
class ManagedMemoryResource final : public MemoryResource {
 public:
  /// @brief Managed memory.
  [[nodiscard]] MemoryKind kind() const noexcept override { return MemoryKind::managed; }
  /// @brief True for any `ManagedMemoryResource`: all free the same way.
  [[nodiscard]] bool is_equal(const MemoryResource& other) const noexcept override;

 private:
  void* do_allocate(StreamRef stream, std::size_t bytes, std::size_t alignment, bool host) override;
  void do_deallocate(StreamRef stream, void* ptr, std::size_t bytes, std::size_t alignment,
                     bool host) noexcept override;
};

}  // namespace smartarray
