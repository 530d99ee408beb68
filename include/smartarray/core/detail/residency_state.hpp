/**
 * @file core/detail/residency_state.hpp
 * @brief Private: which bytes of an array each side holds, and the copies each operation needs.
 *
 * `ResidencyState` is the pure part of the residency state machine: values in, values out, no
 * memory of the array, no stream and no side effect. Each transition returns the state after it
 * and, where data must move, a `CopyPlan`: the byte ranges to copy, to which side, and the stream
 * ordering the access needs. The array (ArrayCore) carries the plan out through its storage and
 * commits the next state only once every copy was issued, so that a failed copy leaves the state
 * as it was and nothing is marked valid that was not copied.
 *
 * Sizes are in bytes, exact to the byte. The state is a list of runs: run i covers
 * [begin_i, begin_{i+1}) and says which sides hold those bytes (host, device or both); the last run
 * extends past the size and is always `host`, because bytes that an append adds are written on the
 * host. So together the sides always hold every byte, and a lock-free append or a truncation that
 * stays at or above the last run's begin (`resize_floor()`) changes nothing but the size. The
 * runs are kept merged (neighbours differ), so a stale range is always one copy, and an array
 * accessed whole needs at most three runs: device, both, host (a stale host prefix, the common
 * part, and a tail appended on the host). Slices and element access add more; up to
 * `RunList::inline_runs` of them are held inline, more spill to the heap.
 *
 * A discarded range (discarded()) is held by every place, with unspecified values: no plan copies
 * it, and a write paints it as any other. Copies out of a buffer (for_each_held(),
 * device_extent()) skip it.
 *
 * An unwritten state (an array made with no_init) holds bytes that were never written: both sides
 * cover them, so that no acquire copies them, until the first access settles it. With two buffers
 * the side that was not accessed then holds nothing; with one buffer that both sides address
 * (mapped and managed memory) both keep it.
 *
 * Several devices: the device side is one place per device (`Place`), and a run's holder is the
 * set of places that hold its bytes (`Holder` is a bit mask: the host, then device 0, 1, ...).
 * With one device every holder is host, device or both, exactly as above. A read on device d of
 * bytes it lacks copies them from another device that d can reach directly (a peer copy, given by
 * the `reach` mask of the acquire), else from the host, else, when only unreachable devices hold
 * them, through the host: one copy down into the host copy and one up (the host then holds them
 * too). A write on device d leaves d the only holder.
 */
#pragma once

#include <smartarray/core/residency.hpp>
#include <smartarray/core/detail/copy_plan.hpp>
#include <smartarray/core/detail/run_list.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace smartarray::detail {

/// A transition: the copies it needs, and the state once they are done.
struct Transition;

class ResidencyState {
 public:
  /// Empty and valid on the host.
  constexpr ResidencyState() noexcept = default;

  /// `size` bytes valid on the host only.
  [[nodiscard]] static constexpr ResidencyState host_only(std::size_t size) noexcept {
    ResidencyState state;
    state.size_ = size;
    return state;
  }
  /// `size` bytes valid on device `device` only.
  [[nodiscard]] static constexpr ResidencyState device_only(std::size_t size, int device = 0) {
    ResidencyState state = host_only(size);
    if (size > 0) {
      state.runs_ = two_runs(static_cast<Holder>(Place(Side::device, device).bit()), size);
    }
    return state;
  }
  /// `size` bytes never written (see the file comment).
  [[nodiscard]] static constexpr ResidencyState unwritten(std::size_t size) {
    ResidencyState state = host_only(size);
    if (size > 0) {
      state.runs_ = two_runs(Holder::both, size);
      state.unwritten_ = true;
    }
    return state;
  }

