/**
 * @file adapters/detail/reduction_scratch.hpp
 * @brief Private: what makes a reduction cost nothing but its kernels in the steady state. The
 *        device scratch of the reductions on each stream, kept from call to call, and the pinned
 *        slots that synchronous calls bring their results back in (src/adapters/).
 *
 * `reduce` and `transform_reduce` take their scratch through `ReductionScratch`: a block of device
 * memory per device and stream, grow-only, allocated the first time a stream reduces and given
 * back when the stream is destroyed. The calls that return their result to the host take a
 * `ReductionResult`: a pinned slot, mapped into the device's address space where the device can
 * map host memory (the last kernel writes the result there itself), and an event recorded after
 * the reduction, which is the only thing the host waits for. Neither takes memory from a pool
 * once the stream has reduced before, and neither builds an array.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/runtime/stream.hpp>

#include <cstddef>
#include <memory>

namespace smartarray {
class MemoryResource;
}  // namespace smartarray

namespace smartarray::detail {

/// The bytes at the start of every scratch block that the reductions lay out themselves: the
/// one-pass kernel's ticket (an `unsigned`, zero between calls) at offset 0, the rest unused.
inline constexpr std::size_t reduction_ticket_bytes = 256;

/// The scratch of one device and stream (src/adapters/reduction_scratch.cpp).
struct StreamScratch;

/**
 * The device scratch of a reduction on `stream`: at least `bytes`, 256-byte aligned, used only by
 * work queued on `stream`, and held (locked against the other threads that queue reductions on
 * `stream`) from construction until destruction, which must follow the enqueue of every kernel
 * that uses it. The first `reduction_ticket_bytes` of the block hold the one-pass kernel's ticket.
 *
 * Outside a capture the block is the stream's own, kept from call to call and grown (never shrunk)
 * when a call needs more: no pool is asked, and nothing is allocated once the stream has the
 * bytes. A block that a stream outgrows, and the stream's block when the stream is destroyed,
 * become spares of the device that later streams take before anything is allocated. Inside
 * `sa::capture` on the calling thread, the block is taken from the device pool for this call and
 * given back at destruction, so that the graph keeps it for its replays (as every temporary of a
 * capture).
 */
class ReductionScratch {
 public:
  /// @throws out_of_memory when a new block cannot be allocated.
  ReductionScratch(StreamRef stream, int device, std::size_t bytes);
  ~ReductionScratch();
  ReductionScratch(const ReductionScratch&) = delete;
  ReductionScratch& operator=(const ReductionScratch&) = delete;

  /// The block.
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  /// True when the ticket of the block may not be zero: the caller queues a zeroing of it before
  /// the kernel that uses it, then calls note_ticket_zeroed(). A one-pass kernel leaves the
  /// ticket zero when it ends, so this is true once per block.
  [[nodiscard]] bool ticket_unset() const noexcept { return !ticket_zeroed_; }
  /// The zeroing of the ticket is queued on the stream.
  void note_ticket_zeroed() noexcept;

 private:
  StreamRef stream_;
  std::shared_ptr<StreamScratch> entry_;  // the stream's scratch, locked; none inside a capture
  MemoryResource* pool_ = nullptr;        // inside a capture: the pool the block came from
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  bool ticket_zeroed_ = false;
};

/// A pinned slot of host memory and its event (src/adapters/reduction_scratch.cpp).
struct ResultSlot;

/**
 * Where a synchronous reduction on `stream` brings its result of `bytes` bytes back: a pinned slot
 * of host memory, taken from a free list for the duration of one call (so that concurrent calls,
 * on one stream or several, each have their own), and an event. The reduction writes the slot
 * through target(), or writes device memory that download() then copies into it; read() counts
 * the copy back, waits for the event and returns the slot.
 */
class ReductionResult {
 public:
  /// @throws out_of_memory when no slot is free and a new one cannot be allocated.
  ReductionResult(StreamRef stream, std::size_t bytes);
  ~ReductionResult();
  ReductionResult(const ReductionResult&) = delete;
  ReductionResult& operator=(const ReductionResult&) = delete;

  /// The address that the reduction's last write goes to: the slot as the stream's device sees
  /// it when that device maps host memory (the slot itself on the host backend, whose worker
  /// writes it), else nullptr, and the result goes through device memory and download().
  [[nodiscard]] void* target() noexcept;
  /// Queues the copy of the result from device memory at `device` into the slot, on the stream.
  void download(const void* device);
  /**
   * Records the event after the work queued on the stream so far (the reduction, and its
   * download), counts one device-to-host transfer of the result's bytes (globally and on the
   * stream's device; traced at `where` with `reason`), waits for the event only, and returns the
   * slot, which holds the result until this object is destroyed.
   */
  [[nodiscard]] const void* read(const char* reason, const smartarray::source_location& where);

 private:
  ResultSlot* slot_;
  StreamRef stream_;
  int device_;
  std::size_t bytes_;
  bool queued_ = false;  // work that writes the slot may be queued
  bool read_ = false;
};

}  // namespace smartarray::detail
