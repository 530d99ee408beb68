// Eviction registries, one per evictable resource, and the least-recently-used clock. See
// eviction.hpp.
#include "core/eviction.hpp"

#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/evictable_resource.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/statistics_adaptor.hpp>

#include <algorithm>
#include <initializer_list>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace smartarray::detail {
/// The arrays whose device buffers one evictable resource holds, in an intrusive list (no allocation
/// per array). The resource's eviction hook drops their copies: clean ones first, then dirty ones
/// (written back), least recently used first.
class EvictionRegistry {
 public:
  void add(ArrayCore* core, int device) noexcept {
    std::lock_guard lock(mutex_);
    EvictionLink& link = core->eviction_link(device);
    if (link.registry != nullptr) return;
    link = {this, nullptr, head_.core, 0, head_.device};
    if (head_.core != nullptr) {
      EvictionLink& next = head_.core->eviction_link(head_.device);
      next.previous = core;
      next.previous_device = static_cast<std::uint8_t>(device);
    }
    head_ = {core, static_cast<std::uint8_t>(device)};
    ++count_;
  }
  void remove(ArrayCore* core, int device) noexcept {
    std::lock_guard lock(mutex_);
    unlink({core, static_cast<std::uint8_t>(device)});
  }
  /// Drops copies until `bytes_needed` are released: clean ones first, then dirty ones, least
  /// recently used first. `passes` limits it to clean ones ({false}); `device` (when not -1) to
  /// copies on that device.
  std::size_t evict(std::size_t bytes_needed, std::initializer_list<bool> passes = {false, true},
                    int device = -1) {
    std::lock_guard lock(mutex_);
    std::vector<Entry> order;
    order.reserve(count_);
    for (Entry entry = head_; entry.core != nullptr;) {
      if (device < 0 || entry.device == device) order.push_back(entry);
      const EvictionLink& link = entry.core->eviction_link(entry.device);
      entry = {link.next, link.next_device};
    }
    std::sort(order.begin(), order.end(), [](const Entry& a, const Entry& b) {
      return a.core->last_use() < b.core->last_use();
    });
    std::size_t released = 0;
    for (const bool allow_dirty : passes) {
      for (const Entry& entry : order) {
        if (released >= bytes_needed) return released;
        if (entry.core == eviction_state::acquiring ||
            entry.core->eviction_link(entry.device).registry != this) {
          continue;
        }
        std::unique_lock array_lock(entry.core->mutex(), std::try_to_lock);
        if (!array_lock.owns_lock()) continue;
        const std::size_t freed = entry.core->evict_device_locked(entry.device, allow_dirty);
        if (freed > 0) {
          released += freed;
          unlink(entry);
        }
      }
    }
    return released;
  }

 private:
  /// One linked device copy: an array and the device of its copy.
  struct Entry {
    ArrayCore* core = nullptr;
    std::uint8_t device = 0;
  };

  void unlink(Entry entry) noexcept {
    EvictionLink& link = entry.core->eviction_link(entry.device);
    if (link.registry != this) return;
    if (link.previous != nullptr) {
      EvictionLink& previous = link.previous->eviction_link(link.previous_device);
      previous.next = link.next;
      previous.next_device = link.next_device;
    } else {
      head_ = {link.next, link.next_device};
    }
    if (link.next != nullptr) {
      EvictionLink& next = link.next->eviction_link(link.next_device);
      next.previous = link.previous;
      next.previous_device = link.previous_device;
    }
    link = {};
    --count_;
  }

  std::mutex mutex_;
  Entry head_;
  std::size_t count_ = 0;
};

namespace {

/// Every registry ever made, keyed by its resource's id (never by address). Registries are never
/// freed, so a hook never outlives its registry, and `release_device_memory` may visit them all.
struct Registries {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, EvictionRegistry*> by_resource;
};

Registries& registries() {
  static auto* const all = new Registries;
  return *all;
}

/// The eviction registry of `resource`, made (with the resource's eviction hook) on first use.
EvictionRegistry& registry_of(EvictableResource& resource) {
  Registries& all = registries();
  std::lock_guard lock(all.mutex);
  EvictionRegistry*& registry = all.by_resource[resource.id()];
  if (registry == nullptr) {
    auto made = std::make_unique<EvictionRegistry>();
    (void)resource.add_eviction_hook(
        [target = made.get()](std::size_t bytes_needed) { return target->evict(bytes_needed); });
    registry = made.release();
  }
  return *registry;
}

}  // namespace

EvictionRegistry* eviction_registry_for(MemoryResource& resource) {
  // The default device resource (never destroyed) skips the lookup: new arrays of map and
  // device_array resolve on every call.
  static MemoryResource* const default_resource = &default_device_resource();
  static EvictionRegistry* const default_registry = &registry_of(default_device_pool());
  if (&resource == default_resource) return default_registry;
  EvictableResource* const serving = resource.evictable();
  if (serving == nullptr) return nullptr;
  // The resource this thread looked up last, by id (an address may be reused): arrays of one
  // resource come in runs, and the lookup would otherwise take the registries' lock each time.
  thread_local std::uint64_t last_id = 0;
  thread_local EvictionRegistry* last_registry = nullptr;
  if (serving->id() != last_id) {
    last_registry = &registry_of(*serving);
    last_id = serving->id();
  }
  return last_registry;
}

std::size_t evict_device_copies(std::size_t bytes, int device) {
  std::vector<EvictionRegistry*> every;
  {
    Registries& all = registries();
    std::lock_guard lock(all.mutex);
    for (const auto& [id, registry] : all.by_resource) every.push_back(registry);
  }
  std::size_t released = 0;
  for (const bool allow_dirty : {false, true}) {
    for (EvictionRegistry* registry : every) {
      if (released >= bytes) return released;
      released += registry->evict(bytes - released, {allow_dirty}, device);
    }
  }
  return released;
}

void register_for_eviction(EvictionRegistry& registry, ArrayCore& core, int device) noexcept {
  registry.add(&core, device);
}

void unlink_from_eviction(EvictionRegistry& registry, ArrayCore& core, int device) noexcept {
  registry.remove(&core, device);
}

}  // namespace smartarray::detail
