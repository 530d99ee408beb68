/**
 * @file core/detail/device_copy.hpp
 * @brief Private: `DeviceCopy`, one device's copy of an array's data, with its bookkeeping: its
 * buffer, its place in the eviction registry of its pool, its stream order and its device views.
 */
#pragma once

#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/core/detail/run_list.hpp>
#include <smartarray/core/detail/stream_order.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

namespace smartarray::detail {

class EvictionRegistry;
class ArrayCore;

/// An array's place in the eviction registry of the pool that holds one of its device buffers:
/// the neighbours in that registry's list, each an array and the device of its copy there.
struct EvictionLink {
  EvictionRegistry* registry = nullptr;  ///< the registry it is linked into, or nullptr
  ArrayCore* previous = nullptr;
  ArrayCore* next = nullptr;
  std::uint8_t previous_device = 0;
  std::uint8_t next_device = 0;
};

/// What the debug view checks remember of the device views of one device copy: the slot (0 until
/// the first view) and the size, buffer and held bytes that the current views were made with.
struct ViewState {
  std::uint32_t slot = 0;
  std::size_t size = 0;
  const std::byte* address = nullptr;
  /// The bytes the device held when the current views were made (up to four ranges; with more,
  /// `scattered`, and any byte the device lacks later counts as lost).
  std::array<ByteRange, 4> held{};
  std::uint8_t ranges = 0;
  bool scattered = false;
};

/// One device's copy of an array's data.
struct DeviceCopy {
  std::byte* data = nullptr;
  std::size_t capacity = 0;
  /// External memory (wrap_device): never freed, never evicted.
  bool external = false;
  /// The resource the buffer comes from (null until the first allocation).
  MemoryResource* resource = nullptr;
  /// The eviction registry of the pool under `resource` (resolved at the first allocation;
  /// nullptr when not yet resolved or when the resource has no pool).
  EvictionRegistry* registry = nullptr;
  bool registry_resolved = false;
  EvictionLink link;
  StreamOrder order;
  ViewState views;
};

/// The last device view slot that an acquire on this thread handed out (ArrayCore::view_stamp()).
inline thread_local std::uint32_t last_view_slot = 0;

}  // namespace smartarray::detail
