/**
 * @file runtime/detail/runtime.hpp
 * @brief The backend seam (private). Both backends implement `Runtime`.
 *
 * The public entry points are non-virtual: they count transfers and allocations, consult the fault
 * injector and then call the backend's `do_*` implementation. This keeps the counters and the test
 * hooks identical on both backends.
 */
#pragma once

#include <smartarray/runtime/runtime.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/runtime/detail/capture.hpp>
#include <smartarray/runtime/pinned_flags.hpp>
#include <smartarray/runtime/detail/stream_retirement.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

namespace smartarray::detail {

/// Direction of a copy. `device_to_device` stays on one device; `peer` goes from one device to
/// another (copy_peer_async()).
enum class CopyKind { host_to_device, device_to_host, device_to_device, host_to_host, peer };
/// The direction's name in messages: "host-to-device", ..., "peer".
[[nodiscard]] const char* copy_kind_name(CopyKind kind) noexcept;

/// Where a managed range should live (prefetch target).
enum class Location { host, device };

/// One copy of a batch (Runtime::copy_to_device_now()).
struct CopyRange {
  void* dst = nullptr;
  const void* src = nullptr;
  std::size_t bytes = 0;
};

/// An opaque event handle of the active backend.
using EventHandle = void*;

/**
 * @brief The backend interface. One instance exists per process, returned by `runtime()`.
 *
 * Every function that can fail throws `cuda_error` (or `out_of_memory` for allocations) with a
 * message naming the operation and its bytes.
 *
 * Devices are numbered 0 to device_count() - 1. Device memory belongs to the device it was
 * allocated on, and a copy into or out of it runs on a stream of that device (a peer copy on a
 * stream of either device). Events may be recorded on a stream of any device and waited for on
 * any other: each backend keeps whatever per-device objects that takes.
 */
class Runtime {
 public:
  virtual ~Runtime() = default;
  Runtime() = default;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  [[nodiscard]] virtual BackendKind kind() const noexcept = 0;

  // --- devices ---
  /// Set once by the backend's constructor; read inline, since every acquire asks.
  [[nodiscard]] int device_count() const noexcept { return device_count_; }
  /// The properties of `device`. @throws logic_error for an ordinal that is not a device.
  [[nodiscard]] const DeviceProperties& properties(int device) const;
  /// The properties of the current device (with one device, without asking which is current).
  [[nodiscard]] const DeviceProperties& properties() const {
    return device_count() == 1 ? do_properties(0) : properties(current_device());
  }
  /// The calling thread's current device.
  [[nodiscard]] virtual int current_device() const = 0;
  /// @throws logic_error for an ordinal that is not a device.
  void set_current_device(int device);
  /// True when `reader` can copy from memory of `owner` directly (true for a device and itself).
  [[nodiscard]] bool can_access_peer(int reader, int owner);
  /// Throws logic_error, naming `what`, when `device` is not a device of this backend.
  void check_device(int device, const char* what) const;
  /// Free and total memory of `device` in bytes, now.
  virtual void memory_info(int device, std::size_t& free_bytes, std::size_t& total_bytes) = 0;
  /// Free and total memory of the current device in bytes, now.
  void memory_info(std::size_t& free_bytes, std::size_t& total_bytes) {
    memory_info(current_device(), free_bytes, total_bytes);
  }

  // --- raw allocation (counted, fault-injectable) ---
  /// Memory of `device`.
  void* allocate_device(std::size_t bytes, int device = 0);
  /// Frees memory that allocate_device() took on `device`.
  void free_device(void* ptr, int device = 0) noexcept;
  void* allocate_pinned(std::size_t bytes, unsigned flags = pinned_default);
  void free_pinned(void* ptr) noexcept;
  void* allocate_managed(std::size_t bytes);
  void free_managed(void* ptr) noexcept;
  /// Page-locks existing host memory (cudaHostRegister). Throws logic_error if already registered.
  void register_host(void* ptr, std::size_t bytes, unsigned flags = pinned_default);
  void unregister_host(void* ptr) noexcept;
  /// The device address of mapped pinned memory.
  [[nodiscard]] virtual void* mapped_device_pointer(void* host_ptr) = 0;

