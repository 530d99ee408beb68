// The pure residency state machine (core/detail/residency_state.hpp), checked exhaustively
// against the model that the vector and property tests share (support/residency_model.hpp): every
// sequence of up to five operations, from every small starting state, must leave the same valid
// ranges and plan exactly the copies the model counts. Needs no backend: it runs the same on both.
#include "support/residency_model.hpp"

#include <smartarray/core/detail/residency_state.hpp>

#include <gtest/gtest.h>

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
      if (state.device_valid_end() == 0) return false;
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
    ASSERT_EQ(next.host_valid_begin(), expected.host_begin) << where();
    ASSERT_EQ(next.device_valid_end(), expected.device_end) << where();
    ASSERT_EQ(planned, expected.expected) << where();
    // Together the two sides always hold every byte.
    ASSERT_LE(next.host_valid_begin(), next.device_valid_end()) << where();
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
  EXPECT_EQ(appended.stale(Side::host), (ByteRange{0, 100}));
  EXPECT_EQ(appended.stale(Side::device), (ByteRange{100, 150}));

  const Transition read = appended.acquire(Side::device, Access::read, false);
  ASSERT_EQ(read.plan.copies().size(), 1U);
  EXPECT_EQ(read.plan.copies()[0], (PlannedCopy{Side::device, {100, 150}}));
  EXPECT_EQ(read.plan.ordering(), Ordering::after_writer);
  EXPECT_EQ(read.next.host_valid_begin(), 100U);  // a reader leaves the host as it was
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
    EXPECT_EQ(resized.host_valid_begin(), state.host_valid_begin());
    EXPECT_EQ(resized.device_valid_end(), state.device_valid_end());
  }
  EXPECT_NE(state.resized(63).host_valid_begin(), state.host_valid_begin());
}

}  // namespace
}  // namespace smartarray::test
