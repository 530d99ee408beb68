/**
 * @file core/detail/copy_plan.hpp
 * @brief Private: `CopyPlan`, what a transition of the residency state needs done: the byte ranges
 * to copy, to which side and from which device, and the stream ordering of the access.
 */
#pragma once

#include <smartarray/core/residency.hpp>
#include <smartarray/core/detail/run_list.hpp>
#include <smartarray/core/detail/small_vector.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace smartarray::detail {

/// No peer: a copy to a device comes from the host.
inline constexpr std::uint8_t no_peer = 0xff;

/// One copy of a plan: `range` moves to `to`. A copy to the host comes from device `device`; a
/// copy to the device goes to device `device`, from the host, or from device `peer` (a peer
/// copy).
struct PlannedCopy {
  Side to = Side::host;
  ByteRange range;
  std::uint8_t device = 0;
  std::uint8_t peer = no_peer;
  friend constexpr bool operator==(const PlannedCopy&, const PlannedCopy&) = default;
};

/// The stream ordering an access needs, besides its copies.
enum class Ordering : std::uint8_t {
  /// A reader: it follows the last writer of the side it reads.
  after_writer,
  /// A writer: it follows every earlier use of the side it writes, readers included.
  after_every_use,
};

/// What an access needs done: the copies, in ascending order, and the ordering of the access.
class CopyPlan {
 public:
  constexpr CopyPlan() noexcept = default;
  constexpr explicit CopyPlan(Ordering ordering) noexcept : ordering_(ordering) {}

  /// Adds a copy of `range` to `to` from the other side, device 0 (an empty range adds nothing).
  constexpr void add(Side to, ByteRange range) { add(PlannedCopy{to, range}); }
  /// Adds `copy` (after every copy to the same side), merged into the last copy to that side
  /// when it continues it (same devices, adjacent range): a stale range held by one source is one
  /// copy, however many runs it spans.
  constexpr void add(PlannedCopy copy) {
    if (copy.range.empty()) return;
    for (std::size_t i = copies_.size(); i > 0; --i) {
      PlannedCopy& last = copies_[i - 1];
      if (last.to != copy.to) continue;
      if (last.device == copy.device && last.peer == copy.peer &&
          last.range.end == copy.range.begin) {
        last.range.end = copy.range.end;
        return;
      }
      break;
    }
    copies_.push_back(copy);
  }
  [[nodiscard]] constexpr std::span<const PlannedCopy> copies() const noexcept {
    return {copies_.data(), copies_.size()};
  }
  [[nodiscard]] constexpr bool copies_nothing() const noexcept { return copies_.empty(); }
  /// The bytes all the copies move.
  [[nodiscard]] constexpr std::size_t bytes() const noexcept {
    std::size_t total = 0;
    for (const PlannedCopy& copy : copies()) total += copy.range.size();
    return total;
  }
  [[nodiscard]] constexpr Ordering ordering() const noexcept { return ordering_; }

 private:
  SmallVector<PlannedCopy, 2> copies_;
  Ordering ordering_ = Ordering::after_writer;
};

}  // namespace smartarray::detail