  [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }
  [[nodiscard]] constexpr bool is_unwritten() const noexcept { return unwritten_; }
  /// The runs (empty: the host holds everything).
  [[nodiscard]] constexpr const RunList& runs() const noexcept { return runs_; }
  /// The place holds every byte, written (an unwritten array is valid on neither side).
  [[nodiscard]] constexpr bool valid(Place place) const noexcept {
    return !unwritten_ && (place.side == Side::host ? host_whole() : device_whole(place.device));
  }
  /// The host buffer holds every byte there is (or was never written): a host access copies
  /// nothing. Reads no size, so eviction may ask it from another thread.
  [[nodiscard]] constexpr bool host_whole() const noexcept {
    for (const Run& run : runs_) {
      if (!holds(run.holder, Side::host)) return false;
    }
    return true;
  }
  /// The host copy is whole and the device copy holds nothing: a host write changes no other side.
  [[nodiscard]] constexpr bool host_exclusive() const noexcept { return runs_.empty(); }
  /// Device `device` holds every byte.
  [[nodiscard]] constexpr bool device_whole(int device = 0) const noexcept {
    if (size_ == 0) return true;
    if (runs_.empty() || runs_.back().begin != size_) return false;
    const Place place(Side::device, device);
    for (std::size_t i = 0; i + 1 < runs_.size(); ++i) {
      if (!holds(runs_[i].holder, place)) return false;
    }
    return true;
  }
  /// Device `device` holds every byte and no other place any: a write there changes no other.
  [[nodiscard]] constexpr bool device_exclusive(int device = 0) const noexcept {
    if (size_ == 0) return true;
    return runs_.size() == 2 && bits(runs_[0].holder) == Place(Side::device, device).bit() &&
           runs_[1].begin == size_;
  }
  /// The host holds no byte (a device-only array).
  [[nodiscard]] constexpr bool host_stale_everywhere() const noexcept {
    return size_ > 0 && host_stale_prefix() == size_;
  }
  /// The place holds every byte of `range`.
  [[nodiscard]] constexpr bool holds_range(Place place, ByteRange range) const noexcept {
    bool all = true;
    for_each_run(range, [&](ByteRange, Holder holder) { all = all && holds(holder, place); });
    return all;
  }
  /// The devices that hold any byte, as a mask of ordinals (bit d: device d).
  [[nodiscard]] constexpr std::uint32_t devices_holding() const noexcept {
    std::uint32_t devices = 0;
    for (const Run& run : runs_) devices |= devices_of(run.holder);
    return devices;
  }
  /// The largest range around byte `at` (< size) whose runs all satisfy `wanted` (a predicate
  /// on the holder), clipped to [0, size); empty when the run at `at` does not.
  template <typename Predicate>
  [[nodiscard]] constexpr ByteRange range_around(std::size_t at, Predicate wanted) const {
    ByteRange span{0, 0};
    bool found = false;
    bool done = false;
    for_each_run({0, size_}, [&](ByteRange run, Holder holder) {
      if (done) return;
      if (!wanted(holder)) {
        done = found;
        if (!found) span = {run.end, run.end};
        return;
      }
      if (span.end != run.begin || span.empty()) span.begin = run.begin;
      span.end = run.end;
      found = found || (run.begin <= at && at < run.end);
    });
    return found ? span : ByteRange{at, at};
  }
  /// Calls `visit(range)` for each maximal range of [0, limit) whose values `place`'s buffer holds
  /// (not the unspecified bytes of a discard), in order.
  template <typename Visit>
  constexpr void for_each_held(Place place, std::size_t limit, Visit visit) const {
    ByteRange pending{0, 0};
    for_each_run({0, limit}, [&](ByteRange run, Holder holder) {
      if (!holds_data(holder, place)) return;
      if (!pending.empty() && pending.end == run.begin) {
        pending.end = run.end;
        return;
      }
      if (!pending.empty()) visit(pending);
      pending = run;
    });
    if (!pending.empty()) visit(pending);
  }
  /// The first byte that the host does not hold when that is a stale prefix [0, end) (the
  /// stale-host guard protects it), else 0.
  [[nodiscard]] constexpr std::size_t host_stale_prefix() const noexcept {
    if (unwritten_ || runs_.empty() || holds(runs_[0].holder, Side::host)) return 0;
    return std::min(runs_.size() > 1 ? runs_[1].begin : size_, size_);
  }
  /// The end of the last byte whose value device `device` holds (0 when it holds none): a
  /// reallocation of its buffer keeps [0, device_extent(device)).
  [[nodiscard]] constexpr std::size_t device_extent(int device = 0) const noexcept {
    const Place place(Side::device, device);
    for (std::size_t i = runs_.size(); i > 1; --i) {
      if (holds_data(runs_[i - 2].holder, place)) return runs_[i - 1].begin;
    }
    return 0;
  }
  /// Sizes at or above this one keep every run as it is: a resize inside
  /// [resize_floor(), capacity] changes nothing but the size.
  [[nodiscard]] constexpr std::size_t resize_floor() const noexcept {
    return runs_.empty() ? 0 : runs_.back().begin;
  }

