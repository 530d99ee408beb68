// The array behind SmartArray<T>, as an orchestrator: the acquires (host, device, range, element)
// and the Numba-style change marks. Each acquire asks the residency state machine
// (core/detail/residency_state.hpp) for a plan, has it carried out (copies.cpp) through the
// storage strategy of its memory mode (storage.hpp), and commits the new state. The device copies,
// their buffers and eviction are in device_copies.cpp; construction and moves in
// lifetime.cpp; the host buffer and the vector operations in host_buffer.cpp (all of them in
// src/core/array_core/, which holds every member of ArrayCore).
#include <smartarray/core/detail/array_core.hpp>
#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include "core/parallel_copy.hpp"
#include "core/storage.hpp"
#include "core/transaction.hpp"

#include "core/array_core/capture.hpp"

#include <algorithm>

namespace smartarray::detail {
namespace {

/// The NVTX range name of an acquire: "acquire device read".
const char* acquire_name(Side side, Access access) noexcept {
  static constexpr const char* names[2][3] = {
      {"acquire host read", "acquire host read_write", "acquire host discard"},
      {"acquire device read", "acquire device read_write", "acquire device discard"}};
  return names[side == Side::host ? 0 : 1][static_cast<int>(access)];
}

}  // namespace

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

std::byte* ArrayCore::acquire(Side side, Access access, std::optional<StreamRef> stream,
                              const smartarray::source_location& where, bool require_written) {
  Transaction transaction(*this, Transaction::Kind::use, &where, Transaction::Arrivals::by_range);
  NvtxRange nvtx;
  nvtx.push_acquire(acquire_name(side, access), state_.size(), id(), trace_label(), where);
  return acquire_locked(transaction, side, access, {0, state_.size()}, stream, where,
                        require_written);
}

std::byte* ArrayCore::acquire_range(Side side, Access access, ByteRange range,
                                    std::optional<StreamRef> stream,
                                    const smartarray::source_location& where,
                                    bool require_written) {
  Transaction transaction(*this, Transaction::Kind::use, &where, Transaction::Arrivals::by_range);
  SMARTARRAY_EXPECTS(range.begin <= range.end && range.end <= state_.size(), std::out_of_range,
                     describe(), ": the bytes [", range.begin, ", ", range.end,
                     ") leave the array of ", state_.size(), " bytes");
  NvtxRange nvtx;
  nvtx.push_acquire(acquire_name(side, access), range.size(), id(), trace_label(), where);
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
  Transaction transaction(*this, Transaction::Kind::use, &where, Transaction::Arrivals::by_range);
  NvtxRange nvtx;
  nvtx.push_acquire(acquire_name(Side::host, access), bytes, id(), trace_label(), where);
  const std::size_t size = state_.size();
  if (offset + bytes > size) return;  // debug builds checked the index; std::vector's rules
  if (capture_written_) [[unlikely]] refuse_host_access_in_capture("element access", where);
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
    if (capture_written_) [[unlikely]] refuse_host_access_in_capture("host access", where);
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
  // Inside a capture nothing is current: every acquire is recorded.
  const bool capturing = active_array_capture != nullptr;
  const bool current = !capturing && device_current_for(device, access, range, on);
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
  if (capturing) [[unlikely]] return acquire_captured(transaction, device, access, range, on, where);
  std::byte* const address = acquire_device_locked(device, access, range, on, where);
  transaction.start_views(device);
  return address;
}

std::byte* ArrayCore::acquire_host_range(Access access, ByteRange range,
                                         std::optional<StreamRef> stream,
                                         const smartarray::source_location& where) {
  ensure_host_buffer();
  settle_arrivals(range);
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
  // The use begins before its copies are queued: what this stream did before ends here.
  order.begin_use(range, stream, access != Access::read);
  const char* reason = "device access after host writes";
  if (one_buffer()) {
    ensure_host_buffer();
    if (joined_first) order.join_users(range, stream);
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
    order.set_exclusive(range, stream);
  } else {
    order.order_device_access(transition.plan.ordering(), range, stream);
  }
  state_.commit(transition.next);
  // One buffer: a host writer must wait for this kernel, and appends must not overwrite what it
  // reads.
  if (one_buffer()) order.note_host_read(state_.size());
  return strategy().device_address(context("device view", where, device));
}

bool ArrayCore::device_current_for(int device, Access access, ByteRange range,
                                   StreamRef stream) const {
  const DeviceCopy& copy = device_copy(device);
  if (one_buffer() || copy.data == nullptr || copy.capacity < state_.size() ||
      !state_.device_whole(device) || copy.views.size != state_.size() ||
      copy.views.address != copy.data) {
    return false;
  }
  if (access != Access::read && !state_.device_exclusive(device)) return false;
  return copy.order.already_ordered(access, range, stream);
}

void ArrayCore::make_host_whole(const char* reason, const smartarray::source_location& where) {
  carry_out(state_.host_whole_plan(), buffers_.host, 0, std::nullopt, reason, where);
  state_.mark_host_whole();
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
  device_copy(device).order.order_device_access(Ordering::after_every_use,
                                                ByteRange{0, state_.size()}, on);
}

void ArrayCore::device_changed(StreamRef stream) {
  Transaction transaction(*this, Transaction::Kind::change);
  const StreamRef on = runtime().canonical(stream);
  const int device = one_buffer() ? 0 : runtime().stream_device(on);
  SMARTARRAY_EXPECTS(state_.valid(Place(Side::device, device)), logic_error,
                     "gpu_changed() on an array whose copy on device ", device, " is stale (",
                     state_.size(), " bytes); acquire it on that device first");
  if (state_.size() == 0) return;
  device_copy(device).order.order_device_access(Ordering::after_every_use,
                                                ByteRange{0, state_.size()}, on);
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

}  // namespace smartarray::detail
