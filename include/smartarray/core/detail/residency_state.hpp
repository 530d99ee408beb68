/**
 * @file core/detail/residency_state.hpp
 * @brief Private: which bytes of an array each side holds, and the copies each operation needs.
 *
 * `ResidencyState` is the pure part of the residency state machine: values in, values out, no
 * memory, no stream and no side effect. Each transition returns the state after it and, where
 * data must move, a `CopyPlan`: the byte ranges to copy, to which side, and the stream ordering
 * the access needs. The array (ArrayCore) carries the plan out through its storage and commits
 * the next state only once every copy was issued, so that a failed copy leaves the state as it
 * was and nothing is marked valid that was not copied.
 *
 * Sizes are in bytes. The host copy is valid on the suffix [host_valid_begin, size) and the device
 * copy on the prefix [0, device_valid_end); together they always cover [0, size). This one shape
 * covers every case the vector operations produce: both sides valid, one side stale, a host append
 * after the device was valid (only the new tail is missing on the device), and an append while the
 * host was stale (only the old prefix is missing on the host).
 *
 * An unwritten state (an array made with no_init) holds bytes that were never written: both
 * ranges cover them, so that no acquire copies them, until the first access settles it. With two
 * buffers the side that was not accessed then holds nothing; with one buffer that both sides
 * address (mapped and managed memory) both keep it.
 */
#pragma once

#include <smartarray/core/residency.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace smartarray::detail {

/// The bytes [begin, end) of an array.
struct ByteRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  [[nodiscard]] constexpr std::size_t size() const noexcept { return end - begin; }
  [[nodiscard]] constexpr bool empty() const noexcept { return begin == end; }
  friend constexpr bool operator==(const ByteRange&, const ByteRange&) = default;
};

/// One copy of a plan: `range` moves from the other side to `to`.
struct PlannedCopy {
  Side to = Side::host;
  ByteRange range;
  friend constexpr bool operator==(const PlannedCopy&, const PlannedCopy&) = default;
};

/// The stream ordering an access needs, besides its copies.
enum class Ordering : std::uint8_t {
  /// A reader: it follows the last writer of the side it reads.
  after_writer,
  /// A writer: it follows every earlier use of the side it writes, readers included.
  after_every_use,
};

/// What an access needs done: the copies, in order, and the ordering of the access itself.
class CopyPlan {
 public:
  /// The most copies one plan holds: the valid ranges are a suffix and a prefix, so a side is
  /// always missing one range at most.
  static constexpr std::size_t max_copies = 1;

  constexpr CopyPlan() noexcept = default;
  constexpr explicit CopyPlan(Ordering ordering) noexcept : ordering_(ordering) {}

  /// Adds a copy of `range` to `to` (an empty range adds nothing).
  constexpr void add(Side to, ByteRange range) noexcept {
    if (!range.empty()) copies_[count_++] = PlannedCopy{to, range};
  }
  [[nodiscard]] constexpr std::span<const PlannedCopy> copies() const noexcept {
    return {copies_.data(), count_};
  }
  [[nodiscard]] constexpr bool copies_nothing() const noexcept { return count_ == 0; }
  /// The bytes all the copies move.
  [[nodiscard]] constexpr std::size_t bytes() const noexcept {
    std::size_t total = 0;
    for (const PlannedCopy& copy : copies()) total += copy.range.size();
    return total;
  }
  [[nodiscard]] constexpr Ordering ordering() const noexcept { return ordering_; }

 private:
  std::array<PlannedCopy, max_copies> copies_{};
  std::size_t count_ = 0;
  Ordering ordering_ = Ordering::after_writer;
};

/// A transition: the copies it needs, and the state once they are done.
struct Transition;

class ResidencyState {
 public:
  /// Empty and valid on the host.
  constexpr ResidencyState() noexcept = default;

  /// `size` bytes valid on the host only.
  [[nodiscard]] static constexpr ResidencyState host_only(std::size_t size) noexcept {
    return {size, 0, 0, false};
  }
  /// `size` bytes valid on the device only.
  [[nodiscard]] static constexpr ResidencyState device_only(std::size_t size) noexcept {
    return {size, size, size, false};
  }
  /// `size` bytes never written (see the file comment).
  [[nodiscard]] static constexpr ResidencyState unwritten(std::size_t size) noexcept {
    return {size, 0, size, size > 0};
  }

  [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }
  [[nodiscard]] constexpr std::size_t host_valid_begin() const noexcept { return host_begin_; }
  [[nodiscard]] constexpr std::size_t device_valid_end() const noexcept { return device_end_; }
  [[nodiscard]] constexpr bool is_unwritten() const noexcept { return unwritten_; }
  /// The side holds every byte, written (an unwritten array is valid on neither side).
  [[nodiscard]] constexpr bool valid(Side side) const noexcept {
    return !unwritten_ && (side == Side::host ? host_begin_ == 0 : device_end_ == size_);
  }
  /// The host buffer holds every byte there is (or was never written): a host access copies
  /// nothing.
  [[nodiscard]] constexpr bool host_whole() const noexcept { return host_begin_ == 0; }
  /// The host copy is whole and the device copy holds nothing: a host write changes no other side.
  [[nodiscard]] constexpr bool host_exclusive() const noexcept {
    return host_begin_ == 0 && device_end_ == 0;
  }
  [[nodiscard]] constexpr bool device_whole() const noexcept { return device_end_ == size_; }
  /// The bytes `side` is missing.
  [[nodiscard]] constexpr ByteRange stale(Side side) const noexcept {
    return side == Side::host ? ByteRange{0, host_begin_} : ByteRange{device_end_, size_};
  }
  /// Sizes at or above this one keep both valid ranges as they are: a resize inside
  /// [resize_floor(), capacity] changes nothing but the size.
  [[nodiscard]] constexpr std::size_t resize_floor() const noexcept {
    return std::max(host_begin_, device_end_);
  }

