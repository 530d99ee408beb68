// The residency state machine behind SmartArray<T>. See detail/array_core.hpp for the model.
#include <smartarray/detail/array_core.hpp>
#include <smartarray/error.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/pool_resource.hpp>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <new>
#include <unordered_set>

namespace smartarray::detail {
namespace {

constexpr std::size_t host_alignment = 256;

/// A process-wide tick for least-recently-used ordering.
std::atomic<std::uint64_t> use_clock{0};

/// The array this thread is acquiring, which eviction must skip (its lock is held by this thread).
thread_local const ArrayCore* acquiring_on_this_thread = nullptr;

struct AcquireScope {
  explicit AcquireScope(const ArrayCore* core) noexcept : previous(acquiring_on_this_thread) {
    acquiring_on_this_thread = core;
  }
  ~AcquireScope() { acquiring_on_this_thread = previous; }
  AcquireScope(const AcquireScope&) = delete;
  AcquireScope& operator=(const AcquireScope&) = delete;
  const ArrayCore* previous;
};

/// Arrays that hold device buffers. The device pool's eviction hook drops their copies: clean ones
/// first, then dirty ones (written back), least recently used first.
class EvictionRegistry {
 public:
  void add(ArrayCore* core) {
    std::lock_guard lock(mutex_);
    arrays_.insert(core);
  }
  void remove(ArrayCore* core) noexcept {
    std::lock_guard lock(mutex_);
    arrays_.erase(core);
  }
  std::size_t evict(std::size_t bytes_needed) {
    std::lock_guard lock(mutex_);
    std::vector<ArrayCore*> order(arrays_.begin(), arrays_.end());
    std::sort(order.begin(), order.end(),
              [](const ArrayCore* a, const ArrayCore* b) { return a->last_use() < b->last_use(); });
    std::size_t released = 0;
    for (const bool allow_dirty : {false, true}) {
      for (ArrayCore* core : order) {
        if (released >= bytes_needed) return released;
        if (core == acquiring_on_this_thread || !arrays_.contains(core)) continue;
        std::unique_lock array_lock(core->mutex(), std::try_to_lock);
        if (!array_lock.owns_lock()) continue;
        const std::size_t freed = core->evict_device_locked(allow_dirty);
        if (freed > 0) {
          released += freed;
          arrays_.erase(core);
        }
      }
    }
    return released;
  }

 private:
  std::mutex mutex_;
  std::unordered_set<ArrayCore*> arrays_;
};

EvictionRegistry& eviction_registry() {
  static auto* registry = new EvictionRegistry;  // outlives every array
  return *registry;
}

void register_eviction_hook_once() {
  static const bool registered = [] {
    (void)default_device_pool().add_eviction_hook(
        [](std::size_t bytes_needed) { return eviction_registry().evict(bytes_needed); });
    return true;
  }();
  (void)registered;
}

void note_pageable_fallback(std::size_t bytes, const std::exception& why) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::cerr << "smartarray: pinned host allocation of " << bytes
              << " bytes failed; using pageable memory (slower transfers): " << why.what() << "\n";
  });
}

}  // namespace

ArrayCore::ArrayCore(MemoryResource* host_resource, MemoryResource* device_resource)
    : host_resource_(host_resource != nullptr ? host_resource : &pinned_resource()),
      device_resource_(device_resource != nullptr ? device_resource : &smartarray::device_resource()) {}

ArrayCore::~ArrayCore() { release_all(); }

