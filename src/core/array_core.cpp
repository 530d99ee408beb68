// The array behind SmartArray<T>: the acquires, copies out, the Numba-style change marks, the
// device buffer and eviction. It carries out the residency state machine
// (core/detail/residency_state.hpp) through the storage strategy of its memory mode
// (storage.hpp). See core/detail/array_core.hpp for the parts; construction and moves are in
// array_lifetime.cpp, the host buffer and the vector operations in host_buffer.cpp.
#include <smartarray/core/detail/array_core.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include "../parallel_copy.hpp"
#include "eviction.hpp"
#include "storage.hpp"
#include "transaction.hpp"

#include <algorithm>
#include <cstring>
#include <iostream>

namespace smartarray::detail {

const StorageStrategy& ArrayCore::strategy() const noexcept {
  return storage_strategy(placement_.storage.mode);
}

StorageContext ArrayCore::context(const char* reason, const smartarray::source_location& where) {
  return StorageContext{*this, reason, where};
}

void ArrayCore::check_written(bool require_written, const char* what,
                              const smartarray::source_location& where) const {
  SMARTARRAY_EXPECTS(!require_written || !state_.is_unwritten(), logic_error, describe(), " (",
                     state_.size(), " bytes) was made with no_init and never written: ", what,
                     " at ", where.file_name(), ":", where.line(),
                     " reads indeterminate values; write it first (on the host, on the device or "
                     "with assign)");
}

void ArrayCore::touch() noexcept { last_use_.store(next_use_tick(), std::memory_order_relaxed); }

bool ArrayCore::valid(Side side) const noexcept {
  std::lock_guard lock(mutex_);
  return state_.valid(side);
}

void ArrayCore::carry_out(const CopyPlan& plan, std::byte* dst, StreamRef stream,
                          const char* reason, const smartarray::source_location& where) {
  if (plan.copies_nothing()) return;
  const StorageContext here = context(reason, where);
  // A plan copies one way: to the side that it acquires.
  if (plan.copies().front().to == Side::device) {
    strategy().to_device(here, plan.copies(), stream);
    return;
  }
  for (const PlannedCopy& copy : plan.copies()) strategy().to_host(here, dst, copy.range, stream);
}

std::byte* ArrayCore::acquire(Side side, Access access, std::optional<StreamRef> stream,
                              const smartarray::source_location& where, bool require_written) {
  Transaction transaction(*this, Transaction::Kind::use, &where);
  return acquire_locked(transaction, side, access, {0, state_.size()}, stream, where,
                        require_written);
}

std::byte* ArrayCore::acquire_range(Side side, Access access, ByteRange range,
                                    std::optional<StreamRef> stream,
                                    const smartarray::source_location& where,
                                    bool require_written) {
  Transaction transaction(*this, Transaction::Kind::use, &where);
  SMARTARRAY_EXPECTS(range.begin <= range.end && range.end <= state_.size(), std::out_of_range,
                     describe(), ": the bytes [", range.begin, ", ", range.end,
                     ") leave the array of ", state_.size(), " bytes");
  if (range.empty()) {
    transaction.changed_nothing();
    return side == Side::host ? buffers_.host : buffers_.device;
  }
  return acquire_locked(transaction, side, access, range, stream, where, require_written);
}

void ArrayCore::acquire_element(Access access, std::size_t offset, std::size_t bytes,
                                const smartarray::source_location& where, bool require_written) {
  Transaction transaction(*this, Transaction::Kind::use, &where);
  const std::size_t size = state_.size();
  if (offset + bytes > size) return;  // debug builds checked the index; std::vector's rules
  if (access == Access::read) check_written(require_written, "host read", where);
  if (one_buffer()) {
    // A one-buffer array makes its host current whole (a managed prefetch moves every page).
    acquire_host_range(access, {0, size}, std::nullopt, where);
    return;
  }
  const unsigned shift = placement_.storage.tile_shift;
  const std::size_t first_tile = offset >> shift;
  const std::size_t last_tile = (offset + bytes - 1) >> shift;
  const ByteRange tiles{first_tile << shift, std::min(size, (last_tile + 1) << shift)};
  if (!state_.holds_range(Side::host, tiles)) {
    // A run of misses on consecutive tiles, in either direction: after a few, everything ahead.
    const int step = first_tile == element_.miss_tile + 1 ? 1
                     : first_tile + 1 == element_.miss_tile ? -1
                                                            : 0;
    if (step != 0 && (element_.miss_run <= 1 || step == element_.miss_step)) {
      ++element_.miss_run;
    } else {
      element_.miss_run = 1;
    }
    element_.miss_step = step;
    element_.miss_tile = first_tile;
    if (element_.miss_run >= readahead_after_misses) {
      const ByteRange ahead = step > 0 ? ByteRange{tiles.begin, size} : ByteRange{0, tiles.end};
      acquire_host_range(Access::read, ahead, std::nullopt, where);
    }
  }
  element_.hint = offset;
  acquire_host_range(access, tiles, std::nullopt, where);
}

std::byte* ArrayCore::acquire_locked(Transaction& transaction, Side side, Access access,
                                     ByteRange range, std::optional<StreamRef> stream,
                                     const smartarray::source_location& where,
                                     bool require_written) {
  if (state_.size() == 0) {
    transaction.changed_nothing();
    return side == Side::host ? buffers_.host : buffers_.device;
  }
  if (access == Access::read) {
    check_written(require_written, side == Side::host ? "host read" : "device read", where);
  }
  if (side == Side::host) return acquire_host_range(access, range, stream, where);
  if (observers_.view_slot == 0) observers_.view_slot = acquire_view_slot(id());
  if (access != Access::read) {
    observers_.device_write_file = where.file_name();
    observers_.device_write_line = where.line();
  }
  // The steady state of a kernel loop: no copy, no event and no state to recompute.
  if (device_current_for(access, *stream)) {
    transaction.changed_nothing();
    return buffers_.device;
  }
  std::byte* const address = acquire_device_locked(access, range, *stream, where);
  transaction.start_views();
  return address;
}

std::byte* ArrayCore::acquire_host_range(Access access, ByteRange range,
                                         std::optional<StreamRef> stream,
                                         const smartarray::source_location& where) {
  ensure_host_buffer();
  const Transition transition = state_.acquire(Side::host, access, one_buffer(), range);
  const char* reason = one_buffer()              ? "host access after device writes"
                       : access == Access::read ? "host read of a stale copy"
                                                : "host read_write of a stale copy";
  carry_out(transition.plan, buffers_.host, stream.value_or(order_.writer_or_default()), reason,
            where);
  state_.commit(transition.next);
  if (access != Access::read) {
    wait_host_readers_locked();
    if (buffers_.host_write_faults_pending) {
      // No device work uses the pages now. Taken one by one inside the caller's memcpy, the
      // faults cost it about twice as much (16384 pages: 20 ms against 10 ms on the H100
      // machine); eight threads take them in about 3 ms.
      parallel_prefault_for_write(buffers_.host + range.begin, range.size());
      if (range.size() == state_.size()) buffers_.host_write_faults_pending = false;
    }
  }
  return buffers_.host;
}

std::byte* ArrayCore::acquire_device_locked(Access access, ByteRange range, StreamRef stream,
                                            const smartarray::source_location& where) {
  const Transition transition = state_.acquire(Side::device, access, one_buffer(), range);
  // A discard of everything keeps nothing of the old device copy.
  const bool overwrites_all = access == Access::discard && range.size() == state_.size();
  // One buffer: a writer's prefetch follows every other use of it.
  const bool joined_first =
      one_buffer() && transition.plan.ordering() == Ordering::after_every_use;
  const char* reason = "device access after host writes";
  if (one_buffer()) {
    ensure_host_buffer();
    if (joined_first) order_.join_users(stream);
  } else {
    ensure_device_capacity(stream, overwrites_all ? 0 : state_.device_extent());
    reason = state_.device_extent() == 0 ? "device access of a stale copy"
                                         : "device access of a host-appended tail";
  }
  carry_out(transition.plan, buffers_.host, stream, reason, where);
  if (joined_first) {
    order_.set_exclusive(stream);
  } else {
    order_.order_device_access(transition.plan.ordering(), stream);
  }
  state_.commit(transition.next);
  // One buffer: a host writer must wait for this kernel, and appends must not overwrite what it
  // reads.
  if (one_buffer()) order_.note_host_read(state_.size());
  return strategy().device_address(context("device view", where));
}

bool ArrayCore::device_current_for(Access access, StreamRef stream) const noexcept {
  if (one_buffer() || buffers_.device == nullptr || buffers_.device_capacity < state_.size() ||
      !state_.device_whole() || observers_.view_size != state_.size() ||
      observers_.view_device != buffers_.device) {
    return false;
  }
  if (access != Access::read && !state_.device_exclusive()) return false;
  return order_.already_ordered(access, stream);
}

void ArrayCore::ensure_device_capacity(StreamRef stream, std::size_t keep) {
  if (buffers_.device != nullptr && buffers_.device_capacity >= state_.size()) return;
  resolve_eviction_registry();
  const std::size_t new_capacity = std::max(buffers_.capacity, state_.size());
  auto* fresh = static_cast<std::byte*>(device_mr().allocate(stream, new_capacity));
  if (buffers_.device == nullptr) {
    buffers_.device = fresh;
    buffers_.device_capacity = new_capacity;
    register_for_eviction();
    return;
  }
  // Only the valid device prefix moves (nothing for a discard); the copy reads the old buffer
  // after its last writer, and the old buffer is freed on `stream` once every user of it is
  // joined there. An external buffer is left to its owner, untouched.
  try {
    order_.join_users(stream);
    runtime().copy_async(fresh, buffers_.device, keep, CopyKind::device_to_device, stream);
  } catch (...) {
    placement_.device_resource->deallocate(stream, fresh, new_capacity);
    throw;
  }
  if (keep > 0) {
    context("device buffer growth", AcquireScope::current_call_site())
        .note_transfer(TransferKind::d2d, keep);
  }
  // A pooled buffer was registered already; an external one never was.
  const bool was_external = buffers_.device_external;
  if (was_external) {
    buffers_.device_external = false;
  } else {
    placement_.device_resource->deallocate(stream, buffers_.device, buffers_.device_capacity);
  }
  order_.set_exclusive(stream);
  buffers_.device = fresh;
  buffers_.device_capacity = new_capacity;
  if (was_external) register_for_eviction();
}

void ArrayCore::make_host_whole(const char* reason, const smartarray::source_location& where) {
  carry_out(state_.host_whole_plan(), buffers_.host, order_.writer_or_default(), reason, where);
  state_.mark_host_whole();
}

void ArrayCore::make_device_only(std::size_t bytes, StreamRef stream) {
  Transaction transaction(*this, Transaction::Kind::change);
  SMARTARRAY_EXPECTS(state_.size() == 0 && buffers_.host == nullptr && buffers_.device == nullptr,
                     logic_error, "make_device_only on an array that already holds ",
                     state_.size(), " bytes");
  if (bytes == 0) return;
  if (one_buffer()) {
    buffers_.host = strategy().allocate_host(context("device_array", smartarray::source_location::current()),
                                             bytes, buffers_.host_pageable);
    order_.note_host_read(bytes);
  } else {
    resolve_eviction_registry();
    buffers_.device = static_cast<std::byte*>(device_mr().allocate(stream, bytes));
    buffers_.device_capacity = bytes;
    register_for_eviction();
  }
  buffers_.capacity = bytes;
  state_ = ResidencyState::device_only(bytes);
  order_.set_exclusive(stream);
}

void ArrayCore::make_unwritten(std::size_t bytes) {
  Transaction transaction(*this, Transaction::Kind::change);
  SMARTARRAY_EXPECTS(state_.size() == 0 && buffers_.host == nullptr && buffers_.device == nullptr,
                     logic_error, "make_unwritten on an array that already holds ", state_.size(),
                     " bytes");
  // Each buffer is made when its side is first accessed (ensure_host_buffer and
  // ensure_device_capacity allocate a missing buffer).
  buffers_.capacity = bytes;
  state_ = ResidencyState::unwritten(bytes);
}

void ArrayCore::wrap_device(std::byte* external, std::size_t bytes) {
  Transaction transaction(*this, Transaction::Kind::change);
  SMARTARRAY_EXPECTS(external != nullptr || bytes == 0, logic_error,
                     "wrap_device of a null pointer with a size of ", bytes, " bytes");
  SMARTARRAY_EXPECTS(!one_buffer(), logic_error, "wrap_device of ", bytes,
                     " bytes into an array in ", to_string(mode()),
                     " mode; external device memory needs the explicit or pageable mode");
  SMARTARRAY_EXPECTS(state_.size() == 0 && buffers_.host == nullptr && buffers_.device == nullptr,
                     logic_error, "wrap_device on an array that already holds ", state_.size(),
                     " bytes");
  if (bytes == 0) return;
  // Not registered for eviction: dropping the owner's buffer would free no memory.
  buffers_.device = external;
  buffers_.device_capacity = bytes;
  buffers_.device_external = true;
  buffers_.capacity = bytes;
  state_ = ResidencyState::device_only(bytes);
}

void ArrayCore::copy_device_in(std::byte* dst, const std::byte* src, std::size_t bytes,
                               StreamRef stream, const smartarray::source_location& where) {
  Transaction transaction(*this, Transaction::Kind::inspect);
  runtime().copy_async(dst, src, bytes, CopyKind::device_to_device, stream);
  context("copy from another array", where).note_transfer(TransferKind::d2d, bytes);
}

void ArrayCore::copy_out(std::byte* dst, std::size_t bytes, StreamRef stream, bool wait,
                         const smartarray::source_location& where, bool require_written) {
  Transaction transaction(*this, Transaction::Kind::inspect, &where);
  SMARTARRAY_EXPECTS(bytes <= state_.size(), logic_error, "copy_out of ", bytes,
                     " bytes from an array of ", state_.size(), " bytes");
  if (bytes == 0) return;
  check_written(require_written, "copy_to_host", where);
  if (state_.is_unwritten()) return;  // no values to copy, and no buffer to copy them from
  touch();
  if (one_buffer()) {
    // One buffer: read it on the host once its writer is done; nothing is copied or prefetched.
    if (!state_.host_whole() && order_.live_writer()) {
      order_.wait_writer(stream);
      host_wait_stream(stream);
      counters_.add_wait();
    }
    std::memcpy(dst, buffers_.host, bytes);
    return;
  }
  const CopyPlan plan = state_.read_out(bytes);
  const std::size_t from_device = plan.bytes();
  if (from_device < bytes) {
    std::memcpy(dst + from_device, buffers_.host + from_device, bytes - from_device);
  }
  // The stale host prefix comes straight from the device into `dst`; the host copy stays stale.
  for (const PlannedCopy& copy : plan.copies()) {
    order_.wait_writer(stream);
    runtime().copy_async(dst + copy.range.begin, buffers_.device + copy.range.begin,
                         copy.range.size(), CopyKind::device_to_host, stream);
    order_.add_user(stream);
    context("copy_to_host", where).note_transfer(TransferKind::d2h, copy.range.size());
  }
  if (wait && !plan.copies_nothing()) {
    host_wait_stream(stream);
    counters_.add_wait();
  }
}

void ArrayCore::upload_chunk(std::byte* device, ByteRange range, StreamRef stream,
                             const smartarray::source_location& where) {
  Transaction transaction(*this, Transaction::Kind::inspect, &where);
  runtime().copy_async(device, buffers_.host + range.begin, range.size(),
                       CopyKind::host_to_device, stream);
  context("out-of-core chunk", where).note_transfer(TransferKind::h2d, range.size());
}

void ArrayCore::download_chunk(const std::byte* device, ByteRange range, StreamRef stream,
                               const smartarray::source_location& where) {
  Transaction transaction(*this, Transaction::Kind::inspect, &where);
  runtime().copy_async(buffers_.host + range.begin, device, range.size(),
                       CopyKind::device_to_host, stream);
  context("out-of-core chunk", where).note_transfer(TransferKind::d2h, range.size());
}

void ArrayCore::host_changed() {
  Transaction transaction(*this, Transaction::Kind::change);
  SMARTARRAY_EXPECTS(state_.valid(Side::host), logic_error,
                     "host_changed() on an array whose host copy is stale (", state_.size(),
                     " bytes); acquire the host side first");
  state_ = state_.host_written();
}

void ArrayCore::order_device_write(StreamRef stream) {
  Transaction transaction(*this, Transaction::Kind::change);
  if (state_.size() == 0) return;
  order_.order_device_access(Ordering::after_every_use, stream);
}

void ArrayCore::device_changed(StreamRef stream) {
  Transaction transaction(*this, Transaction::Kind::change);
  SMARTARRAY_EXPECTS(state_.valid(Side::device), logic_error,
                     "gpu_changed() on an array whose device copy is stale (", state_.size(),
                     " bytes); acquire the device side first");
  if (state_.size() == 0) return;
  order_.order_device_access(Ordering::after_every_use, stream);
  state_ = state_.device_written();
}

void ArrayCore::wait_host_readers_locked() {
  // One buffer: kernels read and write the buffer itself, so a host writer waits for all of them.
  if (one_buffer()) {
    order_.wait_every_device_use();
  } else {
    order_.wait_host_readers();
  }
}

void ArrayCore::wait_host_readers() {
  Transaction transaction(*this, Transaction::Kind::change);
  wait_host_readers_locked();
}

std::size_t ArrayCore::evict_device_locked(bool allow_dirty) {
  order_.forget_retired();
  if (buffers_.device == nullptr) return 0;
  if (!state_.host_whole()) {
    if (!allow_dirty) return 0;
    ensure_host_buffer();
    // The call whose allocation made room, when it was an acquire (eviction has no call of its
    // own).
    make_host_whole("eviction of a dirty device copy", AcquireScope::current_call_site());
  }
  const std::size_t released = buffers_.device_capacity;
  release_device_buffer();
  state_.mark_device_dropped();
  refresh_readable();
  // Eviction runs on another thread: it moves the views' generation on but leaves the owner's
  // view state to the owner's next operation.
  if (observers_.view_slot != 0) note_view_change(observers_.view_slot, ViewChange::reallocated);
  return released;
}

void ArrayCore::release_device_buffer() noexcept {
  if (buffers_.device == nullptr) return;
  order_.forget_retired();
  // Free on one stream that has joined every user, so the pool reuses the block only after them.
  const StreamRef last = order_.release_stream();
  try {
    order_.join_users(last);
  } catch (const std::exception& error) {
    std::cerr << "smartarray: ordering the free of a device buffer failed: " << error.what()
              << "\n";
  }
  if (buffers_.device_external) {
    buffers_.device_external = false;  // the owner frees it
  } else {
    placement_.device_resource->deallocate(last, buffers_.device, buffers_.device_capacity);
  }
  buffers_.device = nullptr;
  buffers_.device_capacity = 0;
  order_.clear_device();
}

void ArrayCore::release_all() noexcept {
  std::lock_guard lock(mutex_);
  // Registered exactly while a device buffer is held (eviction drops both under this lock), so a
  // host-only array never takes the registry's lock.
  unregister_for_eviction();
  release_device_buffer();
  free_host(buffers_.host, buffers_.capacity, buffers_.host_pageable);
  buffers_.host = nullptr;
  buffers_.host_pageable = false;
  buffers_.capacity = 0;
  order_.clear_device();
  state_ = ResidencyState();
  if (observers_.view_slot != 0) {
    release_view_slot(observers_.view_slot);
    observers_.view_slot = 0;
  }
  refresh_state();
}

}  // namespace smartarray::detail
