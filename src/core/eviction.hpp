// Private: eviction. Each evictable resource's out-of-memory path (a pool's, a CcclDeviceResource's)
// evicts exactly the device copies whose buffers it holds: one registry per resource (so one per
// device for the default pools), made with the resource's eviction hook on first use. An array is
// linked once per device copy that holds a buffer of such a resource.
#pragma once

#include <smartarray/core/detail/array_core.hpp>

#include <atomic>
#include <cstdint>

namespace smartarray::detail {

/// The eviction registry of the evictable resource that serves allocations from `resource`: the
/// resource itself, or the one under a StatisticsAdaptor; nullptr for any other resource (its
/// arrays are never evicted). May throw (the registry is made on first use).
[[nodiscard]] EvictionRegistry* eviction_registry_for(MemoryResource& resource);
/// Drops device copies on `device`, from every registry, until `bytes` are released: every
/// registry's clean copies first, then dirty ones (written back). The bytes released.
std::size_t evict_device_copies(std::size_t bytes, int device);
/// Links `core`'s copy on `device` into `registry`.
void register_for_eviction(EvictionRegistry& registry, ArrayCore& core, int device) noexcept;
/// Unlinks `core`'s copy on `device` from `registry`.
void unlink_from_eviction(EvictionRegistry& registry, ArrayCore& core, int device) noexcept;
/// Unlinks `core`'s copy on `device` from the registry it is linked into (nothing when none).
inline void unregister_for_eviction(ArrayCore& core, int device) noexcept {
  if (EvictionRegistry* const registry = core.eviction_link(device).registry) {
    unlink_from_eviction(*registry, core, device);
  }
}

namespace eviction_state {
/// A process-wide tick for least-recently-used ordering. Each thread takes its ticks in blocks, so
/// that a use costs no atomic operation: uses are ordered exactly within a thread, and to within
/// a block across threads.
inline std::atomic<std::uint64_t> use_clock{0};
inline constexpr std::uint64_t use_clock_block = 64;
inline thread_local std::uint64_t next_tick = 0;
inline thread_local std::uint64_t end_tick = 0;
/// The array this thread is acquiring, which eviction must skip (its lock is held by this thread),
/// and the user's call that the acquire serves, which the trace of an eviction it causes names.
/// Inline, with constant initializers, so that every entry point reaches them without a call.
inline thread_local const ArrayCore* acquiring = nullptr;
inline thread_local const smartarray::source_location* call_site = nullptr;
}  // namespace eviction_state

/// The next tick of the least-recently-used clock (no atomic operation in the common case).
[[nodiscard]] inline std::uint64_t next_use_tick() noexcept {
  using namespace eviction_state;
  if (next_tick == end_tick) {
    next_tick = use_clock.fetch_add(use_clock_block, std::memory_order_relaxed) + 1;
    end_tick = next_tick + use_clock_block;
  }
  return next_tick++;
}

/// Marks `core` as the array this thread is acquiring, for the user's call `where` (or none).
class AcquireScope {
 public:
  AcquireScope(const ArrayCore* core, const smartarray::source_location* where) noexcept
      : previous_(eviction_state::acquiring), previous_where_(eviction_state::call_site) {
    eviction_state::acquiring = core;
    eviction_state::call_site = where;
  }
  ~AcquireScope() {
    eviction_state::acquiring = previous_;
    eviction_state::call_site = previous_where_;
  }
  AcquireScope(const AcquireScope&) = delete;
  AcquireScope& operator=(const AcquireScope&) = delete;

  /// The call site of the acquire running on this thread, or here when none is.
  [[nodiscard]] static smartarray::source_location current_call_site() noexcept {
    return eviction_state::call_site != nullptr ? *eviction_state::call_site
                                                : smartarray::source_location::current();
  }

 private:
  const ArrayCore* previous_;
  const smartarray::source_location* previous_where_;
};

}  // namespace smartarray::detail
