// The device copies of an array: one per device, made on first use; their buffers' capacity,
// the copies that only a device holds (made there, or wrapped), eviction and release. See
// core/detail/array_core.hpp.
#include <smartarray/core/detail/array_core.hpp>
#include "core/array_core/capture.hpp"
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include "core/eviction.hpp"
#include "core/storage.hpp"
#include "core/transaction.hpp"
#include "core/transfer_scope.hpp"

#include <algorithm>
#include <iostream>

namespace smartarray::detail {

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
    // The block is this stream's from its allocation on: a use of any of its bytes on another
    // stream waits for that point (the pool ordered `stream` after the block's earlier users).
    copy.order.set_exclusive(ByteRange{0, new_capacity}, stream);
    return;
  }
  // Only the valid device prefix moves (nothing for a discard); the copy reads the old buffer
  // after its last writer, and the old buffer is freed on `stream` once every user of it is
  // joined there. An external buffer is left to its owner, untouched.
  const StorageContext growth =
      context("device buffer growth", AcquireScope::current_call_site(), device);
  TransferScope prefix_copy(&counters_);
  try {
    copy.order.join_every_use(stream);
    if (keep > 0) prefix_copy.add(growth.transfer(TransferKind::d2d, keep));
    runtime().copy_async(fresh, copy.data, keep, CopyKind::device_to_device, stream);
  } catch (...) {
    resource.deallocate(stream, fresh, new_capacity);
    throw;
  }
  prefix_copy.done();
  // A pooled buffer was registered already; an external one never was.
  const bool was_external = copy.external;
  if (was_external) {
    copy.external = false;
  } else {
    resource.deallocate(stream, copy.data, copy.capacity);
  }
  copy.order.clear_device();
  // The whole new block, not only the bytes kept: its other bytes are `stream`'s from the
  // allocation on, as above.
  copy.order.set_exclusive(ByteRange{0, new_capacity}, stream);
  copy.data = fresh;
  copy.capacity = new_capacity;
  if (was_external) register_for_eviction(device);
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
  copy.order.set_exclusive(ByteRange{0, bytes}, on);
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

std::size_t ArrayCore::evict_device_locked(int device, bool allow_dirty) {
  for (int d = 0; d < device_copies(); ++d) device_copy(d).order.forget_retired();
  DeviceCopy& copy = device_copy(device);
  if (copy.data == nullptr) return 0;
  // A graph binds the buffer: it stays while any graph may replay on it.
  if (graph_token_ != nullptr && graph_token_->pins.load(std::memory_order_acquire) > 0) return 0;
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
    copy.order.join_every_use(last);
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
  if (ArrayCapture* const capture = active_array_capture) [[unlikely]] capture->released(this);
  // Registered exactly while a device buffer is held (eviction drops both under this lock), so a
  // host-only array never takes the registry's lock.
  unregister_for_eviction();
  for (int device = 0; device < device_copies(); ++device) release_device_buffer(device);
  // The host buffer is freed once no prefetch copy writes it.
  settle_arrivals_quietly();
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
