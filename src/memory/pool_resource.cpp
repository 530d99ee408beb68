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

#include "memory/pool_state.hpp"
#include "memory/request_counts.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

namespace smartarray {

PoolOptions PoolResource::State::normalized(PoolOptions options) {
  options.initial_size = round_up(options.initial_size);
  options.chunk_size = round_up(std::max(options.chunk_size, granularity));
  options.max_chunk_size = std::max(round_up(options.max_chunk_size), options.chunk_size);
  if (options.maximum_size) options.maximum_size = round_down(*options.maximum_size);
  SMARTARRAY_EXPECTS(!options.maximum_size || options.initial_size <= *options.maximum_size,
                     logic_error, options.name, ": initial size of ", options.initial_size,
                     " bytes exceeds the maximum size of ", *options.maximum_size, " bytes");
  return options;
}

PoolResource::PoolResource(MemoryResource& upstream, PoolOptions options)
    : state_(std::make_unique<State>(*this, upstream, std::move(options))) {
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
  return limit == State::no_limit ? std::nullopt : std::optional<std::size_t>(limit);
}

void PoolResource::set_maximum_size(std::optional<std::size_t> bytes) {
  const std::lock_guard lock(state_->mutex);
  state_->limit = bytes ? std::optional<std::size_t>(State::round_down(*bytes)) : std::nullopt;
  state_->published_limit.store(state_->limit.value_or(State::no_limit), std::memory_order_relaxed);
}

MemoryStats PoolResource::read_counted(const MemoryStats& counts) const {
  const std::lock_guard lock(state_->mutex);
  return counts;
}

void PoolResource::reset_counted_peaks(MemoryStats& counts) const {
  const std::lock_guard lock(state_->mutex);
  detail::restart_peaks(counts);
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
