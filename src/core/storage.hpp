// Private: the storage strategy of each memory mode. A strategy allocates and frees an array's
// host buffer and carries out the copies of a plan (ResidencyState); the array does the rest.
//
// - explicit: pinned pool memory (pageable when pinned memory runs out, for the default resource),
//   asynchronous copies; an upload stays a reader of the host buffer until its event completes.
// - pageable: pageable host memory; each copy is staged through pinned pool blocks, in chunks that
//   overlap the staging memcpy with the DMA, and is done when it returns.
// - mapped: one pinned, mapped buffer that the device addresses: nothing is copied; making the host
//   current waits for the device's writer.
// - managed: one managed buffer: making a side current prefetches it there (when the device
//   supports concurrent managed access; without it the driver migrates at each launch).
#pragma once

#include <smartarray/core/detail/array_core.hpp>

#include <cstddef>
#include <span>

namespace smartarray::detail {

/// Host buffers are aligned for any element type and for the DMA engines.
inline constexpr std::size_t host_alignment = 256;

/// What a strategy works on: one array, under its lock, for one call (named in traces), and the
/// device whose copy the copies go to or come from.
struct StorageContext {
  ArrayCore& core;
  const char* reason;
  smartarray::source_location where;
  int device = 0;

  [[nodiscard]] ArrayCore::Buffers& buffers() const noexcept { return core.buffers_; }
  [[nodiscard]] const ArrayCore::Placement& placement() const noexcept { return core.placement_; }
  /// The device's copy: its buffer is `device_copy().data` (none in the one-buffer modes).
  [[nodiscard]] DeviceCopy& device_copy() const { return core.device_copy(device); }
  /// The work on the device's copy.
  [[nodiscard]] StreamOrder& order() const { return core.device_copy(device).order; }
  /// The copies still reading the host buffer are tracked here.
  [[nodiscard]] StreamOrder& host_order() const noexcept { return core.host_order(); }
  [[nodiscard]] std::size_t size() const noexcept { return core.state_.size(); }
  /// The host resource (the default is taken at the first call).
  [[nodiscard]] MemoryResource& host_resource() const { return core.host_mr(); }
  /// One logical transfer of `bytes` to or from the device, with the call's reason and site, for
  /// the TransferScope that records it.
  [[nodiscard]] TransferEvent transfer(TransferKind kind, std::size_t bytes) const noexcept;
  /// The array's counters, where its TransferScopes count its transfers.
  [[nodiscard]] TransferCounters& counters() const noexcept { return core.counters_; }
  /// The host waited for device work.
  void note_wait() const noexcept { core.counters_.add_wait(); }
  /// Makes the whole host buffer accessible before `dst` is written, when it is the host buffer.
  void unguard_host(const std::byte* dst) const noexcept {
    if (dst == core.buffers_.host) core.drop_host_guard();
  }
};

class StorageStrategy {
 public:
  StorageStrategy() = default;
  StorageStrategy(const StorageStrategy&) = delete;
  StorageStrategy& operator=(const StorageStrategy&) = delete;

  /// True for one buffer that both sides address (mapped, managed).
  [[nodiscard]] virtual bool one_buffer() const noexcept = 0;
  /// A host buffer of `bytes` (> 0) bytes; `pageable` says whether it is pageable memory.
  [[nodiscard]] virtual std::byte* allocate_host(const StorageContext& context, std::size_t bytes,
                                                 bool& pageable) const = 0;
  /// Frees a host buffer that no copy uses.
  virtual void free_unused_host(const StorageContext& context, std::byte* ptr, std::size_t bytes,
                                bool pageable) const noexcept = 0;
  /// Makes the device bytes of `copies` (a plan's, all to the device) current from the host
  /// buffer, on `stream`.
  virtual void to_device(const StorageContext& context, std::span<const PlannedCopy> copies,
                         StreamRef stream) const = 0;
  /// Makes the bytes `range` of `dst` (the host buffer, its replacement, or other host memory)
  /// current from the device on `stream`, and waits for them on the host.
  virtual void to_host(const StorageContext& context, std::byte* dst, ByteRange range,
                       StreamRef stream) const = 0;
  /// Queues what makes the host bytes `range` current from the device on `stream`, ordered after
  /// the range's writer, without waiting on the host: the caller records an event after it, which
  /// the first host access of the range waits for. A strategy whose copy needs the host (pageable
  /// staging) is done when it returns.
  virtual void prefetch_to_host(const StorageContext& context, ByteRange range,
                                StreamRef stream) const = 0;
  /// The address that device views use.
  [[nodiscard]] virtual std::byte* device_address(const StorageContext& context) const = 0;

 protected:
  ~StorageStrategy() = default;
};

/// The strategy of `mode` (one object per mode, for the whole process).
[[nodiscard]] const StorageStrategy& storage_strategy(MemoryMode mode) noexcept;

/// Pageable host memory, or out_of_memory naming the bytes and why pinned memory was not used.
[[nodiscard]] std::byte* allocate_pageable(std::size_t bytes, const char* why_pageable);
void free_pageable(std::byte* ptr) noexcept;

}  // namespace smartarray::detail
