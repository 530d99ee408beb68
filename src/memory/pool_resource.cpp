// PoolResource: best-fit blocks carved from upstream chunks, reused in stream order.
//
// The blocks of a chunk tile it and are linked to their neighbours, so a released block finds them
// in O(1); live blocks are found by address in a hash map. A free block sits in exactly one free
// list, that of its owner:
// - the shared list: blocks that nobody's queued work uses (fresh chunks, `deallocate_sync`, and
//   stream-released blocks whose stream has since been seen to complete);
// - the list of stream S: blocks whose last use was queued on S. S reuses them at once. Another
//   stream takes them without a wait once S has completed, else after waiting on an event recorded
//   on S; the host takes them only once S has completed.
// Free neighbours merge only when they have the same owner; neighbours never cross chunks.
//
// Small blocks released for anyone (`deallocate_sync`) first wait, unmerged and still in the live
// map, in a stack of their exact size for the next host request of that size: a growing vector
// frees and allocates the same few sizes over and over, and a stack skips the split, the merge and
// the tree. They are filed as ordinary free blocks before the pool would grow, before any query
// that reports free memory, and by trim() and the out-of-memory chain, so they never cost growth
// nor show up as fragmentation.
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include <smartarray/memory/pool_resource.hpp>

#include "memory/alignment.hpp"
#include "memory/request_counts.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <limits>
#include <map>
#include <memory_resource>
#include <mutex>
#include <new>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace smartarray {
namespace {

constexpr std::size_t granularity = detail::max_alignment;
constexpr std::size_t no_limit = std::numeric_limits<std::size_t>::max();

[[nodiscard]] constexpr std::size_t round_up(std::size_t bytes) noexcept {
  return (bytes + granularity - 1) / granularity * granularity;
}
[[nodiscard]] constexpr std::size_t round_down(std::size_t bytes) noexcept {
  return bytes / granularity * granularity;
}

/// "0 B", "512 B", "1.5 KiB", "78.1 GiB".
std::string format_bytes(std::size_t bytes) {
  if (bytes < 1024) return detail::concat(bytes, " B");
  constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(units)) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

struct Block;

/// An entry of a free list.
struct FreeEntry {
  std::size_t size;
  char* address;
  Block* block;
};

/// Best fit first: by size, then by address.
struct BestFitOrder {
  bool operator()(const FreeEntry& a, const FreeEntry& b) const noexcept {
    return a.size != b.size ? a.size < b.size : a.address < b.address;
  }
};

/// The free blocks of one owner.
using FreeList = std::pmr::set<FreeEntry, BestFitOrder>;

/// A block of a chunk, live or free.
struct Block {
  char* address = nullptr;
  std::size_t size = 0;
  Block* previous = nullptr;  ///< the block below in the same chunk, if any
  Block* next = nullptr;      ///< the block above in the same chunk, if any
  bool free = false;
  bool cached = false;        ///< released for anyone, and waiting in a stack of its size
  bool shared = false;        ///< free, and no queued work uses it: anyone may take it
  void* stream = nullptr;     ///< free and not shared: the stream its last use was queued on
  std::uint64_t release = 0;  ///< free: the number of the release that freed it (merged: latest)
  FreeList::iterator entry;   ///< free: its entry in its owner's list
};

/// A chunk held from upstream. Its first block stays the same object for the chunk's life: it
/// has no lower neighbour to merge into.
struct Chunk {
  std::size_t size;
  Block* first;
};

/// The out-of-memory chains on this thread that are calling eviction hooks, innermost first. A
/// hook that allocates from the same pool gets no second round of hooks.
class HookScope {
 public:
  explicit HookScope(const void* pool) noexcept : pool_(pool), outer_(innermost_) {
    innermost_ = this;
  }
  ~HookScope() { innermost_ = outer_; }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;

  [[nodiscard]] static bool active(const void* pool) noexcept {
    for (const HookScope* scope = innermost_; scope != nullptr; scope = scope->outer_) {
      if (scope->pool_ == pool) return true;
    }
    return false;
  }

