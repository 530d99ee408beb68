// The harness of the differential test of SmartArray<T> against std::vector<T>
// (test_vector_differential.cu): two arrays, each with its models (the values, and the residency:
// the host copy valid on a suffix [host_begin, n), the device copy on a prefix [0, device_end));
// the random choices of one sequence; the residency model of each kind of access; and the checks
// after each step against the contents, the size, the validity and the minimal transfers. The
// operations are the test's (Sequence::operate).
#pragma once

#include "support/device_ops.cuh"
#include "support/input_iterator.hpp"
#include "support/residency_model.hpp"
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <array>
#include <cstdint>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace smartarray::test::differential {

// Unsigned: the device's x * 2 + 1 wraps exactly as the model's does.
using T = std::uint32_t;

using InputIterator = test::InputIterator<T>;
using ConstIterator = SmartArray<T>::const_iterator;

inline constexpr std::size_t steps_per_sequence = 32;

/// One array under test with its models: the values, the residency and this step's transfers.
struct Slot : Residency {
  explicit Slot(const char* slot_name) : name(slot_name) {}
  const char* name = "";
  SmartArray<T> array{};
  std::vector<T> model{};
  TransferStats before{};  // the counters when the step began
};

/// One random sequence of steps on two arrays: each step makes one operation (`operate`) and
/// checks both arrays against their models.
class Sequence {
 public:
  Sequence(std::uint64_t seed, std::size_t sequence, const std::array<Stream, 2>& streams)
      : seed_(seed), sequence_(sequence), rng_(seed * 1'000'003 + sequence), streams_(streams) {}
  virtual ~Sequence() = default;
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;

  /// Runs one sequence; returns an empty string, or what went wrong and the operations so far.
  std::string run() {
    for (Slot* slot : {&slots_[0], &slots_[1]}) start(*slot);
    for (std::size_t step = 0; step < steps_per_sequence; ++step) {
      for (Slot& slot : slots_) {
        slot.expected = {};
        slot.before = slot.array.transfer_stats();
      }
      const bool on_a = pick(4) != 0;
      Slot& x = on_a ? slots_[0] : slots_[1];
      Slot& y = on_a ? slots_[1] : slots_[0];
      operate(x, y);
      for (Slot& slot : slots_) check(slot);
      if (!failure_.empty()) break;
    }
    if (failure_.empty()) return {};
    std::ostringstream out;
    out << failure_ << "\n  seed " << seed_ << ", sequence " << sequence_
        << " (SMARTARRAY_DIFF_SEED=" << seed_ << " SMARTARRAY_DIFF_FIRST=" << sequence_
        << " SMARTARRAY_DIFF_SEQUENCES=1); operations:\n";
    for (const std::string& line : log_) out << "    " << line << "\n";
    return out.str();
  }

 protected:
  // --- random choices ---------------------------------------------------------------------------

  std::size_t pick(std::size_t bound) {  // in [0, bound)
    return std::uniform_int_distribution<std::size_t>(0, bound - 1)(rng_);
  }
  std::size_t pick_between(std::size_t low, std::size_t high) {  // in [low, high]
    return std::uniform_int_distribution<std::size_t>(low, high)(rng_);
  }
  T value() { return std::uniform_int_distribution<T>(1, 0xFFFFFFFFU)(rng_); }
  std::vector<T> values(std::size_t count) {
    std::vector<T> out(count);
    for (T& v : out) v = value();
    return out;
  }
  StreamRef stream() {
    const std::size_t which = pick(3);
    return which == 0 ? StreamRef{} : streams_[which - 1].ref();
  }

  void start(Slot& slot) {
    slot.model = values(pick(4) == 0 ? pick_between(100, 400) : pick(40));
    slot.array = SmartArray<T>(slot.model);
    slot.host_begin = slot.device_end = slot.device_capacity = 0;
    if (pick(2) == 0) slot.array.reserve(slot.model.size() + pick(20));
  }

  void note(const Slot& x, const std::string& what) {
    log_.push_back(std::string(x.name) + what + "   [n " + std::to_string(x.model.size()) + "]");
  }
  void fail(const Slot& slot, const std::string& what) {
    if (failure_.empty()) failure_ = std::string(slot.name) + ": " + what;
  }

  // --- the residency model ----------------------------------------------------------------------

