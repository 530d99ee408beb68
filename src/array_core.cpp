// The residency state machine behind SmartArray<T>. See detail/array_core.hpp for the model.
#include <smartarray/detail/array_core.hpp>
#include <smartarray/debug.hpp>
#include <smartarray/error.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/statistics_adaptor.hpp>
#include "host_memory.hpp"
#include "parallel_copy.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <iostream>
#include <new>
#include <unordered_map>

namespace smartarray::detail {
namespace {

constexpr std::size_t host_alignment = 256;

/// Pageable mode stages transfers in chunks of this size: large enough for full DMA speed, small
/// enough that the staging memcpy of one chunk overlaps the copy of the previous one.
constexpr std::size_t staging_chunk = std::size_t{4} << 20;
/// Staging blocks in flight: the host fills one while the DMA drains another. Four keep both
/// busy through the jitter of a chunk's memcpy and DMA; two lost 0.3-0.5 ms of a 64 MB transfer
/// on the H100 machine (2.3-2.6 ms instead of 1.8-2.1).
constexpr std::size_t staging_blocks = 4;

/// The capacity for a growth to `needed` bytes from `capacity`: geometric, for amortized O(1)
/// appends, and never below one aligned block (smaller buffers would waste the rest of it).
std::size_t grown_capacity(std::size_t needed, std::size_t capacity) {
  return std::max({needed, 2 * capacity, host_alignment});
}

/// A process-wide tick for least-recently-used ordering. Each thread takes its ticks in blocks, so
/// that a use costs no atomic operation: uses are ordered exactly within a thread, and to within
/// a block across threads.
std::atomic<std::uint64_t> use_clock{0};
constexpr std::uint64_t use_clock_block = 64;
thread_local std::uint64_t next_use_tick = 0;
thread_local std::uint64_t end_use_tick = 0;

/// The array this thread is acquiring, which eviction must skip (its lock is held by this thread),
/// and the user's call that the acquire serves, which the trace of an eviction it causes names.
thread_local const ArrayCore* acquiring_on_this_thread = nullptr;
thread_local const smartarray::source_location* call_site_on_this_thread = nullptr;

struct AcquireScope {
  AcquireScope(const ArrayCore* core, const smartarray::source_location& where) noexcept
      : previous(acquiring_on_this_thread), previous_where(call_site_on_this_thread) {
    acquiring_on_this_thread = core;
    call_site_on_this_thread = &where;
  }
  ~AcquireScope() {
    acquiring_on_this_thread = previous;
    call_site_on_this_thread = previous_where;
  }
  AcquireScope(const AcquireScope&) = delete;
  AcquireScope& operator=(const AcquireScope&) = delete;
  const ArrayCore* previous;
  const smartarray::source_location* previous_where;
};

}  // namespace

/// The arrays whose device buffers one pool holds, in an intrusive list (no allocation per array).
/// The pool's eviction hook drops their copies: clean ones first, then dirty ones (written back),
/// least recently used first.
class EvictionRegistry {
 public:
  void add(ArrayCore* core) noexcept {
    std::lock_guard lock(mutex_);
    ArrayCore::EvictionLink& link = core->eviction_link();
    if (link.registry != nullptr) return;
    link = {this, nullptr, head_};
    if (head_ != nullptr) head_->eviction_link().previous = core;
    head_ = core;
    ++count_;
  }
  void remove(ArrayCore* core) noexcept {
    std::lock_guard lock(mutex_);
    unlink(core);
  }
  std::size_t evict(std::size_t bytes_needed) {
    std::lock_guard lock(mutex_);
    std::vector<ArrayCore*> order;
    order.reserve(count_);
    for (ArrayCore* core = head_; core != nullptr; core = core->eviction_link().next) {
      order.push_back(core);
    }
    std::sort(order.begin(), order.end(),
              [](const ArrayCore* a, const ArrayCore* b) { return a->last_use() < b->last_use(); });
    std::size_t released = 0;
    for (const bool allow_dirty : {false, true}) {
      for (ArrayCore* core : order) {
        if (released >= bytes_needed) return released;
        if (core == acquiring_on_this_thread || core->eviction_link().registry != this) continue;
        std::unique_lock array_lock(core->mutex(), std::try_to_lock);
        if (!array_lock.owns_lock()) continue;
        const std::size_t freed = core->evict_device_locked(allow_dirty);
        if (freed > 0) {
          released += freed;
          unlink(core);
        }
      }
    }
    return released;
  }

 private:
  void unlink(ArrayCore* core) noexcept {
    ArrayCore::EvictionLink& link = core->eviction_link();
    if (link.registry != this) return;
    if (link.previous != nullptr) link.previous->eviction_link().next = link.next;
    else head_ = link.next;
    if (link.next != nullptr) link.next->eviction_link().previous = link.previous;
    link = {};
    --count_;
  }

  std::mutex mutex_;
  ArrayCore* head_ = nullptr;
  std::size_t count_ = 0;
};

namespace {

/// The pool whose out-of-memory chain serves allocations from `resource`: the resource itself, or
/// the pool under a StatisticsAdaptor; nullptr for any other resource (it has no chain to join).
PoolResource* serving_pool(MemoryResource& resource) noexcept {
  if (auto* pool = dynamic_cast<PoolResource*>(&resource)) return pool;
  if (auto* counted = dynamic_cast<StatisticsAdaptor*>(&resource)) return counted->pool();
  return nullptr;
}

/// The eviction registry of `pool`, made (with the pool's eviction hook) on first use. Keyed by
/// the pool's id, never by its address; registries are never freed, so a hook never outlives its.
EvictionRegistry& registry_of(PoolResource& pool) {
  static std::mutex mutex;
  static auto* registries = new std::unordered_map<std::uint64_t, EvictionRegistry*>;
  std::lock_guard lock(mutex);
  EvictionRegistry*& registry = (*registries)[pool.id()];
  if (registry == nullptr) {
    auto made = std::make_unique<EvictionRegistry>();
    (void)pool.add_eviction_hook(
        [target = made.get()](std::size_t bytes_needed) { return target->evict(bytes_needed); });
    registry = made.release();
  }
  return *registry;
}

void note_pageable_fallback(std::size_t bytes, const std::exception& why) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::cerr << "smartarray: pinned host allocation of " << bytes
              << " bytes failed; using pageable memory (slower transfers): " << why.what() << "\n";
  });
}

/// Pageable host memory, or out_of_memory naming the bytes and why pinned memory was not used.
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

/// The numbers of arrays, in the order they are first named.
std::atomic<std::uint64_t> next_array_id{1};

}  // namespace

ArrayCore::~ArrayCore() { release_all(); }

ArrayCore::ArrayCore(const ArrayCore& other) : storage_(other.storage_) {
  std::lock_guard lock(other.mutex_);
  // Under the lock: a const access of `other` on another thread may be taking its defaults.
  host_resource_ = other.host_resource_;
  device_resource_ = other.device_resource_;
  host_default_ = other.host_default_;
  device_default_ = other.device_default_;
  copy_valid_data(other);
}

