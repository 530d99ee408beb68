/**
 * @file runtime/device.hpp
 * @brief The devices of the active backend: how many there are, which one is current, and which
 *        ones can copy from each other directly (peer access).
 *
 * As in CUDA, each thread has a current device (0 at first). Everything that names no device uses
 * it: a `Stream()` is made on it, and the default stream (`StreamRef{}`) is its default stream.
 * Everything that takes a stream works on the stream's device, whatever device is current: a
 * device view acquired on a stream of device 1 is device 1's copy of the data, and the adapters
 * launch their kernels on the stream's device.
 *
 * The cuda backend has the GPUs that the CUDA runtime reports (`CUDA_VISIBLE_DEVICES` applies).
 * The host backend emulates `SMARTARRAY_HOST_DEVICES` devices (default 1), each with its own
 * memory, streams and counters; `SMARTARRAY_HOST_PEER_ACCESS=0` makes them unable to copy from
 * each other directly, so that copies between them go through the host, as between GPUs without
 * peer access.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/runtime/runtime.hpp>

namespace smartarray {

/// @brief A device of the active backend, by ordinal (0 to `device_count() - 1`).
struct Device {
  int ordinal = 0;  ///< the device ordinal
  friend constexpr bool operator==(Device, Device) = default;
};

/// @brief The number of devices of the active backend (at least 1, at most `max_devices`).
[[nodiscard]] int device_count();

/// @brief The calling thread's current device.
[[nodiscard]] Device current_device();

/**
 * @brief Makes `device` the calling thread's current device (`cudaSetDevice`).
 * @throws logic_error when the ordinal is not a device of the active backend, naming it and the
 *         device count.
 */
void set_current_device(Device device);

/**
 * @brief Makes a device current for a scope and restores the previous one when it ends.
 *
 * With one device it does nothing at all.
 */
class DeviceGuard {
 public:
  /// @brief Makes `device` current. @throws logic_error as `set_current_device`.
  explicit DeviceGuard(Device device);
  /// @brief Makes the previous device current again (errors are reported on stderr).
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;  ///< -1: nothing to restore
};

/**
 * @brief True when `reader` can copy data held on `owner` directly, device to device (peer
 *        access: `cudaDeviceCanAccessPeer` on the cuda backend, `SMARTARRAY_HOST_PEER_ACCESS` on
 *        the host backend). Always true for a device and itself.
 *
 * When it is false, a read on `reader` of data that only `owner` holds goes through the host: one
 * copy down into the array's host copy, one copy up (both counted, and traced as such).
 * @throws logic_error for an ordinal that is not a device of the active backend.
 */
[[nodiscard]] bool peer_access(Device reader, Device owner);

/**
 * @brief The properties of `device`.
 * @throws logic_error for an ordinal that is not a device of the active backend.
 */
[[nodiscard]] const DeviceProperties& device_properties(Device device);

}  // namespace smartarray
