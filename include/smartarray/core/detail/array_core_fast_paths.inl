/**
 * @file core/detail/array_core_fast_paths.inl
 * @brief Private: the fast paths of ArrayCore, inline (array_core.hpp includes this file at its
 * end): the element windows of host element access, and the lock-free appends, truncations and
 * erases inside the resize window.
 */
#pragma once

namespace smartarray::detail {

[[nodiscard]] inline bool ArrayCore::element_readable(std::size_t offset,
                                                      std::size_t last) const noexcept {
  const std::uint64_t window = read_window_.load(std::memory_order_acquire);
  const std::uint64_t first = window >> 32;
  const std::uint64_t count = window & 0xffffffffU;
  const unsigned shift = placement_.storage.tile_shift;
  return (offset >> shift) - first < count && (last >> shift) - first < count;
}

[[nodiscard]] inline bool ArrayCore::element_writable(std::size_t offset,
                                                      std::size_t last) const noexcept {
  const unsigned shift = placement_.storage.tile_shift;
  return (offset >> shift) - element_.write_first < element_.write_count &&
         (last >> shift) - element_.write_first < element_.write_count;
}

inline std::byte* ArrayCore::append(std::size_t new_size) {
  if (new_size <= fast_limit_) [[likely]] {
    state_.set_size_in_window(new_size);
    note_fast_resize();
    return buffers_.host;
  }
  std::byte* const host = append_locked(new_size);
  // The same value append_locked() stored: with it in sight, the compiler keeps the size in a
  // register across a loop of appends instead of reloading it after every store.
  state_.set_size_in_window(new_size);
  return host;
}

[[nodiscard]] inline bool ArrayCore::can_append_in_place(std::size_t bytes) const noexcept {
  return state_.size() + bytes <= fast_limit_;
}

inline void ArrayCore::commit_append(std::size_t new_size) noexcept {
  state_.set_size_in_window(new_size);
  note_fast_resize();
}

[[nodiscard]] inline bool ArrayCore::erase_in_place(std::size_t pos, std::size_t bytes) noexcept {
  const std::size_t size = state_.size();
  if (!host_writable_ || size - bytes < fast_floor_) return false;
  std::memmove(buffers_.host + pos, buffers_.host + pos + bytes, size - pos - bytes);
  state_.set_size_in_window(size - bytes);
  note_fast_resize();
  return true;
}

inline void ArrayCore::truncate(std::size_t new_size) noexcept {
  if (new_size >= state_.size()) return;
  if (new_size >= fast_floor_) [[likely]] {
    state_.set_size_in_window(new_size);
    note_fast_resize();
    return;
  }
  truncate_locked(new_size);
}

inline void ArrayCore::note_fast_resize() noexcept {
#if SMARTARRAY_DEBUG_CHECKS
  for (int device = 0; device < device_copies(); ++device) {
    ViewState& views = device_copy(device).views;
    if (views.slot != 0 && state_.size() != views.size) [[unlikely]] {
      note_view_change(views.slot, ViewChange::resized);
      views.size = state_.size();
    }
  }
#endif
}

}  // namespace smartarray::detail