ArrayCore::ArrayCore(const ArrayCore& other, const ResourceChoice& resources)
    : ArrayCore(resources, other.storage_) {
  std::lock_guard lock(other.mutex_);
  copy_valid_data(other);
}

void ArrayCore::copy_valid_data(const ArrayCore& other) {
  if (other.size_ == 0) return;
  // The stream names taken from `other` below were cleaned up to its generation.
  retired_generation_seen_ = other.retired_generation_seen_;
  const std::size_t bytes = other.size_;
  capacity_ = bytes;
  if (other.unwritten_) {
    // Nothing was written: the copy holds nothing either, and takes no memory yet.
    size_ = bytes;
    device_valid_end_ = bytes;
    unwritten_ = true;
    refresh_state();
    return;
  }
  if (single_buffer()) {
    // One buffer holds everything: copy it on the host once its device writer is done.
    if (other.device_writer_ &&
        !stream_retired_since(*other.device_writer_, other.retired_generation_seen_)) {
      host_wait_stream(*other.device_writer_);
    }
    host_ = allocate_host(bytes, host_pageable_);
    std::memcpy(host_, other.host_, bytes);
    size_ = bytes;
    refresh_state();
    return;
  }
  // Each side copies only what it holds valid; a stale side is never copied.
  if (other.host_valid_begin_ < bytes) {
    host_ = allocate_host(bytes, host_pageable_);
    std::memcpy(host_ + other.host_valid_begin_, other.host_ + other.host_valid_begin_,
                bytes - other.host_valid_begin_);
  }
  if (other.device_valid_end_ > 0) {
    StreamRef stream = other.device_writer_.value_or(StreamRef{});
    if (stream_retired_since(stream, other.retired_generation_seen_)) stream = StreamRef{};
    try {
      resolve_eviction_registry();
      device_ = static_cast<std::byte*>(device_mr().allocate(stream, bytes));
      device_capacity_ = bytes;
      runtime().copy_async(device_, other.device_, other.device_valid_end_,
                           CopyKind::device_to_device, stream);
    } catch (...) {
      release_all();
      throw;
    }
    counters_.add_d2d(other.device_valid_end_);
    // The copy reads `other` on `stream`: a later write of `other` must wait for it. SmartArray
    // keeps its core mutable, so this core is never a const object.
    const_cast<ArrayCore&>(other).add_device_user(stream);
    device_writer_ = stream;
    device_users_.assign(1, stream);
    register_for_eviction();
  }
  size_ = bytes;
  host_valid_begin_ = other.host_valid_begin_;
  device_valid_end_ = other.device_valid_end_;
  refresh_state();
}

ArrayCore::ArrayCore(ArrayCore&& other) noexcept
    : host_resource_(other.host_resource_),
      device_resource_(other.device_resource_),
      storage_(other.storage_),
      host_default_(other.host_default_),
      device_default_(other.device_default_) {
  // The label goes with the value (a factory that returns a labeled array keeps the label); the
  // number stays with the object. Under the locks: eviction may be tracing either array.
  std::scoped_lock lock(mutex_, other.mutex_);
  swap_locked(other);
  label_ = std::move(other.label_);
}

void ArrayCore::move_assign(ArrayCore& other) noexcept {
  if (this == &other) return;
  release_all();
  std::scoped_lock lock(mutex_, other.mutex_);
  swap_locked(other);
  // `other` is empty now and keeps its own options, as a moved-from std::vector its allocator.
  other.host_resource_ = host_resource_;
  other.device_resource_ = device_resource_;
  other.host_default_ = host_default_;
  other.device_default_ = device_default_;
  other.storage_ = storage_;
  other.device_registry_ = device_registry_;
  other.device_registry_resolved_ = device_registry_resolved_;
  label_ = std::move(other.label_);
}

void ArrayCore::resolve_eviction_registry() {
  if (device_registry_resolved_) return;
  // The default device resource (never destroyed) skips the lookup: new arrays of map and
  // device_array resolve on every call.
  static MemoryResource* const default_resource = &default_device_resource();
  static EvictionRegistry* const default_registry = &registry_of(default_device_pool());
  MemoryResource& resource = device_mr();
  if (&resource == default_resource) {
    device_registry_ = default_registry;
  } else {
    PoolResource* const pool = serving_pool(resource);
    device_registry_ = pool != nullptr ? &registry_of(*pool) : nullptr;
  }
  device_registry_resolved_ = true;
}

void ArrayCore::register_for_eviction() noexcept {
  if (device_registry_ != nullptr) device_registry_->add(this);
}

void ArrayCore::unregister_for_eviction() noexcept {
  if (eviction_link_.registry != nullptr) eviction_link_.registry->remove(this);
}

MemoryResource& ArrayCore::host_mr() {
  if (host_resource_ == nullptr) host_resource_ = &pinned_resource();
  return *host_resource_;
}

MemoryResource& ArrayCore::device_mr() {
  if (device_resource_ == nullptr) device_resource_ = &smartarray::device_resource();
  return *device_resource_;
}

std::uint64_t ArrayCore::id() const noexcept {
  std::uint64_t current = id_.load(std::memory_order_acquire);
  if (current != 0) return current;
  const std::uint64_t fresh = next_array_id.fetch_add(1, std::memory_order_relaxed);
  // Two threads naming the array at once: the first number stored wins.
  return id_.compare_exchange_strong(current, fresh, std::memory_order_acq_rel) ? fresh : current;
}

void ArrayCore::set_label(std::string label) {
  auto named = label.empty() ? nullptr : std::make_unique<std::string>(std::move(label));
  std::lock_guard lock(mutex_);  // eviction on another thread may be tracing this array
  label_ = std::move(named);
}

std::string ArrayCore::label() const { return label_ ? *label_ : std::string(); }

std::string ArrayCore::describe() const {
  return label_ ? concat("SmartArray #", id(), " \"", *label_, "\"") : concat("SmartArray #", id());
}

void ArrayCore::check_written(bool require_written, const char* what,
                              const smartarray::source_location& where) const {
  SMARTARRAY_EXPECTS(!require_written || !unwritten_, logic_error, describe(), " (", size_,
                     " bytes) was made with no_init and never written: ", what, " at ",
                     where.file_name(), ":", where.line(),
                     " reads indeterminate values; write it first (on the host, on the device or "
                     "with assign)");
}

void ArrayCore::settle_unwritten(Side side) noexcept {
  if (!unwritten_) return;
  unwritten_ = false;
  if (single_buffer()) return;  // one buffer: both sides see the same bytes
  // The side that was not accessed has no buffer: it has nothing to offer.
  if (side == Side::host) {
    device_valid_end_ = 0;
  } else {
    host_valid_begin_ = size_;
  }
}