 private:
  const void* pool_;
  HookScope* outer_;
  static inline thread_local HookScope* innermost_ = nullptr;
};

/// The largest block a size stack keeps, the blocks a stack keeps, and the bytes all stacks keep.
constexpr std::size_t cached_block_max = std::size_t{32} << 10;
constexpr std::size_t cached_per_size = 4;
constexpr std::size_t cached_bytes_max = std::size_t{1} << 20;

/// Released blocks of one size, last in first out.
struct SizeStack {
  std::array<Block*, cached_per_size> blocks{};
  std::size_t count = 0;
};

PoolOptions normalized(PoolOptions options) {
  options.initial_size = round_up(options.initial_size);
  options.chunk_size = round_up(std::max(options.chunk_size, granularity));
  options.max_chunk_size = std::max(round_up(options.max_chunk_size), options.chunk_size);
  if (options.maximum_size) options.maximum_size = round_down(*options.maximum_size);
  SMARTARRAY_EXPECTS(!options.maximum_size || options.initial_size <= *options.maximum_size,
                     logic_error, options.name, ": initial size of ", options.initial_size,
                     " bytes exceeds the maximum size of ", *options.maximum_size, " bytes");
  return options;
}

}  // namespace

struct PoolResource::State {
  State(MemoryResource& upstream_resource, PoolOptions pool_options)
      : upstream(upstream_resource),
        options(normalized(std::move(pool_options))),
        allocate_what(options.name + " allocate"),
        limit(options.maximum_size) {}

  MemoryResource& upstream;
  const PoolOptions options;
  const std::string allocate_what;  ///< names pool allocations for the fault injector

  mutable std::mutex mutex;  ///< guards everything below up to the hooks
  // Blocks and tree nodes come from one pool of their own: dense in memory, guarded by `mutex`.
  std::pmr::unsynchronized_pool_resource nodes;
  std::pmr::polymorphic_allocator<> node_allocator{&nodes};
  std::pmr::unordered_map<char*, Block*> live{&nodes};  ///< live blocks by address
  std::map<char*, Chunk> chunks;                        ///< chunks held from upstream, by base
  FreeList shared_free{&nodes};
  std::pmr::unordered_map<void*, FreeList> stream_free{&nodes};
  FreeList::node_type spare_entry;  ///< a recycled free-list node, for the next insertion
  std::size_t in_use = 0;
  std::size_t reserved = 0;
  std::uint64_t upstream_allocations = 0;
  std::uint64_t upstream_releases = 0;
  std::uint64_t releases = 0;         ///< numbers the releases, for `Block::release`
  /// The hard limit now (set_maximum_size() changes it; options.maximum_size is the one built),
  /// and the same for readers without the lock (every adapter call reads the device budget);
  /// no_limit for none.
  std::optional<std::size_t> limit;
  std::atomic<std::size_t> published_limit{limit.value_or(no_limit)};
  /// The runtime's subscription that forgets streams here (set once, at construction).
  std::uint64_t forgotten_streams = 0;
  std::array<SizeStack, cached_block_max / granularity> cached{};  ///< by size / granularity - 1
  std::size_t cached_bytes = 0;
  std::string last_upstream_failure;  ///< why growth last failed, for the out-of-memory message

  std::shared_mutex hooks_mutex;  ///< calls hold it shared; registration holds it exclusively
  std::vector<std::pair<EvictionHookId, EvictionHook>> hooks;
  EvictionHookId next_hook_id = 1;

  // --- the helpers below need `mutex` held, except settle(), evict_and_search() and
  // allocate_out_of_memory(), which take it themselves ---

  FreeList& list_of(const Block& block) {
    return block.shared ? shared_free : stream_free[block.stream];
  }

  /// Keeps the block just released for anyone in the stack of its size; false when it is too large
  /// or the stacks are full.
  bool cache_locked(Block* block) noexcept {
    if (block->size > cached_block_max || cached_bytes + block->size > cached_bytes_max) {
      return false;
    }
    SizeStack& stack = cached[block->size / granularity - 1];
    if (stack.count == cached_per_size) return false;
    stack.blocks[stack.count++] = block;
    block->cached = true;
    cached_bytes += block->size;
    return true;
  }