  // --- async work (fault-injectable) ---
  /// Enqueues a copy of `bytes` on `stream`. Zero bytes is a no-op. Not counted here: the core
  /// reports each logical transfer once (detail::emit_transfer), however many copies it takes.
  void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, StreamRef stream);
  /// Enqueues a copy of `bytes` from memory of `src_device` to memory of `dst_device`, device to
  /// device, on `stream` (of either device). The devices must reach each other
  /// (can_access_peer()); the cuda backend enables peer access between them on first use.
  void copy_peer_async(void* dst, int dst_device, const void* src, int src_device,
                       std::size_t bytes, StreamRef stream);
  /// Enqueues the host-to-device `copies` on `stream`, in stream order for their destinations, and
  /// reads their host sources before it returns: the host may overwrite them at once, with no
  /// event to wait for. No earlier work may still write those sources. False, with nothing
  /// enqueued, where the backend cannot on this stream (the cuda backend built with CUDA before
  /// 12.8, a driver without batched copies, the legacy default stream): copy_async() them then.
  /// Meant for small copies on an idle stream: the call takes as long as reading the sources, and
  /// the cuda backend's also waits for the stream's earlier work.
  [[nodiscard]] bool copy_to_device_now(std::span<const CopyRange> copies, StreamRef stream);
  /// Enqueues a prefetch of managed memory to the host or to the stream's device (reported by the
  /// core, as copies are).
  void prefetch_async(const void* ptr, std::size_t bytes, Location where, StreamRef stream);
  /// Advises the driver that managed memory is read mostly (cudaMemAdviseSetReadMostly): each
  /// side that reads it keeps a copy, and only a write invalidates the others.
  void advise_read_mostly(const void* ptr, std::size_t bytes);
  /// Enqueues a host function on `stream`, run in order with the stream's other work.
  virtual void launch_host_func(StreamRef stream, std::function<void()> fn) = 0;

  // --- streams ---
  /// A new stream of `priority` on `device`.
  /// @throws logic_error for an ordinal that is not a device, or a priority that is neither
  ///         `normal` nor `high`.
  [[nodiscard]] StreamRef create_stream(int device,
                                        StreamPriority priority = StreamPriority::normal);
  /// A new stream on the current device.
  [[nodiscard]] StreamRef create_stream() { return create_stream(current_device()); }
  void destroy_stream(StreamRef stream) noexcept;
  /// The priority of `stream` (`normal` for a default stream), after check_stream().
  [[nodiscard]] StreamPriority stream_priority(StreamRef stream);
  /// Checks that `stream` can take work, before an operation changes any state for it: a device's
  /// default stream names an existing device; a stream that the library made was not destroyed
  /// since; and on the host backend, any other handle is a live stream. (A foreign `cudaStream_t`
  /// cannot be checked without undefined behaviour: the cuda backend trusts it.)
  /// @throws logic_error naming the handle.
  void check_stream(StreamRef stream);
  /// The device `stream` lives on (0 with one device, without asking the backend).
  [[nodiscard]] int stream_device(StreamRef stream) {
    return device_count_ == 1 ? 0 : stream_device_of_several(stream);
  }
  /// The default stream of `device`, named so that it stays that device's whatever device is
  /// current later; with one device, the plain default stream (`StreamRef{}`).
  [[nodiscard]] StreamRef default_stream(int device);
  /// `stream`, with the default stream of the current device named as default_stream() names it:
  /// what an array or a pool may remember.
  [[nodiscard]] StreamRef canonical(StreamRef stream) {
    return stream.is_default() && device_count() > 1 ? default_stream(current_device()) : stream;
  }
  void synchronize(StreamRef stream);
  [[nodiscard]] virtual bool query(StreamRef stream) = 0;
  /// Waits for every stream of the current device.
  void synchronize_device();