void ArrayCore::swap(ArrayCore& other) noexcept {
  if (this == &other) return;
  std::scoped_lock lock(mutex_, other.mutex_);
  swap_locked(other);
}

void ArrayCore::swap_locked(ArrayCore& other) noexcept {
  // Registration is by address: re-register whichever side now holds a device buffer.
  unregister_for_eviction();
  other.unregister_for_eviction();
  std::swap(host_resource_, other.host_resource_);
  std::swap(device_resource_, other.device_resource_);
  std::swap(host_default_, other.host_default_);
  std::swap(device_default_, other.device_default_);
  std::swap(storage_, other.storage_);
  std::swap(device_external_, other.device_external_);
  std::swap(unwritten_, other.unwritten_);
  std::swap(host_, other.host_);
  std::swap(host_pageable_, other.host_pageable_);
  std::swap(host_write_faults_pending_, other.host_write_faults_pending_);
  std::swap(device_, other.device_);
  std::swap(device_capacity_, other.device_capacity_);
  std::swap(size_, other.size_);
  std::swap(capacity_, other.capacity_);
  std::swap(host_valid_begin_, other.host_valid_begin_);
  std::swap(device_valid_end_, other.device_valid_end_);
  std::swap(device_writer_, other.device_writer_);
  std::swap(device_users_, other.device_users_);
  // Goes with the streams above: which retirements they were already cleaned of.
  std::swap(retired_generation_seen_, other.retired_generation_seen_);
  std::swap(host_readers_, other.host_readers_);
  std::swap(host_read_end_, other.host_read_end_);
  std::swap(view_slot_, other.view_slot_);
  std::swap(view_size_, other.view_size_);
  std::swap(view_device_, other.view_device_);
  std::swap(guarded_, other.guarded_);
  std::swap(guarded_host_, other.guarded_host_);
  std::swap(guarded_stale_, other.guarded_stale_);
  std::swap(device_write_file_, other.device_write_file_);
  std::swap(device_write_line_, other.device_write_line_);
  std::swap(device_registry_, other.device_registry_);
  std::swap(device_registry_resolved_, other.device_registry_resolved_);
  if (device_ != nullptr && !device_external_) register_for_eviction();
  if (other.device_ != nullptr && !other.device_external_) other.register_for_eviction();
  refresh_state();
  other.refresh_state();
}

void ArrayCore::refresh_readable() noexcept {
  // An unwritten array takes the slow path: it has no host buffer, and debug builds check reads.
  host_readable_.store(host_valid_begin_ == 0 && !unwritten_, std::memory_order_release);
}

void ArrayCore::note_view_state() noexcept {
  if (view_slot_ == 0) return;
  ViewChange why = ViewChange::none;
  if (size_ != view_size_) {
    why = ViewChange::resized;
  } else if (view_address() != view_device_) {
    why = ViewChange::reallocated;
  } else if (device_valid_end_ < view_size_) {
    why = ViewChange::host_write;
  }
  if (why == ViewChange::none) return;
  note_view_change(view_slot_, why);
  start_views();
}

void ArrayCore::start_views() noexcept {
  view_size_ = size_;
  view_device_ = view_address();
}

void ArrayCore::update_host_guard() noexcept {
  const bool stale = host_ != nullptr && host_valid_begin_ > 0 && !single_buffer();
  if (stale && guarded_host_ == host_ && guarded_stale_ == host_valid_begin_) return;
  drop_host_guard();
  if (!stale || !stale_host_guard()) return;
  // Uploads may still read the host buffer (the host backend's copies do so through the CPU's
  // page tables): with the guard on, they finish before the pages close.
  try {
    wait_host_readers_locked();
  } catch (const std::exception&) {
    return;  // the failed copy is reported by the next operation that waits for it
  }
  guarded_ = guard_stale_host(host_, host_valid_begin_, id(), device_write_file_,
                              device_write_line_);
  guarded_host_ = host_;
  guarded_stale_ = host_valid_begin_;
}

void ArrayCore::drop_host_guard() noexcept {
  unguard(guarded_);
  guarded_host_ = nullptr;
  guarded_stale_ = 0;
}

void ArrayCore::refresh_state() noexcept {
  note_view_state();
  update_host_guard();
  refresh_readable();
  host_writable_ = host_valid_begin_ == 0 && device_valid_end_ == 0 && host_readers_.empty();
  // Inside the window an append writes only bytes that no pending copy reads, and a truncation
  // clamps neither side's valid range.
  fast_floor_ = std::max({host_valid_begin_, device_valid_end_, host_read_end_});
  fast_limit_ = host_ != nullptr && size_ >= host_read_end_ ? capacity_ : 0;
}

void ArrayCore::touch() noexcept {
  if (next_use_tick == end_use_tick) {
    next_use_tick = use_clock.fetch_add(use_clock_block, std::memory_order_relaxed) + 1;
    end_use_tick = next_use_tick + use_clock_block;
  }
  last_use_.store(next_use_tick++, std::memory_order_relaxed);
}

bool ArrayCore::valid(Side side) const noexcept {
  std::lock_guard lock(mutex_);
  if (unwritten_) return false;
  return side == Side::host ? host_valid_begin_ == 0 : device_valid_end_ == size_;
}

std::byte* ArrayCore::allocate_host(std::size_t bytes, bool& pageable) {
  pageable = false;
  if (bytes == 0) return nullptr;
  switch (storage_.mode) {
    case MemoryMode::mapped:
      SMARTARRAY_EXPECTS(runtime().properties().can_map_host_memory, logic_error,
                         "mapped SmartArray storage of ", bytes, " bytes: the device '",
                         runtime().properties().name,
                         "' cannot map host memory; use the explicit or pageable mode");
      return static_cast<std::byte*>(
          runtime().allocate_pinned(bytes, pinned_mapped | storage_.pinned_flags));
    case MemoryMode::managed: {
      SMARTARRAY_EXPECTS(runtime().properties().managed_memory, logic_error,
                         "managed SmartArray storage of ", bytes, " bytes: the device '",
                         runtime().properties().name,
                         "' does not support managed memory; use the explicit or pageable mode");
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
      if (storage_.read_mostly) {
        try {
          runtime().advise_read_mostly(managed, bytes);
        } catch (...) {
          runtime().free_managed(managed);
          throw;
        }
      }
      return managed;
    }
    case MemoryMode::pageable: {
      std::byte* const host = allocate_pageable(bytes, "the array is in pageable mode");
      pageable = true;
      return host;
    }
    case MemoryMode::explicit_copy: break;
  }
  try {
    return static_cast<std::byte*>(host_mr().allocate_sync(bytes, host_alignment));
  } catch (const std::bad_alloc& error) {
    if (!host_fallback()) throw;
    // The notice is printed only once the fallback succeeded: a failed one throws instead.
    std::byte* const host =
        allocate_pageable(bytes, concat("pinned memory: ", error.what()).c_str());
    note_pageable_fallback(bytes, error);
    pageable = true;
    return host;
  }
}