ArrayCore::ArrayCore(const ArrayCore& other)
    : host_resource_(other.host_resource_), device_resource_(other.device_resource_) {
  std::lock_guard lock(other.mutex_);
  if (other.size_ == 0) return;
  const std::size_t bytes = other.size_;
  capacity_ = bytes;
  // Each side copies only what it holds valid; a stale side is never copied.
  if (other.host_valid_begin_ < bytes) {
    host_ = allocate_host(bytes, host_pageable_);
    std::memcpy(host_ + other.host_valid_begin_, other.host_ + other.host_valid_begin_,
                bytes - other.host_valid_begin_);
  }
  if (other.device_valid_end_ > 0) {
    const StreamRef stream = other.device_writer_.value_or(StreamRef{});
    try {
      register_eviction_hook_once();
      device_ = static_cast<std::byte*>(device_resource_->allocate(stream, bytes));
      device_capacity_ = bytes;
      runtime().copy_async(device_, other.device_, other.device_valid_end_,
                           CopyKind::device_to_device, stream);
    } catch (...) {
      release_all();
      throw;
    }
    counters_.add_d2d(other.device_valid_end_);
    device_writer_ = stream;
    device_users_.assign(1, stream);
    eviction_registry().add(this);
  }
  size_ = bytes;
  host_valid_begin_ = other.host_valid_begin_;
  device_valid_end_ = other.device_valid_end_;
  refresh_flags();
}

ArrayCore::ArrayCore(ArrayCore&& other) noexcept
    : host_resource_(other.host_resource_), device_resource_(other.device_resource_) {
  swap(other);
}

void ArrayCore::swap(ArrayCore& other) noexcept {
  if (this == &other) return;
  std::scoped_lock lock(mutex_, other.mutex_);
  // The registry is keyed by address: re-register whichever side now holds a device buffer.
  if (device_ != nullptr) eviction_registry().remove(this);
  if (other.device_ != nullptr) eviction_registry().remove(&other);
  std::swap(host_resource_, other.host_resource_);
  std::swap(device_resource_, other.device_resource_);
  std::swap(host_, other.host_);
  std::swap(host_pageable_, other.host_pageable_);
  std::swap(device_, other.device_);
  std::swap(device_capacity_, other.device_capacity_);
  std::swap(size_, other.size_);
  std::swap(capacity_, other.capacity_);
  std::swap(host_valid_begin_, other.host_valid_begin_);
  std::swap(device_valid_end_, other.device_valid_end_);
  std::swap(device_writer_, other.device_writer_);
  std::swap(device_users_, other.device_users_);
  std::swap(host_readers_, other.host_readers_);
  if (device_ != nullptr) eviction_registry().add(this);
  if (other.device_ != nullptr) eviction_registry().add(&other);
  refresh_flags();
  other.refresh_flags();
}

void ArrayCore::refresh_flags() noexcept {
  const bool readable = host_valid_begin_ == 0;
  host_readable_.store(readable, std::memory_order_release);
  host_writable_.store(readable && device_valid_end_ == 0 && host_readers_.empty(),
                       std::memory_order_release);
}