  // --- events ---
  [[nodiscard]] virtual EventHandle create_event() = 0;
  virtual void destroy_event(EventHandle event) noexcept = 0;
  /// Captures the current end of `stream`'s queue in `event` (re-recording replaces it). Inside
  /// a capture, an event recorded on a captured stream marks a point of the graph: streams may
  /// wait for it (fork and join), the host may not.
  void record(EventHandle event, StreamRef stream);
  /// Makes `stream` wait for the work captured by `event` at the time of this call. The host does
  /// not block.
  virtual void stream_wait(StreamRef stream, EventHandle event) = 0;
  /// Blocks the host until the work captured by `event` is done (counted as a wait).
  void synchronize(EventHandle event);
  /// True when the work captured by `event` is done.
  [[nodiscard]] virtual bool query(EventHandle event) = 0;

  // --- graphs (stream capture; see capture.hpp) ---
  /// Starts capturing the work queued on `stream` (relaxed mode: the thread may still allocate).
  /// @throws logic_error when `stream` is a default stream or already captures.
  void begin_capture(StreamRef stream);
  /// Ends the capture begun on `stream` and instantiates what it recorded. Streams that joined
  /// the capture (by waiting for one of its events) must have been joined back into `stream`.
  /// @throws logic_error (or cuda_error) when the capture cannot end; it is over either way.
  [[nodiscard]] virtual GraphHandle end_capture(StreamRef stream) = 0;
  /// Ends the capture begun on `stream` and drops what it recorded (after an error).
  virtual void abort_capture(StreamRef stream) noexcept = 0;
  /// True when work queued on `stream` now is recorded, not run.
  [[nodiscard]] virtual bool is_capturing(StreamRef stream) = 0;
  /// Enqueues one replay of `graph` on `stream`.
  virtual void launch_graph(GraphHandle graph, StreamRef stream) = 0;
  virtual void destroy_graph(GraphHandle graph) noexcept = 0;

 protected:
  /// The backend's number of devices, in [1, max_devices].
  void set_device_count(int count) noexcept { device_count_ = count; }
  virtual void do_set_current_device(int device) = 0;
  virtual bool do_can_access_peer(int reader, int owner) = 0;
  [[nodiscard]] virtual const DeviceProperties& do_properties(int device) const noexcept = 0;
  virtual void* do_allocate_device(std::size_t bytes, int device) = 0;
  virtual void do_free_device(void* ptr, int device) noexcept = 0;
  virtual void* do_allocate_pinned(std::size_t bytes, unsigned flags) = 0;
  virtual void do_free_pinned(void* ptr) noexcept = 0;
  virtual void* do_allocate_managed(std::size_t bytes) = 0;
  virtual void do_free_managed(void* ptr) noexcept = 0;
  virtual void do_register_host(void* ptr, std::size_t bytes, unsigned flags) = 0;
  virtual void do_unregister_host(void* ptr) noexcept = 0;
  virtual void do_copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                             StreamRef stream) = 0;
  virtual void do_copy_peer_async(void* dst, int dst_device, const void* src, int src_device,
                                  std::size_t bytes, StreamRef stream) = 0;
  virtual StreamRef do_create_stream(int device, StreamPriority priority) = 0;
  /// The priority of a stream that is not a default stream.
  virtual StreamPriority do_stream_priority(StreamRef stream) = 0;
  virtual void do_destroy_stream(StreamRef stream) noexcept = 0;
  /// Throws logic_error when the backend knows `stream` (not a default stream) is not live.
  virtual void do_check_stream(StreamRef stream) = 0;
  /// The device of a stream that is neither a default stream nor one of create_stream()'s.
  virtual int do_stream_device(StreamRef stream) = 0;
  virtual bool do_copy_to_device_now(std::span<const CopyRange> copies, StreamRef stream) = 0;
  virtual void do_prefetch_async(const void* ptr, std::size_t bytes, Location where,
                                 StreamRef stream) = 0;
  virtual void do_advise_read_mostly(const void* ptr, std::size_t bytes) = 0;
  virtual void do_synchronize(StreamRef stream) = 0;
  virtual void do_synchronize_device() = 0;
  virtual void do_synchronize(EventHandle event) = 0;
  virtual void do_record(EventHandle event, StreamRef stream) = 0;
  virtual void do_begin_capture(StreamRef stream) = 0;

 private:
  /// stream_device() with several devices.
  [[nodiscard]] int stream_device_of_several(StreamRef stream);

  int device_count_ = 1;
};

