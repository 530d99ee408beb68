// The storage strategies of the memory modes. See storage.hpp.
#include "core/storage.hpp"

#include <smartarray/error.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include "runtime/host_memory.hpp"
#include "core/parallel_copy.hpp"
#include "core/transfer_scope.hpp"

#include <algorithm>
#include <array>
#include <iostream>
#include <mutex>
#include <new>

namespace smartarray::detail {
namespace {

/// Pageable mode stages transfers in chunks of this size: large enough for full DMA speed, small
/// enough that the staging memcpy of one chunk overlaps the copy of the previous one.
constexpr std::size_t staging_chunk = std::size_t{4} << 20;
/// Staging blocks in flight: the host fills one while the DMA drains another. Four keep both
/// busy through the jitter of a chunk's memcpy and DMA; two lost 0.3-0.5 ms of a 64 MB transfer
/// on an H100 system (2.3-2.6 ms instead of 1.8-2.1).
constexpr std::size_t staging_blocks = 4;

void note_pageable_fallback(std::size_t bytes, const std::exception& why) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::cerr << "smartarray: pinned host allocation of " << bytes
              << " bytes failed; using pageable memory (slower transfers): " << why.what() << "\n";
  });
}

/// The pinned blocks of one staged transfer (one logical transfer, however many chunks), taken with allocate_sync (the pool hands a pinned
/// block to a host writer only once its copies are done) and given back for anyone once every
/// chunk's copy was waited for. Released on the stream instead, a host request could not take them
/// while later work (the kernels) is queued there, and the next staged copy would grow the pinned
/// pool in the middle of the call. On a failure they go back on the stream, after the chunks
/// already queued.
class StagingBlocks {
 public:
  StagingBlocks(MemoryResource& resource, std::size_t bytes, StreamRef stream)
      : resource_(resource),
        stream_(stream),
        chunk_(std::min(bytes, staging_chunk)),
        chunks_((bytes + chunk_ - 1) / chunk_),
        count_(std::min(staging_blocks, chunks_)) {
    for (std::size_t b = 0; b < count_; ++b) {
      block_[b] = static_cast<std::byte*>(resource_.allocate_sync(chunk_, host_alignment));
    }
  }
  StagingBlocks(const StagingBlocks&) = delete;
  StagingBlocks& operator=(const StagingBlocks&) = delete;
  ~StagingBlocks() {
    for (std::size_t b = 0; b < count_; ++b) {
      if (block_[b] == nullptr) continue;
      if (done_) resource_.deallocate_sync(block_[b], chunk_, host_alignment);
      else resource_.deallocate(stream_, block_[b], chunk_, host_alignment);
    }
  }
  [[nodiscard]] std::size_t chunk() const noexcept { return chunk_; }
  [[nodiscard]] std::size_t chunks() const noexcept { return chunks_; }
  [[nodiscard]] std::size_t count() const noexcept { return count_; }
  /// The block of chunk `i`, and the event its copy records.
  [[nodiscard]] std::byte* block(std::size_t i) const noexcept { return block_[i % count_]; }
  [[nodiscard]] PooledEvent& copied(std::size_t i) noexcept { return copied_[i % count_]; }
  /// Every chunk's copy was waited for: the blocks go back for anyone.
  void finish() noexcept { done_ = true; }

 private:
  MemoryResource& resource_;
  StreamRef stream_;
  std::size_t chunk_;
  std::size_t chunks_;
  std::size_t count_;
  std::array<std::byte*, staging_blocks> block_{};
  std::array<PooledEvent, staging_blocks> copied_;
  bool done_ = false;
};

