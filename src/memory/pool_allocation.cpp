// PoolResource's allocation path: allocate and deallocate, and the free lists they search (best
// fit, splitting and merging of blocks, the size stacks, sharing the blocks of completed streams).
// One translation unit, so that the compiler inlines the search into each call.
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>

#include "memory/alignment.hpp"
#include "memory/pool_state.hpp"
#include "memory/request_counts.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <utility>
#include <vector>

namespace smartarray {

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
  if (bytes > State::no_limit - State::granularity) {
    const std::lock_guard lock(state.mutex);
    throw out_of_memory(state.out_of_memory_message_locked(stream, bytes, host));
  }
  const std::size_t size = State::round_up(bytes);
  {
    const std::lock_guard lock(state.mutex);
    char* block = state.search_locked(stream, size, host);
    if (block == nullptr && state.grow_locked(size)) {
      block = state.take_locked(state.shared_free, size);
    }
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
      found->second->size != State::round_up(bytes)) {
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
  State::Block* const block = found->second;
  state.in_use -= block->size;
  if (host && state.cache_locked(block)) return;
  state.live.erase(found);
  block->free = true;
  block->shared = host;
  block->stream = host ? nullptr : stream.handle();
  block->release = ++state.releases;
  state.file_free_locked(block);
}

bool PoolResource::State::cache_locked(Block* block) noexcept {
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

char* PoolResource::State::take_cached_locked(std::size_t size) noexcept {
  if (size > cached_block_max) return nullptr;
  SizeStack& stack = cached[size / granularity - 1];
  if (stack.count == 0) return nullptr;
  Block* const block = stack.blocks[--stack.count];
  block->cached = false;
  cached_bytes -= size;
  in_use += size;
  return block->address;
}

void PoolResource::State::file_cached_locked() {
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

void PoolResource::State::insert_entry(FreeList& list, Block* block) {
  const FreeEntry key{block->size, block->address, block};
  if (spare_entry.empty()) {
    block->entry = list.insert(key).first;
    return;
  }
  spare_entry.value() = key;
  block->entry = list.insert(std::move(spare_entry)).position;
}

void PoolResource::State::erase_entry(FreeList& list, const Block* block) noexcept {
  auto node = list.extract(block->entry);
  if (spare_entry.empty()) spare_entry = std::move(node);
}

char* PoolResource::State::take_locked(FreeList& list, std::size_t size) {
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

void PoolResource::State::file_free_locked(Block* block) {
  const auto mergeable = [&](const Block* other) {
    return other != nullptr && other->free && other->shared == block->shared &&
           (block->shared || other->stream == block->stream);
  };
  FreeList& list = list_of(*block);
  // Merges `right`, the block just above `left`, into `left`.
  const auto absorb = [&](Block* left, Block* right) {
    left->size += right->size;
    left->release = std::max(left->release, right->release);
    left->next = right->next;
    if (left->next != nullptr) left->next->previous = left;
    node_allocator.delete_object(right);
  };
  if (Block* const next = block->next; mergeable(next)) {
    erase_entry(list, next);
    absorb(block, next);
  }
  if (Block* const previous = block->previous; mergeable(previous)) {
    erase_entry(list, previous);
    absorb(previous, block);
    block = previous;
  }
  insert_entry(list, block);
}

void PoolResource::State::share_completed_locked(void* stream, std::uint64_t up_to) {
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

char* PoolResource::State::take_from_other_stream_locked(StreamRef stream, std::size_t size) {
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
  // Another thread's capture: its stream may be neither queried nor waited for from outside.
  if (detail::runtime().is_capturing(StreamRef{best_stream})) return nullptr;
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

char* PoolResource::State::take_completed_for_host_locked(std::size_t size) {
  std::vector<std::pair<std::size_t, void*>> candidates;
  for (const auto& [stream, list] : stream_free) {
    const auto fit = list.lower_bound(FreeEntry{size, nullptr, nullptr});
    if (fit != list.end()) candidates.emplace_back(fit->size, stream);
  }
  std::sort(candidates.begin(), candidates.end());
  for (const auto& [fit_size, stream] : candidates) {
    // A capturing stream (this thread's or another's) may not be queried; its blocks wait.
    if (detail::runtime().is_capturing(StreamRef{stream})) continue;
    if (!detail::runtime().query(StreamRef{stream})) continue;
    share_completed_locked(stream, releases);
    return take_locked(shared_free, size);
  }
  return nullptr;
}

char* PoolResource::State::search_locked(StreamRef stream, std::size_t size, bool host) {
  if (host) {
    if (char* block = take_cached_locked(size)) return block;
  }
  if (char* block = search_lists_locked(stream, size, host)) return block;
  if (cached_bytes == 0) return nullptr;
  file_cached_locked();
  return search_lists_locked(stream, size, host);
}

char* PoolResource::State::search_lists_locked(StreamRef stream, std::size_t size, bool host) {
  // A capture takes only blocks that no work uses: its graph runs later, on any stream, and may
  // not wait for work outside it.
  if (host || detail::active_capture() != nullptr) {
    if (char* block = take_locked(shared_free, size)) return block;
    return take_completed_for_host_locked(size);
  }
  if (const auto own = stream_free.find(stream.handle()); own != stream_free.end()) {
    if (char* block = take_locked(own->second, size)) return block;
  }
  if (char* block = take_locked(shared_free, size)) return block;
  return take_from_other_stream_locked(stream, size);
}

std::size_t PoolResource::State::largest_free_filed_locked() {
  file_cached_locked();
  return largest_free_locked();
}

std::size_t PoolResource::State::largest_free_locked() const {
  std::size_t largest = shared_free.empty() ? 0 : shared_free.rbegin()->size;
  for (const auto& [stream, list] : stream_free) {
    if (!list.empty()) largest = std::max(largest, list.rbegin()->size);
  }
  return largest;
}

}  // namespace smartarray