  /// A block of exactly `size` from the stacks, marked live; nullptr when none waits.
  char* take_cached_locked(std::size_t size) noexcept {
    if (size > cached_block_max) return nullptr;
    SizeStack& stack = cached[size / granularity - 1];
    if (stack.count == 0) return nullptr;
    Block* const block = stack.blocks[--stack.count];
    block->cached = false;
    cached_bytes -= size;
    in_use += size;
    return block->address;
  }

  /// Files every block of the stacks as a shared free block, merged with its free neighbours.
  void file_cached_locked() {
    for (SizeStack& stack : cached) {
      while (stack.count > 0) {
        Block* const block = stack.blocks[stack.count - 1];
        live.erase(block->address);
        --stack.count;
        cached_bytes -= block->size;
        block->cached = false;
        block->free = true;
        block->shared = true;
        block->stream = nullptr;
        block->release = ++releases;
        file_free_locked(block);
      }
    }
  }

  /// Files the free `block` in `list`.
  void insert_entry(FreeList& list, Block* block) {
    const FreeEntry key{block->size, block->address, block};
    if (spare_entry.empty()) {
      block->entry = list.insert(key).first;
      return;
    }
    spare_entry.value() = key;
    block->entry = list.insert(std::move(spare_entry)).position;
  }
  void erase_entry(FreeList& list, const Block* block) noexcept {
    auto node = list.extract(block->entry);
    if (spare_entry.empty()) spare_entry = std::move(node);
  }

  /// The best fit for `size` in `list`, split to size and marked live; nullptr when none fits.
  char* take_locked(FreeList& list, std::size_t size) {
    const auto fit = list.lower_bound(FreeEntry{size, nullptr, nullptr});
    if (fit == list.end()) return nullptr;
    Block* const block = fit->block;
    // Everything that can throw comes first, so that a failure leaves the pool as it was.
    Block* rest = nullptr;
    if (block->size > size) {
      // The remainder keeps the owner and history of the block it was cut from.
      rest = node_allocator.new_object<Block>(*block);
      rest->address += size;
      rest->size -= size;
    }
    try {
      live.emplace(block->address, block);
    } catch (...) {
      if (rest != nullptr) node_allocator.delete_object(rest);
      throw;
    }
    if (rest != nullptr) {
      rest->previous = block;
      if (rest->next != nullptr) rest->next->previous = rest;
      block->next = rest;
      block->size = size;
      auto node = list.extract(fit);  // the remainder reuses the block's free-list node
      node.value() = FreeEntry{rest->size, rest->address, rest};
      rest->entry = list.insert(std::move(node)).position;
    } else {
      erase_entry(list, block);
    }
    block->free = false;
    block->shared = false;
    block->stream = nullptr;
    in_use += size;
    return block->address;
  }

  /// Merges the free `block` with free neighbours of the same owner, then files it in its owner's
  /// list.
  void file_free_locked(Block* block) {
    const auto mergeable = [&](const Block* other) {
      return other != nullptr && other->free && other->shared == block->shared &&
             (block->shared || other->stream == block->stream);
    };
    FreeList& list = list_of(*block);
    if (Block* const next = block->next; mergeable(next)) {
      erase_entry(list, next);
      block->size += next->size;
      block->release = std::max(block->release, next->release);
      block->next = next->next;
      if (block->next != nullptr) block->next->previous = block;
      node_allocator.delete_object(next);
    }
    if (Block* const previous = block->previous; mergeable(previous)) {
      erase_entry(list, previous);
      previous->size += block->size;
      previous->release = std::max(previous->release, block->release);
      previous->next = block->next;
      if (previous->next != nullptr) previous->next->previous = previous;
      node_allocator.delete_object(block);
      block = previous;
    }
    insert_entry(list, block);
  }

  /// Makes the blocks released on `stream` by release number `up_to` shared: their work is done.
  void share_completed_locked(void* stream, std::uint64_t up_to) {
    const auto found = stream_free.find(stream);
    if (found == stream_free.end()) return;
    FreeList& list = found->second;
    std::vector<Block*> done;
    for (const FreeEntry& entry : list) {
      if (entry.block->release <= up_to) done.push_back(entry.block);
    }
    // A shared block merges only with shared ones, so the blocks still to move stay valid.
    for (Block* block : done) {
      erase_entry(list, block);
      block->shared = true;
      block->stream = nullptr;
      file_free_locked(block);
    }
    if (list.empty()) stream_free.erase(found);
  }

