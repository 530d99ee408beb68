// EvictableResource: the registered eviction hooks and the guard against a second round of them.
#include <smartarray/memory/evictable_resource.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <utility>
#include <vector>

namespace smartarray {
namespace {

std::atomic<std::uint64_t> next_resource_id{1};

/// The out-of-memory paths on this thread that are calling eviction hooks, innermost first. A
/// hook that allocates from the same resource gets no second round of hooks.
class HookScope {
 public:
  explicit HookScope(const void* resource) noexcept : resource_(resource), outer_(innermost_) {
    innermost_ = this;
  }
  ~HookScope() { innermost_ = outer_; }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;

  [[nodiscard]] static bool active(const void* resource) noexcept {
    for (const HookScope* scope = innermost_; scope != nullptr; scope = scope->outer_) {
      if (scope->resource_ == resource) return true;
    }
    return false;
  }

 private:
  const void* resource_;
  HookScope* outer_;
  static inline thread_local HookScope* innermost_ = nullptr;
};

}  // namespace

struct EvictableResource::Hooks {
  std::shared_mutex mutex;  ///< calls hold it shared; registration holds it exclusively
  std::vector<std::pair<EvictionHookId, EvictionHook>> list;
  EvictionHookId next_id = 1;
};

EvictableResource::EvictableResource()
    : hooks_(std::make_unique<Hooks>()),
      id_(next_resource_id.fetch_add(1, std::memory_order_relaxed)) {}

EvictableResource::~EvictableResource() = default;

EvictableResource::EvictionHookId EvictableResource::add_eviction_hook(EvictionHook hook) {
  const std::unique_lock lock(hooks_->mutex);
  const EvictionHookId id = hooks_->next_id++;
  hooks_->list.emplace_back(id, std::move(hook));
  return id;
}

void EvictableResource::remove_eviction_hook(EvictionHookId id) {
  const std::unique_lock lock(hooks_->mutex);
  std::erase_if(hooks_->list, [id](const auto& entry) { return entry.first == id; });
}

bool EvictableResource::run_eviction_hooks(std::size_t bytes_needed, bool (*enough)(void*),
                                           void* context) {
  if (HookScope::active(this)) return false;
  const HookScope scope(this);
  const std::shared_lock lock(hooks_->mutex);
  bool any_released = false;
  for (const auto& [id, hook] : hooks_->list) {
    if (hook(bytes_needed) == 0) continue;
    any_released = true;
    if (enough(context)) break;
  }
  return any_released;
}

}  // namespace smartarray