void ArrayCore::free_host(std::byte* ptr, std::size_t bytes, bool pageable) noexcept {
  if (ptr == nullptr) return;
  if (ptr == guarded_host_) drop_host_guard();
  if (single_buffer()) {
    // Kernels may still use the one buffer: it goes back once they are done.
    try {
      wait_host_readers_locked();
    } catch (const std::exception& error) {
      std::cerr << "smartarray: waiting for device work before freeing " << bytes
                << " bytes of " << to_string(storage_.mode) << " memory failed: " << error.what()
                << "\n";
    }
    free_unused_host(ptr, bytes, pageable);
    return;
  }
  // A pinned block that a copy still reads goes back on its stream: the pool hands it to a host
  // writer only once that stream has completed. A copy that is already done frees it for anyone:
  // a stream that has since taken more work would otherwise keep the block from host requests,
  // and the pool would grow instead. Pageable memory has no such guard, so it waits for them.
  if (!pageable && host_readers_.size() == 1) {
    const PendingCopy& copy = host_readers_.front();
    bool done = false;
    try {
      done = runtime().query(copy.event.get());
    } catch (const std::exception&) {
      done = false;  // reported by whoever waits on the stream next
    }
    if (done) {
      host_resource_->deallocate_sync(ptr, bytes, host_alignment);
    } else {
      host_resource_->deallocate(copy.stream, ptr, bytes, host_alignment);
    }
    host_readers_.clear();
    host_read_end_ = 0;
    return;
  }
  if (!host_readers_.empty()) {
    try {
      wait_host_readers_locked();
    } catch (const std::exception& error) {
      std::cerr << "smartarray: waiting for copies before freeing host memory failed: "
                << error.what() << "\n";
    }
  }
  if (pageable) {
    ::operator delete(ptr, std::align_val_t{host_alignment});
  } else {
    host_resource_->deallocate_sync(ptr, bytes, host_alignment);
  }
}

void ArrayCore::free_unused_host(std::byte* ptr, std::size_t bytes, bool pageable) noexcept {
  if (ptr == nullptr) return;
  if (ptr == guarded_host_) drop_host_guard();
  if (storage_.mode == MemoryMode::mapped) {
    runtime().free_pinned(ptr);
    return;
  }
  if (storage_.mode == MemoryMode::managed) {
    runtime().free_managed(ptr);
    return;
  }
  if (pageable) {
    ::operator delete(ptr, std::align_val_t{host_alignment});
    return;
  }
  host_resource_->deallocate_sync(ptr, bytes, host_alignment);
}

void ArrayCore::reallocate_host(std::size_t new_capacity) {
  if (single_buffer()) {
    // Device work may still write the buffer: wait for it, then move every byte on the host. The
    // new buffer was last touched by the host.
    wait_host_readers_locked();
    bool unused = false;
    std::byte* fresh = allocate_host(new_capacity, unused);
    if (host_ != nullptr && size_ > 0) std::memcpy(fresh, host_, size_);
    free_unused_host(host_, capacity_, false);
    host_ = fresh;
    capacity_ = new_capacity;
    host_valid_begin_ = 0;
    device_valid_end_ = 0;
    return;
  }
  bool fresh_pageable = false;
  std::byte* fresh = allocate_host(new_capacity, fresh_pageable);
  // Only the valid host suffix moves; a stale prefix is dropped, never copied.
  if (host_ != nullptr && host_valid_begin_ < size_) {
    std::memcpy(fresh + host_valid_begin_, host_ + host_valid_begin_, size_ - host_valid_begin_);
  }
  free_host(host_, capacity_, host_pageable_);
  host_ = fresh;
  host_pageable_ = fresh_pageable;
  capacity_ = new_capacity;
}

bool ArrayCore::insert_in_place(std::size_t pos, std::size_t bytes) noexcept {
  if (!host_writable_ || size_ + bytes > fast_limit_) return false;
  std::memmove(host_ + pos + bytes, host_ + pos, size_ - pos);
  size_ += bytes;
  note_fast_resize();
  return true;
}

void ArrayCore::wait_host_readers_locked() {
  if (single_buffer()) {
    // Kernels read and write the one buffer itself: a host writer waits for all of them.
    forget_retired_streams();
    while (!device_users_.empty()) {
      host_wait_stream(device_users_.back());
      device_users_.pop_back();
    }
    if (device_writer_) host_wait_stream(*device_writer_);
    device_writer_.reset();
    host_read_end_ = 0;
    return;
  }
  // Pop each copy once it is done, so that a failed wait leaves the rest tracked.
  while (!host_readers_.empty()) {
    PendingCopy& copy = host_readers_.back();
    if (!runtime().query(copy.event.get())) runtime().synchronize(copy.event.get());
    host_readers_.pop_back();
  }
  host_read_end_ = 0;
}

void ArrayCore::wait_host_readers() {
  std::lock_guard lock(mutex_);
  wait_host_readers_locked();
  refresh_state();
}

void ArrayCore::forget_retired_streams() {
  const std::uint64_t generation = retired_stream_generation();
  if (generation == retired_generation_seen_) return;
  const std::uint64_t seen = retired_generation_seen_;
  const auto retired = [seen](StreamRef stream) { return stream_retired_since(stream, seen); };
  std::erase_if(device_users_, retired);
  if (device_writer_ && retired(*device_writer_)) device_writer_.reset();
  for (PendingCopy& copy : host_readers_) {
    if (retired(copy.stream)) copy.stream = StreamRef{};
  }
  retired_generation_seen_ = generation;
}

bool ArrayCore::device_current_for(Access access, StreamRef stream) const noexcept {
  if (single_buffer() || device_ == nullptr || device_capacity_ < size_ ||
      device_valid_end_ != size_ || view_size_ != size_ || view_device_ != device_) {
    return false;
  }
  if (access == Access::read) {
    return (!device_writer_ || *device_writer_ == stream) &&
           std::find(device_users_.begin(), device_users_.end(), stream) != device_users_.end();
  }
  return host_valid_begin_ == size_ && device_writer_ == stream && device_users_.size() == 1 &&
         device_users_.front() == stream;
}

void ArrayCore::join_device_users(StreamRef stream) {
  for (const StreamRef user : device_users_) stream_wait_stream(stream, user);
}

void ArrayCore::wait_device_writer(StreamRef stream) {
  if (device_writer_) stream_wait_stream(stream, *device_writer_);
}

void ArrayCore::set_device_exclusive(StreamRef stream) {
  device_writer_ = stream;
  device_users_.assign(1, stream);
}

void ArrayCore::add_device_user(StreamRef stream) {
  if (std::find(device_users_.begin(), device_users_.end(), stream) == device_users_.end()) {
    device_users_.push_back(stream);
  }
}

