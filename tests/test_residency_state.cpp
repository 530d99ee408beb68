// The pure residency state machine (core/detail/residency_state.hpp), checked exhaustively
// against the model that the vector and property tests share (support/residency_model.hpp): every
// sequence of up to five operations, from every small starting state, must leave the same valid
// ranges and plan exactly the copies the model counts. Needs no backend: it runs the same on both.
#include "support/residency_model.hpp"

#include <smartarray/core/detail/residency_state.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace smartarray::test {
namespace {

using detail::ByteRange;
using detail::CopyPlan;
using detail::Ordering;
using detail::PlannedCopy;
using detail::ResidencyState;
using detail::Transition;

// Plain transitions are constant expressions: nothing in the state machine has a side effect.
constexpr Transition stale_read = ResidencyState::device_only(64).acquire(Side::host, Access::read,
                                                                          false);
static_assert(stale_read.plan.copies().size() == 1);
static_assert(stale_read.plan.copies()[0] == PlannedCopy{Side::host, ByteRange{0, 64}});
static_assert(stale_read.next.valid(Side::host) && stale_read.next.valid(Side::device));
static_assert(ResidencyState::host_only(8).resized(12).acquire(Side::device, Access::read, false)
                  .plan.copies()[0] == PlannedCopy{Side::device, ByteRange{0, 12}});

/// The operations that the enumeration combines. Each is one transition of the state machine and
/// one rule of the model.
enum class Op {
  host_read,
  host_read_write,
  host_discard,
  device_read,
  device_read_write,
  device_discard,
  append_one,
  append_two,
  truncate_one,
  truncate_all,
  host_changed,
  device_changed,
  insert_one,   ///< a host insert in the middle: the host copy is made whole, the device is stale
  evict_dirty,  ///< eviction of the device copy, writing a stale host prefix back first
  assign_three,
};
constexpr std::array all_ops{Op::host_read,     Op::host_read_write, Op::host_discard,
                             Op::device_read,   Op::device_read_write, Op::device_discard,
                             Op::append_one,    Op::append_two,     Op::truncate_one,
                             Op::truncate_all,  Op::host_changed,   Op::device_changed,
                             Op::insert_one,    Op::evict_dirty,    Op::assign_three};

const char* name(Op op) {
  constexpr std::array<const char*, all_ops.size()> names{
      "host_read",    "host_read_write", "host_discard",   "device_read", "device_read_write",
      "device_discard", "append_one",    "append_two",     "truncate_one", "truncate_all",
      "host_changed", "device_changed",  "insert_one",     "evict_dirty", "assign_three"};
  return names[static_cast<std::size_t>(op)];
}

/// The model of one array: its size and valid ranges, in bytes (Element = std::byte).
struct Model : Residency {
  std::size_t size = 0;
};

/// The maximal ranges that `side` holds.
std::vector<ByteRange> held(const ResidencyState& state, Side side) {
  std::vector<ByteRange> ranges;
  state.for_each_held(side, state.size(), [&](ByteRange range) { ranges.push_back(range); });
  return ranges;
}

/// The model's ranges: the host holds [host_begin, size), the device [0, device_end).
std::vector<ByteRange> model_held(const Model& model, Side side) {
  const ByteRange range = side == Side::host ? ByteRange{model.host_begin, model.size}
                                             : ByteRange{0, model.device_end};
  if (range.empty()) return {};
  return {range};
}

/// The transfers a plan makes, as the model counts them.
TransferStats transfers_of(const CopyPlan& plan) {
  Residency counted;
  for (const PlannedCopy& copy : plan.copies()) {
    if (copy.to == Side::host) add_d2h<std::byte>(counted, copy.range.size());
    else add_h2d<std::byte>(counted, copy.range.size());
  }
  return counted.expected;
}

/// Applies `op` to the state machine (two buffers) and to the model. False when the operation
/// does not apply (its precondition fails), in which case neither changes.
bool apply(Op op, ResidencyState& state, Model& model, TransferStats& planned) {
  const std::size_t n = state.size();
  planned = {};
  model.expected = {};
  const auto take = [&](const Transition& transition) {
    planned = transfers_of(transition.plan);
    state = transition.next;
  };
  const auto acquire_device = [&](Access access) {
    if (n == 0) return false;
    take(state.acquire(Side::device, access, false));
    acquire_separate_device<std::byte>(model, n, model.device_capacity, access);
    return true;
  };
  switch (op) {
    case Op::host_read:
      take(state.acquire(Side::host, Access::read, false));
      read_separate_host<std::byte>(model);
      return true;
    case Op::host_read_write:
      take(state.acquire(Side::host, Access::read_write, false));
      read_separate_host<std::byte>(model);
      model.device_end = 0;
      return true;
    case Op::host_discard:
      take(state.acquire(Side::host, Access::discard, false));
      overwrite_host(model);
      return true;
    case Op::device_read: return acquire_device(Access::read);
    case Op::device_read_write: return acquire_device(Access::read_write);
    case Op::device_discard: return acquire_device(Access::discard);
    case Op::append_one:
    case Op::append_two:
      // Both sides keep what they held; the new tail is valid on the host alone.
      state = state.resized(n + (op == Op::append_one ? 1 : 2));
      model.size = state.size();
      return true;
    case Op::truncate_one:
    case Op::truncate_all:
      if (n == 0) return false;
      state = state.resized(op == Op::truncate_one ? n - 1 : 0);
      model.size = state.size();
      truncate_residency(model, model.size);
      return true;
    case Op::host_changed:
      if (!state.valid(Side::host)) return false;
      state = state.host_written();
      model.device_end = 0;
      return true;
    case Op::device_changed:
      if (!state.valid(Side::device) || n == 0) return false;
      state = state.device_written();
      model.host_begin = n;
      return true;
    case Op::insert_one:
      if (n == 0) return false;
      planned = transfers_of(state.host_whole_plan());
      state.mark_host_whole();
      state = state.resized(n + 1).host_written();
      read_separate_host<std::byte>(model);
      model.device_end = 0;
      model.size = n + 1;
      return true;
    case Op::evict_dirty:
      if (state.device_extent() == 0) return false;
      planned = transfers_of(state.host_whole_plan());
      state.mark_host_whole();
      state.mark_device_dropped();
      read_separate_host<std::byte>(model);
      model.device_end = 0;
      return true;
    case Op::assign_three:
      state = state.host_overwritten(3);
      model.size = 3;
      overwrite_host(model);
      return true;
  }
  return false;
}

/// Depth-first over every sequence of up to `depth` more operations, comparing at each step.
void explore(const ResidencyState& state, const Model& model, int depth,
             std::vector<Op>& path, std::size_t& checked) {
  if (depth == 0) return;
  for (const Op op : all_ops) {
    ResidencyState next = state;
    Model expected = model;
    TransferStats planned;
    if (!apply(op, next, expected, planned)) continue;
    path.push_back(op);
    ++checked;
    const auto where = [&] {
      std::string steps;
      for (const Op step : path) steps += std::string(" ") + name(step);
      return steps;
    };
    ASSERT_EQ(next.size(), expected.size) << where();
    ASSERT_EQ(held(next, Side::host), model_held(expected, Side::host)) << where();
    ASSERT_EQ(held(next, Side::device), model_held(expected, Side::device)) << where();
    ASSERT_EQ(planned, expected.expected) << where();
    explore(next, expected, depth - 1, path, checked);
    path.pop_back();
  }
}

TEST(ResidencyState, EverySequenceOfFiveOperationsMatchesTheModel) {
  std::size_t checked = 0;
  for (std::size_t n = 0; n <= 3; ++n) {
    for (const bool on_device : {false, true}) {
      if (on_device && n == 0) continue;
      const ResidencyState start =
          on_device ? ResidencyState::device_only(n) : ResidencyState::host_only(n);
      Model model;
      model.size = n;
      // Device reallocations (a D2D move in the model) are the storage's business, not the state
      // machine's: the model's device buffer is large enough for every size here.
      model.device_capacity = 64;
      model.host_begin = on_device ? n : 0;
      model.device_end = on_device ? n : 0;
      std::vector<Op> path;
      explore(start, model, 5, path, checked);
    }
  }
  // 15 operations, five deep, from seven starting states (less the ones that do not apply).
  EXPECT_GT(checked, std::size_t{1'000'000});
}

TEST(ResidencyState, AcquireCopiesOnlyTheStaleRangeAndOrdersByAccess) {
  // A host append after a device write: only the old prefix is stale on the host, only the new
  // tail on the device.
  const ResidencyState appended = ResidencyState::device_only(100).resized(150);
  EXPECT_EQ(held(appended, Side::host), (std::vector<ByteRange>{{100, 150}}));
  EXPECT_EQ(held(appended, Side::device), (std::vector<ByteRange>{{0, 100}}));

  const Transition read = appended.acquire(Side::device, Access::read, false);
  ASSERT_EQ(read.plan.copies().size(), 1U);
  EXPECT_EQ(read.plan.copies()[0], (PlannedCopy{Side::device, {100, 150}}));
  EXPECT_EQ(read.plan.ordering(), Ordering::after_writer);
  // A reader leaves the host as it was.
  EXPECT_EQ(held(read.next, Side::host), (std::vector<ByteRange>{{100, 150}}));
  EXPECT_TRUE(read.next.valid(Side::device));

  const Transition write = appended.acquire(Side::device, Access::read_write, false);
  EXPECT_EQ(write.plan.bytes(), 50U);
  EXPECT_EQ(write.plan.ordering(), Ordering::after_every_use);
  EXPECT_FALSE(write.next.valid(Side::host));

  const Transition discard = appended.acquire(Side::host, Access::discard, false);
  EXPECT_TRUE(discard.plan.copies_nothing());
  EXPECT_TRUE(discard.next.host_exclusive());
  EXPECT_EQ(discard.plan.ordering(), Ordering::after_every_use);

  // read_out copies a stale prefix to other memory and changes nothing.
  EXPECT_EQ(appended.read_out(60).bytes(), 60U);
  EXPECT_EQ(appended.read_out(150).bytes(), 100U);
  EXPECT_TRUE(ResidencyState::host_only(10).read_out(10).copies_nothing());
}

TEST(ResidencyState, AnUnwrittenArrayCopiesNothingAndSettlesOnItsFirstAccess) {
  const ResidencyState fresh = ResidencyState::unwritten(40);
  EXPECT_TRUE(fresh.is_unwritten());
  EXPECT_FALSE(fresh.valid(Side::host));
  EXPECT_FALSE(fresh.valid(Side::device));
  EXPECT_TRUE(fresh.read_out(40).copies_nothing());
  EXPECT_TRUE(fresh.host_whole_plan().copies_nothing());
  for (const Side side : {Side::host, Side::device}) {
    for (const Access access : {Access::read, Access::read_write, Access::discard}) {
      // Two buffers: the side that was not accessed has no buffer and holds nothing.
      const Transition two = fresh.acquire(side, access, false);
      EXPECT_TRUE(two.plan.copies_nothing());
      EXPECT_FALSE(two.next.is_unwritten());
      EXPECT_TRUE(two.next.valid(side));
      EXPECT_FALSE(two.next.valid(side == Side::host ? Side::device : Side::host));
      // One buffer: both sides address the same bytes; a reader leaves both valid.
      const Transition one = fresh.acquire(side, access, true);
      EXPECT_TRUE(one.plan.copies_nothing());
      EXPECT_TRUE(one.next.valid(side));
      EXPECT_EQ(one.next.valid(side == Side::host ? Side::device : Side::host),
                access == Access::read);
    }
  }
  EXPECT_FALSE(fresh.resized(0).is_unwritten());
}

TEST(ResidencyState, TheResizeFloorIsWhereAResizeStopsChangingTheRanges) {
  const ResidencyState state = ResidencyState::device_only(64).resized(80);
  ASSERT_EQ(state.resize_floor(), 64U);
  for (std::size_t size = state.resize_floor(); size <= 200; ++size) {
    const ResidencyState resized = state.resized(size);
    EXPECT_EQ(resized.runs(), state.runs());
  }
  EXPECT_NE(state.resized(63).runs(), state.runs());
}

/// A byte-level reference of the range transitions: which sides hold each byte.
struct ByteModel {
  std::vector<unsigned> holder;  // 1: host, 2: device, 3: both

