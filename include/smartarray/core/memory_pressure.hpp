/**
 * @file core/memory_pressure.hpp
 * @brief Giving device memory back to other libraries: `release_device_memory`.
 *
 * SmartArray's device copies are a cache of data that the host can always get back, so another
 * library that runs out of device memory (an RMM resource, PyTorch, CuPy) may ask for them:
 * `release_device_memory` drops device copies on one device, clean ones first (nothing to copy),
 * then the least recently used dirty ones (each written back to the host first, with one counted
 * device-to-host transfer), and then returns the built-in device pool's wholly free chunks to the
 * system. Nothing stored is lost: the next device access copies the data back, as after any
 * eviction.
 *
 * `smartarray/memory/rmm.hpp` wraps it as an RMM failure callback.
 */
#pragma once

#include <cstddef>

namespace smartarray {

/// @brief What `release_device_memory` freed.
struct DeviceMemoryRelease {
  /// Bytes of device copies dropped: they went back to the resources the copies came from.
  std::size_t evicted_bytes = 0;
  /// Bytes the built-in device pool returned to the system (cudaFree) afterwards.
  std::size_t returned_bytes = 0;
};

/**
 * @brief Drops SmartArrays' device copies on `device` until `bytes` are freed (clean ones first,
 *        then dirty ones, least recently used first, each written back), then trims the built-in
 *        device pool of `device`.
 *
 * Copies in use by a live `sa::Graph`, or locked by another thread at that moment, are skipped.
 * Blocks freed inside pools over chunks that still hold live blocks go back to the pool, not to the
 * system: `returned_bytes` says what the system got.
 * @param bytes the bytes wanted.
 * @param device the device ordinal.
 * @throws logic_error for an ordinal that is not a device of the active backend, and inside
 *         `sa::capture` (naming where the capture was opened), before anything is evicted.
 * @throws cuda_error when writing back a dirty copy or waiting for pending frees fails.
 */
DeviceMemoryRelease release_device_memory(std::size_t bytes, int device = 0);

}  // namespace smartarray