void ArrayCore::ensure_device_capacity(StreamRef stream, std::size_t keep) {
  if (device_ != nullptr && device_capacity_ >= size_) return;
  resolve_eviction_registry();
  const std::size_t new_capacity = std::max(capacity_, size_);
  auto* fresh = static_cast<std::byte*>(device_mr().allocate(stream, new_capacity));
  if (device_ != nullptr) {
    // Only the valid device prefix moves (nothing for a discard); the copy reads the old buffer
    // after its last writer, and the old buffer is freed on `stream` once every user of it is
    // joined there. An external buffer is left to its owner, untouched.
    try {
      join_device_users(stream);
      runtime().copy_async(fresh, device_, keep, CopyKind::device_to_device, stream);
    } catch (...) {
      device_resource_->deallocate(stream, fresh, new_capacity);
      throw;
    }
    if (keep > 0) counters_.add_d2d(keep);
    if (device_external_) {
      device_external_ = false;
      register_for_eviction();
    } else {
      device_resource_->deallocate(stream, device_, device_capacity_);
    }
    set_device_exclusive(stream);
  } else {
    register_for_eviction();
  }
  device_ = fresh;
  device_capacity_ = new_capacity;
}

void ArrayCore::copy_to_device(std::size_t begin, std::size_t end, StreamRef stream,
                               const char* reason, const smartarray::source_location& where) {
  // The copy writes the device buffer: it follows every earlier use of it on other streams.
  join_device_users(stream);
  if (storage_.mode == MemoryMode::pageable) {
    // Staged: the host buffer is read by memcpy before this returns, so no upload is pending.
    staged_copy_to_device(device_ + begin, host_ + begin, end - begin, stream);
    counters_.add_h2d(end - begin);
    trace_migration("H2D", end - begin, reason, id(), trace_label(), where);
    set_device_exclusive(stream);
    return;
  }
  PendingCopy pending{stream, PooledEvent{}};
  runtime().copy_async(device_ + begin, host_ + begin, end - begin, CopyKind::host_to_device, stream);
  // Recorded eagerly: host writers must wait for exactly this copy, not for later kernels.
  runtime().record(pending.event.get(), stream);
  host_readers_.push_back(std::move(pending));
  host_read_end_ = std::max(host_read_end_, end);
  counters_.add_h2d(end - begin);
  trace_migration("H2D", end - begin, reason, id(), trace_label(), where);
  set_device_exclusive(stream);
}

void ArrayCore::copy_to_host(std::byte* dst, std::size_t begin, std::size_t end, StreamRef stream,
                             const char* reason, const smartarray::source_location& where) {
  if (dst == host_) drop_host_guard();
  wait_device_writer(stream);
  if (storage_.mode == MemoryMode::pageable) {
    add_device_user(stream);
    staged_copy_to_host(dst + begin, device_ + begin, end - begin, stream);
    counters_.add_d2h(end - begin);
    counters_.add_wait();
    trace_migration("D2H", end - begin, reason, id(), trace_label(), where);
    return;
  }
  runtime().copy_async(dst + begin, device_ + begin, end - begin, CopyKind::device_to_host, stream);
  add_device_user(stream);
  // The host waits for this array's copy only (and what precedes it on that stream).
  host_wait_stream(stream);
  counters_.add_d2h(end - begin);
  counters_.add_wait();
  trace_migration("D2H", end - begin, reason, id(), trace_label(), where);
}

std::byte* ArrayCore::single_buffer_device_address() const {
  return storage_.mode == MemoryMode::mapped
             ? static_cast<std::byte*>(runtime().mapped_device_pointer(host_))
             : host_;
}

void ArrayCore::make_single_buffer_host_current(StreamRef stream, const char* reason,
                                                const smartarray::source_location& where) {
  wait_device_writer(stream);
  if (storage_.mode == MemoryMode::managed && runtime().properties().concurrent_managed_access) {
    // The device wrote last: bring the pages back in one migration instead of host page faults.
    runtime().prefetch_async(host_, size_, Location::host, stream);
    counters_.add_prefetch(size_);
    trace_migration("prefetch to host", size_, reason, id(), trace_label(), where);
    host_write_faults_pending_ = true;
  }
  add_device_user(stream);
  // The host waits for this array's writer (and the prefetch) only.
  host_wait_stream(stream);
  counters_.add_wait();
}

void ArrayCore::staged_copy_to_device(std::byte* dst, const std::byte* src, std::size_t bytes,
                                      StreamRef stream) {
  const std::size_t chunk = std::min(bytes, staging_chunk);
  const std::size_t blocks = std::min(staging_blocks, (bytes + chunk - 1) / chunk);
  std::array<std::byte*, staging_blocks> block{};
  std::array<PooledEvent, staging_blocks> copied;
  std::array<bool, staging_blocks> in_use{};
  try {
    for (std::size_t b = 0; b < blocks; ++b) {
      // allocate_sync: the pool hands a pinned block to a host writer only once its copies
      // are done.
      block[b] = static_cast<std::byte*>(host_mr().allocate_sync(chunk, host_alignment));
    }
    for (std::size_t offset = 0, i = 0; offset < bytes; offset += chunk, ++i) {
      const std::size_t b = i % blocks;
      const std::size_t n = std::min(chunk, bytes - offset);
      // Reuse a block once the DMA that read it is done; the other block's DMA runs meanwhile.
      if (in_use[b]) runtime().synchronize(copied[b].get());
      parallel_copy(block[b], src + offset, n);
      runtime().copy_async(dst + offset, block[b], n, CopyKind::host_to_device, stream,
                           Counted::no);
      runtime().record(copied[b].get(), stream);
      in_use[b] = true;
    }
    // The last chunks must reach the device before the blocks go back for anyone (see below).
    for (std::size_t b = 0; b < blocks; ++b) {
      if (in_use[b]) runtime().synchronize(copied[b].get());
    }
  } catch (...) {
    for (std::size_t b = 0; b < blocks; ++b) {
      if (block[b] != nullptr) host_resource_->deallocate(stream, block[b], chunk, host_alignment);
    }
    throw;
  }
  Runtime::count_transfer(CopyKind::host_to_device, bytes);  // one transfer, however many chunks
  // Every copy is done: the blocks go back for anyone. Released on the stream instead, a host
  // request could not take them while later work (the kernels) is queued there, and the download
  // of the result would grow the pinned pool in the middle of the call.
  for (std::size_t b = 0; b < blocks; ++b) {
    host_resource_->deallocate_sync(block[b], chunk, host_alignment);
  }
}

