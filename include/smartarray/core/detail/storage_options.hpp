/**
 * @file core/detail/storage_options.hpp
 * @brief Private: what an array's core is made with: how it stores its data (the parts of
 * ArrayOptions that the core needs) and the resources it was given.
 */
#pragma once

#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/memory/memory_mode.hpp>
#include <smartarray/core/array_options.hpp>
#include <smartarray/runtime/pinned_flags.hpp>

#include <cstdint>

namespace smartarray::detail {

/// How an array stores its data (the parts of ArrayOptions that the core needs).
struct StorageOptions {
  MemoryMode mode = MemoryMode::explicit_copy;
  /// Extra `PinnedFlags` of mapped memory (portable, write-combined).
  unsigned pinned_flags = pinned_default;
  /// Explicit mode only: never fall back to pageable host memory.
  bool require_pinned = false;
  /// Managed mode only: advise the driver that the data is read mostly.
  bool read_mostly = false;
  /// log2 of the tile size of element access.
  std::uint8_t tile_shift = static_cast<std::uint8_t>(TileSize{}.shift());
  friend bool operator==(const StorageOptions&, const StorageOptions&) = default;
};

/// The resources an array was given: nullptr means the default one, which the array takes when it
/// first allocates (so that a default-constructed array touches nothing until it is used). A
/// device resource serves the array's copy on device 0; copies on other devices come from their
/// devices' resources (device_resource(d)).
struct ResourceChoice {
  MemoryResource* host = nullptr;
  MemoryResource* device = nullptr;
};

}  // namespace smartarray::detail
