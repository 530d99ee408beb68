/**
 * @file diagnostics/detail/view_registry.hpp
 * @brief Private: the generations that debug builds check device views against.
 *
 * An array takes a slot when it hands out its first device view. The slot's generation moves on
 * whenever a view of the array stops being valid: the array is resized, its device buffer is
 * reallocated or dropped, the host acquires it for writing (the device copy goes stale), or the
 * array is destroyed. A view records the slot and the generation it was made at; debug builds
 * compare them when the view's address is taken on the host. Slots live as long as the process,
 * so a view can be checked after its array is gone.
 */
#pragma once

#include <cstddef>
#include <cstdint>

namespace smartarray::detail {

/// Why the generation of a view slot moved on.
enum class ViewChange : std::uint8_t { none, resized, reallocated, host_write, destroyed };

/// Where a device view came from: slot 0 means "not tracked" (a view of external memory).
struct ViewStamp {
  std::uint32_t slot = 0;
  std::uint64_t generation = 0;
};

/// A fresh slot for the array numbered `array_id` (the number its messages give it); its
/// generation starts above any value the slot held before.
[[nodiscard]] std::uint32_t acquire_view_slot(std::uint64_t array_id);
/// Marks the array destroyed and gives the slot back for reuse (after every other free slot).
void release_view_slot(std::uint32_t slot) noexcept;
/// The slot's current stamp.
[[nodiscard]] ViewStamp view_stamp(std::uint32_t slot) noexcept;
/// Invalidates every view of the slot's array, recording why.
void note_view_change(std::uint32_t slot, ViewChange why) noexcept;
/// Throws logic_error naming the array, its size when the view was made, the operation and the
/// reason when the view's generation is no longer current.
void check_view(const ViewStamp& stamp, std::size_t elements, const char* operation);

}  // namespace smartarray::detail
