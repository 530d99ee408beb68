// The raw resources: every call goes through the backend seam, which counts it and can fail it.
#include <smartarray/error.hpp>
#include <smartarray/memory/upstream_resources.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include "memory/alignment.hpp"

#include <exception>
#include <iostream>

namespace smartarray {
namespace {

/// Checks the request, then lets `allocate` (a seam call) make the block.
template <typename Allocate>
void* allocate_raw(std::size_t bytes, std::size_t alignment, const char* what,
                   Allocate&& allocate) {
  if (bytes == 0) return nullptr;
  detail::check_alignment(alignment, what);
  return allocate(bytes);
}

/// Frees `ptr` through `free` once no queued work can use it. A stream-ordered free waits for the
/// stream first: the host backend poisons freed memory, and cudaFree would not wait for that
/// stream's later work either. If the wait fails, the block is leaked rather than freed under work
/// that may still run.
template <typename Free>
void free_raw(StreamRef stream, void* ptr, bool host, const char* what, Free&& free) noexcept {
  if (ptr == nullptr) return;
  if (!host) {
    try {
      detail::runtime().synchronize(stream);
    } catch (const std::exception& error) {
      std::cerr << "smartarray: " << what << " at " << ptr << " is leaked: waiting for stream "
                << stream.handle() << " before freeing it failed: " << error.what() << "\n";
      return;
    }
  }
  free(ptr);
}

}  // namespace

bool DeviceMemoryResource::is_equal(const MemoryResource& other) const noexcept {
  const auto* device = dynamic_cast<const DeviceMemoryResource*>(&other);
  return device != nullptr && device->device_ == device_;
}

void* DeviceMemoryResource::do_allocate(StreamRef, std::size_t bytes, std::size_t alignment, bool) {
  return allocate_raw(bytes, alignment, "device memory allocate", [this](std::size_t n) {
    return detail::runtime().allocate_device(n, device_);
  });
}

void DeviceMemoryResource::do_deallocate(StreamRef stream, void* ptr, std::size_t, std::size_t,
                                         bool host) noexcept {
  free_raw(stream, ptr, host, "device memory",
           [this](void* p) { detail::runtime().free_device(p, device_); });
}

bool PinnedMemoryResource::is_equal(const MemoryResource& other) const noexcept {
  const auto* pinned = dynamic_cast<const PinnedMemoryResource*>(&other);
  return pinned != nullptr && pinned->flags_ == flags_;
}

void* PinnedMemoryResource::do_allocate(StreamRef, std::size_t bytes, std::size_t alignment, bool) {
  return allocate_raw(bytes, alignment, "pinned memory allocate", [this](std::size_t n) {
    return detail::runtime().allocate_pinned(n, flags_);
  });
}

void PinnedMemoryResource::do_deallocate(StreamRef stream, void* ptr, std::size_t, std::size_t,
                                         bool host) noexcept {
  free_raw(stream, ptr, host, "pinned host memory",
           [](void* p) { detail::runtime().free_pinned(p); });
}

bool ManagedMemoryResource::is_equal(const MemoryResource& other) const noexcept {
  return dynamic_cast<const ManagedMemoryResource*>(&other) != nullptr;
}

void* ManagedMemoryResource::do_allocate(StreamRef, std::size_t bytes, std::size_t alignment,
                                         bool) {
  return allocate_raw(bytes, alignment, "managed memory allocate", [](std::size_t n) {
    // Asking the driver for more managed memory than the device has free can hang the GPU.
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    detail::runtime().memory_info(free_bytes, total_bytes);
    if (n > free_bytes) {
      throw out_of_memory(detail::concat("managed memory allocate of ", n,
                                         " bytes: the device has only ", free_bytes, " of ",
                                         total_bytes, " bytes free"));
    }
    return detail::runtime().allocate_managed(n);
  });
}

void ManagedMemoryResource::do_deallocate(StreamRef stream, void* ptr, std::size_t, std::size_t,
                                          bool host) noexcept {
  free_raw(stream, ptr, host, "managed memory", [](void* p) { detail::runtime().free_managed(p); });
}

}  // namespace smartarray
