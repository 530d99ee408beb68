// PoolResource beyond its free lists: growth by upstream chunks, the out-of-memory chain (settling,
// eviction hooks, returning free chunks) and trim(), which takes two of its steps.
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>

#include "memory/alignment.hpp"
#include "memory/pool_state.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

namespace smartarray {
namespace {

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

}  // namespace

void PoolResource::State::add_chunk_locked(void* memory, std::size_t bytes) {
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

bool PoolResource::State::grow_locked(std::size_t size) {
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

std::size_t PoolResource::State::release_free_chunks_locked() {
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

void PoolResource::State::settle() {
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

std::size_t PoolResource::State::free_bytes() const {
  const std::lock_guard lock(mutex);
  return reserved - in_use;
}

char* PoolResource::State::evict_and_search(StreamRef stream, std::size_t size,
                                            std::size_t wanted, bool host, bool& any_released) {
  char* block = nullptr;
  any_released = owner.run_eviction_hooks(wanted, [&] {
    const std::lock_guard lock(mutex);
    block = search_locked(stream, size, host);
    return block != nullptr;
  });
  return block;
}

std::string PoolResource::State::out_of_memory_message_locked(StreamRef stream, std::size_t bytes,
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

void* PoolResource::State::allocate_out_of_memory(StreamRef stream, std::size_t bytes,
                                                  std::size_t size, bool host) {
  if (detail::active_capture() != nullptr) [[unlikely]] {
    detail::refuse_in_capture(
        detail::concat(options.name, " out of memory for ", bytes, " bytes").c_str(),
        "making room would wait for pending work and evict device copies, which a capture "
        "cannot do; free or reserve device memory before the capture");
  }
  // 1. Blocks released on streams become shared (and merge) once their work is done.
  settle();
  {
    const std::lock_guard lock(mutex);
    if (char* block = search_locked(stream, size, host)) return block;
  }
  // 2. Eviction: hooks release blocks into this pool, usually on their own streams. The first
  // round asks for `size`; a later one (freed blocks that were spread over chunks holding live
  // blocks made no room) for one more copy at a time, so that no more is evicted than needed.
  for (std::size_t wanted = size;; wanted = 1) {
    const std::size_t free_before = free_bytes();
    bool any_released = false;
    if (char* block = evict_and_search(stream, size, wanted, host, any_released)) return block;
    if (any_released) settle();
    // 3. Whole free chunks go back, so that growth may get one contiguous chunk instead.
    const std::lock_guard lock(mutex);
    if (char* block = search_locked(stream, size, host)) return block;
    // What the hooks report is not evidence: only bytes that came back into the pool are, so a
    // hook that reports bytes it did not free ends the retries instead of repeating them forever.
    const bool made_room = any_released && reserved - in_use > free_before;
    release_free_chunks_locked();
    if (grow_locked(size)) return take_locked(shared_free, size);
    // 4. Nothing left to try once a round of hooks gives nothing back.
    if (!made_room) throw out_of_memory(out_of_memory_message_locked(stream, bytes, host));
  }
}

std::size_t PoolResource::trim() {
  state_->settle();
  const std::lock_guard lock(state_->mutex);
  return state_->release_free_chunks_locked();
}

}  // namespace smartarray