  [[nodiscard]] static unsigned bit(Side side) { return side == Side::host ? 1U : 2U; }
  /// The copies an acquire of [begin, end) on `side` makes: each maximal stale part.
  [[nodiscard]] std::vector<PlannedCopy> stale(Side side, ByteRange range) const {
    std::vector<PlannedCopy> copies;
    for (std::size_t i = range.begin; i < range.end; ++i) {
      if ((holder[i] & bit(side)) != 0) continue;
      if (!copies.empty() && copies.back().range.end == i) {
        ++copies.back().range.end;
      } else {
        copies.push_back({side, {i, i + 1}});
      }
    }
    return copies;
  }
  void acquire(Side side, Access access, ByteRange range) {
    for (std::size_t i = range.begin; i < range.end; ++i) {
      holder[i] = access == Access::read ? holder[i] | bit(side) : bit(side);
    }
  }
};

/// The state's runs are merged, start at 0, end with the host's, and begin inside the size.
void expect_normalized(const ResidencyState& state, const std::string& where) {
  const detail::RunList& runs = state.runs();
  ASSERT_NE(runs.size(), 1U) << where;
  if (runs.empty()) return;
  ASSERT_EQ(runs[0].begin, 0U) << where;
  for (std::size_t i = 1; i < runs.size(); ++i) {
    ASSERT_LT(runs[i - 1].begin, runs[i].begin) << where;
    ASSERT_NE(runs[i - 1].holder, runs[i].holder) << where;
  }
  ASSERT_EQ(runs.back().holder, detail::Holder::host) << where;
  ASSERT_LE(runs.back().begin, state.size()) << where;
}

void expect_same(const ResidencyState& state, const ByteModel& model, const std::string& where) {
  ASSERT_EQ(state.size(), model.holder.size()) << where;
  expect_normalized(state, where);
  for (const Side side : {Side::host, Side::device}) {
    std::vector<bool> held_bytes(model.holder.size(), false);
    state.for_each_held(side, state.size(), [&](ByteRange range) {
      for (std::size_t i = range.begin; i < range.end; ++i) held_bytes[i] = true;
    });
    for (std::size_t i = 0; i < model.holder.size(); ++i) {
      ASSERT_EQ(held_bytes[i], (model.holder[i] & ByteModel::bit(side)) != 0)
          << where << " byte " << i << " " << to_string(side);
    }
  }
  const auto all = [&](auto predicate) {
    return std::all_of(model.holder.begin(), model.holder.end(), predicate);
  };
  EXPECT_EQ(state.host_whole(), all([](unsigned h) { return (h & 1U) != 0; })) << where;
  EXPECT_EQ(state.device_whole(), all([](unsigned h) { return (h & 2U) != 0; })) << where;
  EXPECT_EQ(state.host_exclusive(), all([](unsigned h) { return h == 1U; })) << where;
  EXPECT_EQ(state.device_exclusive(), all([](unsigned h) { return h == 2U; })) << where;
  std::size_t prefix = 0;
  while (prefix < model.holder.size() && model.holder[prefix] == 2U) ++prefix;
  EXPECT_EQ(state.host_stale_prefix(), prefix) << where;
  std::size_t extent = model.holder.size();
  while (extent > 0 && model.holder[extent - 1] == 1U) --extent;
  EXPECT_EQ(state.device_extent(), extent) << where;
}

TEST(ResidencyState, RangeAcquiresMatchAByteLevelModel) {
  // Random walks of range acquires, resizes and eviction marks over arrays of up to 12 bytes,
  // each step checked byte by byte against the reference, and each plan against its stale parts.
  std::uint64_t seed = 0x9e3779b97f4a7c15ULL;
  const auto next = [&](std::size_t bound) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return static_cast<std::size_t>(seed % bound);
  };
  std::size_t steps = 0;
  for (int walk = 0; walk < 4000; ++walk) {
    const std::size_t n = next(9);
    ResidencyState state =
        next(2) == 0 ? ResidencyState::host_only(n) : ResidencyState::device_only(n);
    ByteModel model{std::vector<unsigned>(n, state.valid(Side::host) ? 1U : 2U)};
    if (n == 0) model.holder.clear();
    std::string where = "start " + std::to_string(n);
    for (int step = 0; step < 40; ++step, ++steps) {
      const std::size_t size = state.size();
      const std::size_t kind = next(10);
      if (kind < 7 && size > 0) {
        const Side side = next(2) == 0 ? Side::host : Side::device;
        const auto access = static_cast<Access>(next(3));
        const std::size_t begin = next(size);
        const ByteRange range{begin, begin + 1 + next(size - begin)};
        const Transition t = state.acquire(side, access, false, range);
        const std::vector<PlannedCopy> expected =
            access == Access::discard ? std::vector<PlannedCopy>{} : model.stale(side, range);
        // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict) about a chain of operator+.
        where.append(" ").append(to_string(side)).append(":").append(to_string(access));
        where.append("[").append(std::to_string(range.begin)).append(",");
        where.append(std::to_string(range.end)).append(")");
        ASSERT_EQ(std::vector<PlannedCopy>(t.plan.copies().begin(), t.plan.copies().end()),
                  expected)
            << where;
        model.acquire(side, access, range);
        state = t.next;
      } else if (kind < 8) {
        const std::size_t new_size = next(12);
        where += " resize " + std::to_string(new_size);
        state = state.resized(new_size);
        model.holder.resize(new_size, 1U);
      } else if (kind < 9) {
        where += " evict";
        const CopyPlan plan = state.host_whole_plan();
        ASSERT_EQ(std::vector<PlannedCopy>(plan.copies().begin(), plan.copies().end()),
                  model.stale(Side::host, {0, size}))
            << where;
        state.mark_host_whole();
        state.mark_device_dropped();
        for (unsigned& holder : model.holder) holder = 1U;
      } else {
        where += " read_out";
        const std::size_t bytes = next(size + 1);
        const CopyPlan plan = state.read_out(bytes);
        ASSERT_EQ(std::vector<PlannedCopy>(plan.copies().begin(), plan.copies().end()),
                  model.stale(Side::host, {0, bytes}))
            << where;
      }
      expect_same(state, model, where);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  EXPECT_EQ(steps, 160'000U);
}

TEST(ResidencyState, RangeAroundFindsTheRunsAroundAByte) {
  // Device-written, then the host read [4, 8) and wrote [10, 12).
  ResidencyState state = ResidencyState::device_only(16);
  state = state.acquire(Side::host, Access::read, false, {4, 8}).next;
  state = state.acquire(Side::host, Access::read_write, false, {10, 12}).next;
  const auto host = [](detail::Holder holder) { return detail::holds(holder, Side::host); };
  const auto host_only = [](detail::Holder holder) { return holder == detail::Holder::host; };
  EXPECT_EQ(state.range_around(5, host), (ByteRange{4, 8}));
  EXPECT_EQ(state.range_around(11, host), (ByteRange{10, 12}));
  EXPECT_TRUE(state.range_around(9, host).empty());
  EXPECT_EQ(state.range_around(10, host_only), (ByteRange{10, 12}));
  EXPECT_TRUE(state.range_around(5, host_only).empty());
  EXPECT_TRUE(state.holds_range(Side::host, {4, 8}));
  EXPECT_FALSE(state.holds_range(Side::host, {4, 9}));
  EXPECT_EQ(state.host_stale_prefix(), 4U);
  EXPECT_EQ(state.device_extent(), 16U);
  // A fully stale host is fetched in one copy however the device got there.
  EXPECT_EQ(ResidencyState::device_only(16).acquire(Side::host, Access::read, false).plan
                .copies().size(),
            1U);
}

// Several devices: places are the host and each device.
constexpr detail::Place device0(Side::device, 0);
constexpr detail::Place device1(Side::device, 1);
constexpr std::uint32_t reach0 = 1U << 0;  // device 1 reaches device 0

static_assert(ResidencyState::device_only(64, 0).acquire(device1, Access::read, false, reach0)
                  .plan.copies()[0] == PlannedCopy{Side::device, ByteRange{0, 64}, 1, 0});

TEST(ResidencyState, AReadOnAnotherDeviceIsAPeerCopyWhenItReachesTheHolder) {
  const Transition peer =
      ResidencyState::device_only(64, 0).acquire(device1, Access::read, false, reach0);
  ASSERT_EQ(peer.plan.copies().size(), 1U);
  EXPECT_EQ(peer.plan.copies()[0], (PlannedCopy{Side::device, {0, 64}, 1, 0}));
  EXPECT_TRUE(peer.next.valid(device0));
  EXPECT_TRUE(peer.next.valid(device1));
  EXPECT_FALSE(peer.next.valid(Side::host));
  // The host holding the bytes too does not change the source: a peer copy comes first.
  const ResidencyState both = ResidencyState::device_only(64, 0)
                                  .acquire(Side::host, Access::read, false)
                                  .next;
  EXPECT_EQ(both.acquire(device1, Access::read, false, reach0).plan.copies()[0].peer, 0);
  // Without reach, from the host when it holds the bytes.
  EXPECT_EQ(both.acquire(device1, Access::read, false, 0).plan.copies()[0],
            (PlannedCopy{Side::device, {0, 64}, 1}));
}

TEST(ResidencyState, WithoutReachAReadGoesDownToTheHostAndUp) {
  const Transition staged =
      ResidencyState::device_only(64, 0).acquire(device1, Access::read, false, 0);
  ASSERT_EQ(staged.plan.copies().size(), 2U);
  EXPECT_EQ(staged.plan.copies()[0], (PlannedCopy{Side::host, {0, 64}, 0}));
  EXPECT_EQ(staged.plan.copies()[1], (PlannedCopy{Side::device, {0, 64}, 1}));
  EXPECT_TRUE(staged.next.valid(Side::host));
  EXPECT_TRUE(staged.next.valid(device0));
  EXPECT_TRUE(staged.next.valid(device1));
  // A writer keeps only its own copy.
  const Transition write =
      ResidencyState::device_only(64, 0).acquire(device1, Access::read_write, false, 0);
  EXPECT_TRUE(write.next.valid(device1));
  EXPECT_FALSE(write.next.valid(device0));
  EXPECT_FALSE(write.next.valid(Side::host));
  EXPECT_TRUE(write.next.device_exclusive(1));
}

TEST(ResidencyState, AdjacentRunsFromOneSourceAreOneCopyAndEachDeviceIsItsOwnSource) {
  // [0, 32) device 0 only, [32, 64) device 0 and the host, [64, 96) device 1 only.
  ResidencyState state = ResidencyState::device_only(96, 0);
  state = state.acquire(Side::host, Access::read, false, {32, 64}).next;
  state = state.acquire(device1, Access::discard, false, {64, 96}).next;
  const Transition to_device1 = state.acquire(device1, Access::read, false, reach0);
  ASSERT_EQ(to_device1.plan.copies().size(), 1U);
  EXPECT_EQ(to_device1.plan.copies()[0], (PlannedCopy{Side::device, {0, 64}, 1, 0}));
  // The host reads [0, 32) from device 0 and [64, 96) from device 1.
  const Transition to_host = state.acquire(Side::host, Access::read, false);
  ASSERT_EQ(to_host.plan.copies().size(), 2U);
  EXPECT_EQ(to_host.plan.copies()[0], (PlannedCopy{Side::host, {0, 32}, 0}));
  EXPECT_EQ(to_host.plan.copies()[1], (PlannedCopy{Side::host, {64, 96}, 1}));
  EXPECT_EQ(state.devices_holding(), 3U);
  EXPECT_EQ(state.device_extent(0), 64U);
  EXPECT_EQ(state.device_extent(1), 96U);
}

TEST(ResidencyState, DroppingADeviceCopyKeepsWhatOnlyItHeld) {
  // [0, 32) device 1 only, [32, 64) devices 0 and 1.
  ResidencyState state = ResidencyState::device_only(64, 0);
  state = state.acquire(device1, Access::read, false, reach0).next;
  state = state.acquire(device1, Access::read_write, false, {0, 32}, reach0).next;
  const CopyPlan keep = state.dropped_plan(1);
  ASSERT_EQ(keep.copies().size(), 1U);
  EXPECT_EQ(keep.copies()[0], (PlannedCopy{Side::host, {0, 32}, 1}));
  EXPECT_TRUE(state.dropped_plan(0).copies_nothing());
  state.mark_device_dropped(1);
  EXPECT_TRUE(state.holds_range(Side::host, {0, 32}));
  EXPECT_TRUE(state.holds_range(device0, {32, 64}));
  EXPECT_FALSE(state.holds_range(Side::host, {32, 64}));
  EXPECT_EQ(state.devices_holding(), 1U);
}

}  // namespace
}  // namespace smartarray::test
