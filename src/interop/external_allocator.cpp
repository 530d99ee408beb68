// Another library's device memory from smartarray's device pools: allocate on its stream, release
// after its work on that stream, or after every blocking stream's work when it names none.
#include <smartarray/interop/external_allocator.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/runtime/device.hpp>
#include <smartarray/runtime/stream.hpp>

#include <array>
#include <cstdint>
#include <exception>
#include <iostream>
#include <mutex>

namespace smartarray::interop {
namespace {

/// The stream under which the pool files a block. A library's default stream (0, or CUDA's legacy
/// handle 1) becomes `device`'s own default stream, which names that device's default stream
/// whatever device is current later, when the pool hands the block to another stream.
StreamRef pool_stream(void* stream, int device) {
  const auto handle = reinterpret_cast<std::uintptr_t>(stream);
  if (handle == 0 || handle == 1) return default_stream(Device{device});
  return StreamRef(stream);
}

/// Per device, the stream that blocks of unknown users are released on. At each release it is made
/// to wait for the work queued so far on the device's legacy default stream, which itself waits
/// for the work of every blocking stream: so whoever reuses the block waits for that work (the
/// pool records its events on this stream, or finds it idle). Releasing on the default stream
/// itself would not do: the pool takes a block of an idle stream at once, and the legacy stream
/// can be idle while other streams still use the block. Never destroyed: the pool may name it at
/// any time.
StreamRef release_stream(int device) {
  static std::mutex mutex;
  static std::array<Stream*, max_devices> streams{};
  const std::lock_guard lock(mutex);
  Stream*& stream = streams[static_cast<std::size_t>(device)];
  if (stream == nullptr) stream = new Stream(Device{device});
  return stream->ref();
}

void report_failed_free(void* ptr, std::size_t bytes, int device,
                        const std::exception& error) noexcept {
  std::cerr << "smartarray: free of " << bytes << " bytes at " << ptr << " on device " << device
            << " failed: " << error.what() << "\n";
}

}  // namespace

void* allocate(std::size_t bytes, int device, void* stream) {
  const DeviceGuard on(Device{device});
  if (bytes == 0) return nullptr;
  return device_resource(device).allocate(pool_stream(stream, device), bytes);
}

void deallocate(void* ptr, std::size_t bytes, int device, void* stream) noexcept {
  if (ptr == nullptr) return;
  try {
    const DeviceGuard on(Device{device});
    device_resource(device).deallocate(pool_stream(stream, device), ptr, bytes);
  } catch (const std::exception& error) {
    report_failed_free(ptr, bytes, device, error);
  }
}

bool deallocate_after_blocking_work(void* ptr, std::size_t bytes, int device) noexcept {
  if (ptr == nullptr) return true;
  try {
    const DeviceGuard on(Device{device});
    const StreamRef stream = release_stream(device);
    detail::stream_wait_stream(stream, default_stream(Device{device}));
    device_resource(device).deallocate(stream, ptr, bytes);
    return true;
  } catch (const std::exception& error) {
    report_failed_free(ptr, bytes, device, error);
  }
  return false;
}

}  // namespace smartarray::interop
