// ArrayCore's host buffer and the vector operations that change the size: appends, truncations,
// inserts, erases, assignments and capacity changes.
#include <smartarray/core/detail/array_core.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include "core/storage.hpp"
#include "core/transaction.hpp"

#include <algorithm>
#include <cstring>
#include <iostream>

namespace smartarray::detail {
namespace {

/// The capacity for a growth to `needed` bytes from `capacity`: geometric, for amortized O(1)
/// appends, and never below one aligned block (smaller buffers would waste the rest of it).
std::size_t grown_capacity(std::size_t needed, std::size_t capacity) {
  return std::max({needed, 2 * capacity, host_alignment});
}

}  // namespace

std::byte* ArrayCore::allocate_host(std::size_t bytes, bool& pageable) {
  pageable = false;
  if (bytes == 0) return nullptr;
  return strategy().allocate_host(context("host allocation", smartarray::source_location::current()),
                                  bytes, pageable);
}

void ArrayCore::ensure_host_buffer() {
  if (buffers_.host == nullptr) {
    buffers_.host = allocate_host(buffers_.capacity, buffers_.host_pageable);
  }
}

void ArrayCore::free_host(std::byte* ptr, std::size_t bytes, bool pageable) noexcept {
  if (ptr == nullptr) return;
  if (ptr == observers_.guarded_host) drop_host_guard();
  if (one_buffer()) {
    // Kernels may still use the one buffer: it goes back once they are done.
    try {
      wait_host_readers_locked();
    } catch (const std::exception& error) {
      std::cerr << "smartarray: waiting for device work before freeing " << bytes << " bytes of "
                << to_string(mode()) << " memory failed: " << error.what() << "\n";
    }
    free_unused_host(ptr, bytes, pageable);
    return;
  }
  // A pinned block that a copy still reads goes back on its stream: the pool hands it to a host
  // writer only once that stream has completed. A copy that is already done frees it for anyone:
  // a stream that has since taken more work would otherwise keep the block from host requests,
  // and the pool would grow instead. Pageable memory has no such guard, so it waits for them.
  StreamOrder& readers = host_order();
  if (!pageable && readers.one_host_reader()) {
    if (readers.sole_host_reader_done()) {
      placement_.host_resource->deallocate_sync(ptr, bytes, host_alignment);
    } else {
      placement_.host_resource->deallocate(readers.sole_host_reader_stream(), ptr, bytes,
                                           host_alignment);
    }
    readers.drop_host_readers();
    return;
  }
  if (readers.host_readers_pending()) {
    try {
      wait_host_readers_locked();
    } catch (const std::exception& error) {
      std::cerr << "smartarray: waiting for copies before freeing host memory failed: "
                << error.what() << "\n";
    }
  }
  free_unused_host(ptr, bytes, pageable);
}

void ArrayCore::free_unused_host(std::byte* ptr, std::size_t bytes, bool pageable) noexcept {
  if (ptr == nullptr) return;
  if (ptr == observers_.guarded_host) drop_host_guard();
  strategy().free_unused_host(context("host free", smartarray::source_location::current()), ptr,
                              bytes, pageable);
}

void ArrayCore::reallocate_host(std::size_t new_capacity) {
  const std::size_t size = state_.size();
  if (one_buffer()) {
    // Device work may still write the buffer: wait for it, then move every byte on the host. The
    // new buffer was last touched by the host.
    wait_host_readers_locked();
    bool unused = false;
    std::byte* fresh = allocate_host(new_capacity, unused);
    if (buffers_.host != nullptr && size > 0) std::memcpy(fresh, buffers_.host, size);
    free_unused_host(buffers_.host, buffers_.capacity, false);
    buffers_.host = fresh;
    buffers_.capacity = new_capacity;
    state_ = state_.host_touched_last();
    return;
  }
  bool fresh_pageable = false;
  std::byte* fresh = allocate_host(new_capacity, fresh_pageable);
  // Only the bytes the host holds move; stale ones are dropped, never copied.
  if (buffers_.host != nullptr) {
    state_.for_each_held(Side::host, size, [&](ByteRange range) {
      std::memcpy(fresh + range.begin, buffers_.host + range.begin, range.size());
    });
  }
  free_host(buffers_.host, buffers_.capacity, buffers_.host_pageable);
  buffers_.host = fresh;
  buffers_.host_pageable = fresh_pageable;
  buffers_.capacity = new_capacity;
}

bool ArrayCore::insert_in_place(std::size_t pos, std::size_t bytes) noexcept {
  const std::size_t size = state_.size();
  if (!host_writable_ || size + bytes > fast_limit_) return false;
  std::memmove(buffers_.host + pos + bytes, buffers_.host + pos, size - pos);
  state_.set_size_in_window(size + bytes);
  note_fast_resize();
  return true;
}

void ArrayCore::reserve(std::size_t bytes) {
  Transaction transaction(*this, Transaction::Kind::change);
  if (bytes <= buffers_.capacity) return;
  if (buffers_.host == nullptr) {
    buffers_.capacity = bytes;  // the host buffer is made when the host first needs it
  } else {
    reallocate_host(bytes);
  }
}

std::byte* ArrayCore::append_locked(std::size_t new_size) {
  Transaction transaction(*this, Transaction::Kind::use);
  const std::size_t capacity = buffers_.capacity;
  if (buffers_.host == nullptr) {
    // A reserved capacity is taken as it is (constructors reserve the exact size first).
    const std::size_t bytes = new_size > capacity ? grown_capacity(new_size, capacity) : capacity;
    buffers_.host = allocate_host(bytes, buffers_.host_pageable);
    buffers_.capacity = bytes;
  } else if (new_size > capacity) {
    reallocate_host(grown_capacity(new_size, capacity));
  } else if (state_.size() < host_order().host_read_end()) {
    wait_host_readers_locked();  // a pending upload still reads the bytes the tail overwrites
  }
  // Both sides keep what they held; the new tail is valid on the host alone.
  state_ = state_.settled(Side::host, one_buffer()).resized(new_size);
  return buffers_.host;
}

void ArrayCore::truncate_locked(std::size_t new_size) noexcept {
  Transaction transaction(*this, Transaction::Kind::change);
  if (new_size >= state_.size()) return;
  state_ = state_.resized(new_size);
}

std::byte* ArrayCore::insert_gap(std::size_t pos, std::size_t bytes,
                                 const smartarray::source_location& where) {
  Transaction transaction(*this, Transaction::Kind::use, &where);
  ensure_host_buffer();
  state_ = state_.settled(Side::host, one_buffer());
  const std::size_t old_size = state_.size();
  const std::size_t new_size = old_size + bytes;
  // Everything that can fail (allocation, the copy, the waits) runs before the contents change.
  std::size_t new_capacity = buffers_.capacity;
  std::byte* fresh = nullptr;
  bool fresh_pageable = false;
  if (new_size > buffers_.capacity) {
    new_capacity = grown_capacity(new_size, buffers_.capacity);
    fresh = allocate_host(new_capacity, fresh_pageable);
  }
  try {
    make_host_whole("host insert into a stale copy", where);
    wait_host_readers_locked();
  } catch (...) {
    free_unused_host(fresh, new_capacity, fresh_pageable);
    throw;
  }
  std::byte* const host = buffers_.host;
  if (fresh == nullptr) {
    std::memmove(host + pos + bytes, host + pos, old_size - pos);
  } else {
    // Each element moves once, straight to its new place.
    std::memcpy(fresh, host, pos);
    std::memcpy(fresh + pos + bytes, host + pos, old_size - pos);
    free_host(host, buffers_.capacity, buffers_.host_pageable);
    buffers_.host = fresh;
    buffers_.host_pageable = fresh_pageable;
    buffers_.capacity = new_capacity;
  }
  state_ = state_.resized(new_size).host_written();
  return buffers_.host;
}

std::byte* ArrayCore::erase_range(std::size_t pos, std::size_t bytes,
                                  const smartarray::source_location& where) {
  Transaction transaction(*this, Transaction::Kind::use, &where);
  ensure_host_buffer();
  state_ = state_.settled(Side::host, one_buffer());
  make_host_whole("host erase from a stale copy", where);
  wait_host_readers_locked();
  const std::size_t size = state_.size();
  std::memmove(buffers_.host + pos, buffers_.host + pos + bytes, size - pos - bytes);
  state_ = state_.resized(size - bytes).host_written();
  return buffers_.host;
}

std::byte* ArrayCore::assign_discard(std::size_t new_size) {
  Transaction transaction(*this, Transaction::Kind::use);
  if (new_size > buffers_.capacity || (buffers_.host == nullptr && new_size > 0)) {
    // The old contents are dropped, so the new buffer receives no copy.
    const std::size_t new_capacity = std::max(new_size, buffers_.capacity);
    bool fresh_pageable = false;
    std::byte* fresh = allocate_host(new_capacity, fresh_pageable);
    free_host(buffers_.host, buffers_.capacity, buffers_.host_pageable);
    buffers_.host = fresh;
    buffers_.host_pageable = fresh_pageable;
    buffers_.capacity = new_capacity;
  } else {
    wait_host_readers_locked();  // uploads may still read the bytes about to be overwritten
  }
  state_ = state_.host_overwritten(new_size);
  return buffers_.host;
}

void ArrayCore::assign_copy(const ArrayCore& other) {
  if (this == &other) return;
  ArrayCore copy(other);
  swap(copy);
  // The views of this array now see new buffers: keep the array's slots and say so.
  for (int device = 0; device < std::max(device_copies(), copy.device_copies()); ++device) {
    ViewState& views = device_copy(device).views;
    std::swap(views.slot, copy.device_copy(device).views.slot);
    if (views.slot != 0) {
      note_view_change(views.slot, ViewChange::reallocated);
      start_views(device);
    }
  }
  // `copy` now holds the old state, but its counters still hold the deep copy's transfers.
  const TransferStats made = copy.counters_.snapshot();
  if (made.d2d_count > 0) counters_.add_d2d(made.d2d_bytes);
}

void ArrayCore::shrink_to_fit() {
  Transaction transaction(*this, Transaction::Kind::change);
  const std::size_t size = state_.size();
  if (buffers_.capacity == size) return;
  if (buffers_.host == nullptr) {
    buffers_.capacity = size;
  } else if (size == 0) {
    free_host(buffers_.host, buffers_.capacity, buffers_.host_pageable);
    buffers_.host = nullptr;
    buffers_.capacity = 0;
  } else {
    reallocate_host(size);
  }
}

}  // namespace smartarray::detail
