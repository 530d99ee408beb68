/**
 * @file host/host_runtime.hpp
 * @brief The host backend's runtime class, its events and its state (private to the host backend).
 *
 * One class, defined across the backend's source files: host_runtime.cpp (settings, devices and
 * teardown), host_streams.cpp (streams, events and synchronization), host_allocations.cpp (memory
 * and its bookkeeping) and host_transfers.cpp (copies, prefetches and advice).
 */
#pragma once

#include "runtime/host/allocation_table.hpp"
#include "runtime/host/host_stream.hpp"

#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/config.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace smartarray::detail {

/// A position in a stream's queue: done once `stream` has run its first `ticket` tasks.
/// Recorded on a capturing stream, it is a point of the capture instead: its first `position`
/// tasks recorded on `stream`.
struct Marker {
  std::shared_ptr<HostStream> stream;  // null: never recorded, so already complete
  std::uint64_t ticket = 0;
  std::shared_ptr<HostCapture> capture;
  std::size_t position = 0;
};

/// An event: the marker of its latest record.
class HostEvent {
 public:
  void set(Marker marker) {
    std::lock_guard lock(mutex_);
    marker_ = std::move(marker);
  }
  [[nodiscard]] Marker get() const {
    std::lock_guard lock(mutex_);
    return marker_;
  }

 private:
  mutable std::mutex mutex_;
  Marker marker_;
};

class HostRuntime final : public Runtime {
 public:
  HostRuntime();
  ~HostRuntime() override;
  HostRuntime(const HostRuntime&) = delete;
  HostRuntime& operator=(const HostRuntime&) = delete;

  [[nodiscard]] BackendKind kind() const noexcept override { return BackendKind::host; }
  [[nodiscard]] int current_device() const override;

  void memory_info(int device, std::size_t& free_bytes, std::size_t& total_bytes) override;
  [[nodiscard]] void* mapped_device_pointer(void* host_ptr) override;

  void launch_host_func(StreamRef stream, std::function<void()> fn) override;
  [[nodiscard]] StreamRef do_create_stream(int device, StreamPriority priority) override;
  [[nodiscard]] StreamPriority do_stream_priority(StreamRef stream) override;
  void do_check_stream(StreamRef stream) override;
  void do_destroy_stream(StreamRef stream) noexcept override;
  [[nodiscard]] bool query(StreamRef stream) override;
  [[nodiscard]] int do_stream_device(StreamRef stream) override;

  [[nodiscard]] EventHandle create_event() override;
  void destroy_event(EventHandle event) noexcept override;
  void stream_wait(StreamRef stream, EventHandle event) override;
  [[nodiscard]] bool query(EventHandle event) override;

  [[nodiscard]] GraphHandle end_capture(StreamRef stream) override;
  void abort_capture(StreamRef stream) noexcept override;
  [[nodiscard]] bool is_capturing(StreamRef stream) override;
  void launch_graph(GraphHandle graph, StreamRef stream) override;
  void destroy_graph(GraphHandle graph) noexcept override;

 protected:
  void do_set_current_device(int device) override;
  bool do_can_access_peer(int, int) override { return peer_access_; }
  [[nodiscard]] const DeviceProperties& do_properties(int device) const noexcept override {
    return properties_[static_cast<std::size_t>(device)];
  }

  void* do_allocate_device(std::size_t bytes, int device) override;
  void do_free_device(void* ptr, int device) noexcept override;
  void* do_allocate_pinned(std::size_t bytes, unsigned flags) override;
  void do_free_pinned(void* ptr) noexcept override;
  void* do_allocate_managed(std::size_t bytes) override;
  void do_free_managed(void* ptr) noexcept override;
  void do_register_host(void* ptr, std::size_t bytes, unsigned flags) override;
  void do_unregister_host(void* ptr) noexcept override;

