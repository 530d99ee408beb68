/**
 * @file runtime/runtime.hpp
 * @brief Which backend runs the program, and the properties of its device.
 *
 * The backend is chosen once, the first time the library needs it: `SMARTARRAY_BACKEND=cuda|host`
 * forces one; otherwise cuda is used when a CUDA device is present, else host, with one notice line
 * on stderr. Both backends are compiled into every build.
 */
#pragma once

#include <cstddef>
#include <string>

namespace smartarray {

/// @brief The two implementations of the runtime seam.
enum class BackendKind {
  host,  ///< an emulated device: separate allocations, per-stream worker threads, counted copies
  cuda,  ///< the CUDA runtime on a real GPU
};

/// @brief "host" or "cuda".
[[nodiscard]] const char* to_string(BackendKind kind) noexcept;

/// @brief What the library needs to know about the device of the active backend.
struct DeviceProperties {
  std::string name;                      ///< device name ("emulated host device" on host)
  int ordinal = 0;                       ///< device ordinal
  int multiprocessor_count = 1;          ///< SMs (worker threads on host)
  int compute_capability_major = 0;      ///< 0 on host
  int compute_capability_minor = 0;      ///< 0 on host
  std::size_t total_memory = 0;          ///< bytes of device memory
  bool can_map_host_memory = false;      ///< mapped pinned memory is usable
  bool concurrent_managed_access = false;///< managed memory may be touched by host and device at once
  bool managed_memory = false;           ///< managed allocations are supported
};

/// @brief The backend in use. Selects it on first call.
[[nodiscard]] BackendKind backend();
/// @brief The properties of the active backend's device.
[[nodiscard]] const DeviceProperties& device_properties();
/// @brief True when a CUDA device is present and usable, whatever the active backend is.
[[nodiscard]] bool cuda_device_available() noexcept;

}  // namespace smartarray