  /// Takes a block freed on another stream: `stream` first waits for that stream's work so far.
  char* take_from_other_stream_locked(StreamRef stream, std::size_t size) {
    FreeList* best_list = nullptr;
    void* best_stream = nullptr;
    std::size_t best_size = no_limit;
    for (auto& [other, list] : stream_free) {
      if (other == stream.handle()) continue;
      const auto fit = list.lower_bound(FreeEntry{size, nullptr, nullptr});
      if (fit != list.end() && fit->size < best_size) {
        best_list = &list;
        best_stream = other;
        best_size = fit->size;
      }
    }
    if (best_list == nullptr) return nullptr;
    if (detail::runtime().query(StreamRef{best_stream})) {
      // That stream has finished everything: its blocks are free for all, without a dependency.
      share_completed_locked(best_stream, releases);
      return take_locked(shared_free, size);
    }
    // Recorded now, not at release: the same-stream path never pays for an event.
    const detail::PooledEvent event;
    detail::runtime().record(event.get(), StreamRef{best_stream});
    detail::runtime().stream_wait(stream, event.get());
    return take_locked(*best_list, size);
  }

  /// Takes a block for the host from a stream that has completed all its work. A stream query is
  /// as precise as an event recorded now, and cheaper.
  char* take_completed_for_host_locked(std::size_t size) {
    std::vector<std::pair<std::size_t, void*>> candidates;
    for (const auto& [stream, list] : stream_free) {
      const auto fit = list.lower_bound(FreeEntry{size, nullptr, nullptr});
      if (fit != list.end()) candidates.emplace_back(fit->size, stream);
    }
    std::sort(candidates.begin(), candidates.end());
    for (const auto& [fit_size, stream] : candidates) {
      if (!detail::runtime().query(StreamRef{stream})) continue;
      share_completed_locked(stream, releases);
      return take_locked(shared_free, size);
    }
    return nullptr;
  }

  /// The whole search without growth: the size stacks for the host, then own stream, shared blocks,
  /// other streams, and all of them again once the stacks are filed.
  char* search_locked(StreamRef stream, std::size_t size, bool host) {
    if (host) {
      if (char* block = take_cached_locked(size)) return block;
    }
    if (char* block = search_lists_locked(stream, size, host)) return block;
    if (cached_bytes == 0) return nullptr;
    file_cached_locked();
    return search_lists_locked(stream, size, host);
  }

  /// The search of the free lists: own stream, shared blocks, then other streams.
  char* search_lists_locked(StreamRef stream, std::size_t size, bool host) {
    if (host) {
      if (char* block = take_locked(shared_free, size)) return block;
      return take_completed_for_host_locked(size);
    }
    if (const auto own = stream_free.find(stream.handle()); own != stream_free.end()) {
      if (char* block = take_locked(own->second, size)) return block;
    }
    if (char* block = take_locked(shared_free, size)) return block;
    return take_from_other_stream_locked(stream, size);
  }

  /// Files a fresh upstream chunk as one shared free block.
  void add_chunk_locked(void* memory, std::size_t bytes) {
    char* const base = static_cast<char*>(memory);
    try {
      SMARTARRAY_EXPECTS(detail::is_aligned(base, granularity), logic_error, options.name,
                         ": upstream returned ", memory, ", which is not ", granularity,
                         "-byte aligned");
      Block* const block = node_allocator.new_object<Block>();
      block->address = base;
      block->size = bytes;
      block->free = true;
      block->shared = true;
      try {
        const auto chunk = chunks.emplace(base, Chunk{bytes, block}).first;
        try {
          insert_entry(shared_free, block);
        } catch (...) {
          chunks.erase(chunk);
          throw;
        }
      } catch (...) {
        node_allocator.delete_object(block);
        throw;
      }
    } catch (...) {
      upstream.deallocate_sync(memory, bytes);
      throw;
    }
    reserved += bytes;
    ++upstream_allocations;
  }