  /// An access of `range` (inside [0, size)) on `place`: the stale bytes are copied unless the
  /// access overwrites them (discard); afterwards `place` holds the range, and a writer leaves
  /// every other place without it. A device copies from the devices in `reach` (a mask of
  /// ordinals it can copy from directly) before the host (see the file comment). The first access
  /// of an unwritten state settles it first (see settled()).
  [[nodiscard]] constexpr Transition acquire(Place place, Access access, bool one_buffer,
                                             ByteRange range, std::uint32_t reach = 0) const;
  /// acquire() of the whole array.
  [[nodiscard]] constexpr Transition acquire(Place place, Access access, bool one_buffer,
                                             std::uint32_t reach = 0) const;
  /// The copies that make the host copy whole in place (before the host moves bytes inside it, or
  /// before the device copy is dropped). mark_host_whole() records them done.
  [[nodiscard]] constexpr CopyPlan host_whole_plan() const {
    return read_out(std::numeric_limits<std::size_t>::max());
  }
  /// The copies that read the first `bytes` bytes out to other memory without changing the state:
  /// what the host lacks comes from the lowest device that holds it.
  [[nodiscard]] constexpr CopyPlan read_out(std::size_t bytes) const {
    CopyPlan plan(Ordering::after_writer);
    if (unwritten_) return plan;
    for_each_run({0, std::min(bytes, size_)}, [&](ByteRange run, Holder holder) {
      if (!holds(holder, Side::host)) {
        plan.add(PlannedCopy{Side::host, run,
                             static_cast<std::uint8_t>(lowest_device(devices_of(holder)))});
      }
    });
    return plan;
  }

