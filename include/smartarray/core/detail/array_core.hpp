/**
 * @file core/detail/array_core.hpp
 * @brief The untyped array behind SmartArray<T> (private): it carries out the residency state
 * machine.
 *
 * ArrayCore orchestrates four parts, each in its own file:
 * - ResidencyState (residency_state.hpp): which bytes each side holds, and the copy plan of each
 *   transition. Pure.
 * - The storage strategy of the memory mode (src/core/storage.hpp): allocates the buffers and
 *   carries out copy plans. Explicit and pageable keep two buffers (pageable stages its copies
 *   through pinned pool blocks); mapped and managed keep one buffer that both sides address
 *   (`device` stays null), where "copying" a range waits (mapped) or prefetches (managed). The
 *   valid ranges still say which side touched the data last, so that host access waits for device
 *   work and managed memory moves only when the other side used it.
 * - StreamOrder (stream_order.hpp): the last device writer, the users since, and the copies still
 *   reading the host buffer.
 * - Eviction (src/core/eviction.hpp): the registry of the pool that holds the device buffer.
 *
 * Several devices: each device that the array is used on has its own copy (DeviceCopy, in
 * device_copy.hpp): its buffer from that device's pool, its place in that pool's eviction registry,
 * its StreamOrder and its device views. The device of an access is its stream's. Device 0's copy
 * is held inline, the others are made when a second device first uses the array, so that an array
 * of one device is what it was before. The host readers (copies reading the host buffer) are
 * tracked in device 0's StreamOrder, whatever device they copy to (host_order()).
 *
 * Each locked entry point opens one Transaction: the lock, the retired streams dropped, the use
 * recorded for eviction, and, when it ends, the observers refreshed (the fast-path flags, the
 * debug view generations and the stale-host guard).
 *
 * The resources default to null ("the default one") and are taken at the first allocation, so a
 * default-constructed core is a constant that touches nothing until it is used.
 *
 * Appends and truncations that leave validity as it is (the common `push_back`/`pop_back`) take a
 * lock-free path (array_core_fast_paths.inl): they change only the size, inside a window
 * [fast_floor_, fast_limit_] that the locked operations of the owning thread recompute. Appends up
 * to fast_limit_ write no byte that a pending upload reads, and truncations down to fast_floor_
 * clamp neither side's valid range; both keep the size inside the window. Eviction, which runs on
 * other threads, never reads the size nor writes the window, so it cannot race with that path.
 * Inserts and erases in the middle take it too while the host copy is the only valid one
 * (host_writable_): eviction then has no data to write back into the host buffer that they move.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/memory/memory_mode.hpp>
#include <smartarray/core/array_options.hpp>
#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/diagnostics/detail/host_guard.hpp>
#include <smartarray/core/detail/device_copy.hpp>
#include <smartarray/core/detail/residency_state.hpp>
#include <smartarray/core/detail/storage_options.hpp>
#include <smartarray/core/detail/stream_order.hpp>
#include <smartarray/diagnostics/detail/view_registry.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace smartarray::detail {

class StorageStrategy;
struct StorageContext;
struct PrefetchCopies;
struct CapturedArray;
struct GraphBinding;
struct GraphToken;

/// Copies `bytes` from `src` to `dst` (not overlapping). Large copies are split over a small pool
/// of worker threads (up to 7, half the cores) and the calling thread, since one thread's memcpy
/// moves about 6 GB/s; small ones are one memcpy. Returns when all is copied.
void parallel_copy(void* dst, const void* src, std::size_t bytes) noexcept;

/// Element access reads ahead after this many misses on consecutive tiles.
inline constexpr unsigned readahead_after_misses = 3;

class ArrayCore {
 public:
  /// An empty, host-valid array with the default resources. Constant: it touches no resource, no
  /// backend and no registry (`constinit` arrays), until its first allocation.
  SMARTARRAY_CONSTEXPR_EMPTY ArrayCore() noexcept = default;
  /// An empty, host-valid array using the given resources (nullptr: the default, taken at the
  /// first allocation).
  SMARTARRAY_CONSTEXPR_EMPTY ArrayCore(const ResourceChoice& resources,
                                       const StorageOptions& storage) noexcept
      : placement_{resources.host, resources.device, storage, resources.host == nullptr,
                   resources.device == nullptr} {}
  ~ArrayCore();
  /// Deep copy of the valid data of `other` (each side copies what it holds), with its resources.
  ArrayCore(const ArrayCore& other);
  /// Deep copy of the valid data of `other`, whose storage options must be this one's, using
  /// `resources` (nullptr: the default).
  ArrayCore(const ArrayCore& other, const ResourceChoice& resources);
  /// O(1); leaves `other` empty, and takes its label (not its number).
  ArrayCore(ArrayCore&& other) noexcept;
  ArrayCore& operator=(const ArrayCore&) = delete;
  ArrayCore& operator=(ArrayCore&&) = delete;
  /// Exchanges the whole state of two arrays (O(1)).
  void swap(ArrayCore& other) noexcept;
  /// Move assignment: frees what this array held (as its destructor would), takes `other`'s
  /// contents, options and label, and leaves `other` empty with its own options. O(1).
  void move_assign(ArrayCore& other) noexcept;

  /// Makes this empty array hold `bytes` uninitialized bytes valid on the stream's device only,
  /// written on `stream`. Two-buffer modes allocate no host memory until the host needs it.
  void make_device_only(std::size_t bytes, StreamRef stream);
  /// Makes this empty array hold `bytes` bytes that are valid nowhere until written: no memory is
  /// taken until the first access, and then only on the side accessed; no access copies them. A
  /// read before any write (an acquire that asks for written data) throws logic_error.
  void make_unwritten(std::size_t bytes);
  /// Makes this empty explicit-mode array a device-valid view of `bytes` bytes of external memory
  /// of the current device at `external`. Nothing is copied and the buffer is never freed; growth
  /// moves the data to pooled memory and leaves the external buffer as it is.
  void wrap_device(std::byte* external, std::size_t bytes);
  /// Enqueues a device-to-device copy on a stream, in place of the runtime's copy.
  using DeviceCopier = void (*)(std::byte* dst, const std::byte* src, std::size_t bytes,
                                StreamRef stream);
  /// Queues a device-to-device copy of `bytes` bytes from `src` (another array's device copy) to
  /// `dst` (this array's, acquired for writing) on `stream`; counted on this array and traced.
  /// `copier`, when given, enqueues it instead of the runtime (`copy`'s copy kernel).
  void copy_device_in(std::byte* dst, const std::byte* src, std::size_t bytes, StreamRef stream,
                      const smartarray::source_location& where, DeviceCopier copier = nullptr);
  /// Out-of-core chunks: queues the copy of the host bytes `range` (which the host holds) to
  /// `device`, memory outside the array, on `stream`, counted as this array's upload. The state
  /// does not change; the caller waits for `stream` before the host buffer may change.
  void upload_chunk(std::byte* device, ByteRange range, StreamRef stream,
                    const smartarray::source_location& where);
  /// Records a message of `bytes` bytes of this array to or from process `peer` (`kind` is
  /// TransferKind::sent or received): counted on this array and globally, and traced.
  void note_message(TransferKind kind, std::size_t bytes, int peer, const char* reason,
                    const smartarray::source_location& where);
  /// Out-of-core chunks: queues the copy of `device` into the host bytes `range` (which the host
  /// alone holds, acquired for writing) on `stream`, counted as this array's download. The caller
  /// waits for `stream` before anyone reads them.
  void download_chunk(const std::byte* device, ByteRange range, StreamRef stream,
                      const smartarray::source_location& where);
  /// Copies `bytes` bytes of the valid data to `dst` (host memory) on `stream` without changing
  /// the residency: from the device when the host copy is stale (one D2H), else with a memcpy.
  /// With `wait` false the device copy may still run when this returns.
  /// With `require_written`, an array that was never written throws logic_error.
  void copy_out(std::byte* dst, std::size_t bytes, StreamRef stream, bool wait,
                const smartarray::source_location& where, bool require_written);

  [[nodiscard]] MemoryMode mode() const noexcept { return placement_.storage.mode; }
  /// The storage options given at construction.
  [[nodiscard]] const StorageOptions& storage() const noexcept { return placement_.storage; }
  /// The resources given at construction (nullptr: the default).
  [[nodiscard]] ResourceChoice resources() const noexcept {
    return {placement_.host_default ? nullptr : placement_.host_resource,
            placement_.device_default ? nullptr : placement_.device_resource};
  }
  /// The array's number in messages and traces: assigned on first use, unique in the process, and
  /// kept by this object (swaps and moves exchange the data, not the numbers).
  [[nodiscard]] std::uint64_t id() const noexcept;
  /// Names the array in messages and traces, after its number. Kept by this object through swaps
  /// and assignments; a move-constructed core takes it.
  void set_label(std::string label);
  /// The label, or an empty string.
  [[nodiscard]] std::string label() const;
  /// "SmartArray #3" or "SmartArray #3 'weights'", for messages.
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::size_t size() const noexcept { return state_.size(); }
  [[nodiscard]] std::size_t capacity() const noexcept { return buffers_.capacity; }

  /// Fast-path flag of const host access: the host copy is whole. Atomic, because several threads
  /// may read one const array while one of them makes the host copy valid.
  [[nodiscard]] bool host_readable() const noexcept {
    return host_readable_.load(std::memory_order_acquire);
  }
  /// Fast-path flag of non-const host access: the host copy is whole and exclusive. A plain load
  /// (see host_writable_), so that a loop of `operator[]` keeps it in a register.
  [[nodiscard]] bool host_writable() const noexcept { return host_writable_; }
  /// The host buffer, without any acquire (may be stale or null).
  [[nodiscard]] std::byte* host_data() const noexcept { return buffers_.host; }

  /// Makes `side` valid for `access` and returns its buffer (the address device views use, for
  /// the device: the copy on the stream's device). A needed copy runs on `stream`; for the host,
  /// by default on the stream of the last writer of the device it comes from. With
  /// `require_written`, a read of an array that was never written throws logic_error (naming
  /// `where`) and changes nothing. The range is the whole array.
  std::byte* acquire(Side side, Access access, std::optional<StreamRef> stream,
                     const smartarray::source_location& where, bool require_written = false);
  /// acquire() of the bytes `range` only (inside [0, size)): copies only what `side` lacks there,
  /// and a writer marks only `range` stale on the other side. Returns the side's whole buffer.
  std::byte* acquire_range(Side side, Access access, ByteRange range,
                           std::optional<StreamRef> stream,
                           const smartarray::source_location& where, bool require_written = false);
  /// Host element access (read or read_write) of the `bytes` bytes at `offset`, when the fast
  /// checks failed: makes the tiles that hold them valid on the host, after a run of misses on
  /// consecutive tiles everything ahead in the direction of the run (readahead), and for
  /// read_write marks only those tiles stale on the device.
  void acquire_element(Access access, std::size_t offset, std::size_t bytes,
                       const smartarray::source_location& where, bool require_written);
  /// The host holds the tiles of the element at `offset` (whose last byte is at `last`): a const
  /// element access needs no acquire. Any thread.
  [[nodiscard]] bool element_readable(std::size_t offset, std::size_t last) const noexcept;
  /// The host alone holds the tiles of the element at `offset` and no copy reads them: a
  /// non-const element access changes nothing.
  [[nodiscard]] bool element_writable(std::size_t offset, std::size_t last) const noexcept;
  /// acquire() of the host side.
  std::byte* acquire_host(Access access, std::optional<StreamRef> stream,
                          const smartarray::source_location& where, bool require_written = false) {
    return acquire(Side::host, access, stream, where, require_written);
  }
  /// acquire() of the device side on `stream`.
  std::byte* acquire_device(Access access, StreamRef stream,
                            const smartarray::source_location& where,
                            bool require_written = false) {
    return acquire(Side::device, access, stream, where, require_written);
  }
  /// Numba's host_changed(): the host copy was modified in place; the device copy becomes stale.
  void host_changed();
  /// Numba's gpu(): orders work queued on `stream` from now on after every other use of the
  /// (already valid) copy on the stream's device, as a writer, without marking anything changed.
  void order_device_write(StreamRef stream);
  /// Numba's gpu_changed(): the copy on the stream's device was modified on `stream`; every other
  /// copy becomes stale.
  void device_changed(StreamRef stream);
  /// Waits for copies still reading the host buffer (before the host writes through a raw view).
  void wait_host_readers();
  /// Queues the copies of the bytes of `range` that the host lacks, each from its device on
  /// `stream` when that is the device's stream (else on the device's last writer or default
  /// stream), and marks the range host-valid without waiting: the first host access of bytes
  /// whose copy is pending waits for that copy. Returns the copies (null: none is pending).
  /// Throws std::out_of_range when `range` leaves the array and logic_error inside a capture.
  std::shared_ptr<PrefetchCopies> prefetch_to_host(ByteRange range, StreamRef stream,
                                                   const smartarray::source_location& where);
  /// Makes the bytes `range` unspecified: every place holds them, so that no copy moves them
  /// until something writes them. Throws as prefetch_to_host().
  void discard(ByteRange range, const smartarray::source_location& where);

  /// Makes the host capacity at least `bytes` (reallocates, keeping only valid data).
  void reserve(std::size_t bytes);
  /// Grows the size to `new_size` bytes, reallocating geometrically if needed, and returns the host
  /// buffer. The new tail [old size, new size) is valid on the host only, and the caller must
  /// write it. No copy is made. Lock-free when it fits the capacity and no copy reads the tail.
  std::byte* append(std::size_t new_size);
  /// True when the lock-free path can append `bytes` at host_data() + size(). One compare, as
  /// std::vector's push_back. Nothing changes until commit_append(): the caller builds the new
  /// element in between, so that a throwing constructor leaves the array as it was.
  [[nodiscard]] bool can_append_in_place(std::size_t bytes) const noexcept;
  /// Grows the size to `new_size` bytes, which can_append_in_place() allowed.
  void commit_append(std::size_t new_size) noexcept;
  /// Opens a gap of `bytes` at `pos` (< size) for the caller to write, when the host copy is whole
  /// and the only valid one, no copy reads it and the capacity holds the insert: then nothing but
  /// the host bytes and the size change, as in an append. False when insert_gap() must run. Out of
  /// line: inlined into a caller whose count the caller's length check already refused, GCC 13 at
  /// -O3 warns about the memmove of that unreachable path (-Warray-bounds).
  [[nodiscard]] bool insert_in_place(std::size_t pos, std::size_t bytes) noexcept;
  /// Removes [pos, pos + bytes), which ends before the size, under the same conditions as
  /// insert_in_place(). False when erase_range() must run.
  [[nodiscard]] bool erase_in_place(std::size_t pos, std::size_t bytes) noexcept;
  /// Shrinks the size to `new_size` bytes. Both sides keep what they held of the new range.
  /// Lock-free when neither side's valid range must be clamped.
  void truncate(std::size_t new_size) noexcept;
  /// Opens a gap of `bytes` at `pos` (< size) and returns the host buffer; the caller writes the
  /// gap. The host copy is made whole first (one copy of a stale prefix) and the device copy
  /// becomes stale. Reallocates geometrically when needed, moving each element once.
  std::byte* insert_gap(std::size_t pos, std::size_t bytes,
                        const smartarray::source_location& where);
  /// Removes [pos, pos + bytes), which ends before the size, and returns the host buffer. The host
  /// copy is made whole first (one copy of a stale prefix) and the device copy becomes stale.
  std::byte* erase_range(std::size_t pos, std::size_t bytes,
                         const smartarray::source_location& where);
  /// Sets the size to `new_size` bytes for a host overwrite of every element and returns the host
  /// buffer: nothing is copied and the device copy becomes stale. Growth allocates exactly
  /// `new_size` bytes and moves nothing.
  std::byte* assign_discard(std::size_t new_size);
  /// Replaces the contents with a deep copy of `other`'s valid data (strong guarantee). The copy's
  /// transfers count on this array.
  void assign_copy(const ArrayCore& other);
  /// Reallocates the host copy to exactly `size()` bytes (keeping valid data).
  void shrink_to_fit();

  /// Validity, for tests and observability: the host's, or the current device's copy.
  [[nodiscard]] bool valid(Side side) const;
  /// Validity of the copy on `device`.
  [[nodiscard]] bool valid_on_device(int device) const;
  /// This array's own transfer counters.
  [[nodiscard]] const TransferCounters& counters() const noexcept { return counters_; }

  /// Drops the copy on `device` to give memory back (eviction). A dirty copy (one holding bytes
  /// that no other place holds) is written back to the host first when `allow_dirty`. Returns the
  /// bytes released. Caller holds the lock.
  std::size_t evict_device_locked(int device, bool allow_dirty);
  /// The array's lock (the eviction registry try-locks it).
  [[nodiscard]] std::mutex& mutex() const noexcept { return mutex_; }
  /// This array's place in the eviction registry of the pool that holds its buffer on `device`
  /// (linked while it holds one): adding and removing it allocate nothing. Only registries use it.
  [[nodiscard]] EvictionLink& eviction_link(int device) noexcept {
    return device_copy(device).link;
  }
  [[nodiscard]] std::uint64_t last_use() const noexcept {
    return last_use_.load(std::memory_order_relaxed);
  }
  /// The stamp for a device view made by the acquire_device() that just returned (this thread).
  [[nodiscard]] static ViewStamp view_stamp() noexcept {
    return detail::view_stamp(last_view_slot);
  }

  /// Where the array's memory comes from. The host resource is null until the first allocation
  /// when the default was asked for; frees use the one the allocation set. The device resource is
  /// the one the array was given for device 0 (null: the default); each device copy records the
  /// resource its buffer came from.
  struct Placement {
    MemoryResource* host_resource = nullptr;
    MemoryResource* device_resource = nullptr;
    StorageOptions storage{};
    /// The array was given no resource of its own for that side: it takes the default.
    bool host_default = true;
    bool device_default = true;
  };
  /// The host buffer. In mapped and managed modes it is the one buffer, and no device copy holds
  /// a buffer of its own.
  struct Buffers {
    std::byte* host = nullptr;
    /// Bytes of the host buffer (or that it will have when the host first needs it).
    std::size_t capacity = 0;
    bool host_pageable = false;
    /// Managed: a prefetch brought the pages back to the host, and the host has not written them
    /// since. The first host write to each such page takes a fault; a host writer takes them all
    /// at once, in parallel (parallel_prefault_for_write), before it gets the pointer.
    bool host_write_faults_pending = false;
  };
  // --- graphs (src/core/array_core/capture.hpp and capture.cpp) ---
  /// Ends this array's part in the capture that `entry` describes: its stream-order tracker comes
  /// back, and host access is allowed again.
  void end_capture(CapturedArray& entry) noexcept;
  /// The token that the graphs binding this array hold (made at the first binding).
  [[nodiscard]] std::shared_ptr<GraphToken> graph_token();
  /// Before any fix-up copy of a replay: throws logic_error naming what changed when the array is
  /// no longer as the graph bound it.
  void check_replay(const GraphBinding& binding) const;
  /// Before a replay on `stream`: checks that the array is as the graph bound it (logic_error
  /// naming what changed, and nothing changes), copies the stale bytes of the graph's reads to
  /// its device, and orders `stream` after the pending work on that device copy. Returns whether
  /// the replay's writes must be committed (false when the device holds the array alone already).
  [[nodiscard]] bool prepare_replay(const GraphBinding& binding, StreamRef stream,
                                    const smartarray::source_location& where);
  /// After the replay was enqueued: the graph's writes are held by its device alone.
  void commit_replay(const GraphBinding& binding) noexcept;

  /// The copy on `device` (made for devices above 0 on first use).
  [[nodiscard]] DeviceCopy& device_copy(int device) {
    return device == 0 ? device0_ : more_device_copies(device);
  }
  [[nodiscard]] const DeviceCopy& device_copy(int device) const {
    return device == 0 ? device0_ : const_cast<ArrayCore*>(this)->more_device_copies(device);
  }

 private:
  friend struct StorageContext;
  class Transaction;

  /// The resources for an allocation: the defaults are taken at the first call (caller holds the
  /// lock).
  MemoryResource& host_mr();
  MemoryResource& device_mr(int device);
  /// The copies of devices above 0, made on first use.
  DeviceCopy& more_device_copies(int device);
  /// The tracker of the copies still reading the host buffer (device 0's StreamOrder).
  [[nodiscard]] StreamOrder& host_order() noexcept { return device0_.order; }
  [[nodiscard]] const StreamOrder& host_order() const noexcept { return device0_.order; }
  /// The number of device copies that exist (1, or the device count once a second device was
  /// used).
  [[nodiscard]] int device_copies() const noexcept {
    return more_devices_ == nullptr ? 1 : more_devices_count_ + 1;
  }
  /// The place of the copy on `device`: one-buffer arrays have one place for every device.
  [[nodiscard]] Place device_place(int device) const noexcept {
    return Place(Side::device, one_buffer() ? 0 : device);
  }
  /// The devices that `device` copies from directly (a mask of ordinals; 0 with one device).
  [[nodiscard]] std::uint32_t peer_reach(int device) const;
  /// The strategy of the array's memory mode.
  [[nodiscard]] const StorageStrategy& strategy() const noexcept;
  /// Mapped and managed modes: one buffer that both sides address.
  [[nodiscard]] bool one_buffer() const noexcept {
    return mode() == MemoryMode::mapped || mode() == MemoryMode::managed;
  }
  /// What the strategy works on, for the copy on `device`.
  [[nodiscard]] StorageContext context(const char* reason, const smartarray::source_location& where,
                                       int device = 0);
  /// Carries out `plan`'s copies: those to the host into `dst` (the host buffer, or its
  /// replacement), each from its device on `stream` when that is the device's stream, else on the
  /// device's last writer (or default stream); then those to device `device` on `stream`.
  void carry_out(const CopyPlan& plan, std::byte* dst, int device, std::optional<StreamRef> stream,
                 const char* reason, const smartarray::source_location& where);
  /// The stream that copies out of device `device`'s copy: `preferred` when it lives there, else
  /// the copy's last writer, else the device's default stream.
  [[nodiscard]] StreamRef stream_from(int device, std::optional<StreamRef> preferred);
  /// The copy constructors' work, under `other`'s lock: each side copies what it holds valid.
  void copy_valid_data(const ArrayCore& other);
  /// swap's exchange, with both locks held.
  void swap_locked(ArrayCore& other) noexcept;
  /// Finds the eviction registry of the pool under `device`'s resource (before an allocation
  /// there: it may throw); register_for_eviction then links this copy there once it holds a pooled
  /// buffer. A resource with no pool under it has none: its arrays are not evicted.
  void resolve_eviction_registry(int device);
  void register_for_eviction(int device) noexcept;
  void unregister_for_eviction(int device) noexcept;
  /// Every device copy.
  void register_for_eviction() noexcept;
  void unregister_for_eviction() noexcept;
  /// The label as a C string for the trace, or nullptr (caller holds the lock).
  [[nodiscard]] const char* trace_label() const noexcept {
    return label_ ? label_->c_str() : nullptr;
  }
  /// Throws logic_error when `require_written` and the array was never written.
  void check_written(bool require_written, const char* what,
                     const smartarray::source_location& where) const;

  /// Publishes validity to host_readable_ (any thread, eviction included).
  void refresh_readable() noexcept;
  /// Both fast-path flags and the lock-free resize window (the array's own operations only),
  /// and the observers: the generation of this array's device views and the stale-host guard.
  void refresh_state() noexcept;
  /// Invalidates the device views of each copy when the size, its buffer or its validity changed
  /// since its last view was made.
  void note_view_state() noexcept;
  /// Guards the stale host prefix (or drops the guard once the host copy is valid).
  void update_host_guard() noexcept;
  /// Makes the whole host buffer accessible before the library writes or frees it.
  void drop_host_guard() noexcept;
  /// Records the state that the device views of `device` handed out from now on are made with.
  void start_views(int device) noexcept;
  /// Device `device` no longer holds bytes that it held when its current views were made.
  [[nodiscard]] bool device_lost_viewed_bytes(int device) const noexcept;
  /// The address the device views of `device` point at (the host buffer in mapped and managed
  /// modes).
  [[nodiscard]] const std::byte* view_address(int device) const {
    return one_buffer() ? buffers_.host : device_copy(device).data;
  }
  /// The lock-free resize paths' part of note_view_state(), checked in debug builds only.
  void note_fast_resize() noexcept;
  void touch() noexcept;
  std::byte* append_locked(std::size_t new_size);
  void truncate_locked(std::size_t new_size) noexcept;
  /// The host waits for the pending prefetch copies into the host bytes `range` and forgets them
  /// (a wait is counted when one was still running).
  void settle_arrivals(ByteRange range);
  /// settle_arrivals() of every pending copy, before the host buffer changes or is freed; a copy
  /// that failed is reported by the next call of the backend.
  void settle_arrivals_quietly() noexcept;
  /// The host acquire of `range` (see acquire_range()).
  std::byte* acquire_host_range(Access access, ByteRange range, std::optional<StreamRef> stream,
                                const smartarray::source_location& where);
  /// The element windows (element_readable(), element_writable()) around the last element
  /// accessed.
  void refresh_element_windows() noexcept;
  /// Allocates the host buffer at the capacity when there is none yet.
  void ensure_host_buffer();
  std::byte* allocate_host(std::size_t bytes, bool& pageable);
  /// Frees the current host buffer, ordered after the copies that still read it.
  void free_host(std::byte* ptr, std::size_t bytes, bool pageable) noexcept;
  /// Frees a host buffer that no copy has used.
  void free_unused_host(std::byte* ptr, std::size_t bytes, bool pageable) noexcept;
  void reallocate_host(std::size_t new_capacity);
  /// Gives the buffer on `device` room for the size, moving its first `keep` bytes when it
  /// reallocates; `stream` lives on `device`.
  void ensure_device_capacity(int device, StreamRef stream, std::size_t keep);
  /// Makes the host copy whole in place, on the last writers' streams (before the host moves
  /// bytes inside it).
  void make_host_whole(const char* reason, const smartarray::source_location& where);
  void wait_host_readers_locked();
  /// True when an acquire of device `device`'s copy for `access` on `stream` would change
  /// nothing: that separate copy is whole, the stream already has that access, and the views are
  /// current.
  [[nodiscard]] bool device_current_for(int device, Access access, ByteRange range,
                                        StreamRef stream) const;
  /// The device acquire's preparation and ordering around its plan (see acquire()).
  std::byte* acquire_device_locked(int device, Access access, ByteRange range, StreamRef stream,
                                   const smartarray::source_location& where);
  /// acquire() and acquire_range() under their transaction.
  std::byte* acquire_locked(Transaction& transaction, Side side, Access access, ByteRange range,
                            std::optional<StreamRef> stream,
                            const smartarray::source_location& where, bool require_written);
  /// acquire_locked() of the device inside a capture: records what the graph reads and writes,
  /// and makes sure of the buffer it binds, without copying or changing validity.
  std::byte* acquire_captured(Transaction& transaction, int device, Access access,
                              ByteRange range, StreamRef stream,
                              const smartarray::source_location& where);
  /// Throws logic_error when a capture on this thread writes this array: a host access would
  /// need the graph's results, and the graph has not run.
  void refuse_host_access_in_capture(const char* what,
                                     const smartarray::source_location& where) const;
  /// Throws logic_error, naming what changed, when the array is not as `binding` bound it.
  void check_binding(const GraphBinding& binding) const;
  /// Frees the buffer on `device` (and forgets its work).
  void release_device_buffer(int device) noexcept;
  void release_all() noexcept;

  Placement placement_{};
  Buffers buffers_{};
  ResidencyState state_{};
  DeviceCopy device0_{};
  /// The copies of devices 1 to more_devices_count_ (made when a second device is first used).
  std::unique_ptr<DeviceCopy[]> more_devices_;
  int more_devices_count_ = 0;
  /// The lock-free resize window: sizes in [fast_floor_, fast_limit_] change nothing but the size.
  std::size_t fast_floor_ = 0;
  std::size_t fast_limit_ = 0;
  std::atomic<bool> host_readable_{true};
  /// Element access (see acquire_element()): the tiles of the const fast path ([first, first +
  /// count) packed as first << 32 | count, for lock-free readers), those of the non-const one,
  /// the byte of the last element acquired (SIZE_MAX: none), and the run of misses on
  /// consecutive tiles (its last tile, its length, and +1 or -1 for its direction).
  std::atomic<std::uint64_t> read_window_{0};
  struct ElementAccess {
    std::size_t write_first = 0;
    std::size_t write_count = 0;
    std::size_t hint = static_cast<std::size_t>(-1);
    std::size_t miss_tile = 0;
    unsigned miss_run = 0;
    int miss_step = 0;
  };
  ElementAccess element_{};
  /// Written only by this array's own operations (const ones under the lock), which cannot run
  /// concurrently with a non-const host access, and never by eviction on another thread: eviction
  /// only ever makes the host copy more valid, so a flag it leaves false sends the next access to
  /// the slow path, which recomputes it.
  bool host_writable_ = true;
  std::atomic<std::uint64_t> last_use_{0};
  mutable std::mutex mutex_;
  TransferCounters counters_;
  /// The debug observers of transitions besides each device copy's views: the stale-host guard
  /// (smartarray/diagnostics/debug.hpp): the protected pages, the host range they were made for,
  /// and the last device write access, which its message names.
  struct Observers {
    GuardedPages guarded{};
    const std::byte* guarded_host = nullptr;
    std::size_t guarded_stale = 0;
    const char* device_write_file = nullptr;
    std::uint32_t device_write_line = 0;
  };
  Observers observers_{};
  /// The prefetch copies still writing host bytes (see prefetch_to_host()); settled under the lock
  /// by whatever touches those bytes on the host, const accesses included. While any is pending,
  /// every host access takes the slow path.
  struct HostArrival {
    ByteRange range;
    std::shared_ptr<PrefetchCopies> copies;
  };
  std::vector<HostArrival> arrivals_;
  /// Graphs that bind this object (see graph_token()), and whether the capture running on this
  /// thread writes it (host access then throws; the fast paths are off).
  std::shared_ptr<GraphToken> graph_token_;
  bool capture_written_ = false;
  /// The number and the label that name this object (see id()).
  mutable std::atomic<std::uint64_t> id_{0};
  std::unique_ptr<std::string> label_;
};

}  // namespace smartarray::detail

#include <smartarray/core/detail/array_core_fast_paths.inl>
