// ArrayCore's lifetime: construction (the deep copy of the valid data), moves and swaps, the
// resources and the eviction registration that go with them, and the array's number and label.
#include <smartarray/core/detail/array_core.hpp>
#include <smartarray/error.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include "eviction.hpp"
#include "storage.hpp"

#include <cstring>

namespace smartarray::detail {
namespace {

/// The numbers of arrays, in the order they are first named.
std::atomic<std::uint64_t> next_array_id{1};

}  // namespace

ArrayCore::~ArrayCore() { release_all(); }

ArrayCore::ArrayCore(const ArrayCore& other) : placement_{.storage = other.placement_.storage} {
  std::lock_guard lock(other.mutex_);
  // Under the lock: a const access of `other` on another thread may be taking its defaults.
  placement_ = other.placement_;
  copy_valid_data(other);
}

ArrayCore::ArrayCore(const ArrayCore& other, const ResourceChoice& resources)
    : ArrayCore(resources, other.placement_.storage) {
  std::lock_guard lock(other.mutex_);
  copy_valid_data(other);
}

void ArrayCore::copy_valid_data(const ArrayCore& other) {
  const std::size_t bytes = other.state_.size();
  if (bytes == 0) return;
  // The stream names taken from `other` below were cleaned up to its generation.
  order_.adopt_generation(other.order_);
  buffers_.capacity = bytes;
  if (other.state_.is_unwritten()) {
    // Nothing was written: the copy holds nothing either, and takes no memory yet.
    state_ = other.state_;
    refresh_state();
    return;
  }
  const StorageContext here = context("copy of an array", smartarray::source_location::current());
  if (one_buffer()) {
    // One buffer holds everything: copy it on the host once its device writer is done.
    if (const std::optional<StreamRef> writer = other.order_.live_writer()) {
      host_wait_stream(*writer);
    }
    buffers_.host = strategy().allocate_host(here, bytes, buffers_.host_pageable);
    std::memcpy(buffers_.host, other.buffers_.host, bytes);
    state_ = ResidencyState::host_only(bytes);
    refresh_state();
    return;
  }
  // Each side copies only what it holds valid; a stale side is never copied.
  if (!other.state_.host_stale_everywhere()) {
    buffers_.host = strategy().allocate_host(here, bytes, buffers_.host_pageable);
    other.state_.for_each_held(Side::host, bytes, [&](ByteRange range) {
      std::memcpy(buffers_.host + range.begin, other.buffers_.host + range.begin, range.size());
    });
  }
  // One device copy of everything up to the last byte the device holds.
  const std::size_t device_end = other.state_.device_extent();
  if (device_end > 0) {
    const StreamRef stream = other.order_.live_writer().value_or(StreamRef{});
    try {
      resolve_eviction_registry();
      buffers_.device = static_cast<std::byte*>(device_mr().allocate(stream, bytes));
      buffers_.device_capacity = bytes;
      runtime().copy_async(buffers_.device, other.buffers_.device, device_end,
                           CopyKind::device_to_device, stream);
    } catch (...) {
      release_all();
      throw;
    }
    here.note_transfer(TransferKind::d2d, device_end);
    // The copy reads `other` on `stream`: a later write of `other` must wait for it. SmartArray
    // keeps its core mutable, so this core is never a const object.
    const_cast<ArrayCore&>(other).order_.add_user(stream);
    order_.set_exclusive(stream);
    register_for_eviction();
  }
  state_ = other.state_;
  refresh_state();
}

ArrayCore::ArrayCore(ArrayCore&& other) noexcept : placement_(other.placement_) {
  // The label goes with the value (a factory that returns a labeled array keeps the label); the
  // number stays with the object. Under the locks: eviction may be tracing either array.
  std::scoped_lock lock(mutex_, other.mutex_);
  swap_locked(other);
  label_ = std::move(other.label_);
}

void ArrayCore::move_assign(ArrayCore& other) noexcept {
  if (this == &other) return;
  release_all();
  std::scoped_lock lock(mutex_, other.mutex_);
  swap_locked(other);
  // `other` is empty now and keeps its own options, as a moved-from std::vector its allocator.
  other.placement_ = placement_;
  label_ = std::move(other.label_);
}

void ArrayCore::swap(ArrayCore& other) noexcept {
  if (this == &other) return;
  std::scoped_lock lock(mutex_, other.mutex_);
  swap_locked(other);
}

void ArrayCore::swap_locked(ArrayCore& other) noexcept {
  // Registration is by address: re-register whichever side now holds a device buffer.
  unregister_for_eviction();
  other.unregister_for_eviction();
  std::swap(placement_, other.placement_);
  std::swap(buffers_, other.buffers_);
  std::swap(state_, other.state_);
  order_.swap(other.order_);
  std::swap(observers_, other.observers_);
  std::swap(element_, other.element_);
  register_for_eviction();
  other.register_for_eviction();
  refresh_state();
  other.refresh_state();
}

void ArrayCore::resolve_eviction_registry() {
  if (placement_.device_registry_resolved) return;
  placement_.device_registry = eviction_registry_for(device_mr());
  placement_.device_registry_resolved = true;
}

void ArrayCore::register_for_eviction() noexcept {
  if (buffers_.device == nullptr || buffers_.device_external) return;
  if (placement_.device_registry != nullptr) {
    detail::register_for_eviction(*placement_.device_registry, *this);
  }
}

void ArrayCore::unregister_for_eviction() noexcept { detail::unregister_for_eviction(*this); }

MemoryResource& ArrayCore::host_mr() {
  if (placement_.host_resource == nullptr) placement_.host_resource = &pinned_resource();
  return *placement_.host_resource;
}

MemoryResource& ArrayCore::device_mr() {
  if (placement_.device_resource == nullptr) {
    placement_.device_resource = &smartarray::device_resource();
  }
  return *placement_.device_resource;
}

std::uint64_t ArrayCore::id() const noexcept {
  std::uint64_t current = id_.load(std::memory_order_acquire);
  if (current != 0) return current;
  const std::uint64_t fresh = next_array_id.fetch_add(1, std::memory_order_relaxed);
  // Two threads naming the array at once: the first number stored wins.
  return id_.compare_exchange_strong(current, fresh, std::memory_order_acq_rel) ? fresh : current;
}

void ArrayCore::set_label(std::string label) {
  auto named = label.empty() ? nullptr : std::make_unique<std::string>(std::move(label));
  std::lock_guard lock(mutex_);  // eviction on another thread may be tracing this array
  label_ = std::move(named);
}

std::string ArrayCore::label() const { return label_ ? *label_ : std::string(); }

std::string ArrayCore::describe() const {
  return label_ ? concat("SmartArray #", id(), " \"", *label_, "\"") : concat("SmartArray #", id());
}

}  // namespace smartarray::detail
