// ArrayCore's lifetime: construction (the deep copy of the valid data), moves and swaps, the
// resources and the eviction registration that go with them, and the array's number and label.
#include <smartarray/core/detail/array_core.hpp>
#include "core/array_core/capture.hpp"
#include <smartarray/error.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include "core/eviction.hpp"
#include "core/storage.hpp"
#include "core/transfer_scope.hpp"

#include <cstring>

namespace smartarray::detail {
namespace {

/// The numbers of arrays, in the order they are first named.
std::atomic<std::uint64_t> next_array_id{1};

/// Exchanges two device copies (their eviction links are unlinked; the caller relinks them).
void swap_device_copies(DeviceCopy& a, DeviceCopy& b) noexcept {
  std::swap(a.data, b.data);
  std::swap(a.capacity, b.capacity);
  std::swap(a.external, b.external);
  std::swap(a.resource, b.resource);
  std::swap(a.registry, b.registry);
  std::swap(a.registry_resolved, b.registry_resolved);
  a.order.swap(b.order);
  std::swap(a.views, b.views);
}

}  // namespace

ArrayCore::~ArrayCore() {
  if (graph_token_ != nullptr) graph_token_->alive.store(false, std::memory_order_release);
  release_all();
}

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
  // The host bytes of `other` that prefetch copies still write are read below. SmartArray keeps
  // its core mutable, so `other` is never a const object.
  const_cast<ArrayCore&>(other).settle_arrivals(ByteRange{0, bytes});
  // The stream names taken from `other` below were cleaned up to its generation.
  host_order().adopt_generation(other.host_order());
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
    if (const std::optional<StreamRef> writer = other.host_order().live_writer()) {
      host_wait_stream(*writer);
    }
    buffers_.host = strategy().allocate_host(here, bytes, buffers_.host_pageable);
    std::memcpy(buffers_.host, other.buffers_.host, bytes);
    state_ = ResidencyState::host_only(bytes);
    refresh_state();
    return;
  }
  // Each place copies only what it holds valid; a stale one is never copied.
  if (!other.state_.host_stale_everywhere()) {
    buffers_.host = strategy().allocate_host(here, bytes, buffers_.host_pageable);
    other.state_.for_each_held(Side::host, bytes, [&](ByteRange range) {
      std::memcpy(buffers_.host + range.begin, other.buffers_.host + range.begin, range.size());
    });
  }
  // On each device, one copy of everything up to the last byte it holds.
  for (int device = 0; device < other.device_copies(); ++device) {
    const std::size_t device_end = other.state_.device_extent(device);
    if (device_end == 0) continue;
    const DeviceCopy& source = other.device_copy(device);
    DeviceCopy& target = device_copy(device);
    target.order.adopt_generation(source.order);
    const StreamRef stream =
        source.order.live_writer().value_or(runtime().default_stream(device));
    const StorageContext copying =
        context("copy of an array", smartarray::source_location::current(), device);
    // The transfer's range opens after the allocation, which may evict other arrays.
    TransferScope transfer(&counters_);
    try {
      // Writers of other ranges on other streams finish before the copy reads their bytes.
      StreamOrder& source_order = const_cast<DeviceCopy&>(source).order;
      source_order.forget_retired();
      source_order.wait_writer(ByteRange{0, device_end}, stream);
      resolve_eviction_registry(device);
      target.data = static_cast<std::byte*>(device_mr(device).allocate(stream, bytes));
      target.capacity = bytes;
      transfer.add(copying.transfer(TransferKind::d2d, device_end));
      runtime().copy_async(target.data, source.data, device_end, CopyKind::device_to_device,
                           stream);
    } catch (...) {
      release_all();
      throw;
    }
    transfer.done();
    // The copy reads `other` on `stream`: a later write of `other` must wait for it. SmartArray
    // keeps its core mutable, so this core is never a const object.
    const_cast<DeviceCopy&>(source).order.add_user(ByteRange{0, device_end}, stream);
    // The whole new block: the bytes past the copy are `stream`'s from the allocation on, and a
    // use of them on another stream must wait for that point.
    target.order.set_exclusive(ByteRange{0, bytes}, stream);
    register_for_eviction(device);
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
  // A capture's record of each array follows its data, as the buffers the graph binds do.
  if (ArrayCapture* const capture = active_array_capture) [[unlikely]] {
    capture->exchanged(this, &other);
  }
  std::swap(capture_written_, other.capture_written_);
  std::swap(placement_, other.placement_);
  std::swap(buffers_, other.buffers_);
  std::swap(state_, other.state_);
  // Pending prefetch copies follow the host buffer they write.
  arrivals_.swap(other.arrivals_);
  swap_device_copies(device0_, other.device0_);
  std::swap(more_devices_, other.more_devices_);
  std::swap(more_devices_count_, other.more_devices_count_);
  std::swap(observers_, other.observers_);
  std::swap(element_, other.element_);
  register_for_eviction();
  other.register_for_eviction();
  refresh_state();
  other.refresh_state();
}

void ArrayCore::resolve_eviction_registry(int device) {
  DeviceCopy& copy = device_copy(device);
  if (copy.registry_resolved) return;
  copy.registry = eviction_registry_for(device_mr(device));
  copy.registry_resolved = true;
}

void ArrayCore::register_for_eviction(int device) noexcept {
  DeviceCopy& copy = device_copy(device);
  if (copy.data == nullptr || copy.external || copy.registry == nullptr) return;
  detail::register_for_eviction(*copy.registry, *this, device);
}

void ArrayCore::unregister_for_eviction(int device) noexcept {
  detail::unregister_for_eviction(*this, device);
}

void ArrayCore::register_for_eviction() noexcept {
  for (int device = 0; device < device_copies(); ++device) register_for_eviction(device);
}

void ArrayCore::unregister_for_eviction() noexcept {
  for (int device = 0; device < device_copies(); ++device) unregister_for_eviction(device);
}

MemoryResource& ArrayCore::host_mr() {
  if (placement_.host_resource == nullptr) placement_.host_resource = &pinned_resource();
  return *placement_.host_resource;
}

MemoryResource& ArrayCore::device_mr(int device) {
  DeviceCopy& copy = device_copy(device);
  if (copy.resource == nullptr) {
    copy.resource = device == 0 && placement_.device_resource != nullptr
                        ? placement_.device_resource
                        : &smartarray::device_resource(device);
  }
  return *copy.resource;
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