void ArrayCore::touch() noexcept {
  last_use_.store(use_clock.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

bool ArrayCore::valid(Side side) const noexcept {
  std::lock_guard lock(mutex_);
  return side == Side::host ? host_valid_begin_ == 0 : device_valid_end_ == size_;
}

std::byte* ArrayCore::allocate_host(std::size_t bytes, bool& pageable) {
  pageable = false;
  if (bytes == 0) return nullptr;
  try {
    return static_cast<std::byte*>(host_resource_->allocate_sync(bytes, host_alignment));
  } catch (const std::bad_alloc& error) {
    note_pageable_fallback(bytes, error);
  }
  pageable = true;
  return static_cast<std::byte*>(::operator new(bytes, std::align_val_t{host_alignment}));
}

void ArrayCore::free_host(std::byte* ptr, std::size_t bytes, bool pageable) noexcept {
  if (ptr == nullptr) return;
  if (pageable) {
    ::operator delete(ptr, std::align_val_t{host_alignment});
    return;
  }
  // A pinned block that copies still read goes back on their stream: the pool hands it to a host
  // writer only once they are done.
  if (host_readers_.size() == 1) {
    host_resource_->deallocate(host_readers_.front().stream, ptr, bytes, host_alignment);
    host_readers_.clear();
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
  host_resource_->deallocate_sync(ptr, bytes, host_alignment);
}

void ArrayCore::reallocate_host(std::size_t new_capacity) {
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

void ArrayCore::wait_host_readers_locked() {
  // Pop each copy once it is done, so that a failed wait leaves the rest tracked.
  while (!host_readers_.empty()) {
    PendingCopy& copy = host_readers_.back();
    if (!runtime().query(copy.event.get())) runtime().synchronize(copy.event.get());
    host_readers_.pop_back();
  }
}

void ArrayCore::wait_host_readers() {
  std::lock_guard lock(mutex_);
  wait_host_readers_locked();
  refresh_flags();
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

void ArrayCore::ensure_device_capacity(StreamRef stream) {
  if (device_ != nullptr && device_capacity_ >= size_) return;
  register_eviction_hook_once();
  const std::size_t new_capacity = std::max(capacity_, size_);
  auto* fresh = static_cast<std::byte*>(device_resource_->allocate(stream, new_capacity));
  if (device_ != nullptr) {
    // Only the valid device prefix moves; the copy reads the old buffer after its last writer, and
    // the old buffer is freed on `stream` once every user of it is joined there.
    try {
      join_device_users(stream);
      runtime().copy_async(fresh, device_, device_valid_end_, CopyKind::device_to_device, stream);
    } catch (...) {
      device_resource_->deallocate(stream, fresh, new_capacity);
      throw;
    }
    counters_.add_d2d(device_valid_end_);
    device_resource_->deallocate(stream, device_, device_capacity_);
    set_device_exclusive(stream);
  } else {
    eviction_registry().add(this);
  }
  device_ = fresh;
  device_capacity_ = new_capacity;
}

void ArrayCore::copy_to_device(std::size_t begin, std::size_t end, StreamRef stream,
                               const char* reason, const std::source_location& where) {
  // The copy writes the device buffer: it follows every earlier use of it on other streams.
  join_device_users(stream);
  PendingCopy pending{stream, PooledEvent{}};
  runtime().copy_async(device_ + begin, host_ + begin, end - begin, CopyKind::host_to_device, stream);
  // Recorded eagerly: host writers must wait for exactly this copy, not for later kernels.
  runtime().record(pending.event.get(), stream);
  host_readers_.push_back(std::move(pending));
  counters_.add_h2d(end - begin);
  trace_migration("H2D", end - begin, reason, this, where);
  set_device_exclusive(stream);
}

void ArrayCore::copy_to_host(std::size_t begin, std::size_t end, StreamRef stream,
                             const char* reason, const std::source_location& where) {
  wait_device_writer(stream);
  runtime().copy_async(host_ + begin, device_ + begin, end - begin, CopyKind::device_to_host, stream);
  add_device_user(stream);
  // The host waits for this array's copy only (and what precedes it on that stream).
  PooledEvent done;
  runtime().record(done.get(), stream);
  runtime().synchronize(done.get());
  counters_.add_d2h(end - begin);
  counters_.add_wait();
  trace_migration("D2H", end - begin, reason, this, where);
}

std::byte* ArrayCore::acquire_host(Access access, std::optional<StreamRef> stream,
                                   const std::source_location& where) {
  std::lock_guard lock(mutex_);
  AcquireScope scope(this);
  touch();
  if (size_ == 0) return host_;
  if (host_ == nullptr) {
    host_ = allocate_host(capacity_, host_pageable_);
  }
  if (access != Access::discard && host_valid_begin_ > 0) {
    const StreamRef copy_stream = stream.value_or(device_writer_.value_or(StreamRef{}));
    copy_to_host(0, host_valid_begin_, copy_stream,
                 access == Access::read ? "host read of a stale copy" : "host read_write of a stale copy",
                 where);
  }
  host_valid_begin_ = 0;
  if (access != Access::read) {
    wait_host_readers_locked();
    device_valid_end_ = 0;
  }
  refresh_flags();
  return host_;
}

std::byte* ArrayCore::acquire_device(Access access, StreamRef stream,
                                     const std::source_location& where) {
  std::lock_guard lock(mutex_);
  AcquireScope scope(this);
  touch();
  if (size_ == 0) return device_;
  ensure_device_capacity(stream);
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
  refresh_flags();
  return device_;
}

void ArrayCore::host_changed() {
  std::lock_guard lock(mutex_);
  SMARTARRAY_EXPECTS(host_valid_begin_ == 0, logic_error,
                     "host_changed() on an array whose host copy is stale (", size_,
                     " bytes); acquire the host side first");
  device_valid_end_ = 0;
  refresh_flags();
}

void ArrayCore::device_changed(StreamRef stream) {
  std::lock_guard lock(mutex_);
  SMARTARRAY_EXPECTS(device_valid_end_ == size_, logic_error,
                     "gpu_changed() on an array whose device copy is stale (", size_,
                     " bytes); acquire the device side first");
  if (size_ == 0) return;
  join_device_users(stream);
  set_device_exclusive(stream);
  host_valid_begin_ = size_;
  refresh_flags();
}

void ArrayCore::reserve(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  if (bytes <= capacity_) return;
  if (host_ == nullptr) {
    capacity_ = bytes;  // the host buffer is made when the host first needs it
    return;
  }
  reallocate_host(bytes);
  refresh_flags();
}

std::byte* ArrayCore::append(std::size_t new_size) {
  std::lock_guard lock(mutex_);
  touch();
  if (host_ == nullptr) {
    bool pageable = false;
    const std::size_t bytes = std::max(capacity_, new_size);
    host_ = allocate_host(bytes, pageable);
    host_pageable_ = pageable;
    capacity_ = bytes;
  } else if (new_size > capacity_) {
    reallocate_host(std::max(new_size, 2 * capacity_));
  }
  // Both sides keep what they held; the new tail is valid on the host alone.
  size_ = new_size;
  refresh_flags();
  return host_;
}

void ArrayCore::truncate(std::size_t new_size) noexcept {
  std::lock_guard lock(mutex_);
  if (new_size >= size_) return;
  size_ = new_size;
  host_valid_begin_ = std::min(host_valid_begin_, new_size);
  device_valid_end_ = std::min(device_valid_end_, new_size);
  refresh_flags();
}

void ArrayCore::shrink_to_fit() {
  std::lock_guard lock(mutex_);
  if (capacity_ == size_) return;
  if (host_ == nullptr) {
    capacity_ = size_;
    return;
  }
  if (size_ == 0) {
    free_host(host_, capacity_, host_pageable_);
    host_ = nullptr;
    capacity_ = 0;
  } else {
    reallocate_host(size_);
  }
  refresh_flags();
}

std::size_t ArrayCore::evict_device_locked(bool allow_dirty) {
  if (device_ == nullptr) return 0;
  if (host_valid_begin_ > 0) {
    if (!allow_dirty) return 0;
    if (host_ == nullptr) host_ = allocate_host(capacity_, host_pageable_);
    copy_to_host(0, host_valid_begin_, device_writer_.value_or(StreamRef{}),
                 "eviction of a dirty device copy", std::source_location::current());
    host_valid_begin_ = 0;
  }
  const std::size_t released = device_capacity_;
  release_device_buffer();
  device_valid_end_ = 0;
  refresh_flags();
  return released;
}

void ArrayCore::release_device_buffer() noexcept {
  if (device_ == nullptr) return;
  // Free on one stream that has joined every user, so the pool reuses the block only after them.
  const StreamRef last = device_writer_.value_or(device_users_.empty() ? StreamRef{}
                                                                       : device_users_.front());
  try {
    join_device_users(last);
  } catch (const std::exception& error) {
    std::cerr << "smartarray: ordering the free of a device buffer failed: " << error.what()
              << "\n";
  }
  device_resource_->deallocate(last, device_, device_capacity_);
  device_ = nullptr;
  device_capacity_ = 0;
  device_writer_.reset();
  device_users_.clear();
}

void ArrayCore::release_all() noexcept {
  eviction_registry().remove(this);
  std::lock_guard lock(mutex_);
  release_device_buffer();
  free_host(host_, capacity_, host_pageable_);
  host_ = nullptr;
  host_pageable_ = false;
  size_ = capacity_ = host_valid_begin_ = device_valid_end_ = 0;
  refresh_flags();
}

}  // namespace smartarray::detail
