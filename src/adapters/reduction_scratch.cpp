// Reductions with no fixed cost (adapters/detail/reduction_scratch.hpp): the device scratch of
// each device and stream, and the pinned slots that synchronous reductions read their results in.
//
// Both are process-wide and never destroyed, as the backend and the default pools are: a stream
// or an array with static storage may reduce during static destruction, and the CUDA runtime may
// be gone by the time a destructor would free device memory. A stream's scratch goes back when
// the stream is destroyed, through the runtime's subscription to forgotten streams, as the pools'
// stream-ordered blocks do.
#include <smartarray/adapters/detail/reduction_scratch.hpp>

#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/error.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/runtime/detail/capture.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include "core/transfer_scope.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace smartarray::detail {

/// A block of device memory that reductions use as scratch (outside the unnamed namespace: a
/// member of StreamScratch, which the header names).
struct ScratchBlock {
  std::byte* data = nullptr;
  std::size_t bytes = 0;
  bool ticket_zeroed = false;
};

namespace {
/// The spare blocks a device keeps (streams destroyed, blocks outgrown) for the streams that
/// reduce next; more are freed.
constexpr std::size_t max_spare_blocks = 8;
/// The smallest block: enough for the one-pass kernel's partials of every block of a large GPU
/// and for CUB's temporary storage of most reductions, so that a stream rarely grows its block.
constexpr std::size_t min_block_bytes = std::size_t{64} << 10;
}  // namespace

/// The scratch of one device and stream: its block, and the blocks it outgrew, which work queued
/// on the stream may still use, kept until the stream is destroyed.
struct StreamScratch {
  std::mutex mutex;
  int device = 0;
  ScratchBlock block;
  std::vector<ScratchBlock> outgrown;
};

namespace {
class ScratchCache {
 public:
  static ScratchCache& instance() {
    static auto* const cache = new ScratchCache;  // never destroyed (see the top of the file)
    return *cache;
  }

  /// The scratch of `stream` on `device`, made on first use.
  std::shared_ptr<StreamScratch> of(StreamRef stream, int device) {
    const std::lock_guard lock(mutex_);
    std::shared_ptr<StreamScratch>& scratch = streams_[Key{stream.handle(), device}];
    if (!scratch) {
      scratch = std::make_shared<StreamScratch>();
      scratch->device = device;
    }
    return scratch;
  }

  /// A block of at least `bytes` on `device`: a spare one that is large enough, else a new one.
  ScratchBlock take(int device, std::size_t bytes) {
    {
      const std::lock_guard lock(mutex_);
      std::vector<ScratchBlock>& spares = spares_[static_cast<std::size_t>(device)];
      // The smallest spare that is large enough.
      auto fits = spares.end();
      for (auto it = spares.begin(); it != spares.end(); ++it) {
        if (it->bytes >= bytes && (fits == spares.end() || it->bytes < fits->bytes)) fits = it;
      }
      if (fits != spares.end()) {
        const ScratchBlock block = *fits;
        spares.erase(fits);
        return block;
      }
    }
    const std::size_t rounded =
        (bytes + default_alignment - 1) / default_alignment * default_alignment;
    return ScratchBlock{static_cast<std::byte*>(runtime().allocate_device(rounded, device)),
                        rounded, false};
  }