  /// Grows by one step (as large as the pool, within the chunk sizes and the limit), or by `size`
  /// alone when the step cannot be had. False when neither can.
  bool grow_locked(std::size_t size) {
    const std::size_t ceiling = limit.value_or(no_limit);
    if (size > ceiling - reserved) {
      last_upstream_failure =
          detail::concat("the maximum size of ", format_bytes(ceiling), " would be exceeded");
      return false;
    }
    const std::size_t step =
        std::min(std::max({size, options.chunk_size, std::min(reserved, options.max_chunk_size)}),
                 ceiling - reserved);
    for (const std::size_t bytes : {step, size}) {
      try {
        add_chunk_locked(upstream.allocate_sync(bytes), bytes);
        last_upstream_failure.clear();
        return true;
      } catch (const std::bad_alloc& error) {
        last_upstream_failure = error.what();
      }
      if (step == size) break;
    }
    return false;
  }

  /// Returns every chunk that is one shared free block to upstream; the bytes returned.
  std::size_t release_free_chunks_locked() {
    file_cached_locked();
    std::size_t released = 0;
    for (auto chunk = chunks.begin(); chunk != chunks.end();) {
      Block* const first = chunk->second.first;
      if (!first->free || !first->shared || first->next != nullptr) {
        ++chunk;
        continue;
      }
      erase_entry(shared_free, first);
      node_allocator.delete_object(first);
      upstream.deallocate_sync(chunk->first, chunk->second.size);
      reserved -= chunk->second.size;
      released += chunk->second.size;
      ++upstream_releases;
      chunk = chunks.erase(chunk);
    }
    return released;
  }

  /// The largest free block, once the size stacks are filed.
  [[nodiscard]] std::size_t largest_free_filed_locked() {
    file_cached_locked();
    return largest_free_locked();
  }

  [[nodiscard]] std::size_t largest_free_locked() const {
    std::size_t largest = shared_free.empty() ? 0 : shared_free.rbegin()->size;
    for (const auto& [stream, list] : stream_free) {
      if (!list.empty()) largest = std::max(largest, list.rbegin()->size);
    }
    return largest;
  }

  /// Waits for the work queued so far on every stream that released blocks, then shares the
  /// blocks released before the wait. The pool stays usable by other threads meanwhile.
  void settle() {
    struct Pending {
      void* stream;
      detail::PooledEvent event;
      std::uint64_t up_to;
    };
    std::vector<Pending> pending;
    {
      const std::lock_guard lock(mutex);
      for (const auto& [stream, list] : stream_free) {
        if (list.empty()) continue;
        pending.push_back({stream, detail::PooledEvent{}, releases});
        detail::runtime().record(pending.back().event.get(), StreamRef{stream});
      }
    }
    if (pending.empty()) return;
    for (const Pending& wait : pending) detail::runtime().synchronize(wait.event.get());
    const std::lock_guard lock(mutex);
    for (const Pending& wait : pending) share_completed_locked(wait.stream, wait.up_to);
  }

  /// Calls the eviction hooks until one frees enough for `size`; the block, or nullptr.
  char* evict_and_search(StreamRef stream, std::size_t size, bool host, bool& any_released) {
    if (HookScope::active(this)) return nullptr;
    const HookScope scope(this);
    const std::shared_lock hooks_lock(hooks_mutex);
    for (const auto& [id, hook] : hooks) {
      if (hook(size) == 0) continue;
      any_released = true;
      const std::lock_guard lock(mutex);
      if (char* block = search_locked(stream, size, host)) return block;
    }
    return nullptr;
  }

  /// What an allocation got when it failed, for out_of_memory.
  [[nodiscard]] std::string out_of_memory_message_locked(StreamRef stream, std::size_t bytes,
                                                         bool host) const {
    std::string message =
        host ? detail::concat(options.name, " allocate_sync of ", bytes, " bytes for the host")
             : detail::concat(options.name, " allocate of ", bytes, " bytes on stream ",
                              stream.handle());
    message += detail::concat(": out of memory; in use ", format_bytes(in_use), ", reserved ",
                              format_bytes(reserved), ", largest free block ",
                              format_bytes(largest_free_locked()));
    if (limit) message += ", limit " + format_bytes(*limit);
    if (!last_upstream_failure.empty()) message += "; growth failed: " + last_upstream_failure;
    return message;
  }