/// Copies `bytes` from pageable `src` to the device at `dst` through pinned blocks: one logical
/// transfer, done when this returns.
void staged_copy_to_device(MemoryResource& resource, std::byte* dst, const std::byte* src,
                           std::size_t bytes, StreamRef stream) {
  StagingBlocks blocks(resource, bytes, stream);
  std::array<bool, staging_blocks> in_use{};
  for (std::size_t i = 0; i < blocks.chunks(); ++i) {
    const std::size_t offset = i * blocks.chunk();
    const std::size_t n = std::min(blocks.chunk(), bytes - offset);
    // Reuse a block once the DMA that read it is done; the other blocks' DMA runs meanwhile.
    if (in_use[i % blocks.count()]) runtime().synchronize(blocks.copied(i).get());
    parallel_copy(blocks.block(i), src + offset, n);
    runtime().copy_async(dst + offset, blocks.block(i), n, CopyKind::host_to_device, stream);
    runtime().record(blocks.copied(i).get(), stream);
    in_use[i % blocks.count()] = true;
  }
  // The last chunks must reach the device before the blocks go back for anyone.
  for (std::size_t b = 0; b < blocks.count(); ++b) {
    if (in_use[b]) runtime().synchronize(blocks.copied(b).get());
  }
  blocks.finish();
}

/// Copies `bytes` from the device at `src` to pageable `dst` through pinned blocks.
void staged_copy_to_host(MemoryResource& resource, std::byte* dst, const std::byte* src,
                         std::size_t bytes, StreamRef stream) {
  StagingBlocks blocks(resource, bytes, stream);
  const auto chunk_bytes = [&](std::size_t i) {
    return std::min(blocks.chunk(), bytes - i * blocks.chunk());
  };
  const auto issue = [&](std::size_t i) {
    runtime().copy_async(blocks.block(i), src + i * blocks.chunk(), chunk_bytes(i),
                         CopyKind::device_to_host, stream);
    runtime().record(blocks.copied(i).get(), stream);
  };
  for (std::size_t i = 0; i < blocks.count(); ++i) issue(i);
  for (std::size_t i = 0; i < blocks.chunks(); ++i) {
    // Drain chunk i while the DMA of the next ones runs, then refill its block.
    runtime().synchronize(blocks.copied(i).get());
    parallel_copy(dst + i * blocks.chunk(), blocks.block(i), chunk_bytes(i));
    if (i + blocks.count() < blocks.chunks()) issue(i + blocks.count());
  }
  blocks.finish();
}

/// Explicit mode's uploads read their host bytes at once (upload_now()) when a plan has at most
/// this many copies, each of at most upload_now_max_bytes: the copies of element access and small
/// slices. A larger copy stays asynchronous, so that it overlaps the host's work.
constexpr std::size_t upload_now_max_copies = 8;
constexpr std::size_t upload_now_max_bytes = std::size_t{32} << 10;

/// The two-buffer modes: a copy writes the side it goes to, ordered after the users of that side.
class TwoBufferStorage : public StorageStrategy {
 public:
  [[nodiscard]] bool one_buffer() const noexcept final { return false; }

  void to_device(const StorageContext& context, std::span<const PlannedCopy> copies,
                 StreamRef stream) const final {
    // The copies write the device buffer: they follow every earlier use of their ranges on other
    // streams.
    for (const PlannedCopy& copy : copies) context.order().join_users(copy.range, stream);
    // One transfer per copy, their NVTX ranges nested: a plan's copies may go out in one batched
    // call.
    TransferScope uploads(&context.counters());
    for (const PlannedCopy& copy : copies) {
      uploads.add(context.transfer(TransferKind::h2d, copy.range.size()));
    }
    upload(context, copies, stream);
    uploads.done();
    for (const PlannedCopy& copy : copies) context.order().set_exclusive(copy.range, stream);
  }

  void to_host(const StorageContext& context, std::byte* dst, ByteRange range,
               StreamRef stream) const final {
    copy_to_host(context, dst, range, stream, [&] { download(context, dst, range, stream); });
    context.note_wait();
  }

  void prefetch_to_host(const StorageContext& context, ByteRange range,
                        StreamRef stream) const override {
    to_host(context, context.buffers().host, range, stream);
  }

  void free_unused_host(const StorageContext& context, std::byte* ptr, std::size_t bytes,
                        bool pageable) const noexcept final {
    if (pageable) {
      free_pageable(ptr);
    } else {
      context.placement().host_resource->deallocate_sync(ptr, bytes, host_alignment);
    }
  }

  [[nodiscard]] std::byte* device_address(const StorageContext& context) const final {
    return context.device_copy().data;
  }