  /// A stream is forgotten (drained, about to be destroyed): its blocks become its device's
  /// spares, the smallest freed when there are too many.
  void forget(StreamRef stream) noexcept {
    std::vector<std::shared_ptr<StreamScratch>> gone;
    {
      const std::lock_guard lock(mutex_);
      for (auto it = streams_.begin(); it != streams_.end();) {
        if (it->first.handle == stream.handle()) {
          gone.push_back(std::move(it->second));
          it = streams_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (const std::shared_ptr<StreamScratch>& scratch : gone) {
      std::vector<ScratchBlock> blocks;
      {
        // A thread still queueing on the stream (it is being destroyed: a misuse) finishes first.
        const std::lock_guard lock(scratch->mutex);
        blocks = std::exchange(scratch->outgrown, {});
        if (scratch->block.data != nullptr) blocks.push_back(std::exchange(scratch->block, {}));
      }
      spare(scratch->device, std::move(blocks));
    }
  }

  /// Keeps `blocks` of `device` as spares (no queued work uses them), freeing the smallest beyond
  /// max_spare_blocks.
  void spare(int device, std::vector<ScratchBlock> blocks) noexcept {
    std::vector<ScratchBlock> excess;
    try {
      const std::lock_guard lock(mutex_);
      std::vector<ScratchBlock>& spares = spares_[static_cast<std::size_t>(device)];
      spares.insert(spares.end(), blocks.begin(), blocks.end());
      if (spares.size() > max_spare_blocks) {
        std::sort(spares.begin(), spares.end(),
                  [](const ScratchBlock& x, const ScratchBlock& y) { return x.bytes > y.bytes; });
        excess.assign(spares.begin() + static_cast<std::ptrdiff_t>(max_spare_blocks), spares.end());
        spares.resize(max_spare_blocks);
      }
    } catch (const std::exception&) {  // no memory to keep them: free them all
      excess = std::move(blocks);
    }
    for (const ScratchBlock& block : excess) runtime().free_device(block.data, device);
  }

 private:
  ScratchCache() {
    (void)subscribe_to_forgotten_streams([this](StreamRef stream) noexcept { forget(stream); });
  }

  struct Key {
    void* handle;
    int device;  // the default stream (a null handle) is one stream per device
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& key) const noexcept {
      return std::hash<void*>{}(key.handle) ^ (static_cast<std::size_t>(key.device) << 1);
    }
  };

  std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<StreamScratch>, KeyHash> streams_;
  std::array<std::vector<ScratchBlock>, max_devices> spares_;
};
}  // namespace

ReductionScratch::ReductionScratch(StreamRef stream, int device, std::size_t bytes)
    : stream_(stream), bytes_(bytes) {
  if (active_capture() != nullptr) [[unlikely]] {
    // Captured work would use the block at every replay: the graph keeps a block of its own.
    pool_ = &device_resource(device);
    data_ = static_cast<std::byte*>(pool_->allocate(stream, bytes));
    return;
  }
  ScratchCache& cache = ScratchCache::instance();
  std::shared_ptr<StreamScratch> scratch = cache.of(stream, device);
  std::unique_lock lock(scratch->mutex);
  if (scratch->block.bytes < bytes) {
    const ScratchBlock grown =
        cache.take(device, std::max({bytes, 2 * scratch->block.bytes, min_block_bytes}));
    // Work queued on the stream may still use the old block: it goes when the stream does.
    if (scratch->block.data != nullptr) scratch->outgrown.push_back(scratch->block);
    scratch->block = grown;
  }
  data_ = scratch->block.data;
  ticket_zeroed_ = scratch->block.ticket_zeroed;
  lock.release();  // held until the destructor
  entry_ = std::move(scratch);
}

ReductionScratch::~ReductionScratch() {
  if (pool_ != nullptr) {
    pool_->deallocate(stream_, data_, bytes_);
    return;
  }
  entry_->mutex.unlock();
}

void ReductionScratch::note_ticket_zeroed() noexcept {
  ticket_zeroed_ = true;
  if (entry_) entry_->block.ticket_zeroed = true;
}

/// A pinned slot of host memory, mapped when the devices can map host memory, and the event
/// recorded after the reduction that writes it.
struct ResultSlot {
  std::byte* host = nullptr;
  void* mapped = nullptr;  // the slot's device address; null when not mapped
  std::size_t bytes = 0;
  EventHandle event = nullptr;
};

namespace {
/// The smallest slot: every result of a few scalars.
constexpr std::size_t min_slot_bytes = 256;

class ResultSlots {
 public:
  static ResultSlots& instance() {
    static auto* const slots = new ResultSlots;  // never destroyed (see the top of the file)
    return *slots;
  }

  /// A free slot of at least `bytes`; a new one when none is free.
  ResultSlot* take(std::size_t bytes, int device) {
    ResultSlot* slot = nullptr;
    {
      const std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        slot = free_.back();
        free_.pop_back();
      }
    }
    if (slot == nullptr) {
      auto made = std::make_unique<ResultSlot>();
      made->event = runtime().create_event();
      slot = made.release();
    }
    if (slot->bytes < bytes) {
      try {
        reallocate(*slot, std::max(bytes, min_slot_bytes), device);
      } catch (...) {
        give(slot);
        throw;
      }
    }
    return slot;
  }

  void give(ResultSlot* slot) noexcept {
    try {
      const std::lock_guard lock(mutex_);
      free_.push_back(slot);
    } catch (const std::exception&) {  // no memory to keep it: leaked
    }
  }

 private:
  /// Gives `slot` a buffer of `bytes` (it holds no result: nothing writes it).
  static void reallocate(ResultSlot& slot, std::size_t bytes, int device) {
    Runtime& rt = runtime();
    rt.free_pinned(slot.host);
    slot = ResultSlot{nullptr, nullptr, 0, slot.event};
    // Mapped and portable: the last kernel of a reduction on any device writes it directly.
    const bool map = rt.properties(device).can_map_host_memory;
    slot.host = static_cast<std::byte*>(
        rt.allocate_pinned(bytes, map ? pinned_mapped | pinned_portable : pinned_portable));
    slot.bytes = bytes;
    if (map) slot.mapped = rt.mapped_device_pointer(slot.host);
  }

  std::mutex mutex_;
  std::vector<ResultSlot*> free_;
};
}  // namespace

ReductionResult::ReductionResult(StreamRef stream, std::size_t bytes)
    : slot_(nullptr), stream_(stream), device_(runtime().stream_device(stream)), bytes_(bytes) {
  slot_ = ResultSlots::instance().take(bytes, device_);
}

ReductionResult::~ReductionResult() {
  // A reduction queued to write the slot and never waited for (an error after its launch) may
  // still write it: the slot is not given back.
  if (queued_ && !read_) return;
  ResultSlots::instance().give(slot_);
}

void* ReductionResult::target() noexcept {
  queued_ = true;
  Runtime& rt = runtime();
  if (rt.kind() == BackendKind::host) return slot_->host;
  return rt.properties(device_).can_map_host_memory ? slot_->mapped : nullptr;
}

void ReductionResult::download(const void* device) {
  queued_ = true;
  runtime().copy_async(slot_->host, device, bytes_, CopyKind::device_to_host, stream_);
}

const void* ReductionResult::read(const char* reason, const smartarray::source_location& where) {
  const TransferEvent event{
      TransferKind::d2h, bytes_, reason, 0, nullptr, where, static_cast<std::int16_t>(device_)};
  Runtime& rt = runtime();
  {
    // The transfer's range covers the enqueue of the event that completes it, as a copy's does.
    // The result belongs to no array: counted globally and on its device.
    TransferScope transfer(event, nullptr);
    rt.record(slot_->event, stream_);
    transfer.done();
  }
  rt.synchronize(slot_->event);
  read_ = true;
  return slot_->host;
}

}  // namespace smartarray::detail
