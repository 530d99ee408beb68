// The host backend's memory: device, pinned and managed allocations in their tables, poisoned when
// made and freed, device capacity, and host registration.
#include "runtime/host/host_runtime.hpp"
#include "runtime/host_memory.hpp"

#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include <smartarray/config.hpp>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace smartarray::detail {
namespace {

/// Written over fresh allocations, so that reading memory nobody wrote gives a recognizable value.
constexpr unsigned char fresh_poison = 0xCD;
/// Written over freed allocations, so that a late access through a stale pointer is recognizable.
constexpr unsigned char freed_poison = 0xDD;

}  // namespace

void HostRuntime::memory_info(int device, std::size_t& free_bytes, std::size_t& total_bytes) {
  check_device(device, "device memory information");
  total_bytes = capacity_;
  free_bytes = capacity_ - in_use(device).load(std::memory_order_relaxed);
}

void* HostRuntime::mapped_device_pointer(void* host_ptr) {
  // The emulated device sees host memory at its host address.
  if (is_mapped(host_ptr, 1)) return host_ptr;
  throw logic_error(concat("mapped_device_pointer: host memory at ", host_ptr,
                           " is not inside a mapped pinned allocation or a mapped registration"));
}

void* HostRuntime::do_allocate_device(std::size_t bytes, int device) {
  return allocate_counted(device_table(device), device, bytes,
                          device_count() == 1 ? std::string("allocate device memory")
                                              : concat("allocate memory of device ", device));
}

void HostRuntime::do_free_device(void* ptr, int device) noexcept {
  free_counted(device_table(device), device, ptr, "free_device");
}

void* HostRuntime::do_allocate_pinned(std::size_t bytes, unsigned flags) {
  return allocate(pinned_, bytes, flags, "allocate pinned host memory");
}

void HostRuntime::do_free_pinned(void* ptr) noexcept {
  if (std::optional<HostRange> range = forget(pinned_, ptr, "free_pinned")) release(*range);
}

// Managed memory is host memory here, but it counts against the emulated device's capacity:
// that keeps "never ask for more managed memory than the device has free" observable.
// It counts against device 0, the device that the one-buffer modes prefetch to.
void* HostRuntime::do_allocate_managed(std::size_t bytes) {
  return allocate_counted(managed_, 0, bytes, "allocate managed memory");
}

void HostRuntime::do_free_managed(void* ptr) noexcept {
  free_counted(managed_, 0, ptr, "free_managed");
}

void HostRuntime::do_register_host(void* ptr, std::size_t bytes, unsigned flags) {
  std::vector<std::pair<const AllocationTable*, const char*>> owned_kinds{
      {&managed_, "managed"}, {&pinned_, "pinned"}};
  for (int device = 0; device < devices_; ++device) {
    owned_kinds.emplace_back(&device_table(device), "device");
  }
  for (const auto& [table, kind_name] : owned_kinds) {
    if (std::optional<HostRange> owner = table->find_overlapping(ptr, bytes)) {
      throw logic_error(concat("register_host: host memory at ", ptr, " (", bytes,
                               " bytes) overlaps the ", kind_name, " allocation at ",
                               owner->ptr, " (", owner->bytes, " bytes)"));
    }
  }
  if (std::optional<HostRange> other = registered_.insert_if_disjoint({ptr, bytes, flags})) {
    throw logic_error(concat("register_host: host memory at ", ptr, " (", bytes,
                             " bytes) is already registered (as part of ", other->ptr, ", ",
                             other->bytes, " bytes)"));
  }
}

void HostRuntime::do_unregister_host(void* ptr) noexcept {
  if (!registered_.erase(ptr)) {
    std::cerr << "smartarray: unregister_host: no registration starts at " << ptr << "\n";
  }
}

void* HostRuntime::allocate(AllocationTable& table, std::size_t bytes, unsigned flags,
                            const char* what) {
  // Pinned memory is resident: like cudaHostAlloc, refuse more than the host's physical memory
  // (which overcommit would grant, and then kill the process while poisoning it).
  const std::size_t physical = host_memory_bytes(false);
  if (bytes > physical) {
    throw out_of_memory(concat(what, " of ", bytes, " bytes: the host has ", physical,
                               " bytes of physical memory"));
  }
  void* ptr = ::operator new(bytes, std::align_val_t{default_alignment}, std::nothrow);
  if (ptr == nullptr) {
    throw out_of_memory(concat(what, " of ", bytes, " bytes: the host is out of memory"));
  }
  std::memset(ptr, fresh_poison, bytes);
  table.insert({ptr, bytes, flags});
  return ptr;
}

void* HostRuntime::allocate_counted(AllocationTable& table, int device, std::size_t bytes,
                                    const std::string& what) {
  std::atomic<std::size_t>& used_bytes = in_use(device);
  std::size_t used = used_bytes.load(std::memory_order_relaxed);
  do {
    if (bytes > capacity_ - used) {
      throw out_of_memory(concat(what, " of ", bytes, " bytes: the emulated device",
                                 devices_ > 1 ? concat(" ", device) : std::string(), " has ",
                                 used, " of ", capacity_,
                                 " bytes in use (SMARTARRAY_HOST_DEVICE_MEMORY sets its size)"));
    }
  } while (!used_bytes.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  try {
    return allocate(table, bytes, pinned_default, what.c_str());
  } catch (...) {
    used_bytes.fetch_sub(bytes, std::memory_order_relaxed);
    throw;
  }
}

void HostRuntime::free_counted(AllocationTable& table, int device, void* ptr,
                               const char* what) noexcept {
  if (std::optional<HostRange> range = forget(table, ptr, what)) {
    release(*range);
    in_use(device).fetch_sub(range->bytes, std::memory_order_relaxed);
  }
}

std::optional<HostRange> HostRuntime::forget(AllocationTable& table, void* ptr,
                                             const char* what) noexcept {
  wait_for_queued_work();
  std::optional<HostRange> range = table.erase(ptr);
  if (!range) {
    std::cerr << "smartarray: " << what << ": " << ptr
              << " is not a live allocation of that kind (freed twice, or by the wrong "
                 "function)\n";
  }
  return range;
}

void HostRuntime::release(const HostRange& range) noexcept {
  std::memset(range.ptr, freed_poison, range.bytes);
  ::operator delete(range.ptr, std::align_val_t{default_alignment});
}

bool HostRuntime::is_mapped(const void* ptr, std::size_t bytes) const {
  for (const AllocationTable* table : {&pinned_, &registered_}) {
    const std::optional<HostRange> range = table->find_containing(ptr, bytes);
    if (range && (range->flags & pinned_mapped) != 0) return true;
  }
  return false;
}

bool HostRuntime::device_accessible(const void* ptr, std::size_t bytes, int device) const {
  return device_table(device).find_containing(ptr, bytes) ||
         managed_.find_containing(ptr, bytes) || is_mapped(ptr, bytes);
}

bool HostRuntime::overlaps_device_memory(const void* ptr, std::size_t bytes) const {
  for (int device = 0; device < devices_; ++device) {
    if (device_table(device).find_overlapping(ptr, bytes)) return true;
  }
  return false;
}

}  // namespace smartarray::detail
