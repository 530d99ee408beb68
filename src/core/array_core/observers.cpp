// The observers of ArrayCore's transitions: the fast-path flags and the lock-free resize window,
// the generations that debug builds check device views against, and the stale-host guard.
#include <smartarray/diagnostics/debug.hpp>
#include <smartarray/core/detail/array_core.hpp>

#include <algorithm>

namespace smartarray::detail {

void ArrayCore::refresh_readable() noexcept {
  // An unwritten array takes the slow path: it has no host buffer, and debug builds check reads.
  // So does one whose discarded bytes the host holds without a buffer yet, and one with prefetch
  // copies still writing the host buffer (the slow path waits for them).
  host_readable_.store(state_.host_whole() && !state_.is_unwritten() && buffers_.host != nullptr &&
                           arrivals_.empty(),
                       std::memory_order_release);
}

void ArrayCore::refresh_state() noexcept {
  note_view_state();
  update_host_guard();
  refresh_readable();
  host_writable_ = state_.host_exclusive() && !host_order().host_readers_pending();
  refresh_element_windows();
  // Inside the window an append writes only bytes that no pending copy reads, and a truncation
  // clamps no place's valid range.
  fast_floor_ = std::max(state_.resize_floor(), host_order().host_read_end());
  fast_limit_ = buffers_.host != nullptr && state_.size() >= host_order().host_read_end()
                    ? buffers_.capacity
                    : 0;
  if (capture_written_ || !arrivals_.empty()) [[unlikely]] {
    // A capture writes the array, or prefetch copies still write the host buffer: every host
    // access takes the slow path, which refuses it or waits for them.
    host_readable_.store(false, std::memory_order_release);
    host_writable_ = false;
    read_window_.store(0, std::memory_order_relaxed);
    element_.write_count = 0;
    fast_floor_ = state_.size();
    fast_limit_ = 0;
  }
}

void ArrayCore::refresh_element_windows() noexcept {
  const std::size_t size = state_.size();
  // No element accessed on a partial host copy, and no window left from one: nothing to do.
  if (element_.hint >= size && element_.write_count == 0 &&
      read_window_.load(std::memory_order_relaxed) == 0) {
    return;
  }
  std::uint64_t read = 0;
  element_.write_first = 0;
  element_.write_count = 0;
  if (element_.hint < size && !state_.is_unwritten() && !host_writable_ &&
      buffers_.host != nullptr) {
    const unsigned shift = placement_.storage.tile_shift;
    const std::size_t tile = std::size_t{1} << shift;
    // The whole tiles of `range`; the last tile of the array counts whole when `range` reaches
    // the size (appends add bytes that the host holds).
    const auto tiles_of = [&](ByteRange range) {
      const std::size_t first = (range.begin + tile - 1) >> shift;
      const std::size_t end = range.end == size ? (size + tile - 1) >> shift : range.end >> shift;
      return ByteRange{first, std::max(first, end)};
    };
    const ByteRange readable = tiles_of(state_.range_around(
        element_.hint, [](Holder holder) { return holds(holder, Side::host); }));
    if (readable.end <= 0xffffffffU) {
      read = (std::uint64_t{readable.begin} << 32) | readable.size();
    }
    if (!host_order().host_readers_pending()) {
      const ByteRange writable = tiles_of(state_.range_around(
          element_.hint, [](Holder holder) { return holder == Holder::host; }));
      element_.write_first = writable.begin;
      element_.write_count = writable.size();
    }
  }
  read_window_.store(read, std::memory_order_release);
}

void ArrayCore::note_view_state() noexcept {
  for (int device = 0; device < device_copies(); ++device) {
    const ViewState& views = device_copy(device).views;
    if (views.slot == 0) continue;
    ViewChange why = ViewChange::none;
    if (state_.size() != views.size) {
      why = ViewChange::resized;
    } else if (view_address(device) != views.address) {
      why = ViewChange::reallocated;
    } else if (device_lost_viewed_bytes(device)) {
      why = ViewChange::host_write;
    }
    if (why == ViewChange::none) continue;
    note_view_change(views.slot, why);
    start_views(device);
  }
}

void ArrayCore::start_views(int device) noexcept {
  ViewState& views = device_copy(device).views;
  views.size = state_.size();
  views.address = view_address(device);
  views.ranges = 0;
  views.scattered = false;
  if (state_.device_whole(device)) {  // the common case, without walking the runs
    if (state_.size() > 0) {
      views.held[0] = {0, state_.size()};
      views.ranges = 1;
    }
    return;
  }
  state_.for_each_held(Place(Side::device, device), state_.size(), [&](ByteRange range) {
    if (views.ranges == views.held.size()) {
      views.scattered = true;
    } else {
      views.held[views.ranges++] = range;
    }
  });
}

bool ArrayCore::device_lost_viewed_bytes(int device) const noexcept {
  if (state_.device_whole(device)) return false;
  const ViewState& views = device_copy(device).views;
  // Scattered: a check that may call a current view stale, never the reverse.
  if (views.scattered) return true;
  const Place place(Side::device, device);
  for (std::size_t i = 0; i < views.ranges; ++i) {
    if (!state_.holds_range(place, views.held[i])) return true;
  }
  return false;
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