 protected:
  /// One copy of device bytes `range` to `dst` on `stream` by `copy`: ordered after the range's
  /// writer on other streams, recorded as a use of it on `stream`, and counted as one D2H.
  template <typename Copy>
  static void copy_to_host(const StorageContext& context, std::byte* dst, ByteRange range,
                           StreamRef stream, Copy&& copy) {
    context.unguard_host(dst);
    context.order().wait_writer(range, stream);
    context.order().add_user(range, stream);
    TransferScope transfer(context.transfer(TransferKind::d2h, range.size()), &context.counters());
    copy();
    transfer.done();
  }
  /// Queues the copies of host bytes `copies` to the device on `stream` (ordered already).
  virtual void upload(const StorageContext& context, std::span<const PlannedCopy> copies,
                      StreamRef stream) const = 0;
  /// Copies device bytes `range` to `dst` on `stream`; done on the host when this returns.
  virtual void download(const StorageContext& context, std::byte* dst, ByteRange range,
                        StreamRef stream) const = 0;
};

/// Explicit mode: pinned pool memory and asynchronous copies.
class ExplicitStorage final : public TwoBufferStorage {
 public:
  [[nodiscard]] std::byte* allocate_host(const StorageContext& context, std::size_t bytes,
                                         bool& pageable) const override {
    pageable = false;
    try {
      return static_cast<std::byte*>(context.host_resource().allocate_sync(bytes, host_alignment));
    } catch (const std::bad_alloc& error) {
      // Only the default pinned resource falls back to pageable memory: a resource the user chose
      // is never silently replaced, and its failures propagate.
      if (!context.placement().host_default || context.placement().storage.require_pinned) throw;
      // The notice is printed only once the fallback succeeded: a failed one throws instead.
      std::byte* const host =
          allocate_pageable(bytes, concat("pinned memory: ", error.what()).c_str());
      note_pageable_fallback(bytes, error);
      pageable = true;
      return host;
    }
  }

 private:
  void upload(const StorageContext& context, std::span<const PlannedCopy> copies,
              StreamRef stream) const override {
    std::byte* const device = context.device_copy().data;
    const std::byte* const host = context.buffers().host;
    if (upload_now(device, host, copies, stream)) return;
    for (const PlannedCopy& copy : copies) {
      const ByteRange range = copy.range;
      runtime().copy_async(device + range.begin, host + range.begin, range.size(),
                           CopyKind::host_to_device, stream);
      // Its event is recorded eagerly: host writers must wait for exactly this copy, not for
      // later kernels.
      context.host_order().add_host_reader(stream, range.end);
    }
  }

  /// Small copies (element and tile uploads) on an idle stream read their host bytes before the
  /// call returns (Runtime::copy_to_device_now()): no copy is left reading the host buffer, so no
  /// event is recorded for later host writers and none of them waits. On an H100 system the
  /// event added about 2 us to a call of two small uploads and a kernel (17 to 19 us); one batched
  /// call that reads its sources at once took less than the two plain copies. On a busy stream the
  /// driver's batched call waits for the stream's earlier work (measured), which would hold the
  /// host back: such copies take the asynchronous path. False when the copies are not small, the
  /// stream is busy or the backend cannot on this stream.
  static bool upload_now(std::byte* device, const std::byte* host,
                         std::span<const PlannedCopy> copies, StreamRef stream) {
    if (copies.size() > upload_now_max_copies) return false;
    std::array<CopyRange, upload_now_max_copies> batch{};
    for (std::size_t i = 0; i < copies.size(); ++i) {
      const ByteRange range = copies[i].range;
      if (range.size() > upload_now_max_bytes) return false;
      batch[i] = {device + range.begin, host + range.begin, range.size()};
    }
    return runtime().query(stream) &&
           runtime().copy_to_device_now({batch.data(), copies.size()}, stream);
  }

  void download(const StorageContext& context, std::byte* dst, ByteRange range,
                StreamRef stream) const override {
    queue_download(context, dst, range, stream);
    // The host waits for this array's copy only (and what precedes it on that stream).
    host_wait_stream(stream);
  }

