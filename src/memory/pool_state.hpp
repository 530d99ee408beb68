// The state of a PoolResource: its chunks, blocks, free lists and size stacks (private to
// src/memory).
#pragma once

#include <smartarray/memory/pool_resource.hpp>

#include "memory/alignment.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace smartarray {

struct PoolResource::State {
  static constexpr std::size_t granularity = detail::max_alignment;
  static constexpr std::size_t no_limit = std::numeric_limits<std::size_t>::max();

  [[nodiscard]] static constexpr std::size_t round_up(std::size_t bytes) noexcept {
    return (bytes + granularity - 1) / granularity * granularity;
  }
  [[nodiscard]] static constexpr std::size_t round_down(std::size_t bytes) noexcept {
    return bytes / granularity * granularity;
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

  /// The largest block a size stack keeps, the blocks a stack keeps, and the bytes all stacks keep.
  static constexpr std::size_t cached_block_max = std::size_t{32} << 10;
  static constexpr std::size_t cached_per_size = 4;
  static constexpr std::size_t cached_bytes_max = std::size_t{1} << 20;

  /// Released blocks of one size, last in first out.
  struct SizeStack {
    std::array<Block*, cached_per_size> blocks{};
    std::size_t count = 0;
  };

  static PoolOptions normalized(PoolOptions options);

  State(PoolResource& owner_pool, MemoryResource& upstream_resource, PoolOptions pool_options)
      : owner(owner_pool),
        upstream(upstream_resource),
        options(normalized(std::move(pool_options))),
        allocate_what(options.name + " allocate"),
        limit(options.maximum_size) {}

  PoolResource& owner;  ///< whose eviction hooks the out-of-memory chain calls
  MemoryResource& upstream;
  const PoolOptions options;
  const std::string allocate_what;  ///< names pool allocations for the fault injector

  mutable std::mutex mutex;  ///< guards everything below
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

  // --- the helpers below need `mutex` held, except settle(), free_bytes(), evict_and_search()
  // and allocate_out_of_memory(), which take it themselves ---

  // Free lists, size stacks and the search (memory/pool_allocation.cpp).

  FreeList& list_of(const Block& block) {
    return block.shared ? shared_free : stream_free[block.stream];
  }

  /// Keeps the block just released for anyone in the stack of its size; false when it is too large
  /// or the stacks are full.
  bool cache_locked(Block* block) noexcept;
  /// A block of exactly `size` from the stacks, marked live; nullptr when none waits.
  char* take_cached_locked(std::size_t size) noexcept;
  /// Files every block of the stacks as a shared free block, merged with its free neighbours.
  void file_cached_locked();

  /// Files the free `block` in `list`.
  void insert_entry(FreeList& list, Block* block);
  void erase_entry(FreeList& list, const Block* block) noexcept;

  /// The best fit for `size` in `list`, split to size and marked live; nullptr when none fits.
  char* take_locked(FreeList& list, std::size_t size);
  /// Merges the free `block` with free neighbours of the same owner, then files it in its owner's
  /// list.
  void file_free_locked(Block* block);
  /// Makes the blocks released on `stream` by release number `up_to` shared: their work is done.
  void share_completed_locked(void* stream, std::uint64_t up_to);
  /// Takes a block freed on another stream: `stream` first waits for that stream's work so far.
  char* take_from_other_stream_locked(StreamRef stream, std::size_t size);
  /// Takes a block for the host from a stream that has completed all its work. A stream query is
  /// as precise as an event recorded now, and cheaper.
  char* take_completed_for_host_locked(std::size_t size);
  /// The whole search without growth: the size stacks for the host, then own stream, shared blocks,
  /// other streams, and all of them again once the stacks are filed.
  char* search_locked(StreamRef stream, std::size_t size, bool host);
  /// The search of the free lists: own stream, shared blocks, then other streams.
  char* search_lists_locked(StreamRef stream, std::size_t size, bool host);

  /// The largest free block, once the size stacks are filed.
  [[nodiscard]] std::size_t largest_free_filed_locked();
  [[nodiscard]] std::size_t largest_free_locked() const;

  // Growth, trimming and the out-of-memory chain (memory/pool_out_of_memory.cpp).

  /// Files a fresh upstream chunk as one shared free block.
  void add_chunk_locked(void* memory, std::size_t bytes);
  /// Grows by one step (as large as the pool, within the chunk sizes and the limit), or by `size`
  /// alone when the step cannot be had. False when neither can.
  bool grow_locked(std::size_t size);
  /// Returns every chunk that is one shared free block to upstream; the bytes returned.
  std::size_t release_free_chunks_locked();

  /// Waits for the work queued so far on every stream that released blocks, then shares the
  /// blocks released before the wait. The pool stays usable by other threads meanwhile.
  void settle();
  /// Bytes reserved from upstream and not handed out (takes `mutex`).
  [[nodiscard]] std::size_t free_bytes() const;
  /// Calls the eviction hooks, asking each for `wanted` bytes, until a block of `size` is free;
  /// the block, or nullptr.
  char* evict_and_search(StreamRef stream, std::size_t size, std::size_t wanted, bool host,
                         bool& any_released);
  /// What an allocation got when it failed, for out_of_memory.
  [[nodiscard]] std::string out_of_memory_message_locked(StreamRef stream, std::size_t bytes,
                                                         bool host) const;
  /// The out-of-memory chain, entered when neither the free lists nor growth had a block.
  void* allocate_out_of_memory(StreamRef stream, std::size_t bytes, std::size_t size, bool host);
};

}  // namespace smartarray
