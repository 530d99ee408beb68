// The built-in per-device resources: statistics over a pool over the raw upstream, built on first
// use and leaked on purpose (the backend, streams and arrays may outlive static destruction).
#include "detail/environment.hpp"
#include <smartarray/error.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/upstream_resources.hpp>

#include <smartarray/runtime/detail/runtime.hpp>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>

namespace smartarray {
namespace {

constexpr std::size_t mebibyte = std::size_t{1} << 20;

void check_device(int device) { detail::runtime().check_device(device, "memory resources"); }

PoolOptions pool_options(std::size_t max_chunk_size, std::string name) {
  PoolOptions options;
  options.chunk_size = 2 * mebibyte;
  options.max_chunk_size = max_chunk_size;
  options.name = std::move(name);
  return options;
}

/// One raw upstream, its pool and the statistics over it, built together.
template <typename Upstream>
struct PooledStack {
  PooledStack(Upstream raw, PoolOptions options)
      : upstream(raw), pool(upstream, std::move(options)) {}
  Upstream upstream;
  PoolResource pool;
  StatisticsAdaptor statistics{pool};
};

/// SMARTARRAY_DEVICE_BUDGET: bytes, or a number followed by K, M, G or T; none when unset.
std::optional<std::size_t> budget_from_environment() {
  return detail::environment_number("SMARTARRAY_DEVICE_BUDGET", min_device_budget,
                                    max_device_budget, detail::EnvUnit::bytes);
}

/// The device pools, one per device, each made on first use.
struct DeviceStacks {
  std::mutex mutex;
  std::array<std::atomic<PooledStack<DeviceMemoryResource>*>, max_devices> stacks{};
};

PooledStack<DeviceMemoryResource>& device_stack(int device) {
  static auto* all = new DeviceStacks;
  std::atomic<PooledStack<DeviceMemoryResource>*>& slot =
      all->stacks[static_cast<std::size_t>(device)];
  if (auto* made = slot.load(std::memory_order_acquire)) return *made;
  std::lock_guard lock(all->mutex);
  if (auto* made = slot.load(std::memory_order_relaxed)) return *made;
  // Chunks double with the pool up to 1 GiB: few cudaMalloc calls, little idle memory. The name
  // is the same on every machine: "device 0 pool" with one device or several.
  PoolOptions options = pool_options(1024 * mebibyte, detail::concat("device ", device, " pool"));
  options.maximum_size = budget_from_environment();
  auto* made = new PooledStack<DeviceMemoryResource>(DeviceMemoryResource(Device{device}),
                                                     std::move(options));
  slot.store(made, std::memory_order_release);
  return *made;
}

PooledStack<PinnedMemoryResource>& pinned_stack() {
  // Pinning host memory is slow and takes it from the OS: grow in smaller steps than on the device.
  static auto* stack = new PooledStack<PinnedMemoryResource>(
      PinnedMemoryResource(), pool_options(256 * mebibyte, "pinned pool"));
  return *stack;
}

/// The resources set by the user; nullptr means the built-in one.
std::array<std::atomic<MemoryResource*>, max_devices> device_override{};
std::atomic<MemoryResource*> pinned_override{nullptr};

}  // namespace

PoolResource& default_device_pool(int device) {
  check_device(device);
  return device_stack(device).pool;
}

std::size_t device_budget(int device) {
  check_device(device);
  if (const std::optional<std::size_t> limit = device_stack(device).pool.maximum_size()) {
    return *limit;
  }
  // The device's total memory, from its properties: it does not change, every adapter call reads
  // the budget, and cudaMemGetInfo takes 8 us on an H100 system (it made launch() 8 us slower).
  return detail::runtime().properties(device).total_memory;
}

void set_device_budget(std::optional<std::size_t> bytes, int device) {
  check_device(device);
  SMARTARRAY_EXPECTS(!bytes || (*bytes >= min_device_budget && *bytes <= max_device_budget),
                     logic_error, "set_device_budget(", bytes.value_or(0), ", device ", device,
                     "): a budget must be from ", min_device_budget, " bytes (4 KiB, one tile) to ",
                     max_device_budget, " bytes (1 EiB), or none for the device's memory");
  device_stack(device).pool.set_maximum_size(bytes);
}

PoolResource& default_pinned_pool(int device) {
  check_device(device);
  return pinned_stack().pool;
}

StatisticsAdaptor& default_device_resource(int device) {
  check_device(device);
  return device_stack(device).statistics;
}

StatisticsAdaptor& default_pinned_resource(int device) {
  check_device(device);
  return pinned_stack().statistics;
}

MemoryResource& device_resource(int device) {
  check_device(device);
  MemoryResource* const set =
      device_override[static_cast<std::size_t>(device)].load(std::memory_order_acquire);
  return set != nullptr ? *set : device_stack(device).statistics;
}

MemoryResource& pinned_resource(int device) {
  check_device(device);
  MemoryResource* const set = pinned_override.load(std::memory_order_acquire);
  return set != nullptr ? *set : pinned_stack().statistics;
}

MemoryResource* set_device_resource(MemoryResource* resource, int device) {
  check_device(device);
  return device_override[static_cast<std::size_t>(device)].exchange(resource,
                                                                     std::memory_order_acq_rel);
}

MemoryResource* set_pinned_resource(MemoryResource* resource, int device) {
  check_device(device);
  return pinned_override.exchange(resource, std::memory_order_acq_rel);
}

}  // namespace smartarray
