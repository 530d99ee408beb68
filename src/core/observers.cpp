// The observers of ArrayCore's transitions: the fast-path flags and the lock-free resize window,
// the generations that debug builds check device views against, and the stale-host guard.
#include <smartarray/diagnostics/debug.hpp>
#include <smartarray/core/detail/array_core.hpp>

#include <algorithm>

namespace smartarray::detail {

void ArrayCore::refresh_readable() noexcept {
  // An unwritten array takes the slow path: it has no host buffer, and debug builds check reads.
  host_readable_.store(state_.host_whole() && !state_.is_unwritten(), std::memory_order_release);
}

void ArrayCore::refresh_state() noexcept {
  note_view_state();
  update_host_guard();
  refresh_readable();
  host_writable_ = state_.host_exclusive() && !order_.host_readers_pending();
  // Inside the window an append writes only bytes that no pending copy reads, and a truncation
  // clamps neither side's valid range.
  fast_floor_ = std::max(state_.resize_floor(), order_.host_read_end());
  fast_limit_ =
      buffers_.host != nullptr && state_.size() >= order_.host_read_end() ? buffers_.capacity : 0;
}

void ArrayCore::note_view_state() noexcept {
  if (observers_.view_slot == 0) return;
  ViewChange why = ViewChange::none;
  if (state_.size() != observers_.view_size) {
    why = ViewChange::resized;
  } else if (view_address() != observers_.view_device) {
    why = ViewChange::reallocated;
  } else if (!state_.device_whole()) {
    why = ViewChange::host_write;
  }
  if (why == ViewChange::none) return;
  note_view_change(observers_.view_slot, why);
  start_views();
}

void ArrayCore::start_views() noexcept {
  observers_.view_size = state_.size();
  observers_.view_device = view_address();
}

void ArrayCore::update_host_guard() noexcept {
  std::byte* const host = buffers_.host;
  const std::size_t stale = state_.host_stale_prefix();
  const bool guarded = host != nullptr && stale > 0 && !one_buffer();
  if (guarded && observers_.guarded_host == host && observers_.guarded_stale == stale) return;
  drop_host_guard();
  if (!guarded || !stale_host_guard()) return;
  // Uploads may still read the host buffer (the host backend's copies do so through the CPU's
  // page tables): with the guard on, they finish before the pages close.
  try {
    wait_host_readers_locked();
  } catch (const std::exception&) {
    return;  // the failed copy is reported by the next operation that waits for it
  }
  observers_.guarded = guard_stale_host(host, stale, id(), observers_.device_write_file,
                                        observers_.device_write_line);
  observers_.guarded_host = host;
  observers_.guarded_stale = stale;
}

void ArrayCore::drop_host_guard() noexcept {
  unguard(observers_.guarded);
  observers_.guarded_host = nullptr;
  observers_.guarded_stale = 0;
}

}  // namespace smartarray::detail