  void prefetch_to_host(const StorageContext& context, ByteRange range,
                        StreamRef stream) const override {
    std::byte* const host = context.buffers().host;
    copy_to_host(context, host, range, stream,
                 [&] { queue_download(context, host, range, stream); });
  }

  static void queue_download(const StorageContext& context, std::byte* dst, ByteRange range,
                             StreamRef stream) {
    runtime().copy_async(dst + range.begin, context.device_copy().data + range.begin,
                         range.size(), CopyKind::device_to_host, stream);
  }
};

/// Pageable mode: pageable host memory, copies staged through pinned blocks.
class PageableStorage final : public TwoBufferStorage {
 public:
  [[nodiscard]] std::byte* allocate_host(const StorageContext&, std::size_t bytes,
                                         bool& pageable) const override {
    std::byte* const host = allocate_pageable(bytes, "the array is in pageable mode");
    pageable = true;
    return host;
  }

 private:
  void upload(const StorageContext& context, std::span<const PlannedCopy> copies,
              StreamRef stream) const override {
    std::byte* const device = context.device_copy().data;
    // Staged: the host buffer is read by memcpy before this returns, so no upload is pending.
    for (const PlannedCopy& copy : copies) {
      const ByteRange range = copy.range;
      staged_copy_to_device(context.host_resource(), device + range.begin,
                            context.buffers().host + range.begin, range.size(), stream);
    }
  }

  void download(const StorageContext& context, std::byte* dst, ByteRange range,
                StreamRef stream) const override {
    staged_copy_to_host(context.host_resource(), dst + range.begin,
                        context.device_copy().data + range.begin, range.size(), stream);
  }
};

/// Throws logic_error, naming the device, when it lacks what `mode` storage of `bytes` needs.
void require_device_support(bool supported, MemoryMode mode, std::size_t bytes,
                            const char* lacking) {
  SMARTARRAY_EXPECTS(supported, logic_error, to_string(mode), " SmartArray storage of ", bytes,
                     " bytes: the device '", runtime().properties().name, "' ", lacking,
                     "; use the explicit or pageable mode");
}

/// The one-buffer modes: making the host current waits for the device writer.
class OneBufferStorage : public StorageStrategy {
 public:
  [[nodiscard]] bool one_buffer() const noexcept override { return true; }

  void to_host(const StorageContext& context, std::byte*, ByteRange range,
               StreamRef stream) const override {
    context.order().wait_writer(range, stream);
    bring_to_host(context, stream);
    context.order().add_user(range, stream);
    // The host waits for this array's writer (and a prefetch) only.
    host_wait_stream(stream);
    context.note_wait();
  }

  void prefetch_to_host(const StorageContext& context, ByteRange range,
                        StreamRef stream) const override {
    context.order().wait_writer(range, stream);
    bring_to_host(context, stream);
    context.order().add_user(range, stream);
  }

 protected:
  /// Queued on `stream` after the device writer, before the host waits.
  virtual void bring_to_host(const StorageContext& context, StreamRef stream) const = 0;
};

/// Mapped mode: the device addresses the pinned host buffer itself.
class MappedStorage final : public OneBufferStorage {
 public:
  [[nodiscard]] std::byte* allocate_host(const StorageContext& context, std::size_t bytes,
                                         bool& pageable) const override {
    pageable = false;
    require_device_support(runtime().properties().can_map_host_memory, MemoryMode::mapped, bytes,
                           "cannot map host memory");
    return static_cast<std::byte*>(runtime().allocate_pinned(
        bytes, pinned_mapped | context.placement().storage.pinned_flags));
  }
  void free_unused_host(const StorageContext&, std::byte* ptr, std::size_t,
                        bool) const noexcept override {
    runtime().free_pinned(ptr);
  }
  void to_device(const StorageContext&, std::span<const PlannedCopy>, StreamRef) const override {}
  [[nodiscard]] std::byte* device_address(const StorageContext& context) const override {
    return static_cast<std::byte*>(runtime().mapped_device_pointer(context.buffers().host));
  }

 private:
  void bring_to_host(const StorageContext&, StreamRef) const override {}
};

