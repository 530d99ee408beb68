// Eviction registries, one per pool, and the least-recently-used clock. See eviction.hpp.
#include "eviction.hpp"

#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/statistics_adaptor.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace smartarray::detail {
/// The arrays whose device buffers one pool holds, in an intrusive list (no allocation per array).
/// The pool's eviction hook drops their copies: clean ones first, then dirty ones (written back),
/// least recently used first.
class EvictionRegistry {
 public:
  void add(ArrayCore* core) noexcept {
    std::lock_guard lock(mutex_);
    ArrayCore::EvictionLink& link = core->eviction_link();
    if (link.registry != nullptr) return;
    link = {this, nullptr, head_};
    if (head_ != nullptr) head_->eviction_link().previous = core;
    head_ = core;
    ++count_;
  }
  void remove(ArrayCore* core) noexcept {
    std::lock_guard lock(mutex_);
    unlink(core);
  }
  std::size_t evict(std::size_t bytes_needed) {
    std::lock_guard lock(mutex_);
    std::vector<ArrayCore*> order;
    order.reserve(count_);
    for (ArrayCore* core = head_; core != nullptr; core = core->eviction_link().next) {
      order.push_back(core);
    }
    std::sort(order.begin(), order.end(),
              [](const ArrayCore* a, const ArrayCore* b) { return a->last_use() < b->last_use(); });
    std::size_t released = 0;
    for (const bool allow_dirty : {false, true}) {
      for (ArrayCore* core : order) {
        if (released >= bytes_needed) return released;
        if (core == eviction_state::acquiring || core->eviction_link().registry != this) continue;
        std::unique_lock array_lock(core->mutex(), std::try_to_lock);
        if (!array_lock.owns_lock()) continue;
        const std::size_t freed = core->evict_device_locked(allow_dirty);
        if (freed > 0) {
          released += freed;
          unlink(core);
        }
      }
    }
    return released;
  }

 private:
  void unlink(ArrayCore* core) noexcept {
    ArrayCore::EvictionLink& link = core->eviction_link();
    if (link.registry != this) return;
    if (link.previous != nullptr) link.previous->eviction_link().next = link.next;
    else head_ = link.next;
    if (link.next != nullptr) link.next->eviction_link().previous = link.previous;
    link = {};
    --count_;
  }

  std::mutex mutex_;
  ArrayCore* head_ = nullptr;
  std::size_t count_ = 0;
};

namespace {

/// The pool whose out-of-memory chain serves allocations from `resource`, or nullptr.
PoolResource* serving_pool(MemoryResource& resource) noexcept {
  if (auto* pool = dynamic_cast<PoolResource*>(&resource)) return pool;
  if (auto* counted = dynamic_cast<StatisticsAdaptor*>(&resource)) return counted->pool();
  return nullptr;
}

/// The eviction registry of `pool`, made (with the pool's eviction hook) on first use. Keyed by
/// the pool's id, never by its address; registries are never freed, so a hook never outlives its.
EvictionRegistry& registry_of(PoolResource& pool) {
  static std::mutex mutex;
  static auto* registries = new std::unordered_map<std::uint64_t, EvictionRegistry*>;
  std::lock_guard lock(mutex);
  EvictionRegistry*& registry = (*registries)[pool.id()];
  if (registry == nullptr) {
    auto made = std::make_unique<EvictionRegistry>();
    (void)pool.add_eviction_hook(
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
  PoolResource* const pool = serving_pool(resource);
  return pool != nullptr ? &registry_of(*pool) : nullptr;
}

void register_for_eviction(EvictionRegistry& registry, ArrayCore& core) noexcept {
  registry.add(&core);
}

void unlink_from_eviction(EvictionRegistry& registry, ArrayCore& core) noexcept {
  registry.remove(&core);
}

}  // namespace smartarray::detail