  /// The out-of-memory chain, entered when neither the free lists nor growth had a block.
  void* allocate_out_of_memory(StreamRef stream, std::size_t bytes, std::size_t size, bool host) {
    // 1. Blocks released on streams become shared (and merge) once their work is done.
    settle();
    {
      const std::lock_guard lock(mutex);
      if (char* block = search_locked(stream, size, host)) return block;
    }
    // 2. Eviction: hooks release blocks into this pool, usually on their own streams.
    bool any_released = false;
    if (char* block = evict_and_search(stream, size, host, any_released)) return block;
    if (any_released) settle();
    // 3. Whole free chunks go back, so that growth may get one contiguous chunk instead.
    const std::lock_guard lock(mutex);
    if (char* block = search_locked(stream, size, host)) return block;
    release_free_chunks_locked();
    if (grow_locked(size)) return take_locked(shared_free, size);
    // 4. Nothing left to try.
    throw out_of_memory(out_of_memory_message_locked(stream, bytes, host));
  }
};

namespace {
std::atomic<std::uint64_t> next_pool_id{1};
}  // namespace

PoolResource::PoolResource(MemoryResource& upstream, PoolOptions options)
    : state_(std::make_unique<State>(upstream, std::move(options))),
      id_(next_pool_id.fetch_add(1, std::memory_order_relaxed)) {
  // A stream that the runtime forgets is forgotten here too: its handle may be reused.
  state_->forgotten_streams = detail::subscribe_to_forgotten_streams(
      [this](StreamRef stream) noexcept { forget_stream(stream); });
  if (state_->options.initial_size == 0) return;
  const std::size_t bytes = state_->options.initial_size;
  try {
    const std::lock_guard lock(state_->mutex);
    state_->add_chunk_locked(upstream.allocate_sync(bytes), bytes);
  } catch (...) {
    detail::unsubscribe_from_forgotten_streams(state_->forgotten_streams);
    throw;
  }
}

PoolResource::~PoolResource() {
  detail::unsubscribe_from_forgotten_streams(state_->forgotten_streams);
  State& state = *state_;
  // Work queued before a release may still use the block. Its stream may be gone by now, so wait
  // for the whole device: a pool is destroyed rarely, and the raw frees below would wait anyway.
  const bool pending = std::any_of(state.stream_free.begin(), state.stream_free.end(),
                                   [](const auto& entry) { return !entry.second.empty(); });
  if (pending) {
    try {
      detail::runtime().synchronize_device();
    } catch (const std::exception& error) {
      std::cerr << "smartarray: " << state.options.name
                << " destructor: waiting for the device failed: " << error.what() << "\n";
    }
  }
  for (const auto& [base, chunk] : state.chunks) state.upstream.deallocate_sync(base, chunk.size);
}

MemoryKind PoolResource::kind() const noexcept { return state_->upstream.kind(); }
MemoryResource& PoolResource::upstream() const noexcept { return state_->upstream; }
const PoolOptions& PoolResource::options() const noexcept { return state_->options; }

std::optional<std::size_t> PoolResource::maximum_size() const {
  const std::size_t limit = state_->published_limit.load(std::memory_order_relaxed);
  return limit == no_limit ? std::nullopt : std::optional<std::size_t>(limit);
}

void PoolResource::set_maximum_size(std::optional<std::size_t> bytes) {
  const std::lock_guard lock(state_->mutex);
  state_->limit = bytes ? std::optional<std::size_t>(round_down(*bytes)) : std::nullopt;
  state_->published_limit.store(state_->limit.value_or(no_limit), std::memory_order_relaxed);
}

void* PoolResource::do_allocate(StreamRef stream, std::size_t bytes, std::size_t alignment,
                                bool host) {
  return allocate_counted(stream, bytes, alignment, host, nullptr);
}

