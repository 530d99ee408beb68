// Private: eviction. Each pool's out-of-memory chain evicts exactly the arrays whose device buffers
// it holds: one registry per pool, made with the pool's eviction hook on first use.
#pragma once

#include <smartarray/core/detail/array_core.hpp>

#include <cstdint>

namespace smartarray::detail {

/// The eviction registry of the pool that serves allocations from `resource`: the resource itself,
/// or the pool under a StatisticsAdaptor; nullptr for any other resource (its arrays are never
/// evicted). May throw (the registry is made on first use).
[[nodiscard]] EvictionRegistry* eviction_registry_for(MemoryResource& resource);
void register_for_eviction(EvictionRegistry& registry, ArrayCore& core) noexcept;
void unregister_for_eviction(ArrayCore& core) noexcept;

/// The next tick of the least-recently-used clock (no atomic operation in the common case).
[[nodiscard]] std::uint64_t next_use_tick() noexcept;

/// The array this thread is acquiring, which eviction must skip (its lock is held by this thread),
/// and the user's call that the acquire serves, which the trace of an eviction it causes names.
class AcquireScope {
 public:
  AcquireScope(const ArrayCore* core, const smartarray::source_location* where) noexcept;
  ~AcquireScope();
  AcquireScope(const AcquireScope&) = delete;
  AcquireScope& operator=(const AcquireScope&) = delete;

  /// The call site of the acquire running on this thread, or here when none is.
  [[nodiscard]] static smartarray::source_location current_call_site() noexcept;

 private:
  const ArrayCore* previous_;
  const smartarray::source_location* previous_where_;
};

}  // namespace smartarray::detail