void ArrayCore::staged_copy_to_host(std::byte* dst, const std::byte* src, std::size_t bytes,
                                    StreamRef stream) {
  const std::size_t chunk = std::min(bytes, staging_chunk);
  const std::size_t chunks = (bytes + chunk - 1) / chunk;
  const std::size_t blocks = std::min(staging_blocks, chunks);
  std::array<std::byte*, staging_blocks> block{};
  std::array<PooledEvent, staging_blocks> copied;
  const auto chunk_bytes = [&](std::size_t i) { return std::min(chunk, bytes - i * chunk); };
  const auto issue = [&](std::size_t i) {
    const std::size_t b = i % blocks;
    runtime().copy_async(block[b], src + i * chunk, chunk_bytes(i), CopyKind::device_to_host,
                         stream, Counted::no);
    runtime().record(copied[b].get(), stream);
  };
  try {
    for (std::size_t b = 0; b < blocks; ++b) {
      block[b] = static_cast<std::byte*>(host_mr().allocate_sync(chunk, host_alignment));
    }
    for (std::size_t i = 0; i < std::min(blocks, chunks); ++i) issue(i);
    for (std::size_t i = 0; i < chunks; ++i) {
      // Drain chunk i while the DMA of chunk i + 1 runs, then refill its block.
      const std::size_t b = i % blocks;
      runtime().synchronize(copied[b].get());
      parallel_copy(dst + i * chunk, block[b], chunk_bytes(i));
      if (i + blocks < chunks) issue(i + blocks);
    }
  } catch (...) {
    for (std::size_t b = 0; b < blocks; ++b) {
      if (block[b] != nullptr) host_resource_->deallocate(stream, block[b], chunk, host_alignment);
    }
    throw;
  }
  Runtime::count_transfer(CopyKind::device_to_host, bytes);
  // Every chunk's copy was waited for: the blocks go back for anyone at once. Released on the
  // stream, a host request could not take them while later work is queued there, and the next
  // staged copy would grow the pinned pool instead.
  for (std::size_t b = 0; b < blocks; ++b) {
    host_resource_->deallocate_sync(block[b], chunk, host_alignment);
  }
}

void ArrayCore::fetch_stale_prefix(std::byte* dst, const char* reason,
                                   const smartarray::source_location& where) {
  if (single_buffer()) {
    make_single_buffer_host_current(device_writer_.value_or(StreamRef{}), reason, where);
    return;
  }
  copy_to_host(dst, 0, host_valid_begin_, device_writer_.value_or(StreamRef{}), reason, where);
}

std::byte* ArrayCore::acquire_host(Access access, std::optional<StreamRef> stream,
                                   const smartarray::source_location& where, bool require_written) {
  std::lock_guard lock(mutex_);
  AcquireScope scope(this, where);
  forget_retired_streams();
  touch();
  if (size_ == 0) return host_;
  if (access == Access::read) check_written(require_written, "host read", where);
  if (host_ == nullptr) {
    host_ = allocate_host(capacity_, host_pageable_);
  }
  settle_unwritten(Side::host);
  if (access != Access::discard && host_valid_begin_ > 0 && single_buffer()) {
    make_single_buffer_host_current(stream.value_or(device_writer_.value_or(StreamRef{})),
                                    "host access after device writes", where);
  } else if (access != Access::discard && host_valid_begin_ > 0) {
    const StreamRef copy_stream = stream.value_or(device_writer_.value_or(StreamRef{}));
    copy_to_host(host_, 0, host_valid_begin_, copy_stream,
                 access == Access::read ? "host read of a stale copy" : "host read_write of a stale copy",
                 where);
  }
  host_valid_begin_ = 0;
  if (access != Access::read) {
    wait_host_readers_locked();
    device_valid_end_ = 0;
    if (host_write_faults_pending_) {
      // No device work uses the pages now. Taken one by one inside the caller's memcpy, the
      // faults cost it about twice as much (16384 pages: 20 ms against 10 ms on the H100
      // machine); eight threads take them in about 3 ms.
      parallel_prefault_for_write(host_, size_);
      host_write_faults_pending_ = false;
    }
  }
  refresh_state();
  return host_;
}

std::byte* ArrayCore::acquire_device(Access access, StreamRef stream,
                                     const smartarray::source_location& where,
                                     bool require_written) {
  std::lock_guard lock(mutex_);
  AcquireScope scope(this, where);
  forget_retired_streams();
  touch();
  if (size_ == 0) return device_;
  if (access == Access::read) check_written(require_written, "device read", where);
  if (view_slot_ == 0) view_slot_ = acquire_view_slot(id());
  if (access != Access::read) {
    device_write_file_ = where.file_name();
    device_write_line_ = where.line();
  }
  // The steady state of a kernel loop: no copy, no event and no state to recompute.
  if (device_current_for(access, stream)) return device_;
  if (single_buffer()) {
    if (host_ == nullptr) host_ = allocate_host(capacity_, host_pageable_);
    settle_unwritten(Side::device);
    std::byte* const address = single_buffer_device_address();
    if (access == Access::discard || access == Access::read_write) {
      join_device_users(stream);
    }
    // cudaMemPrefetchAsync to a device needs concurrentManagedAccess; without it the driver
    // migrates managed memory at each launch, and host access is still safe because it waits
    // for this array's device work.
    if (access != Access::discard && device_valid_end_ < size_ &&
        storage_.mode == MemoryMode::managed &&
        runtime().properties().concurrent_managed_access) {
      // The host touched the data last: move it before the kernel faults it in page by page.
      runtime().prefetch_async(host_, size_, Location::device, stream);
      counters_.add_prefetch(size_);
      trace_migration("prefetch to device", size_, "device access after host writes", id(),
                      trace_label(), where);
      host_write_faults_pending_ = false;
    }
    if (access == Access::read) {
      wait_device_writer(stream);
      add_device_user(stream);
    } else {
      set_device_exclusive(stream);
    }
    device_valid_end_ = size_;
    if (access != Access::read) host_valid_begin_ = size_;
    // A host writer must wait for this kernel, and appends must not overwrite what it reads.
    host_read_end_ = std::max(host_read_end_, size_);
    refresh_state();
    start_views();
    return address;
  }
  ensure_device_capacity(stream, access == Access::discard ? 0 : device_valid_end_);
  settle_unwritten(Side::device);
  if (access == Access::discard) {
    join_device_users(stream);
    set_device_exclusive(stream);
  } else {
    if (device_valid_end_ < size_) {
      copy_to_device(device_valid_end_, size_, stream,
                     device_valid_end_ == 0 ? "device access of a stale copy"
                                            : "device access of a host-appended tail",
                     where);
    }
    if (access == Access::read) {
      wait_device_writer(stream);
      add_device_user(stream);
    } else {
      join_device_users(stream);
      set_device_exclusive(stream);
    }
  }
  device_valid_end_ = size_;
  if (access != Access::read) host_valid_begin_ = size_;
  refresh_state();
  start_views();
  return device_;
}