void* PoolResource::allocate_counted(StreamRef stream, std::size_t bytes, std::size_t alignment,
                                     bool host, MemoryStats* counts) {
  if (bytes == 0) return nullptr;
  State& state = *state_;
  detail::check_alignment(alignment, state.allocate_what.c_str());
  detail::check_injected_allocation_failure(bytes, state.allocate_what.c_str());
  if (bytes > no_limit - granularity) {
    const std::lock_guard lock(state.mutex);
    throw out_of_memory(state.out_of_memory_message_locked(stream, bytes, host));
  }
  const std::size_t size = round_up(bytes);
  {
    const std::lock_guard lock(state.mutex);
    char* block = state.search_locked(stream, size, host);
    if (block == nullptr && state.grow_locked(size)) block = state.take_locked(state.shared_free, size);
    if (block != nullptr) {
      if (counts != nullptr) detail::count_allocation(*counts, bytes);
      return block;
    }
  }
  void* block = state.allocate_out_of_memory(stream, bytes, size, host);
  if (counts != nullptr) {
    const std::lock_guard lock(state.mutex);
    detail::count_allocation(*counts, bytes);
  }
  return block;
}

void PoolResource::do_deallocate(StreamRef stream, void* ptr, std::size_t bytes, std::size_t,
                                 bool host) noexcept {
  deallocate_counted(stream, ptr, bytes, host, nullptr);
}

void PoolResource::deallocate_counted(StreamRef stream, void* ptr, std::size_t bytes, bool host,
                                      MemoryStats* counts) noexcept {
  if (ptr == nullptr) return;
  State& state = *state_;
  const std::lock_guard lock(state.mutex);
  const auto found = state.live.find(static_cast<char*>(ptr));
  if (found == state.live.end() || found->second->cached ||
      found->second->size != round_up(bytes)) {
    // Freeing what the pool never handed out (or twice) would corrupt it: stop here.
    std::cerr << "smartarray: " << state.options.name << " deallocate of " << bytes << " bytes at "
              << ptr << ": "
              << (found == state.live.end() || found->second->cached
                      ? "not a live block of this pool (never allocated here, or freed twice)"
                      : "the size differs from the allocation's")
              << "\n";
    std::abort();
  }
  if (counts != nullptr) detail::count_deallocation(*counts, bytes);
  Block* const block = found->second;
  state.in_use -= block->size;
  if (host && state.cache_locked(block)) return;
  state.live.erase(found);
  block->free = true;
  block->shared = host;
  block->stream = host ? nullptr : stream.handle();
  block->release = ++state.releases;
  state.file_free_locked(block);
}

MemoryStats PoolResource::read_counted(const MemoryStats& counts) const {
  const std::lock_guard lock(state_->mutex);
  return counts;
}

void PoolResource::reset_counted_peaks(MemoryStats& counts) const {
  const std::lock_guard lock(state_->mutex);
  detail::restart_peaks(counts);
}

std::size_t PoolResource::trim() {
  state_->settle();
  const std::lock_guard lock(state_->mutex);
  return state_->release_free_chunks_locked();
}

PoolResource::EvictionHookId PoolResource::add_eviction_hook(EvictionHook hook) {
  const std::unique_lock lock(state_->hooks_mutex);
  const EvictionHookId id = state_->next_hook_id++;
  state_->hooks.emplace_back(id, std::move(hook));
  return id;
}

void PoolResource::remove_eviction_hook(EvictionHookId id) {
  const std::unique_lock lock(state_->hooks_mutex);
  std::erase_if(state_->hooks, [id](const auto& entry) { return entry.first == id; });
}

void PoolResource::forget_stream(StreamRef stream) noexcept {
  const std::lock_guard lock(state_->mutex);
  state_->share_completed_locked(stream.handle(), state_->releases);
}

std::size_t PoolResource::bytes_in_use() const {
  const std::lock_guard lock(state_->mutex);
  return state_->in_use;
}

std::size_t PoolResource::reserved_bytes() const {
  const std::lock_guard lock(state_->mutex);
  return state_->reserved;
}

std::size_t PoolResource::largest_free_block() const {
  const std::lock_guard lock(state_->mutex);
  return state_->largest_free_filed_locked();
}

std::uint64_t PoolResource::upstream_allocation_count() const {
  const std::lock_guard lock(state_->mutex);
  return state_->upstream_allocations;
}

PoolUsage PoolResource::usage() const {
  const std::lock_guard lock(state_->mutex);
  const std::size_t largest_free = state_->largest_free_filed_locked();
  return PoolUsage{state_->in_use,
                   state_->reserved,
                   largest_free,
                   state_->upstream_allocations,
                   state_->upstream_releases,
                   state_->chunks.size()};
}

}  // namespace smartarray
