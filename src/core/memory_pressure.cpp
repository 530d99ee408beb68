// release_device_memory: eviction on behalf of another library, then a trim of the device pool.
#include <smartarray/core/memory_pressure.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/runtime/detail/capture.hpp>
#include <smartarray/error.hpp>

#include "core/eviction.hpp"

namespace smartarray {

DeviceMemoryRelease release_device_memory(std::size_t bytes, int device) {
  if (detail::active_capture() != nullptr) [[unlikely]] {
    detail::refuse_in_capture(
        detail::concat("release_device_memory(", bytes, ", device ", device, ")").c_str(),
        "evicting writes device copies back and trimming waits for pending frees, which a "
        "capture cannot do; call it before or after the capture");
  }
  PoolResource& pool = default_device_pool(device);  // checks the ordinal
  DeviceMemoryRelease release;
  release.evicted_bytes = detail::evict_device_copies(bytes, device);
  release.returned_bytes = pool.trim();
  return release;
}

}  // namespace smartarray