void ArrayCore::make_device_only(std::size_t bytes, StreamRef stream) {
  std::lock_guard lock(mutex_);
  SMARTARRAY_EXPECTS(size_ == 0 && host_ == nullptr && device_ == nullptr, logic_error,
                     "make_device_only on an array that already holds ", size_, " bytes");
  if (bytes == 0) return;
  if (single_buffer()) {
    host_ = allocate_host(bytes, host_pageable_);
  } else {
    resolve_eviction_registry();
    device_ = static_cast<std::byte*>(device_mr().allocate(stream, bytes));
    device_capacity_ = bytes;
    register_for_eviction();
  }
  capacity_ = size_ = bytes;
  host_valid_begin_ = device_valid_end_ = bytes;
  set_device_exclusive(stream);
  if (single_buffer()) host_read_end_ = bytes;
  refresh_state();
}

void ArrayCore::make_unwritten(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  SMARTARRAY_EXPECTS(size_ == 0 && host_ == nullptr && device_ == nullptr, logic_error,
                     "make_unwritten on an array that already holds ", size_, " bytes");
  if (bytes == 0) return;
  // "Valid" on both sides, so that no access copies anything; each buffer is made when its side
  // is first accessed (acquire_host and ensure_device_capacity allocate a missing buffer).
  capacity_ = size_ = bytes;
  host_valid_begin_ = 0;
  device_valid_end_ = bytes;
  unwritten_ = true;
  refresh_state();
}

void ArrayCore::wrap_device(std::byte* external, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  SMARTARRAY_EXPECTS(external != nullptr || bytes == 0, logic_error,
                     "wrap_device of a null pointer with a size of ", bytes, " bytes");
  SMARTARRAY_EXPECTS(!single_buffer(), logic_error, "wrap_device of ", bytes,
                     " bytes into an array in ", to_string(storage_.mode),
                     " mode; external device memory needs the explicit or pageable mode");
  SMARTARRAY_EXPECTS(size_ == 0 && host_ == nullptr && device_ == nullptr, logic_error,
                     "wrap_device on an array that already holds ", size_, " bytes");
  if (bytes == 0) return;
  // Not registered for eviction: dropping the owner's buffer would free no memory.
  device_ = external;
  device_capacity_ = bytes;
  device_external_ = true;
  capacity_ = size_ = bytes;
  host_valid_begin_ = device_valid_end_ = bytes;
  refresh_state();
}

void ArrayCore::copy_device_in(std::byte* dst, const std::byte* src, std::size_t bytes,
                               StreamRef stream, const smartarray::source_location& where) {
  std::lock_guard lock(mutex_);
  runtime().copy_async(dst, src, bytes, CopyKind::device_to_device, stream);
  counters_.add_d2d(bytes);
  trace_migration("D2D", bytes, "copy from another array", id(), trace_label(), where);
}

void ArrayCore::copy_out(std::byte* dst, std::size_t bytes, StreamRef stream, bool wait,
                         const smartarray::source_location& where, bool require_written) {
  std::lock_guard lock(mutex_);
  AcquireScope scope(this, where);
  forget_retired_streams();
  SMARTARRAY_EXPECTS(bytes <= size_, logic_error, "copy_out of ", bytes, " bytes from an array of ",
                     size_, " bytes");
  if (bytes == 0) return;
  check_written(require_written, "copy_to_host", where);
  if (unwritten_) return;  // no values to copy, and no buffer to copy them from
  touch();
  if (single_buffer()) {
    // One buffer: read it on the host once its writer is done; nothing is copied or prefetched.
    if (host_valid_begin_ > 0 && device_writer_) {
      stream_wait_stream(stream, *device_writer_);
      host_wait_stream(stream);
      counters_.add_wait();
    }
    std::memcpy(dst, host_, bytes);
    return;
  }
  const std::size_t from_device = std::min(host_valid_begin_, bytes);
  if (from_device < bytes) {
    std::memcpy(dst + from_device, host_ + from_device, bytes - from_device);
  }
  if (from_device == 0) return;
  // The stale host prefix comes straight from the device into `dst`; the host copy stays stale.
  wait_device_writer(stream);
  runtime().copy_async(dst, device_, from_device, CopyKind::device_to_host, stream);
  add_device_user(stream);
  counters_.add_d2h(from_device);
  trace_migration("D2H", from_device, "copy_to_host", id(), trace_label(), where);
  if (wait) {
    host_wait_stream(stream);
    counters_.add_wait();
  }
}

void ArrayCore::host_changed() {
  std::lock_guard lock(mutex_);
  SMARTARRAY_EXPECTS(host_valid_begin_ == 0 && !unwritten_, logic_error,
                     "host_changed() on an array whose host copy is stale (", size_,
                     " bytes); acquire the host side first");
  device_valid_end_ = 0;
  refresh_state();
}

void ArrayCore::order_device_write(StreamRef stream) {
  std::lock_guard lock(mutex_);
  forget_retired_streams();
  if (size_ == 0) return;
  join_device_users(stream);
  set_device_exclusive(stream);
  refresh_state();
}

void ArrayCore::device_changed(StreamRef stream) {
  std::lock_guard lock(mutex_);
  forget_retired_streams();
  SMARTARRAY_EXPECTS(device_valid_end_ == size_ && !unwritten_, logic_error,
                     "gpu_changed() on an array whose device copy is stale (", size_,
                     " bytes); acquire the device side first");
  if (size_ == 0) return;
  join_device_users(stream);
  set_device_exclusive(stream);
  host_valid_begin_ = size_;
  refresh_state();
}

void ArrayCore::reserve(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  if (bytes <= capacity_) return;
  forget_retired_streams();
  if (host_ == nullptr) {
    capacity_ = bytes;  // the host buffer is made when the host first needs it
  } else {
    reallocate_host(bytes);
  }
  refresh_state();
}

std::byte* ArrayCore::append_locked(std::size_t new_size) {
  std::lock_guard lock(mutex_);
  touch();
  forget_retired_streams();
  if (host_ == nullptr) {
    // A reserved capacity is taken as it is (constructors reserve the exact size first).
    bool pageable = false;
    const std::size_t bytes =
        new_size > capacity_ ? grown_capacity(new_size, capacity_) : capacity_;
    host_ = allocate_host(bytes, pageable);
    host_pageable_ = pageable;
    capacity_ = bytes;
  } else if (new_size > capacity_) {
    reallocate_host(grown_capacity(new_size, capacity_));
  } else if (size_ < host_read_end_) {
    wait_host_readers_locked();  // a pending upload still reads the bytes the tail overwrites
  }
  settle_unwritten(Side::host);
  // Both sides keep what they held; the new tail is valid on the host alone.
  size_ = new_size;
  refresh_state();
  return host_;
}

void ArrayCore::truncate_locked(std::size_t new_size) noexcept {
  std::lock_guard lock(mutex_);
  if (new_size >= size_) return;
  size_ = new_size;
  host_valid_begin_ = std::min(host_valid_begin_, new_size);
  device_valid_end_ = std::min(device_valid_end_, new_size);
  if (new_size == 0) unwritten_ = false;
  refresh_state();
}