  /// The size changed to `new_size`. Growth: the new tail is valid on the host only (its writer
  /// fills it). Shrinking: each side keeps what it held of the rest.
  [[nodiscard]] constexpr ResidencyState resized(std::size_t new_size) const {
    ResidencyState next = *this;
    next.size_ = new_size;
    if (new_size < resize_floor()) {
      std::size_t keep = 0;
      while (keep < next.runs_.size() && next.runs_[keep].begin < new_size) ++keep;
      next.runs_.truncate(keep);
      append_run(next.runs_, new_size, Holder::host);
      if (next.runs_.size() == 1) next.runs_.clear();
    }
    if (new_size == 0) next.unwritten_ = false;
    return next;
  }
  /// The lock-free part of resized(): a size inside [resize_floor(), capacity], where nothing
  /// else changes.
  constexpr void set_size_in_window(std::size_t new_size) noexcept { size_ = new_size; }
  /// The host wrote its whole copy in place: the device copy is stale. Requires host_whole().
  [[nodiscard]] constexpr ResidencyState host_written() const noexcept {
    return host_only(size_);
  }
  /// Device `device` wrote its whole copy: every other copy is stale. Requires
  /// device_whole(device).
  [[nodiscard]] constexpr ResidencyState device_written(int device = 0) const {
    return device_only(size_, device);
  }
  /// Every byte overwritten on the host at a new size: nothing is copied.
  [[nodiscard]] constexpr ResidencyState host_overwritten(std::size_t new_size) const noexcept {
    return host_only(new_size);
  }
  /// One buffer that both sides address moved on the host (reallocated): the host touched it
  /// last, and device work must make it current again.
  [[nodiscard]] constexpr ResidencyState host_touched_last() const noexcept {
    ResidencyState next = host_only(size_);
    next.unwritten_ = unwritten_;
    return next;
  }
  /// Takes the runs of `next`, a transition of this state: the size is written only when it
  /// changed, so that an acquire on a const array (which leaves it as it is) never writes what
  /// other threads' const accesses read without the lock.
  constexpr void commit(const ResidencyState& next) {
    if (size_ != next.size_) size_ = next.size_;
    runs_ = next.runs_;
    unwritten_ = next.unwritten_;
  }
  /// Eviction's transitions, which run on another thread than the owner's: they neither read nor
  /// write the size, which the owner's lock-free appends and truncations change meanwhile. The
  /// host copy was made whole (host_whole_plan() carried out); a device copy was dropped.
  constexpr void mark_host_whole() noexcept {
    RunList next;
    for (const Run& run : runs_) {
      append_run(next, run.begin, static_cast<Holder>(bits(run.holder) | Place(Side::host).bit()));
    }
    if (next.size() == 1) next.clear();
    runs_ = next;
  }
  /// Device `device`'s copy was dropped, after dropped_plan(device) was carried out: the bytes
  /// that it alone held are the host's now.
  constexpr void mark_device_dropped(int device = 0) noexcept {
    RunList next;
    for (const Run& run : runs_) {
      const std::uint32_t rest = bits(run.holder) & ~Place(Side::device, device).bit();
      append_run(next, run.begin, static_cast<Holder>(rest != 0 ? rest : Place(Side::host).bit()));
    }
    if (next.size() == 1) next.clear();
    runs_ = next;
  }
  /// The copies that keep the bytes that only device `device` holds before its copy is dropped:
  /// to the host, from that device. Reads no size either.
  [[nodiscard]] constexpr CopyPlan dropped_plan(int device) const {
    CopyPlan plan(Ordering::after_writer);
    const std::uint32_t only = Place(Side::device, device).bit();
    for (std::size_t i = 0; i + 1 < runs_.size(); ++i) {
      if (bits(runs_[i].holder) == only) {
        plan.add(PlannedCopy{Side::host, {runs_[i].begin, runs_[i + 1].begin},
                             static_cast<std::uint8_t>(device)});
      }
    }
    return plan;
  }
  /// The bytes `range` (inside [0, size)) were discarded: their values are unspecified, every
  /// place holds them, and no plan copies them until a write paints them again. An unwritten state
  /// is left as it is (no place holds values of it already).
  [[nodiscard]] constexpr ResidencyState discarded(ByteRange range) const {
    if (unwritten_ || range.empty()) return *this;
    ResidencyState next = *this;
    next.runs_ = painted(range, [](Holder) { return static_cast<Holder>(unspecified_bit); });
    return next;
  }
  /// The first access of an unwritten state, on `place`: with two buffers, the places that were
  /// not accessed have no buffer and hold nothing; with one buffer both sides keep it.
  [[nodiscard]] constexpr ResidencyState settled(Place place, bool one_buffer) const {
    if (!unwritten_) return *this;
    ResidencyState next = *this;
    next.unwritten_ = false;
    if (!one_buffer) {
      next = place.side == Side::host ? host_only(size_) : device_only(size_, place.device);
    }
    return next;
  }

  friend constexpr bool operator==(const ResidencyState&, const ResidencyState&) = default;