  void do_copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                     StreamRef stream) override;
  void do_copy_peer_async(void* dst, int dst_device, const void* src, int src_device,
                          std::size_t bytes, StreamRef stream) override;
  bool do_copy_to_device_now(std::span<const CopyRange> copies, StreamRef stream) override;
  void do_advise_read_mostly(const void* ptr, std::size_t bytes) override;
  void do_prefetch_async(const void* ptr, std::size_t bytes, Location where,
                         StreamRef stream) override;

  void do_synchronize(StreamRef stream) override;
  void do_synchronize_device() override;
  void do_synchronize(EventHandle event) override;
  void do_record(EventHandle event, StreamRef stream) override;
  void do_begin_capture(StreamRef stream) override;

 private:
  /// Throws logic_error, as CUDA refuses it, when `what` asks about a capturing stream.
  static void refuse_capturing(HostStream& stream, const char* what);
  /// Throws logic_error when `what` asks about an event recorded in a capture.
  static void refuse_captured(const Marker& marker, const char* what);
  /// Ends `capture` on each of its streams.
  void release_capture(HostCapture& capture) noexcept;
  std::shared_ptr<HostStream> make_stream(bool is_default, int device,
                                          StreamPriority priority = StreamPriority::normal);
  /// The queue behind `stream`, creating a device's default stream on first use.
  /// @throws logic_error for a handle that is not a live stream of this runtime.
  std::shared_ptr<HostStream> stream_for(StreamRef stream);
  std::vector<std::shared_ptr<HostStream>> all_streams();
  std::vector<std::shared_ptr<HostStream>> take_all_streams();
  /// @throws logic_error for a handle that is not a live event of this runtime.
  HostEvent& event_for(EventHandle event);
  /// Blocks the calling thread until `stream` reaches `ticket`.
  /// @throws logic_error when called from a host function that the wait itself would wait for.
  static void block_until(HostStream& stream, std::uint64_t ticket, const char* what);
  /// Throws the first failure of a host function on `stream` since the last report.
  static void report_error(HostStream& stream);
  /// Waits for all queued work, as cudaFree does, so that no queued copy touches freed memory.
  void wait_for_queued_work() noexcept;

  static void* allocate(AllocationTable& table, std::size_t bytes, unsigned flags,
                        const char* what);
  /// An allocation that counts against the capacity of emulated `device` (device and managed).
  void* allocate_counted(AllocationTable& table, int device, std::size_t bytes,
                         const std::string& what);
  void free_counted(AllocationTable& table, int device, void* ptr, const char* what) noexcept;

  [[nodiscard]] AllocationTable& device_table(int device) noexcept {
    return device_[static_cast<std::size_t>(device)];
  }
  [[nodiscard]] const AllocationTable& device_table(int device) const noexcept {
    return device_[static_cast<std::size_t>(device)];
  }
  [[nodiscard]] std::atomic<std::size_t>& in_use(int device) noexcept {
    return device_in_use_[static_cast<std::size_t>(device)];
  }

  /// Removes `ptr` from `table` once no queued work can touch it; reports an unknown pointer.
  std::optional<HostRange> forget(AllocationTable& table, void* ptr, const char* what) noexcept;
  static void release(const HostRange& range) noexcept;

  /// True when `[ptr, ptr + bytes)` lies in mapped pinned memory (allocated or registered).
  bool is_mapped(const void* ptr, std::size_t bytes) const;
  /// True when `device` may touch `[ptr, ptr + bytes)`: its own memory, managed or mapped memory.
  bool device_accessible(const void* ptr, std::size_t bytes, int device) const;
  /// True when `[ptr, ptr + bytes)` overlaps memory of any device.
  bool overlaps_device_memory(const void* ptr, std::size_t bytes) const;

  /// Checks each side of a copy against its direction, so that a swapped pointer or an overrun
  /// of a device buffer fails at the call site instead of corrupting memory later.
  void check_copy(const void* dst, const void* src, std::size_t bytes, CopyKind kind,
                  const HostStream& queue) const;

  const std::chrono::microseconds latency_;
  const std::size_t capacity_;
  const int devices_;
  const bool peer_access_;
  std::array<DeviceProperties, max_devices> properties_;
  // Each device's bytes in use (managed memory counts on device 0), against capacity_.
  std::array<std::atomic<std::size_t>, max_devices> device_in_use_{};

  std::array<AllocationTable, max_devices> device_;
  AllocationTable pinned_;
  AllocationTable managed_;
  AllocationTable registered_;

  std::mutex streams_mutex_;
  std::array<std::shared_ptr<HostStream>, max_devices> default_streams_;  // made on first use
  std::unordered_map<const void*, std::shared_ptr<HostStream>> streams_;

  std::mutex events_mutex_;
  std::unordered_map<const void*, std::unique_ptr<HostEvent>> events_;
};

}  // namespace smartarray::detail
