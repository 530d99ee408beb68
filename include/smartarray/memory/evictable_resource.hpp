/**
 * @file memory/evictable_resource.hpp
 * @brief `EvictableResource`: a memory resource whose out-of-memory path asks its users to give
 *        memory back before it fails.
 *
 * SmartArray registers one hook with every evictable resource that serves its device copies: the
 * hook drops those copies, clean ones first, then the least recently used dirty ones, written back
 * to the host first. `PoolResource` and `interop::CcclDeviceResource` (interop/cccl_resource.hpp)
 * are evictable; other code may register hooks of its own (a cache that can be dropped, say).
 */
#pragma once

#include <smartarray/memory/memory_resource.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace smartarray {

/**
 * @brief A memory resource with eviction hooks, which its out-of-memory path calls before it fails.
 */
class EvictableResource : public MemoryResource {
 public:
  /// @brief Frees memory back into the resource when it runs out: gets the bytes still needed,
  ///        returns the bytes it released.
  using EvictionHook = std::function<std::size_t(std::size_t bytes_needed)>;
  /// @brief Names a registered eviction hook.
  using EvictionHookId = std::uint64_t;

  ~EvictableResource() override;
  EvictableResource(const EvictableResource&) = delete;
  EvictableResource& operator=(const EvictableResource&) = delete;

  /**
   * @brief Registers a hook that the out-of-memory path calls, in registration order.
   *
   * Hooks run without the resource's locks held, so a hook may (and should) release blocks into
   * this resource. A hook that allocates from this resource on the same thread gets no second round
   * of hooks.
   * @param hook returns the bytes it released; it should stop once `bytes_needed` are released.
   *        The resource retries only while a round of hooks gives memory back to it: a hook that
   *        reports bytes it did not free gets no further round.
   * @return an id for `remove_eviction_hook`.
   */
  EvictionHookId add_eviction_hook(EvictionHook hook);
  /**
   * @brief Unregisters a hook. Waits for calls of any hook in progress on other threads, so the
   *        hook's captures may be destroyed on return. Must not be called from inside a hook.
   * @param id the id `add_eviction_hook` returned; unknown ids are ignored.
   */
  void remove_eviction_hook(EvictionHookId id);

  /// @brief This resource: its own out-of-memory path calls its hooks.
  [[nodiscard]] EvictableResource* evictable() noexcept final { return this; }

  /// @brief A number that names this resource for the life of the process (never given to another
  ///        resource, even one built at the same address), for keying data kept per resource.
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }

 protected:
  EvictableResource();

  /**
   * @brief Calls the hooks in registration order, each with `bytes_needed`, and after each hook that
   *        released memory asks `enough()` whether to stop.
   * @return true when any hook released memory; false at once when this thread is already inside
   *         this resource's hooks.
   */
  template <class Enough>
  bool run_eviction_hooks(std::size_t bytes_needed, Enough enough) {
    return run_eviction_hooks(
        bytes_needed,
        [](void* context) { return static_cast<bool>((*static_cast<Enough*>(context))()); },
        static_cast<void*>(&enough));
  }

 private:
  struct Hooks;

  bool run_eviction_hooks(std::size_t bytes_needed, bool (*enough)(void*), void* context);

  std::unique_ptr<Hooks> hooks_;
  std::uint64_t id_;
};

}  // namespace smartarray