/// The active backend, selected on first use (see runtime.hpp).
[[nodiscard]] Runtime& runtime();

/// Builds the host backend (src/runtime/host). Used by selection and by tests.
[[nodiscard]] Runtime* make_host_runtime();
/// Builds the cuda backend (src/runtime/cuda), or returns nullptr when no device is usable.
[[nodiscard]] Runtime* make_cuda_runtime();
/// True when the CUDA runtime reports at least one device.
[[nodiscard]] bool cuda_runtime_has_device() noexcept;

/// A recycled event: created once, reused many times. `record` + `stream_wait` capture state at call
/// time, so an event can go back to the pool right after it was waited on.
class PooledEvent {
 public:
  PooledEvent();
  ~PooledEvent();
  PooledEvent(const PooledEvent&) = delete;
  PooledEvent& operator=(const PooledEvent&) = delete;
  PooledEvent(PooledEvent&& other) noexcept : event_(other.event_) { other.event_ = nullptr; }
  PooledEvent& operator=(PooledEvent&& other) noexcept;
  [[nodiscard]] EventHandle get() const noexcept { return event_; }
  /// Hands the event over to the caller, who gives it back with adopt().
  [[nodiscard]] EventHandle release() noexcept {
    const EventHandle event = event_;
    event_ = nullptr;
    return event;
  }
  /// Gives back an event taken with release().
  static void adopt(EventHandle event) noexcept { PooledEvent owner(event); }

 private:
  explicit PooledEvent(EventHandle event) noexcept : event_(event) {}

  EventHandle event_ = nullptr;
};

/// Makes `waiter` wait for everything queued so far on `producer` (no-op when they are the same).
void stream_wait_stream(StreamRef waiter, StreamRef producer);

/// Makes the host wait for everything queued so far on `stream`, through an event recorded now
/// (counted as a wait). On the H100 benchmark machine an event record plus an event synchronize
/// returns about 3 us sooner than cudaStreamSynchronize after a short kernel and copy.
void host_wait_stream(StreamRef stream);

/// Streams forgotten (`forget_stream`, or `Stream`'s destructor) are drained first, so their work
/// is complete; their handles must never reach the backend again from a holder that named them
/// before. Each is recorded with the generation at which it retired.
void retire_stream(StreamRef stream);
/// Calls `on_forget` with each stream that is forgotten from now on (drained; its handle may be
/// destroyed and reused), before the stream is marked retired. Pools subscribe at construction,
/// so that the runtime never calls up into them by name. Returns the id to unsubscribe with.
std::uint64_t subscribe_to_forgotten_streams(std::function<void(StreamRef)> on_forget);
/// Ends a subscription; once it returns, `on_forget` is not running and is never called again.
void unsubscribe_from_forgotten_streams(std::uint64_t id) noexcept;
/// Tells every subscriber that `stream` is forgotten, then retires it.
void forget_drained_stream(StreamRef stream) noexcept;
/// What `Stream`'s destructor does: drains `stream`, forgets it, then destroys it. A stream of the
/// capture that the calling thread runs is kept until the capture ends (capture.hpp).
void release_stream(StreamRef stream) noexcept;

/// Counts one allocation for the fault injector (testing.hpp) and throws `out_of_memory` naming
/// `what` and `bytes` when it is the armed one. Pools call it on every allocation, hit or miss.
void check_injected_allocation_failure(std::size_t bytes, const char* what);

}  // namespace smartarray::detail
