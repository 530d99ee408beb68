// The array behind SmartArray<T>: the acquires, copies out, the Numba-style change marks, the
// device buffer and eviction. It carries out the residency state machine
// (core/detail/residency_state.hpp) through the storage strategy of its memory mode
// (storage.hpp). See core/detail/array_core.hpp for the parts; construction and moves are in
// array_lifetime.cpp, the host buffer and the vector operations in host_buffer.cpp.
#include <smartarray/core/detail/array_core.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include "core/parallel_copy.hpp"
#include "core/eviction.hpp"
#include "core/storage.hpp"
#include "core/transaction.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <iostream>

namespace smartarray::detail {

const StorageStrategy& ArrayCore::strategy() const noexcept {
  return storage_strategy(placement_.storage.mode);
}

StorageContext ArrayCore::context(const char* reason, const smartarray::source_location& where,
                                  int device) {
  return StorageContext{*this, reason, where, device};
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

bool ArrayCore::valid(Side side) const {
  if (side == Side::device) return valid_on_device(runtime().current_device());
  std::lock_guard lock(mutex_);
  return state_.valid(Side::host);
}

bool ArrayCore::valid_on_device(int device) const {
  runtime().check_device(device, "is_valid");
  std::lock_guard lock(mutex_);
  return state_.valid(device_place(device));
}

DeviceCopy& ArrayCore::more_device_copies(int device) {
  if (more_devices_ == nullptr) {
    const int count = runtime().device_count() - 1;
    more_devices_ = std::make_unique<DeviceCopy[]>(static_cast<std::size_t>(count));
    more_devices_count_ = count;
    // The new trackers start where device 0's was cleaned to: a stream retired before then, whose
    // handle a live stream may have taken since, is none of theirs.
    for (int d = 0; d < count; ++d) more_devices_[d].order.adopt_generation(device0_.order);
  }
  SMARTARRAY_EXPECTS(device > 0 && device <= more_devices_count_, logic_error, describe(),
                     ": device ", device, " does not exist");
  return more_devices_[static_cast<std::size_t>(device - 1)];
}

std::uint32_t ArrayCore::peer_reach(int device) const {
  if (more_devices_ == nullptr) return 0;  // one device copy: nothing to copy from
  std::uint32_t reach = 0;
  for (int owner = 0; owner < device_copies(); ++owner) {
    if (owner != device && runtime().can_access_peer(device, owner)) reach |= 1U << owner;
  }
  return reach;
}

StreamRef ArrayCore::stream_from(int device, std::optional<StreamRef> preferred) {
  if (preferred) {
    const StreamRef on = runtime().canonical(*preferred);
    if (runtime().stream_device(on) == device) return on;
  }
  const StreamOrder& order = one_buffer() ? host_order() : device_copy(device).order;
  if (const std::optional<StreamRef> writer = order.live_writer()) return *writer;
  return runtime().default_stream(device);
}

void ArrayCore::carry_out(const CopyPlan& plan, std::byte* dst, int device,
                          std::optional<StreamRef> stream, const char* reason,
                          const smartarray::source_location& where) {
  if (plan.copies_nothing()) return;
  const bool up = std::any_of(plan.copies().begin(), plan.copies().end(),
                              [](const PlannedCopy& copy) { return copy.to == Side::device; });
  // Down first, each from its device: in a plan that also copies up, these are reads staged
  // through the host (the device cannot reach the one that holds the bytes).
  constexpr const char* staged = "read across devices without peer access, through the host";
  for (const PlannedCopy& copy : plan.copies()) {
    if (copy.to == Side::device) continue;
    const StorageContext from = context(up ? staged : reason, where, copy.device);
    const StreamRef on = stream_from(copy.device, stream);
    // An upload to another device may still read the bytes that this copy writes into the host
    // buffer: they were the host's when it started, and only that device's work was ordered
    // after it. (With one device, the write that made them stale there was ordered after it.)
    if (more_devices_ != nullptr && dst == buffers_.host) host_order().order_after_host_readers(on);
    strategy().to_host(from, dst, copy.range, on);
    if (up) {
      emit_transfer({TransferKind::staged, copy.range.size(), staged, id(), trace_label(), where,
                     static_cast<std::int16_t>(device), static_cast<std::int16_t>(copy.device)},
                    &counters_);
    }
  }
  if (!up) return;
  // Up: peer copies, then what the host copy sends, all on `stream`, which lives on `device`.
  const StorageContext here = context(reason, where, device);
  SmallVector<PlannedCopy, 2> from_host;
  bool peers = false;
  for (const PlannedCopy& copy : plan.copies()) {
    if (copy.to != Side::device) continue;
    if (copy.peer == no_peer) {
      from_host.push_back(copy);
    } else {
      peers = true;
    }
  }
  if (peers) {
    // The copies write this device's buffer after every use of it, and read each source's after
    // its writer.
    DeviceCopy& target = device_copy(device);
    target.order.join_users(*stream);
    for (const PlannedCopy& copy : plan.copies()) {
      if (copy.to != Side::device || copy.peer == no_peer) continue;
      DeviceCopy& source = device_copy(copy.peer);
      source.order.wait_writer(*stream);
      runtime().copy_peer_async(target.data + copy.range.begin, device,
                                source.data + copy.range.begin, copy.peer, copy.range.size(),
                                *stream);
      source.order.add_user(*stream);
      emit_transfer({TransferKind::d2d_peer, copy.range.size(), reason, id(), trace_label(), where,
                     static_cast<std::int16_t>(device), static_cast<std::int16_t>(copy.peer)},
                    &counters_);
    }
    target.order.set_exclusive(*stream);
  }
  if (!from_host.empty()) {
    strategy().to_device(here, {from_host.data(), from_host.size()}, *stream);
  }
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
    if (stream) runtime().check_stream(*stream);
    transaction.changed_nothing();
    if (side == Side::host) return buffers_.host;
    const DeviceCopy& copy =
        device_copy(one_buffer() ? 0 : runtime().stream_device(runtime().canonical(*stream)));
    last_view_slot = copy.views.slot;
    return copy.data;
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
  if (side == Side::host) {
    if (stream) runtime().check_stream(*stream);
    if (state_.size() == 0) {
      transaction.changed_nothing();
      return buffers_.host;
    }
    if (access == Access::read) check_written(require_written, "host read", where);
    return acquire_host_range(access, range, stream, where);
  }
  // A stream that the array remembers names its device (the default stream of the current one).
  // One-buffer arrays have one device place, whatever device uses them.
  Runtime& rt = runtime();
  const StreamRef on = rt.canonical(*stream);
  const int device = one_buffer() ? 0 : rt.stream_device(on);
  DeviceCopy& copy = device_copy(device);
  if (state_.size() == 0) {
    rt.check_stream(on);
    transaction.changed_nothing();
    last_view_slot = copy.views.slot;
    return copy.data;
  }
  // Streams destroyed since the last use are forgotten first: they never match below, and no
  // wait is made on them. The steady state of a kernel loop (`current`) makes no copy, records no
  // event and recomputes no state; any other access checks its stream before it changes anything.
  (one_buffer() ? host_order() : copy.order).forget_retired();
  const bool current = device_current_for(device, access, on);
  if (!current) rt.check_stream(on);
  if (access == Access::read) check_written(require_written, "device read", where);
  if (copy.views.slot == 0) copy.views.slot = acquire_view_slot(id());
  last_view_slot = copy.views.slot;
  if (access != Access::read) {
    observers_.device_write_file = where.file_name();
    observers_.device_write_line = where.line();
  }
  if (current) {
    transaction.changed_nothing();
    return copy.data;
  }
  std::byte* const address = acquire_device_locked(device, access, range, on, where);
  transaction.start_views(device);
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
  carry_out(transition.plan, buffers_.host, 0, stream, reason, where);
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

std::byte* ArrayCore::acquire_device_locked(int device, Access access, ByteRange range,
                                            StreamRef stream,
                                            const smartarray::source_location& where) {
  const Transition transition =
      state_.acquire(Place(Side::device, device), access, one_buffer(), range, peer_reach(device));
  // A discard of everything keeps nothing of the old device copy.
  const bool overwrites_all = access == Access::discard && range.size() == state_.size();
  // One buffer: a writer's prefetch follows every other use of it.
  const bool joined_first =
      one_buffer() && transition.plan.ordering() == Ordering::after_every_use;
  StreamOrder& order = one_buffer() ? host_order() : device_copy(device).order;
  const char* reason = "device access after host writes";
  if (one_buffer()) {
    ensure_host_buffer();
    if (joined_first) order.join_users(stream);
  } else {
    ensure_device_capacity(device, stream, overwrites_all ? 0 : state_.device_extent(device));
    reason = state_.device_extent(device) != 0 ? "device access of a host-appended tail"
             : state_.devices_holding() != 0   ? "device access of data held on another device"
                                               : "device access of a stale copy";
    // A read staged through the host copies into the host buffer first.
    const auto down = [](const PlannedCopy& copy) { return copy.to == Side::host; };
    if (std::any_of(transition.plan.copies().begin(), transition.plan.copies().end(), down)) {
      ensure_host_buffer();
    }
  }
  carry_out(transition.plan, buffers_.host, device, stream, reason, where);
  if (joined_first) {
    order.set_exclusive(stream);
  } else {
    order.order_device_access(transition.plan.ordering(), stream);
  }
  state_.commit(transition.next);
  // One buffer: a host writer must wait for this kernel, and appends must not overwrite what it
  // reads.
  if (one_buffer()) order.note_host_read(state_.size());
  return strategy().device_address(context("device view", where, device));
}

bool ArrayCore::device_current_for(int device, Access access, StreamRef stream) const {
  const DeviceCopy& copy = device_copy(device);
  if (one_buffer() || copy.data == nullptr || copy.capacity < state_.size() ||
      !state_.device_whole(device) || copy.views.size != state_.size() ||
      copy.views.address != copy.data) {
    return false;
  }
  if (access != Access::read && !state_.device_exclusive(device)) return false;
  return copy.order.already_ordered(access, stream);
}

void ArrayCore::ensure_device_capacity(int device, StreamRef stream, std::size_t keep) {
  DeviceCopy& copy = device_copy(device);
  if (copy.data != nullptr && copy.capacity >= state_.size()) return;
  resolve_eviction_registry(device);
  MemoryResource& resource = device_mr(device);
  const std::size_t new_capacity = std::max(buffers_.capacity, state_.size());
  auto* fresh = static_cast<std::byte*>(resource.allocate(stream, new_capacity));
  if (copy.data == nullptr) {
    copy.data = fresh;
    copy.capacity = new_capacity;
    register_for_eviction(device);
    return;
  }
  // Only the valid device prefix moves (nothing for a discard); the copy reads the old buffer
  // after its last writer, and the old buffer is freed on `stream` once every user of it is
  // joined there. An external buffer is left to its owner, untouched.
  try {
    copy.order.join_users(stream);
    runtime().copy_async(fresh, copy.data, keep, CopyKind::device_to_device, stream);
  } catch (...) {
    resource.deallocate(stream, fresh, new_capacity);
    throw;
  }
  if (keep > 0) {
    context("device buffer growth", AcquireScope::current_call_site(), device)
        .note_transfer(TransferKind::d2d, keep);
  }
  // A pooled buffer was registered already; an external one never was.
  const bool was_external = copy.external;
  if (was_external) {
    copy.external = false;
  } else {
    resource.deallocate(stream, copy.data, copy.capacity);
  }
  copy.order.set_exclusive(stream);
  copy.data = fresh;
  copy.capacity = new_capacity;
  if (was_external) register_for_eviction(device);
}

void ArrayCore::make_host_whole(const char* reason, const smartarray::source_location& where) {
  carry_out(state_.host_whole_plan(), buffers_.host, 0, std::nullopt, reason, where);
  state_.mark_host_whole();
}

void ArrayCore::make_device_only(std::size_t bytes, StreamRef stream) {
  Transaction transaction(*this, Transaction::Kind::change);
  const StreamRef on = runtime().canonical(stream);
  const int device = one_buffer() ? 0 : runtime().stream_device(on);
  DeviceCopy& copy = device_copy(device);
  SMARTARRAY_EXPECTS(state_.size() == 0 && buffers_.host == nullptr && copy.data == nullptr,
                     logic_error, "make_device_only on an array that already holds ",
                     state_.size(), " bytes");
  if (bytes == 0) return;
  if (one_buffer()) {
    buffers_.host = strategy().allocate_host(context("device_array", smartarray::source_location::current()),
                                             bytes, buffers_.host_pageable);
    host_order().note_host_read(bytes);
  } else {
    resolve_eviction_registry(device);
    copy.data = static_cast<std::byte*>(device_mr(device).allocate(on, bytes));
    copy.capacity = bytes;
    register_for_eviction(device);
  }
  buffers_.capacity = bytes;
  state_ = ResidencyState::device_only(bytes, device);
  copy.order.set_exclusive(on);
}

void ArrayCore::make_unwritten(std::size_t bytes) {
  Transaction transaction(*this, Transaction::Kind::change);
  SMARTARRAY_EXPECTS(state_.size() == 0 && buffers_.host == nullptr && device0_.data == nullptr,
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
  const int device = runtime().current_device();
  DeviceCopy& copy = device_copy(device);
  SMARTARRAY_EXPECTS(state_.size() == 0 && buffers_.host == nullptr && copy.data == nullptr,
                     logic_error, "wrap_device on an array that already holds ", state_.size(),
                     " bytes");
  if (bytes == 0) return;
  // Not registered for eviction: dropping the owner's buffer would free no memory.
  copy.data = external;
  copy.capacity = bytes;
  copy.external = true;
  buffers_.capacity = bytes;
  state_ = ResidencyState::device_only(bytes, device);
}

void ArrayCore::copy_device_in(std::byte* dst, const std::byte* src, std::size_t bytes,
                               StreamRef stream, const smartarray::source_location& where) {
  Transaction transaction(*this, Transaction::Kind::inspect);
  runtime().copy_async(dst, src, bytes, CopyKind::device_to_device, stream);
  context("copy from another array", where, runtime().stream_device(stream))
      .note_transfer(TransferKind::d2d, bytes);
}

void ArrayCore::copy_out(std::byte* dst, std::size_t bytes, StreamRef stream, bool wait,
                         const smartarray::source_location& where, bool require_written) {
  Transaction transaction(*this, Transaction::Kind::inspect, &where);
  runtime().check_stream(stream);
  SMARTARRAY_EXPECTS(bytes <= state_.size(), logic_error, "copy_out of ", bytes,
                     " bytes from an array of ", state_.size(), " bytes");
  if (bytes == 0) return;
  check_written(require_written, "copy_to_host", where);
  if (state_.is_unwritten()) return;  // no values to copy, and no buffer to copy them from
  touch();
  if (one_buffer()) {
    // One buffer: read it on the host once its writer is done; nothing is copied or prefetched.
    if (!state_.host_whole() && host_order().live_writer()) {
      host_order().wait_writer(stream);
      host_wait_stream(stream);
      counters_.add_wait();
    }
    std::memcpy(dst, buffers_.host, bytes);
    return;
  }
  const CopyPlan plan = state_.read_out(bytes);
  // What the host holds comes from the host copy; each stale range straight from a device into
  // `dst` (the host copy stays stale), on `stream` when it lives on that device.
  state_.for_each_held(Side::host, bytes, [&](ByteRange range) {
    std::memcpy(dst + range.begin, buffers_.host + range.begin, range.size());
  });
  std::array<StreamRef, max_devices> used{};
  std::size_t streams = 0;
  for (const PlannedCopy& copy : plan.copies()) {
    const StreamRef on = stream_from(copy.device, stream);
    StreamOrder& order = device_copy(copy.device).order;
    order.wait_writer(on);
    runtime().copy_async(dst + copy.range.begin, device_copy(copy.device).data + copy.range.begin,
                         copy.range.size(), CopyKind::device_to_host, on);
    order.add_user(on);
    context("copy_to_host", where, copy.device).note_transfer(TransferKind::d2h, copy.range.size());
    if (std::find(used.begin(), used.begin() + streams, on) == used.begin() + streams) {
      used[streams++] = on;
    }
  }
  if (wait && streams > 0) {
    for (std::size_t i = 0; i < streams; ++i) host_wait_stream(used[i]);
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
  const StreamRef on = runtime().canonical(stream);
  const int device = one_buffer() ? 0 : runtime().stream_device(on);
  device_copy(device).order.order_device_access(Ordering::after_every_use, on);
}

void ArrayCore::device_changed(StreamRef stream) {
  Transaction transaction(*this, Transaction::Kind::change);
  const StreamRef on = runtime().canonical(stream);
  const int device = one_buffer() ? 0 : runtime().stream_device(on);
  SMARTARRAY_EXPECTS(state_.valid(Place(Side::device, device)), logic_error,
                     "gpu_changed() on an array whose copy on device ", device, " is stale (",
                     state_.size(), " bytes); acquire it on that device first");
  if (state_.size() == 0) return;
  device_copy(device).order.order_device_access(Ordering::after_every_use, on);
  state_ = state_.device_written(device);
}

void ArrayCore::wait_host_readers_locked() {
  // One buffer: kernels read and write the buffer itself, so a host writer waits for all of them.
  if (one_buffer()) {
    host_order().wait_every_device_use();
  } else {
    host_order().wait_host_readers();
  }
}

void ArrayCore::wait_host_readers() {
  Transaction transaction(*this, Transaction::Kind::change);
  wait_host_readers_locked();
}

std::size_t ArrayCore::evict_device_locked(int device, bool allow_dirty) {
  for (int d = 0; d < device_copies(); ++d) device_copy(d).order.forget_retired();
  DeviceCopy& copy = device_copy(device);
  if (copy.data == nullptr) return 0;
  // Bytes that only this device holds are written back to the host first (dirty), on its last
  // writer's stream. Eviction runs on another thread: it reads no size (dropped_plan() stops at
  // the runs' end) and leaves the owner's view state to the owner's next operation.
  const CopyPlan plan = state_.dropped_plan(device);
  if (!plan.copies_nothing()) {
    if (!allow_dirty) return 0;
    ensure_host_buffer();
    // The call whose allocation made room, when it was an acquire (eviction has no call of its
    // own).
    carry_out(plan, buffers_.host, device, std::nullopt, "eviction of a dirty device copy",
              AcquireScope::current_call_site());
  }
  const std::size_t released = copy.capacity;
  release_device_buffer(device);
  state_.mark_device_dropped(device);
  refresh_readable();
  if (copy.views.slot != 0) note_view_change(copy.views.slot, ViewChange::reallocated);
  return released;
}

void ArrayCore::release_device_buffer(int device) noexcept {
  DeviceCopy& copy = device_copy(device);
  if (copy.data == nullptr) return;
  copy.order.forget_retired();
  // Free on one stream that has joined every user, so the pool reuses the block only after them.
  const StreamRef last = copy.order.release_stream();
  try {
    copy.order.join_users(last);
  } catch (const std::exception& error) {
    std::cerr << "smartarray: ordering the free of a device buffer failed: " << error.what()
              << "\n";
  }
  if (copy.external) {
    copy.external = false;  // the owner frees it
  } else {
    copy.resource->deallocate(last, copy.data, copy.capacity);
  }
  copy.data = nullptr;
  copy.capacity = 0;
  copy.order.clear_device();
}

void ArrayCore::release_all() noexcept {
  std::lock_guard lock(mutex_);
  // Registered exactly while a device buffer is held (eviction drops both under this lock), so a
  // host-only array never takes the registry's lock.
  unregister_for_eviction();
  for (int device = 0; device < device_copies(); ++device) release_device_buffer(device);
  free_host(buffers_.host, buffers_.capacity, buffers_.host_pageable);
  buffers_.host = nullptr;
  buffers_.host_pageable = false;
  buffers_.capacity = 0;
  host_order().clear_device();
  state_ = ResidencyState();
  for (int device = 0; device < device_copies(); ++device) {
    ViewState& views = device_copy(device).views;
    if (views.slot != 0) {
      release_view_slot(views.slot);
      views.slot = 0;
    }
  }
  refresh_state();
}

}  // namespace smartarray::detail