  /// A host read: a stale prefix comes back in one copy.
  static void read_host(Slot& s) { read_separate_host<T>(s); }
  /// True when one tile holds the whole array: element access then moves what the whole-array
  /// residency model says. On a larger array it moves only its tiles, which test_range_property
  /// models; element accesses here then come after a bulk access that makes the host copy whole.
  static bool one_tile(const Slot& s) {
    return s.model.size() * sizeof(T) <= s.array.get_allocator().options().tile.bytes();
  }
  /// A host write (read_write): as a read, then the device copy is stale.
  static void write_host(Slot& s) {
    read_host(s);
    s.device_end = 0;
  }
  /// A device acquire of the whole array.
  static void acquire_device(Slot& s, Access access) {
    const std::size_t n = s.model.size();
    if (n > 0) acquire_separate_device<T>(s, n, s.array.capacity(), access);
  }
  /// The model of a truncation to `m` elements: each side keeps what it held.
  static void truncate(Slot& s, std::size_t m) {
    s.model.resize(m);
    truncate_residency(s, m);
  }
  /// The model of an insert of `inserted` at `index` (after the position was acquired).
  static void insert_model(Slot& s, std::size_t index, const std::vector<T>& inserted) {
    if (index < s.model.size() && !inserted.empty()) {
      read_host(s);  // the host copy is made whole once, and the device copy becomes stale
      s.device_end = 0;
    }
    s.model.insert(s.model.begin() + static_cast<std::ptrdiff_t>(index), inserted.begin(),
                   inserted.end());
  }
  /// The model of an erase of [first, last).
  static void erase_model(Slot& s, std::size_t first, std::size_t last) {
    if (first == last) return;
    if (last == s.model.size()) {
      truncate(s, first);
      return;
    }
    read_host(s);
    s.device_end = 0;
    s.model.erase(s.model.begin() + static_cast<std::ptrdiff_t>(first),
                  s.model.begin() + static_cast<std::ptrdiff_t>(last));
  }

  // --- checks -----------------------------------------------------------------------------------

  /// An iterator returned by insert or erase points at `index` and holds the model's value there.
  void check_iterator(Slot& s, ConstIterator it, std::size_t index) {
    if (index < s.model.size() && *it != s.model[index]) {
      fail(s, "the returned iterator's value differs from the model's at " + std::to_string(index));
    }
    // Where the host copy is whole, its address can be taken without a transfer.
    if (s.host_begin == 0 && std::to_address(it) != std::as_const(s.array).data() + index) {
      fail(s, "the returned iterator is not at index " + std::to_string(index));
    }
  }

  void check(Slot& s) {
    const std::size_t n = s.model.size();
    const TransferStats got = s.array.transfer_stats() - s.before;
    const TransferStats& want = s.expected;
    if (got.h2d_count != want.h2d_count || got.h2d_bytes != want.h2d_bytes ||
        got.d2h_count != want.d2h_count || got.d2h_bytes != want.d2h_bytes ||
        got.d2d_count != want.d2d_count || got.d2d_bytes != want.d2d_bytes) {
      fail(s, "transfers " + got.to_string() + ", the contract allows " + want.to_string());
    }
    if (s.array.size() != n || s.array.empty() != (n == 0) || s.array.capacity() < n) {
      fail(s, "size " + std::to_string(s.array.size()) + ", capacity " +
                  std::to_string(s.array.capacity()) + ", model size " + std::to_string(n));
    }
    if (s.array.is_valid(Side::host) != (s.host_begin == 0) ||
        s.array.is_valid(Side::device) != (s.device_end == n)) {
      fail(s, "validity host " + std::to_string(s.array.is_valid(Side::host)) + " device " +
                  std::to_string(s.array.is_valid(Side::device)) + ", model host from " +
                  std::to_string(s.host_begin) + ", device to " + std::to_string(s.device_end));
    }
    // A copy takes each side's valid part and leaves the array's residency alone.
    const SmartArray<T> probe(s.array);
    if (host_copy(probe) != s.model) fail(s, "contents differ from the model");
  }

 private:
  /// One step's operation on x (some take y too), with the models made to match.
  virtual void operate(Slot& x, Slot& y) = 0;

  std::uint64_t seed_;
  std::size_t sequence_;
  std::mt19937_64 rng_;
  const std::array<Stream, 2>& streams_;
  std::array<Slot, 2> slots_{Slot("a"), Slot("b")};
  std::vector<std::string> log_;
  std::string failure_;
};

}  // namespace smartarray::test::differential