 private:
  [[nodiscard]] static constexpr RunList two_runs(Holder first, std::size_t size) {
    RunList runs;
    runs.push_back({0, first});
    runs.push_back({size, Holder::host});
    return runs;
  }
  /// Appends a run that starts at `begin` (>= the last one's; 0 for the first) to `runs`, keeping
  /// them merged: an empty last run is replaced, and a run with the last one's holder extends it.
  /// A list left with one run (the host's) is then cleared by the caller.
  static constexpr void append_run(RunList& runs, std::size_t begin, Holder holder) {
    if (!runs.empty() && runs.back().begin == begin) runs.pop_back();
    if (!runs.empty() && runs.back().holder == holder) return;
    runs.push_back({begin, holder});
  }
  /// Calls `visit(range, holder)` for each part of a run inside `range`, in order.
  template <typename Visit>
  constexpr void for_each_run(ByteRange range, Visit visit) const {
    if (range.empty()) return;
    if (runs_.empty()) {
      visit(range, Holder::host);
      return;
    }
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const std::size_t end =
          i + 1 < runs_.size() ? runs_[i + 1].begin : std::numeric_limits<std::size_t>::max();
      const ByteRange part{std::max(runs_[i].begin, range.begin), std::min(end, range.end)};
      if (!part.empty()) visit(part, runs_[i].holder);
      if (end >= range.end) return;
    }
  }
  /// The runs with `change` applied to each holder inside `range`.
  template <typename Change>
  [[nodiscard]] constexpr RunList painted(ByteRange range, Change change) const {
    RunList next;
    for_each_run({0, std::numeric_limits<std::size_t>::max()},
                 [&](ByteRange run, Holder holder) {
                   const ByteRange inside{std::max(run.begin, range.begin),
                                          std::min(run.end, range.end)};
                   if (inside.empty()) {
                     append_run(next, run.begin, holder);
                     return;
                   }
                   if (run.begin < inside.begin) append_run(next, run.begin, holder);
                   append_run(next, inside.begin, change(holder));
                   if (inside.end < run.end) append_run(next, inside.end, holder);
                 });
    if (next.size() == 1) next.clear();
    return next;
  }

  std::size_t size_ = 0;
  RunList runs_;
  bool unwritten_ = false;
};

struct Transition {
  CopyPlan plan;
  ResidencyState next;
};

constexpr Transition ResidencyState::acquire(Place place, Access access, bool one_buffer,
                                             ByteRange range, std::uint32_t reach) const {
  const ResidencyState from = settled(place, one_buffer);
  const Ordering ordering =
      access == Access::read ? Ordering::after_writer : Ordering::after_every_use;
  Transition t{CopyPlan(ordering), from};
  const bool whole = range.begin == 0 && range.end == from.size_;
  const Holder only = static_cast<Holder>(place.bit());
  if (whole && access == Access::discard) {
    // Every byte overwritten in one place: nothing to copy, and that place alone holds them (the
    // common acquire of an output, without painting runs).
    t.next.runs_ = place.side == Side::host || from.size_ == 0 ? RunList{}
                                                               : two_runs(only, from.size_);
    return t;
  }
  const std::uint32_t host_bit = Place(Side::host).bit();
  // A device read of bytes that only devices it cannot reach hold goes through the host.
  const auto staged = [&](Holder holder) {
    return place.side == Side::device && !holds(holder, place) && !holds(holder, Side::host) &&
           (devices_of(holder) & reach) == 0;
  };
  if (access != Access::discard) {
    from.for_each_run(range, [&](ByteRange run, Holder holder) {
      if (holds(holder, place)) return;
      const std::uint32_t devices = devices_of(holder);
      if (place.side == Side::host) {
        t.plan.add(PlannedCopy{Side::host, run, static_cast<std::uint8_t>(lowest_device(devices))});
        return;
      }
      if ((devices & reach) != 0) {
        t.plan.add(PlannedCopy{Side::device, run, place.device,
                               static_cast<std::uint8_t>(lowest_device(devices & reach))});
        return;
      }
      if (staged(holder)) {
        t.plan.add(PlannedCopy{Side::host, run, static_cast<std::uint8_t>(lowest_device(devices))});
      }
      t.plan.add(PlannedCopy{Side::device, run, place.device});
    });
  }
  if (access == Access::read) {
    t.next.runs_ = from.painted(range, [&](Holder holder) {
      return static_cast<Holder>(bits(holder) | place.bit() | (staged(holder) ? host_bit : 0U));
    });
  } else {
    t.next.runs_ = from.painted(range, [only](Holder) { return only; });
  }
  return t;
}

constexpr Transition ResidencyState::acquire(Place place, Access access, bool one_buffer,
                                             std::uint32_t reach) const {
  return acquire(place, access, one_buffer, ByteRange{0, size_}, reach);
}

}  // namespace smartarray::detail