  /// An access of the whole array on `side`: the stale range is copied unless the access
  /// overwrites it (discard); afterwards `side` is whole, and a writer leaves the other side stale.
  /// The first access of an unwritten state settles it first (see settled()).
  [[nodiscard]] constexpr Transition acquire(Side side, Access access,
                                             bool one_buffer) const noexcept;
  /// The copy that makes the host copy whole in place (before the host moves bytes inside it, or
  /// before the device copy is dropped): the stale prefix. mark_host_whole() records it done.
  [[nodiscard]] constexpr CopyPlan host_whole_plan() const noexcept {
    CopyPlan plan(Ordering::after_writer);
    if (!unwritten_) plan.add(Side::host, stale(Side::host));
    return plan;
  }
  /// The copies that read the first `bytes` bytes out to other memory without changing the state:
  /// the stale host prefix comes from the device.
  [[nodiscard]] constexpr CopyPlan read_out(std::size_t bytes) const noexcept {
    CopyPlan plan(Ordering::after_writer);
    if (!unwritten_) plan.add(Side::host, {0, std::min(host_begin_, bytes)});
    return plan;
  }

  /// The size changed to `new_size`. Growth: the new tail is valid on the host only (its writer
  /// fills it). Shrinking: each side keeps what it held of the rest.
  [[nodiscard]] constexpr ResidencyState resized(std::size_t new_size) const noexcept {
    ResidencyState next = *this;
    next.size_ = new_size;
    next.host_begin_ = std::min(host_begin_, new_size);
    next.device_end_ = std::min(device_end_, new_size);
    if (new_size == 0) next.unwritten_ = false;
    return next;
  }
  /// The lock-free part of resized(): a size inside [resize_floor(), capacity], where nothing
  /// else changes.
  constexpr void set_size_in_window(std::size_t new_size) noexcept { size_ = new_size; }
  /// The host wrote its whole copy in place: the device copy is stale. Requires host_whole().
  [[nodiscard]] constexpr ResidencyState host_written() const noexcept {
    return {size_, 0, 0, false};
  }
  /// The device wrote its whole copy: the host copy is stale. Requires device_whole().
  [[nodiscard]] constexpr ResidencyState device_written() const noexcept {
    return {size_, size_, size_, false};
  }
  /// Every byte overwritten on the host at a new size: nothing is copied.
  [[nodiscard]] constexpr ResidencyState host_overwritten(std::size_t new_size) const noexcept {
    return host_only(new_size);
  }
  /// One buffer that both sides address moved on the host (reallocated): the host touched it
  /// last, and device work must make it current again.
  [[nodiscard]] constexpr ResidencyState host_touched_last() const noexcept {
    return {size_, 0, 0, unwritten_};
  }
  /// Takes the ranges of `next`, a transition of this state: the size is written only when it
  /// changed, so that an acquire on a const array (which leaves it as it is) never writes what
  /// other threads' const accesses read without the lock.
  constexpr void commit(const ResidencyState& next) noexcept {
    if (size_ != next.size_) size_ = next.size_;
    host_begin_ = next.host_begin_;
    device_end_ = next.device_end_;
    unwritten_ = next.unwritten_;
  }
  /// Eviction's transitions, which run on another thread than the owner's: they neither read nor
  /// write the size, which the owner's lock-free appends and truncations change meanwhile. The
  /// host copy was made whole (host_whole_plan() carried out), and the device copy dropped.
  constexpr void mark_host_whole() noexcept { host_begin_ = 0; }
  constexpr void mark_device_dropped() noexcept { device_end_ = 0; }
  /// The first access of an unwritten state, on `side`: with two buffers, the side that was not
  /// accessed has no buffer and holds nothing; with one buffer both sides keep it.
  [[nodiscard]] constexpr ResidencyState settled(Side side, bool one_buffer) const noexcept {
    if (!unwritten_) return *this;
    ResidencyState next = *this;
    next.unwritten_ = false;
    if (!one_buffer) {
      if (side == Side::host) next.device_end_ = 0;
      else next.host_begin_ = size_;
    }
    return next;
  }

  friend constexpr bool operator==(const ResidencyState&, const ResidencyState&) = default;

 private:
  constexpr ResidencyState(std::size_t size, std::size_t host_begin, std::size_t device_end,
                           bool unwritten) noexcept
      : size_(size), host_begin_(host_begin), device_end_(device_end), unwritten_(unwritten) {}

  std::size_t size_ = 0;
  std::size_t host_begin_ = 0;
  std::size_t device_end_ = 0;
  bool unwritten_ = false;
};

struct Transition {
  CopyPlan plan;
  ResidencyState next;
};

constexpr Transition ResidencyState::acquire(Side side, Access access,
                                             bool one_buffer) const noexcept {
  const ResidencyState from = settled(side, one_buffer);
  const Ordering ordering =
      access == Access::read ? Ordering::after_writer : Ordering::after_every_use;
  Transition t{CopyPlan(ordering), from};
  if (access != Access::discard) t.plan.add(side, from.stale(side));
  if (side == Side::host) {
    t.next.host_begin_ = 0;
    if (access != Access::read) t.next.device_end_ = 0;
  } else {
    t.next.device_end_ = from.size_;
    if (access != Access::read) t.next.host_begin_ = from.size_;
  }
  return t;
}

}  // namespace smartarray::detail