/// Managed mode: one managed buffer, prefetched to the side that uses it.
class ManagedStorage final : public OneBufferStorage {
 public:
  [[nodiscard]] std::byte* allocate_host(const StorageContext& context, std::size_t bytes,
                                         bool& pageable) const override {
    pageable = false;
    require_device_support(runtime().properties().managed_memory, MemoryMode::managed, bytes,
                           "does not support managed memory");
    // Oversubscribed managed memory thrashes or hangs the device: refuse before the driver.
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    runtime().memory_info(free_bytes, total_bytes);
    if (bytes > free_bytes) {
      throw out_of_memory(concat("managed SmartArray storage of ", bytes,
                                 " bytes: the device has only ", free_bytes, " of ", total_bytes,
                                 " bytes free"));
    }
    auto* managed = static_cast<std::byte*>(runtime().allocate_managed(bytes));
    if (context.placement().storage.read_mostly) {
      try {
        runtime().advise_read_mostly(managed, bytes);
      } catch (...) {
        runtime().free_managed(managed);
        throw;
      }
    }
    return managed;
  }
  void free_unused_host(const StorageContext&, std::byte* ptr, std::size_t,
                        bool) const noexcept override {
    runtime().free_managed(ptr);
  }
  void to_device(const StorageContext& context, std::span<const PlannedCopy>,
                 StreamRef stream) const override {
    // cudaMemPrefetchAsync to a device needs concurrentManagedAccess; without it the driver
    // migrates managed memory at each launch, and host access is still safe because it waits for
    // this array's device work.
    if (!runtime().properties().concurrent_managed_access) return;
    // The host touched the data last: move it before the kernel faults it in page by page.
    TransferScope prefetch(context.transfer(TransferKind::prefetch_to_device, context.size()),
                           &context.counters());
    runtime().prefetch_async(context.buffers().host, context.size(), Location::device, stream);
    prefetch.done();
    context.buffers().host_write_faults_pending = false;
  }
  [[nodiscard]] std::byte* device_address(const StorageContext& context) const override {
    return context.buffers().host;
  }

 private:
  void bring_to_host(const StorageContext& context, StreamRef stream) const override {
    if (!runtime().properties().concurrent_managed_access) return;
    // The device wrote last: bring the pages back in one migration instead of host page faults.
    TransferScope prefetch(context.transfer(TransferKind::prefetch_to_host, context.size()),
                           &context.counters());
    runtime().prefetch_async(context.buffers().host, context.size(), Location::host, stream);
    prefetch.done();
    context.buffers().host_write_faults_pending = true;
  }
};

}  // namespace

TransferEvent StorageContext::transfer(TransferKind kind, std::size_t bytes) const noexcept {
  return {kind, bytes, reason, core.id(), core.trace_label(), where,
          static_cast<std::int16_t>(device)};
}

const StorageStrategy& storage_strategy(MemoryMode mode) noexcept {
  static const ExplicitStorage explicit_storage;
  static const PageableStorage pageable_storage;
  static const MappedStorage mapped_storage;
  static const ManagedStorage managed_storage;
  switch (mode) {
    case MemoryMode::pageable: return pageable_storage;
    case MemoryMode::mapped: return mapped_storage;
    case MemoryMode::managed: return managed_storage;
    case MemoryMode::explicit_copy: break;
  }
  return explicit_storage;
}

std::byte* allocate_pageable(std::size_t bytes, const char* why_pageable) {
  const std::size_t available = host_memory_bytes(true);
  if (bytes > available) {
    throw out_of_memory(concat("SmartArray host allocation of ", bytes, " bytes failed: ",
                               why_pageable, "; pageable memory: the host has ", available,
                               " bytes of memory and swap"));
  }
  try {
    return static_cast<std::byte*>(::operator new(bytes, std::align_val_t{host_alignment}));
  } catch (const std::bad_alloc& error) {
    throw out_of_memory(concat("SmartArray host allocation of ", bytes, " bytes failed: ",
                               why_pageable, "; pageable memory: ", error.what()));
  }
}

void free_pageable(std::byte* ptr) noexcept {
  ::operator delete(ptr, std::align_val_t{host_alignment});
}

}  // namespace smartarray::detail