std::byte* ArrayCore::insert_gap(std::size_t pos, std::size_t bytes,
                                 const smartarray::source_location& where) {
  std::lock_guard lock(mutex_);
  AcquireScope scope(this, where);
  touch();
  forget_retired_streams();
  if (host_ == nullptr) host_ = allocate_host(capacity_, host_pageable_);
  settle_unwritten(Side::host);
  const std::size_t old_size = size_;
  const std::size_t new_size = old_size + bytes;
  // Everything that can fail (allocation, the copy, the waits) runs before the contents change.
  std::size_t new_capacity = capacity_;
  std::byte* fresh = nullptr;
  bool fresh_pageable = false;
  if (new_size > capacity_) {
    new_capacity = grown_capacity(new_size, capacity_);
    fresh = allocate_host(new_capacity, fresh_pageable);
  }
  try {
    if (host_valid_begin_ > 0) {
      fetch_stale_prefix(host_, "host insert into a stale copy", where);
      host_valid_begin_ = 0;
    }
    wait_host_readers_locked();
  } catch (...) {
    free_unused_host(fresh, new_capacity, fresh_pageable);
    throw;
  }
  if (fresh == nullptr) {
    std::memmove(host_ + pos + bytes, host_ + pos, old_size - pos);
  } else {
    // Each element moves once, straight to its new place.
    std::memcpy(fresh, host_, pos);
    std::memcpy(fresh + pos + bytes, host_ + pos, old_size - pos);
    free_host(host_, capacity_, host_pageable_);
    host_ = fresh;
    host_pageable_ = fresh_pageable;
    capacity_ = new_capacity;
  }
  size_ = new_size;
  device_valid_end_ = 0;
  refresh_state();
  return host_;
}

std::byte* ArrayCore::erase_range(std::size_t pos, std::size_t bytes,
                                  const smartarray::source_location& where) {
  std::lock_guard lock(mutex_);
  AcquireScope scope(this, where);
  touch();
  forget_retired_streams();
  if (host_ == nullptr) host_ = allocate_host(capacity_, host_pageable_);
  settle_unwritten(Side::host);
  if (host_valid_begin_ > 0) {
    fetch_stale_prefix(host_, "host erase from a stale copy", where);
    host_valid_begin_ = 0;
  }
  wait_host_readers_locked();
  std::memmove(host_ + pos, host_ + pos + bytes, size_ - pos - bytes);
  size_ -= bytes;
  device_valid_end_ = 0;
  refresh_state();
  return host_;
}

std::byte* ArrayCore::assign_discard(std::size_t new_size) {
  std::lock_guard lock(mutex_);
  touch();
  forget_retired_streams();
  if (new_size > capacity_ || (host_ == nullptr && new_size > 0)) {
    // The old contents are dropped, so the new buffer receives no copy.
    const std::size_t new_capacity = std::max(new_size, capacity_);
    bool fresh_pageable = false;
    std::byte* fresh = allocate_host(new_capacity, fresh_pageable);
    free_host(host_, capacity_, host_pageable_);
    host_ = fresh;
    host_pageable_ = fresh_pageable;
    capacity_ = new_capacity;
  } else {
    wait_host_readers_locked();  // uploads may still read the bytes about to be overwritten
  }
  size_ = new_size;
  host_valid_begin_ = 0;
  device_valid_end_ = 0;
  unwritten_ = false;
  refresh_state();
  return host_;
}

void ArrayCore::assign_copy(const ArrayCore& other) {
  if (this == &other) return;
  ArrayCore copy(other);
  swap(copy);
  // The views of this array now see a new buffer: keep the array's slot and say so.
  std::swap(view_slot_, copy.view_slot_);
  if (view_slot_ != 0) {
    note_view_change(view_slot_, ViewChange::reallocated);
    start_views();
  }
  // `copy` now holds the old state, but its counters still hold the deep copy's transfers.
  const TransferStats made = copy.counters_.snapshot();
  if (made.d2d_count > 0) counters_.add_d2d(made.d2d_bytes);
}

void ArrayCore::shrink_to_fit() {
  std::lock_guard lock(mutex_);
  if (capacity_ == size_) return;
  forget_retired_streams();
  if (host_ == nullptr) {
    capacity_ = size_;
  } else if (size_ == 0) {
    free_host(host_, capacity_, host_pageable_);
    host_ = nullptr;
    capacity_ = 0;
  } else {
    reallocate_host(size_);
  }
  refresh_state();
}

std::size_t ArrayCore::evict_device_locked(bool allow_dirty) {
  forget_retired_streams();
  if (device_ == nullptr) return 0;
  if (host_valid_begin_ > 0) {
    if (!allow_dirty) return 0;
    if (host_ == nullptr) host_ = allocate_host(capacity_, host_pageable_);
    // The call whose allocation made room, when it was an acquire (eviction has no call of its
    // own).
    fetch_stale_prefix(host_, "eviction of a dirty device copy",
                       call_site_on_this_thread != nullptr
                           ? *call_site_on_this_thread
                           : smartarray::source_location::current());
    host_valid_begin_ = 0;
  }
  const std::size_t released = device_capacity_;
  release_device_buffer();
  device_valid_end_ = 0;
  refresh_readable();
  // Eviction runs on another thread: it moves the views' generation on but leaves the owner's
  // view state to the owner's next operation.
  if (view_slot_ != 0) note_view_change(view_slot_, ViewChange::reallocated);
  return released;
}

void ArrayCore::release_device_buffer() noexcept {
  if (device_ == nullptr) return;
  forget_retired_streams();
  // Free on one stream that has joined every user, so the pool reuses the block only after them.
  const StreamRef last = device_writer_.value_or(device_users_.empty() ? StreamRef{}
                                                                       : device_users_.front());
  try {
    join_device_users(last);
  } catch (const std::exception& error) {
    std::cerr << "smartarray: ordering the free of a device buffer failed: " << error.what()
              << "\n";
  }
  if (device_external_) {
    device_external_ = false;  // the owner frees it
  } else {
    device_resource_->deallocate(last, device_, device_capacity_);
  }
  device_ = nullptr;
  device_capacity_ = 0;
  device_writer_.reset();
  device_users_.clear();
}

void ArrayCore::release_all() noexcept {
  std::lock_guard lock(mutex_);
  // Registered exactly while a device buffer is held (eviction drops both under this lock), so a
  // host-only array never takes the registry's lock.
  unregister_for_eviction();
  release_device_buffer();
  free_host(host_, capacity_, host_pageable_);
  host_ = nullptr;
  host_pageable_ = false;
  device_writer_.reset();
  device_users_.clear();
  size_ = capacity_ = host_valid_begin_ = device_valid_end_ = 0;
  unwritten_ = false;
  if (view_slot_ != 0) {
    release_view_slot(view_slot_);
    view_slot_ = 0;
  }
  refresh_state();
}

}  // namespace smartarray::detail
