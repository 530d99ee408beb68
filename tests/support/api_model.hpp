// An interpreter of the whole SmartArray API against a model, driven by bytes. The libFuzzer target
// (tests/fuzz/fuzz_smart_array.cpp) feeds it the fuzzer's input and the property test
// (tests/test_property.cu) pseudo-random bytes. Each step decodes one operation, applies it to
// some of three arrays and to their models, and checks every array afterwards.
//
// An array's model is a std::vector with the capacity that the growth policy gives, the memory
// mode, and the residency: the host copy is valid on a suffix [host_begin, n) and the device copy
// on a prefix [0, device_end) (docs/design.md). The exact transfers of each operation follow from
// it (docs/vector.md), and each array's own counters must equal them: a copy more than the
// contract allows is a divergence, and so is a missing one. Mapped and managed arrays keep one
// buffer: they never copy, managed ones prefetch the whole array instead, and a reallocation makes
// the data host-current.
//
// Operations: the std::vector interface, host access with each intent, device views with each
// intent on one of three streams, kernels through for_each_index, transform, map, fill, copy,
// reduce and launch's binding, the Numba names, copies and moves between the arrays, new arrays in
// every memory mode, stream replacement and synchronization, the stale-host guard, injected
// allocation and copy failures, and misuse: calls with a destroyed or bogus stream, a device that
// does not exist or a range past the end, which must throw and change nothing. After an injected
// failure the arrays must hold what they held before the call (the call is then repeated with the
// fault cleared). At the end of a sequence a kernel reads every valid device copy, and the default
// pools must have as many bytes in use as before it.
//
// Header-only and plain C++ apart from SMARTARRAY_HOST_DEVICE functors: clang builds it into the
// fuzzer, nvcc into the property test, where the same adapters launch real kernels.
#pragma once

#include <smartarray/smartarray.hpp>
#include <smartarray/diagnostics/testing.hpp>

#include "input_iterator.hpp"
#include "residency_model.hpp"

#include <algorithm>
#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <list>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace smartarray::test {

/// The element type: unsigned, so that the device's arithmetic wraps exactly as the model's does.
using Element = std::uint32_t;
/// What insert and erase return.
using ConstIterator = SmartArray<Element>::const_iterator;

/// Written over outputs before a kernel writes them; never produced as an input value.
inline constexpr Element poison_element = 0xA5A5A5A5U;

/// The input of the interpreter. Reads past the end give zeros, so that every input decodes.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> bytes) noexcept : bytes_(bytes) {}

  [[nodiscard]] bool exhausted() const noexcept { return at_ >= bytes_.size(); }
  std::uint8_t byte() noexcept { return at_ < bytes_.size() ? bytes_[at_++] : std::uint8_t{0}; }
  /// A number in [0, bound), for bounds up to 65536: one byte up to 256, two above.
  std::size_t pick(std::size_t bound) noexcept {
    std::size_t raw = byte();
    if (bound > 256) raw = raw << 8U | byte();
    return raw % bound;
  }
  bool flag() noexcept { return (byte() & 1U) != 0; }
  /// An input value from two bytes, spread over all 32 bits: never zero (zeros hide unwritten
  /// outputs) and never the poison.
  Element value() noexcept { return usable(mix(seed())); }
  /// `count` input values from one two-byte seed, to spare the fuzzer's bytes.
  std::vector<Element> values(std::size_t count) noexcept {
    Element state = seed();
    std::vector<Element> out(count);
    for (Element& v : out) v = usable(mix(state += 0x9E3779B9U));
    return out;
  }

 private:
  Element seed() noexcept {
    const Element high = byte();
    return high << 8U | byte();
  }
  /// The splitmix32 finalizer: distinct seeds give distinct values.
  static Element mix(Element z) noexcept {
    z = (z ^ (z >> 16U)) * 0x85EBCA6BU;
    z = (z ^ (z >> 13U)) * 0xC2B2AE35U;
    return z ^ (z >> 16U);
  }
  static Element usable(Element raw) noexcept {
    return raw == 0 || raw == poison_element ? Element{1} : raw;
  }

  std::span<const std::uint8_t> bytes_;
  std::size_t at_ = 0;
};

/// A difference between the library and the model; the message ends with the operations so far.
class Divergence : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// `v[i] = v[i] * 2 + 1`.
struct ScaleOp {
  DeviceView<Element> v;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { v[i] = v[i] * 2U + 1U; }
};
/// `to[i] = from[i]`.
struct CopyOp {
  DeviceView<const Element> from;
  DeviceView<Element> to;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { to[i] = from[i]; }
};
/// `v[i] = value`.
struct FillOp {
  DeviceView<Element> v;
  Element value;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { v[i] = value; }
};
/// `y[i] = x[i] * k`, plus the old `y[i]` unless `y` was discarded.
struct AxpyOp {
  DeviceView<const Element> x;
  DeviceView<Element> y;
  Element k;
  bool discard;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const {
    y[i] = discard ? x[i] * k : x[i] * k + y[i];
  }
};
/// `x * a + b`, for transform and map.
struct Affine {
  Element a;
  Element b;
  SMARTARRAY_HOST_DEVICE Element operator()(Element x) const { return x * a + b; }
};
/// `x * k + y`, for transform and map with two arrays and a scalar.
struct AddScaled {
  SMARTARRAY_HOST_DEVICE Element operator()(Element x, Element y, Element k) const {
    return x * k + y;
  }
};
/// The reductions.
struct Sum {
  SMARTARRAY_HOST_DEVICE Element operator()(Element a, Element b) const { return a + b; }
};
struct Max {
  SMARTARRAY_HOST_DEVICE Element operator()(Element a, Element b) const { return a < b ? b : a; }
};

/// The parameter types that `bind_kernel_args` reads the intents from: x read, y written.
inline void axpy_signature(DeviceView<const Element> x, DeviceView<Element> y, Element k) {
  (void)x, (void)y, (void)k;
}

/// What the front end adds.
struct ApiModelOptions {
  /// Launches a raw `__global__` kernel through `launch` on `stream`: `y[i] = x[i] * k` with
  /// `out(y)` when `discard`, else `y[i] = x[i] * k + y[i]`. Only a file compiled by nvcc can
  /// define one, and only the cuda backend can run it; when empty, launch.hpp is driven through
  /// `bind_kernel_args` and for_each_index.
  std::function<void(const SmartArray<Element>& x, SmartArray<Element>& y, bool discard, Element k,
                     StreamRef stream)>
      launch_axpy;
};

/// Totals of one or more sequences.
struct ApiModelTotals {
  std::uint64_t operations = 0;  ///< decoded operations
  std::uint64_t injected = 0;    ///< armed failures that fired
  std::uint64_t recovered = 0;   ///< of those, the ones that reached the caller and were retried
  std::uint64_t misuses = 0;     ///< calls with a bad argument, each rejected with no change

  ApiModelTotals& operator+=(const ApiModelTotals& other) noexcept {
    operations += other.operations;
    injected += other.injected;
    recovered += other.recovered;
    misuses += other.misuses;
    return *this;
  }
};

class ApiModel {
 public:
  /// The largest size the operations grow an array to (elements): four pages, so that the
  /// stale-host guard, which protects whole pages only, has pages to protect.
  static constexpr std::size_t max_elements = 4096;

  /// Three empty explicit arrays and two streams besides the default one. Mapped and managed
  /// arrays are made where the device supports them (the host backend emulates both).
  explicit ApiModel(ApiModelOptions options) : options_(std::move(options)) {
    modes_ = {MemoryMode::explicit_copy, MemoryMode::pageable};
    if (device_properties().can_map_host_memory) modes_.push_back(MemoryMode::mapped);
    if (device_properties().managed_memory) modes_.push_back(MemoryMode::managed);
    prefetches_ = device_properties().concurrent_managed_access;
  }

  /// Decodes and runs one operation, then checks every array.
  /// @throws Divergence naming the difference and listing the operations so far.
  void step(ByteReader& in) {
    begin_step();
    ++totals_.operations;
    const bool armed = armed_left_ > 0;
    guarded([&] { run(static_cast<Op>(in.pick(static_cast<std::size_t>(Op::count))), in); });
    if (armed && --armed_steps_ == 0) armed_left_ = 0;  // not reached: given up
    end_step();
  }

  /// Checks the device copy of every array whose device side is valid, which the steps' checks
  /// read only when the host side is stale: a kernel copies it out, with no transfer.
  void check() {
    begin_step();
    guarded([&] {
      for (Slot& s : slots_) {
        const std::size_t n = s.model.size();
        if (n == 0 || s.device_end < n) continue;
        note(s, " device copy checked at the end of the sequence");
        SmartArray<Element> out(n, poison_element);
        for_each_index(
            n, CopyOp{std::as_const(s.array).device_view(), out.device_view(Access::discard)});
        expect_equal(s, contents(out), s.model, "the device copy");
      }
    });
    end_step();
  }

  [[nodiscard]] const ApiModelTotals& totals() const noexcept { return totals_; }

 private:
  /// One array under test and its model.
  struct Slot : Residency {
    explicit Slot(char slot_name) : name(slot_name) {}
    char name = '?';
    SmartArray<Element> array{};
    std::vector<Element> model{};
    MemoryMode mode = MemoryMode::explicit_copy;
    std::size_t capacity = 0;  // host capacity in elements
    TransferStats before{};    // the counters when the step began
  };

  enum class Op {
    push_back,
    pop_back,
    resize,
    clear,
    reserve,
    shrink_to_fit,
    insert,
    erase,
    erase_value,
    assign,
    copy_assign,
    move_assign,
    construct,
    copy_construct,
    swap,
    const_reads,
    mutable_access,
    host_view,
    compare,
    copy_to_host,
    numba_host,
    numba_gpu,
    change_mode,
    length_errors,
    device_read,
    device_read_write,
    device_discard,
    transform,
    map,
    fill,
    copy,
    reduce,
    bind_kernel,
    streams,
    stale_host_guard,
    inject,
    misuse,
    count
  };

  // --- the residency model -----------------------------------------------------------------------

  [[nodiscard]] static bool single_buffer(MemoryMode mode) noexcept {
    return mode == MemoryMode::mapped || mode == MemoryMode::managed;
  }
  [[nodiscard]] bool prefetches(const Slot& s) const noexcept {
    return s.mode == MemoryMode::managed && prefetches_;
  }
  static void add_prefetch(Slot& s) {
    s.expected.prefetch_count += 1;
    s.expected.prefetch_bytes += s.model.size() * sizeof(Element);
  }

  /// The host capacity after a growth to `needed` elements: geometric, at least 256 bytes.
  static std::size_t grown(std::size_t needed, std::size_t capacity) {
    return std::max({needed, 2 * capacity, 256 / sizeof(Element)});
  }
  /// A new host buffer of `capacity` elements. One buffer moves on the host after the device
  /// work, which leaves it host-current.
  static void reallocate(Slot& s, std::size_t capacity) {
    s.capacity = capacity;
    if (single_buffer(s.mode)) s.host_begin = s.device_end = 0;
  }
  /// An append (push_back, resize growth, insert at cend) to `n` elements, before the model grows.
  static void grow(Slot& s, std::size_t n) {
    if (n > s.capacity) reallocate(s, grown(n, s.capacity));
  }
  /// A host read: a stale prefix comes back in one copy (one prefetch of everything: managed).
  void read_host(Slot& s) {
    if (!single_buffer(s.mode)) {
      read_separate_host<Element>(s);
      return;
    }
    if (s.host_begin > 0 && prefetches(s)) add_prefetch(s);
    s.host_begin = 0;
  }
  /// A host write (read_write): a read, then the device copy is stale.
  void write_host(Slot& s) {
    read_host(s);
    s.device_end = 0;
  }
  /// A host acquire through mutable (`writes`) or const iterators.
  void access_host(Slot& s, bool writes) {
    if (writes) {
      write_host(s);
    } else {
      read_host(s);
    }
  }
  /// A device acquire of the whole array.
  void acquire_device(Slot& s, Access access) {
    const std::size_t n = s.model.size();
    if (n == 0) return;
    if (!single_buffer(s.mode)) {
      acquire_separate_device<Element>(s, n, s.capacity, access);
      return;
    }
    if (access != Access::discard && s.device_end < n && prefetches(s)) add_prefetch(s);
    note_device_acquired(s, n, access);
  }
  /// A truncation to `m` elements: each side keeps what it held.
  static void truncate(Slot& s, std::size_t m) {
    s.model.resize(m);
    truncate_residency(s, m);
  }
  /// An insert of `inserted` at `index`.
  void insert_model(Slot& s, std::size_t index, const std::vector<Element>& inserted) {
    const std::size_t n = s.model.size();
    if (inserted.empty()) return;
    if (index == n) {
      grow(s, n + inserted.size());
    } else {
      // The host copy is made whole once and the device copy becomes stale; a growth moves each
      // element once, straight to its new place.
      read_host(s);
      s.device_end = 0;
      if (n + inserted.size() > s.capacity) s.capacity = grown(n + inserted.size(), s.capacity);
    }
    s.model.insert(s.model.begin() + static_cast<std::ptrdiff_t>(index), inserted.begin(),
                   inserted.end());
  }
  /// An erase of [first, last).
  void erase_model(Slot& s, std::size_t first, std::size_t last) {
    if (first == last) return;
    if (last == s.model.size()) {
      truncate(s, first);
      return;
    }
    write_host(s);
    s.model.erase(s.model.begin() + static_cast<std::ptrdiff_t>(first),
                  s.model.begin() + static_cast<std::ptrdiff_t>(last));
  }
  /// `assign` and friends: `values` overwrite everything on the host; growth allocates exactly.
  static void assign_model(Slot& s, std::vector<Element> values) {
    s.capacity = std::max(s.capacity, values.size());
    s.model = std::move(values);
    overwrite_host(s);
  }
  /// A copy of `from` (copy construction): each side copies what it holds; one buffer is copied
  /// on the host. Returns the device elements copied.
  static std::size_t copy_model(Slot& to, const Slot& from) {
    const std::size_t n = from.model.size();
    to.model = from.model;
    to.mode = from.mode;
    to.capacity = n;
    if (single_buffer(from.mode)) {
      to.host_begin = to.device_end = to.device_capacity = 0;
      return 0;
    }
    to.host_begin = from.host_begin;
    to.device_end = from.device_end;
    to.device_capacity = from.device_end > 0 ? n : 0;
    return from.device_end;
  }
  /// A new host-valid array of `values` in `mode` with an exact capacity.
  static void fresh_model(Slot& s, std::vector<Element> values, MemoryMode mode) {
    s.capacity = values.size();
    s.model = std::move(values);
    s.mode = mode;
    s.host_begin = s.device_end = s.device_capacity = 0;
  }
  /// A new array valid on the device only (map's result, device_array): exact capacities.
  static void device_only_model(Slot& s, std::vector<Element> values, MemoryMode mode) {
    const std::size_t n = values.size();
    s.model = std::move(values);
    s.mode = mode;
    s.capacity = n;
    s.host_begin = s.device_end = n;
    s.device_capacity = single_buffer(mode) ? 0 : n;
  }
  /// The state of a moved-from array: empty, no buffers, its mode kept.
  static void moved_from(Slot& s) {
    s.model.clear();
    s.capacity = s.host_begin = s.device_end = s.device_capacity = 0;
  }
  /// Exchanges everything but the names and this step's counters.
  static void swap_models(Slot& x, Slot& y) {
    std::swap(x.model, y.model);
    std::swap(x.mode, y.mode);
    std::swap(x.capacity, y.capacity);
    std::swap(x.host_begin, y.host_begin);
    std::swap(x.device_end, y.device_end);
    std::swap(x.device_capacity, y.device_capacity);
  }

  // --- steps, logging and checks -----------------------------------------------------------------

  void begin_step() {
    for (Slot& s : slots_) {
      s.expected = {};
      s.before = s.array.transfer_stats();
    }
  }
  void end_step() {
    for (Slot& s : slots_) check_slot(s);
  }

  void note(const Slot& x, const std::string& what) {
    log_.push_back(std::to_string(log_.size()) + ": " + x.name + what + "   [n " +
                   std::to_string(x.model.size()) + "]");
  }
  /// A line about no array in particular.
  void note(const std::string& what) { log_.push_back(std::to_string(log_.size()) + ": " + what); }
  [[noreturn]] void fail(const std::string& what) const {
    std::string message = what + "\noperations:\n";
    for (const std::string& line : log_) message += "  " + line + "\n";
    throw Divergence(message);
  }
  [[noreturn]] void diverge(const Slot& s, const std::string& what) const {
    fail(std::string(1, s.name) + ": " + what);
  }
  /// Runs `body`; an exception that no operation expects is a divergence too.
  template <typename Body>
  void guarded(Body&& body) {
    try {
      body();
    } catch (const Divergence&) {
      throw;
    } catch (const std::exception& error) {
      fail(std::string("an unexpected exception: ") + error.what());
    }
  }

  /// The transfer fields only: allocations and waits are not part of the contract.
  static TransferStats transfers(TransferStats stats) {
    stats.allocation_count = stats.allocation_bytes = stats.wait_count = 0;
    return stats;
  }

  /// Size, capacity, mode, validity and this step's transfers, then the contents.
  void check_slot(Slot& s) {
    const std::size_t n = s.model.size();
    const TransferStats made = transfers(s.array.transfer_stats() - s.before);
    if (made != s.expected) {
      diverge(s, "transfers " + made.to_string() + "; the model's minimum is " +
                     s.expected.to_string());
    }
    if (s.array.size() != n || s.array.empty() != (n == 0) || s.array.capacity() != s.capacity) {
      diverge(s, "size " + std::to_string(s.array.size()) + ", capacity " +
                     std::to_string(s.array.capacity()) + "; the model's size " +
                     std::to_string(n) + ", capacity " + std::to_string(s.capacity));
    }
    if (s.array.memory_mode() != s.mode) {
      diverge(s, std::string("memory mode ") + to_string(s.array.memory_mode()) + "; the model's " +
                     to_string(s.mode));
    }
    if (s.array.is_valid(Side::host) != (s.host_begin == 0) ||
        s.array.is_valid(Side::device) != (s.device_end == n)) {
      diverge(s, "validity host " + std::to_string(s.array.is_valid(Side::host)) + ", device " +
                     std::to_string(s.array.is_valid(Side::device)) + "; the model's host from " +
                     std::to_string(s.host_begin) + ", device to " + std::to_string(s.device_end));
    }
    check_contents(s, "after the step");
  }

  /// The contents, read without changing the array's residency or counters: through a const
  /// view when the host copy is valid, else through a copy (which copies each valid side).
  static std::vector<Element> contents(const SmartArray<Element>& array) {
    if (array.is_valid(Side::host)) {
      const std::span<const Element> view = array.host_view();
      return {view.begin(), view.end()};
    }
    const SmartArray<Element> probe(array);
    const std::span<const Element> view = probe.host_view();
    return {view.begin(), view.end()};
  }
  void check_contents(const Slot& s, const char* when) const {
    const std::vector<Element> got = contents(s.array);
    if (got == s.model) return;
    std::size_t first = 0;
    while (first < got.size() && first < s.model.size() && got[first] == s.model[first]) ++first;
    diverge(s, std::string("contents differ ") + when + ": size " + std::to_string(got.size()) +
                   " (model " + std::to_string(s.model.size()) + "), first difference at " +
                   std::to_string(first));
  }
  void expect_equal(const Slot& s, const std::vector<Element>& got,
                    const std::vector<Element>& want, const char* what) const {
    if (got != want) diverge(s, std::string(what) + " differs from the model");
  }

  /// Runs one API call. `run` calls the library and may be run twice; `commit` updates the models
  /// once it succeeded. While a failure is armed, it is injected into this call only (the checks
  /// between calls must not reach it). An exception must then be the injected one and leave every
  /// array as it was (except `output`, which the call overwrites), and the call is repeated with
  /// the fault cleared. A call that ends before the failure leaves the rest armed for the next.
  template <typename Run, typename Commit>
  void apply(Run&& run, Commit&& commit, const Slot* output = nullptr) {
    if (armed_left_ == 0) {
      run();
      commit();
      return;
    }
    const std::uint64_t before = testing::operation_count(armed_kind_);
    testing::inject_failure(armed_kind_, armed_left_);
    try {
      run();
    } catch (const Divergence&) {
      testing::clear_injected_failures();
      throw;
    } catch (const std::exception& error) {
      testing::clear_injected_failures();
      armed_left_ = 0;
      ++totals_.injected;
      ++totals_.recovered;
      const std::string message = error.what();
      if (message.find("injected") == std::string::npos) {
        fail("an exception other than the injected failure: " + message);
      }
      for (const Slot& s : slots_) {
        if (&s != output) check_contents(s, "after an injected failure");
      }
      run();
      commit();
      return;
    }
    testing::clear_injected_failures();
    const std::uint64_t made = testing::operation_count(armed_kind_) - before;
    if (made >= armed_left_) {
      ++totals_.injected;  // reached, and absorbed (a pinned allocation fell back to pageable)
      armed_left_ = 0;
    } else {
      armed_left_ -= made;
    }
    commit();
  }

  /// Runs `run`, which must throw `E` and change nothing.
  template <typename E, typename Run>
  void expect_throw(const Slot& s, const char* what, Run&& run) {
    apply(
        [&] {
          try {
            run();
          } catch (const E&) {
            return;
          }
          diverge(s, std::string(what) + " did not throw");
        },
        [] {});
  }

  // --- decoding helpers --------------------------------------------------------------------------

  Slot& pick_slot(ByteReader& in) { return slots_[in.pick(slots_.size())]; }
  /// The default stream or one of the two owned ones; `name` says which, for the log.
  StreamRef pick_stream(ByteReader& in, std::string& name) {
    const std::size_t which = in.pick(3);
    name = which == 0 ? "default" : "s" + std::to_string(which);
    return which == 0 ? StreamRef{} : streams_[which - 1].ref();
  }
  MemoryMode pick_mode(ByteReader& in) { return modes_[in.pick(modes_.size())]; }
  /// A new array's size: mostly small, sometimes past the first growth steps or a few pages.
  static std::size_t pick_size(ByteReader& in) {
    const std::size_t kind = in.pick(8);
    if (kind == 0) return 2048 + in.pick(2048);
    return kind < 3 ? 100 + in.pick(400) : in.pick(40);
  }
  /// The options of a new array in `mode`; a managed one may be advised read-mostly.
  static ArrayOptions pick_options(ByteReader& in, MemoryMode mode) {
    return {.mode = mode, .read_mostly = mode == MemoryMode::managed && in.flag()};
  }
  /// How many elements `s` may still grow by.
  static std::size_t room(const Slot& s) {
    return max_elements - std::min(max_elements, s.model.size());
  }
  static std::string str(std::size_t v) { return std::to_string(v); }

  /// An iterator returned by insert or erase points at `index` and holds the model's value there.
  void check_iterator(const Slot& s, ConstIterator it, std::size_t index) const {
    if (index < s.model.size() && *it != s.model[index]) {
      diverge(s, "the returned iterator's value differs from the model's at " + str(index));
    }
    // Where the host copy is whole, its address can be taken without a transfer.
    if (s.host_begin == 0 && std::to_address(it) != std::as_const(s.array).data() + index) {
      diverge(s, "the returned iterator is not at index " + str(index));
    }
  }

  // --- the operations ----------------------------------------------------------------------------

  void run(Op op, ByteReader& in) {
    Slot& x = pick_slot(in);
    switch (op) {
      case Op::push_back: return push_back(in, x);
      case Op::pop_back: return pop_back(x);
      case Op::resize: return resize(in, x);
      case Op::clear: return clear(x);
      case Op::reserve: return reserve(in, x);
      case Op::shrink_to_fit: return shrink_to_fit(x);
      case Op::insert: return insert(in, x);
      case Op::erase: return erase(in, x);
      case Op::erase_value: return erase_value(in, x);
      case Op::assign: return assign(in, x);
      case Op::copy_assign: return copy_assign(x, pick_slot(in));
      case Op::move_assign: return move_assign(x, pick_slot(in));
      case Op::construct: return construct(in, x);
      case Op::copy_construct: return copy_construct(x, pick_slot(in));
      case Op::swap: return swap(in, x, pick_slot(in));
      case Op::const_reads: return const_reads(in, x);
      case Op::mutable_access: return mutable_access(in, x);
      case Op::host_view: return host_view(in, x);
      case Op::compare: return compare(x, pick_slot(in));
      case Op::copy_to_host: return copy_to_host(in, x);
      case Op::numba_host: return numba_host(in, x);
      case Op::numba_gpu: return numba_gpu(in, x);
      case Op::change_mode: return change_mode(in, x);
      case Op::length_errors: return length_errors(in, x);
      case Op::device_read: return device_read(in, x);
      case Op::device_read_write: return device_read_write(in, x);
      case Op::device_discard: return device_discard(in, x);
      case Op::transform: return transform(in, x, pick_slot(in));
      case Op::map: return map(in, x, pick_slot(in));
      case Op::fill: return fill(in, x);
      case Op::copy: return copy(in, x, pick_slot(in));
      case Op::reduce: return reduce(in, x);
      case Op::bind_kernel: return bind_kernel(in, x, pick_slot(in));
      case Op::streams: return streams(in);
      case Op::stale_host_guard: return toggle_stale_host_guard(in);
      case Op::inject: return inject(in);
      case Op::misuse: return misuse(in, x, pick_slot(in));
      case Op::count: break;
    }
  }

  void push_back(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    const std::size_t form = in.pick(4);
    if (room(x) == 0) return;
    if (form == 3 && n > 0) {  // an element of the array itself: copied before any growth
      const std::size_t at = in.pick(n);
      note(x, ".push_back(own [" + str(at) + "])");
      apply([&] { x.array.push_back(own(x, at)); },
            [&] {
              read_host(x);
              grow(x, n + 1);
              x.model.push_back(x.model[at]);
            });
      return;
    }
    const Element v = in.value();
    note(x, form == 0 ? ".push_back(v)" : form == 1 ? ".push_back(&&)" : ".emplace_back(v)");
    const Element* added = nullptr;
    apply(
        [&] {
          if (form == 0) {
            x.array.push_back(v);
          } else if (form == 1) {
            Element moved = v;
            x.array.push_back(std::move(moved));
          } else {
            added = &x.array.emplace_back(v);
          }
        },
        [&] {
          grow(x, n + 1);
          x.model.push_back(v);
          if (added != nullptr && *added != v) diverge(x, "emplace_back returned another value");
        });
  }

  void pop_back(Slot& x) {
    const std::size_t n = x.model.size();
    if (n == 0) return;
    note(x, ".pop_back()");
    apply([&] { x.array.pop_back(); }, [&] { truncate(x, n - 1); });
  }

  void resize(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    const std::size_t m = std::min(in.pick(n + 13), max_elements);
    const std::size_t form = in.pick(3);
    if (form == 0) {
      note(x, ".resize(" + str(m) + ")");
      apply([&] { x.array.resize(m); }, [&] { resize_model(x, m, Element{}); });
    } else if (form == 1 || n == 0) {
      const Element v = in.value();
      note(x, ".resize(" + str(m) + ", v)");
      apply([&] { x.array.resize(m, v); }, [&] { resize_model(x, m, v); });
    } else {
      const std::size_t at = in.pick(n);
      note(x, ".resize(" + str(m) + ", own [" + str(at) + "])");
      apply([&] { x.array.resize(m, own(x, at)); },
            [&] {
              read_host(x);
              resize_model(x, m, x.model[at]);
            });
    }
  }
  void resize_model(Slot& x, std::size_t m, Element v) {
    if (m <= x.model.size()) {
      truncate(x, m);
      return;
    }
    grow(x, m);
    x.model.resize(m, v);
  }

  void clear(Slot& x) {
    note(x, ".clear()");
    apply([&] { x.array.clear(); }, [&] { truncate(x, 0); });
  }

  void reserve(ByteReader& in, Slot& x) {
    const std::size_t m = std::min(in.pick(2 * x.model.size() + 17), 2 * max_elements);
    note(x, ".reserve(" + str(m) + ")");
    apply([&] { x.array.reserve(m); },
          [&] {
            if (m > x.capacity) reallocate(x, m);
          });
  }

  void shrink_to_fit(Slot& x) {
    note(x, ".shrink_to_fit()");
    apply([&] { x.array.shrink_to_fit(); },
          [&] {
            if (x.capacity != x.model.size()) reallocate(x, x.model.size());
          });
  }

  void insert(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    const std::size_t form = in.pick(12);
    const std::size_t k = in.pick(n + 1);
    const std::size_t limit = std::min<std::size_t>(room(x), 8);
    if (limit < 2 || (form == 11 && n == 0)) return;
    SmartArray<Element>& a = x.array;
    ConstIterator it{};
    std::size_t index = k;
    bool writes = false;  // the position came from begin() or end(): a host write
    std::vector<Element> inserted;
    std::list<Element> list;
    std::function<void()> call;
    switch (form) {
      case 0:
        inserted = {in.value()};
        note(x, ".insert(cbegin() + " + str(k) + ", v)");
        call = [&] { it = a.insert(a.cbegin() + k, inserted[0]); };
        break;
      case 1:
        inserted = {in.value()};
        writes = true;
        note(x, ".insert(begin() + " + str(k) + ", &&)");
        call = [&] {
          Element moved = inserted[0];
          it = a.insert(a.begin() + k, std::move(moved));
        };
        break;
      case 2:
        inserted = {in.value()};
        index = n;
        note(x, ".insert(cend(), v)");
        call = [&] { it = a.insert(a.cend(), inserted[0]); };
        break;
      case 3:
        inserted = {in.value()};
        index = n;
        writes = true;
        note(x, ".insert(end(), v)");
        call = [&] { it = a.insert(a.end(), inserted[0]); };
        break;
      case 4: {
        const std::size_t count = in.pick(limit + 1);
        const Element v = in.value();
        inserted.assign(count, v);
        note(x, ".insert(cbegin() + " + str(k) + ", " + str(count) + ", v)");
        call = [&, count, v] { it = a.insert(a.cbegin() + k, count, v); };
        break;
      }
      case 5:
        inserted = in.values(in.pick(limit + 1));
        note(x, ".insert(cbegin() + " + str(k) + ", vector of " + str(inserted.size()) + ")");
        call = [&] { it = a.insert(a.cbegin() + k, inserted.begin(), inserted.end()); };
        break;
      case 6:
        inserted = in.values(in.pick(limit + 1));
        list.assign(inserted.begin(), inserted.end());
        note(x, ".insert(cbegin() + " + str(k) + ", list of " + str(inserted.size()) + ")");
        call = [&] { it = a.insert(a.cbegin() + k, list.begin(), list.end()); };
        break;
      case 7:
        inserted = in.values(in.pick(limit + 1));
        note(x, ".insert(cbegin() + " + str(k) + ", input range of " + str(inserted.size()) + ")");
        call = [&] {
          it = a.insert(a.cbegin() + k, InputIterator<Element>(inserted.data()),
                        InputIterator<Element>(inserted.data() + inserted.size()));
        };
        break;
      case 8: {  // a range of the array itself
        const std::size_t first = in.pick(n + 1);
        const std::size_t last = std::min(first + in.pick(limit + 1), n);
        inserted.assign(x.model.begin() + static_cast<std::ptrdiff_t>(first),
                        x.model.begin() + static_cast<std::ptrdiff_t>(last));
        note(x, ".insert(cbegin() + " + str(k) + ", own [" + str(first) + ", " + str(last) + "))");
        call = [&, first, last] {
          it = a.insert(a.cbegin() + k, a.cbegin() + first, a.cbegin() + last);
        };
        break;
      }
      case 9:
        inserted = in.values(2);
        note(x, ".insert(cbegin() + " + str(k) + ", {v, w})");
        call = [&] { it = a.insert(a.cbegin() + k, {inserted[0], inserted[1]}); };
        break;
      case 10:
        inserted = {in.value()};
        note(x, ".emplace(cbegin() + " + str(k) + ", v)");
        call = [&] { it = a.emplace(a.cbegin() + k, inserted[0]); };
        break;
      default: {  // copies of an element of the array itself
        const std::size_t count = in.pick(limit + 1);
        const std::size_t at = in.pick(n);
        inserted.assign(count, x.model[at]);
        note(x, ".insert(cbegin() + " + str(k) + ", " + str(count) + ", own [" + str(at) + "])");
        call = [&, count, at] { it = a.insert(a.cbegin() + k, count, own(x, at)); };
        break;
      }
    }
    apply(call, [&] {
      access_host(x, writes);
      insert_model(x, index, inserted);
      check_iterator(x, it, index);
    });
  }

  void erase(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    const std::size_t form = in.pick(5);
    if (n == 0 && (form == 0 || form == 2)) return;
    SmartArray<Element>& a = x.array;
    ConstIterator it{};
    std::size_t first = 0;
    std::size_t last = 0;
    bool writes = false;
    std::function<void()> call;
    switch (form) {
      case 0:
        first = in.pick(n);
        last = first + 1;
        note(x, ".erase(cbegin() + " + str(first) + ")");
        call = [&] { it = a.erase(a.cbegin() + first); };
        break;
      case 1:
        first = in.pick(n + 1);
        last = std::min(n, first + in.pick(9));
        note(x, ".erase(cbegin() + " + str(first) + ", cbegin() + " + str(last) + ")");
        call = [&] { it = a.erase(a.cbegin() + first, a.cbegin() + last); };
        break;
      case 2:
        first = in.pick(n);
        last = first + 1;
        writes = true;
        note(x, ".erase(begin() + " + str(first) + ")");
        call = [&] { it = a.erase(a.begin() + first); };
        break;
      case 3:
        first = n - in.pick(std::min<std::size_t>(n, 5) + 1);
        last = n;
        note(x, ".erase(cend() - " + str(n - first) + ", cend())");
        call = [&] { it = a.erase(a.cend() - (n - first), a.cend()); };
        break;
      default:
        first = last = in.pick(n + 1);
        note(x, ".erase(cbegin() + " + str(first) + ", cbegin() + " + str(first) + ")");
        call = [&] { it = a.erase(a.cbegin() + first, a.cbegin() + first); };
        break;
    }
    apply(call, [&] {
      access_host(x, writes);
      erase_model(x, first, last);
      check_iterator(x, it, first);
    });
  }

  void erase_value(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    const bool by_value = in.flag();
    std::size_t removed = 0;
    if (by_value) {
      const Element victim = n > 0 && in.flag() ? x.model[in.pick(n)] : in.value();
      note(x, " erase(a, v)");
      apply([&] { removed = smartarray::erase(x.array, victim); },
            [&] {
              read_host(x);  // before the model loses elements: a prefetch moves the old size
              erase_value_model(x, removed, std::erase(x.model, victim));
            });
      return;
    }
    const auto divisor = static_cast<Element>(2 + in.pick(8));
    const auto predicate = [divisor](Element v) { return v % divisor == 0; };
    note(x, " erase_if(a, % " + str(divisor) + ")");
    apply([&] { removed = smartarray::erase_if(x.array, predicate); },
          [&] {
            read_host(x);
            erase_value_model(x, removed, std::erase_if(x.model, predicate));
          });
  }
  /// erase(a, v) and erase_if after their host read: the device copy is stale when something was
  /// removed.
  void erase_value_model(Slot& x, std::size_t removed, std::size_t expected) {
    if (removed != expected) diverge(x, "erase removed " + str(removed) + ", not " + str(expected));
    if (removed > 0) x.device_end = 0;
    truncate(x, x.model.size());
  }

  void assign(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    const std::size_t form = in.pick(8);
    const std::size_t m = std::min(in.pick(2 * n + 9), max_elements);
    switch (form) {
      case 0: {
        const Element v = in.value();
        note(x, ".assign(" + str(m) + ", v)");
        apply([&] { x.array.assign(m, v); }, [&] { assign_model(x, std::vector<Element>(m, v)); });
        return;
      }
      case 1: {
        const std::vector<Element> range = in.values(m);
        note(x, ".assign(vector of " + str(m) + ")");
        apply([&] { x.array.assign(range.begin(), range.end()); }, [&] { assign_model(x, range); });
        return;
      }
      case 2: {
        const std::vector<Element> range = in.values(m);
        const std::list<Element> list(range.begin(), range.end());
        note(x, ".assign(list of " + str(m) + ")");
        apply([&] { x.array.assign(list.begin(), list.end()); }, [&] { assign_model(x, range); });
        return;
      }
      case 3: {
        const std::vector<Element> range = in.values(m);
        note(x, ".assign(input range of " + str(m) + ")");
        apply(
            [&] {
              x.array.assign(InputIterator<Element>(range.data()),
                             InputIterator<Element>(range.data() + range.size()));
            },
            [&] { assign_model(x, range); });
        return;
      }
      case 4: {
        const Element v = in.value();
        note(x, " = {v, v + 1}");
        apply([&] { x.array = {v, v + 1U}; }, [&] { assign_model(x, {v, v + 1U}); });
        return;
      }
      case 5: {
        const Element v = in.value();
        note(x, ".assign({v})");
        apply([&] { x.array.assign({v}); }, [&] { assign_model(x, {v}); });
        return;
      }
      case 6: {  // a range of the array itself
        const std::size_t first = in.pick(n + 1);
        const std::size_t last = first + in.pick(n - first + 1);
        note(x, ".assign(own [" + str(first) + ", " + str(last) + "))");
        apply([&] { x.array.assign(x.array.cbegin() + first, x.array.cbegin() + last); },
              [&] {
                read_host(x);
                assign_model(
                    x, std::vector<Element>(x.model.begin() + static_cast<std::ptrdiff_t>(first),
                                            x.model.begin() + static_cast<std::ptrdiff_t>(last)));
              });
        return;
      }
      default: {  // copies of an element of the array itself
        if (n == 0) return;
        const std::size_t at = in.pick(n);
        note(x, ".assign(" + str(m) + ", own [" + str(at) + "])");
        apply([&] { x.array.assign(m, own(x, at)); },
              [&] {
                read_host(x);
                assign_model(x, std::vector<Element>(m, x.model[at]));
              });
        return;
      }
    }
  }

  void copy_assign(Slot& x, Slot& y) {
    if (&x == &y) {
      note(x, " = itself");
      const SmartArray<Element>& self = x.array;
      apply([&] { x.array = self; }, [] {});
      return;
    }
    note(x, std::string(" = ") + y.name + " (copy)");
    apply([&] { x.array = y.array; },
          [&] {
            // The copy of the device side counts on the assigned array.
            const std::size_t device = copy_model(x, y);
            if (device > 0) add_d2d<Element>(x, device);
          });
  }

  void move_assign(Slot& x, Slot& y) {
    note(x, std::string(" = std::move(") + y.name + ")");
    apply([&] { x.array = std::move(y.array); },
          [&] {
            if (&x == &y) return;
            x.model = y.model;
            x.mode = y.mode;
            x.capacity = y.capacity;
            x.host_begin = y.host_begin;
            x.device_end = y.device_end;
            x.device_capacity = y.device_capacity;
            moved_from(y);
          });
  }

  void copy_construct(Slot& x, Slot& y) {
    note(x, std::string(" = SmartArray(") + y.name + ") (copy construction, moved in)");
    apply(
        [&] {
          SmartArray<Element> copy(std::as_const(y.array));
          x.array = std::move(copy);
        },
        [&] { (void)copy_model(x, y); });  // the copy's transfers count on the temporary
  }

  /// A new array from one of the constructors or Numba's factories, moved into `x`.
  void construct(ByteReader& in, Slot& x) {
    const std::size_t form = in.pick(14);
    const MemoryMode mode = pick_mode(in);
    const ArrayOptions options = pick_options(in, mode);
    const std::string in_mode =
        std::string(", ") + to_string(mode) + (options.read_mostly ? ", read-mostly)" : ")");
    const std::size_t n = form == 4 ? 2 : form == 7 || form == 8 ? 0 : pick_size(in);
    switch (form) {
      case 0:
        note(x, " = SmartArray(" + str(n) + in_mode);
        apply([&] { x.array = SmartArray<Element>(n, options); },
              [&] { fresh_model(x, std::vector<Element>(n), mode); });
        return;
      case 1: {
        const Element v = in.value();
        note(x, " = SmartArray(" + str(n) + ", v" + in_mode);
        apply([&] { x.array = SmartArray<Element>(n, v, options); },
              [&] { fresh_model(x, std::vector<Element>(n, v), mode); });
        return;
      }
      case 2: {
        const std::vector<Element> values = in.values(n);
        const std::list<Element> list(values.begin(), values.end());
        note(x, " = SmartArray(list of " + str(n) + in_mode);
        apply([&] { x.array = SmartArray(list.begin(), list.end(), options); },
              [&] { fresh_model(x, values, mode); });
        return;
      }
      case 3: {
        const std::vector<Element> values = in.values(n);
        note(x, " = SmartArray(input range of " + str(n) + in_mode);
        apply(
            [&] {
              x.array = SmartArray<Element>(
                  InputIterator<Element>(values.data()),
                  InputIterator<Element>(values.data() + values.size()), options);
            },
            [&] {
              // Input ranges grow as push_back does.
              fresh_model(x, values, mode);
              x.capacity = 0;
              for (std::size_t size = 1; size <= n; ++size) {
                if (size > x.capacity) x.capacity = grown(size, x.capacity);
              }
            });
        return;
      }
      case 4: {
        const Element v = in.value();
        note(x, " = SmartArray({v, v + 1}" + in_mode);
        apply(
            [&] {
              x.array = SmartArray<Element>({v, v + 1U}, options);
            },
            [&] {
              fresh_model(x, {v, v + 1U}, mode);
            });
        return;
      }
      case 5: {
        const std::vector<Element> values = in.values(n);
        note(x, " = SmartArray(span of " + str(n) + in_mode);
        apply([&] { x.array = SmartArray<Element>(std::span<const Element>(values), options); },
              [&] { fresh_model(x, values, mode); });
        return;
      }
      case 6: {
        const std::vector<Element> values = in.values(n);
        note(x, " = SmartArray(vector of " + str(n) + in_mode);
        apply([&] { x.array = SmartArray<Element>(values, options); },
              [&] { fresh_model(x, values, mode); });
        return;
      }
      case 7:
        note(x, " = SmartArray(" + std::string(to_string(mode)) + ")");
        apply([&] { x.array = SmartArray<Element>(options); }, [&] { fresh_model(x, {}, mode); });
        return;
      case 8:
        note(x, " = SmartArray()");
        apply([&] { x.array = SmartArray<Element>(); },
              [&] { fresh_model(x, {}, MemoryMode::explicit_copy); });
        return;
      case 9:
        note(x, " = pinned_array(" + str(n) + ")");
        apply([&] { x.array = pinned_array<Element>(n); },
              [&] { fresh_model(x, std::vector<Element>(n), MemoryMode::explicit_copy); });
        return;
      case 10: {
        if (!device_properties().can_map_host_memory) return;
        const bool portable = in.flag();
        const bool write_combined = in.flag();
        note(x, " = mapped_array(" + str(n) + ", portable " + str(portable) + ", wc " +
                    str(write_combined) + ")");
        apply([&] { x.array = mapped_array<Element>(n, portable, write_combined); },
              [&] { fresh_model(x, std::vector<Element>(n), MemoryMode::mapped); });
        return;
      }
      case 11: {
        const std::vector<Element> values = in.values(n);
        std::string on;
        const StreamRef stream = pick_stream(in, on);
        note(x, " = to_device(vector of " + str(n) + ", " + on + in_mode);
        apply([&] { x.array = to_device(values, stream, options); },
              [&] {
                // Valid on both sides; the upload counts on the returned temporary.
                fresh_model(x, values, mode);
                x.device_end = n;
                x.device_capacity = single_buffer(mode) ? 0 : n;
              });
        return;
      }
      default: {
        // Numba's device_array, or device_array_like (the size and mode of another array):
        // uninitialized, so a fill on the device follows before anything reads it.
        const Slot* like = form == 12 ? nullptr : &pick_slot(in);
        const Element v = in.value();
        std::string on;
        const StreamRef stream = pick_stream(in, on);
        const std::size_t size = like != nullptr ? like->model.size() : n;
        const MemoryMode made = like != nullptr ? like->mode : mode;
        if (like != nullptr) {
          note(x, std::string(" = device_array_like(") + like->name + ", " + on + ")");
          apply([&] { x.array = device_array_like(like->array, stream); },
                [&] { device_only_model(x, std::vector<Element>(size, v), made); });
        } else {
          note(x, " = device_array(" + str(n) + ", " + on + in_mode);
          apply([&] { x.array = device_array<Element>(n, stream, options); },
                [&] { device_only_model(x, std::vector<Element>(n, v), mode); });
        }
        note(x, " fill(v) on " + on);
        apply([&] { smartarray::fill(x.array, v, stream); },
              [&] { acquire_device(x, Access::discard); });
        return;
      }
    }
  }

  void swap(ByteReader& in, Slot& x, Slot& y) {
    const std::size_t form = in.pick(3);
    note(x, std::string(" swap with ") + y.name +
                (form == 0   ? " (member)"
                 : form == 1 ? " (smartarray::swap)"
                             : " (std::swap)"));
    apply(
        [&] {
          if (form == 0) {
            x.array.swap(y.array);
          } else if (form == 1) {
            smartarray::swap(x.array, y.array);
          } else {
            std::swap(x.array, y.array);
          }
        },
        [&] {
          if (&x != &y) swap_models(x, y);
        });
  }

  /// True when one tile holds the whole array: element access then moves what the model's
  /// whole-array residency says (a host suffix, a device prefix). On a larger array it moves only
  /// its tiles, which test_range_property models; the element accesses here then come after a
  /// bulk access that makes the host copy whole, as the model assumes.
  static bool one_tile(const Slot& s) {
    return s.model.size() * sizeof(Element) <= s.array.get_allocator().options().tile.bytes();
  }

  /// Element `at` of `s`'s array, read as the model assumes (see one_tile()).
  static const Element& own(const Slot& s, std::size_t at) {
    if (!one_tile(s)) (void)std::as_const(s.array).data();
    return std::as_const(s.array)[at];
  }

  void const_reads(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    const std::size_t at = n > 0 ? in.pick(n) : 0;
    note(x, " const reads at " + str(at));
    const SmartArray<Element>& c = x.array;
    apply(
        [&] {
          if (!one_tile(x)) (void)c.data();
          if (n > 0 &&
              (c[at] != x.model[at] || c.at(at) != x.model[at] || c.front() != x.model.front() ||
               c.back() != x.model.back() || c.data()[at] != x.model[at])) {
            diverge(x, "a const element read differs from the model");
          }
          if (!std::equal(c.crbegin(), c.crend(), x.model.rbegin(), x.model.rend()) ||
              !std::equal(c.begin(), c.end(), x.model.begin(), x.model.end()) ||
              !std::equal(c.cbegin(), c.cend(), x.model.begin(), x.model.end())) {
            diverge(x, "const iteration differs from the model");
          }
          try {
            (void)c.at(n);
            diverge(x, "at(size()) did not throw");
          } catch (const std::out_of_range&) {
          }
        },
        [&] { read_host(x); });
  }

  void mutable_access(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    const std::size_t form = in.pick(6);
    if (n == 0) return;
    const std::size_t at = in.pick(n);
    const Element v = in.value();
    note(x, " mutable access (form " + str(form) + ") at " + str(at));
    apply(
        [&] {
          if (form <= 2 && !one_tile(x)) (void)x.array.data();
          if (form == 0) {
            x.array[at] = v;
          } else if (form == 1) {
            x.array.at(at) = v;
          } else if (form == 2) {
            x.array.front() = v;
            x.array.back() += 1U;
          } else if (form == 3) {
            for (Element& e : x.array) e += 3U;
          } else if (form == 4) {
            std::sort(x.array.begin(), x.array.end());
          } else {
            *x.array.rbegin() = v;
            x.array.data()[0] ^= 5U;
          }
        },
        [&] {
          write_host(x);
          if (form == 0 || form == 1) {
            x.model[at] = v;
          } else if (form == 2) {
            x.model.front() = v;
            x.model.back() += 1U;
          } else if (form == 3) {
            for (Element& e : x.model) e += 3U;
          } else if (form == 4) {
            std::sort(x.model.begin(), x.model.end());
          } else {
            x.model.back() = v;
            x.model[0] ^= 5U;
          }
        });
  }

  void host_view(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    const std::size_t form = in.pick(4);
    std::optional<StreamRef> stream;
    std::string on;
    if (in.flag()) {
      stream = pick_stream(in, on);
      on = " on " + on;
    }
    std::vector<Element> seen;
    switch (form) {
      case 0:
        note(x, " const host_view()" + on);
        apply(
            [&] {
              const std::span<const Element> view = std::as_const(x.array).host_view(stream);
              seen.assign(view.begin(), view.end());
            },
            [&] {
              read_host(x);
              expect_equal(x, seen, x.model, "a const host view");
            });
        return;
      case 1:
        note(x, ".host_view(read)" + on);
        apply(
            [&] {
              const std::span<Element> view = x.array.host_view(Access::read, stream);
              seen.assign(view.begin(), view.end());
            },
            [&] {
              read_host(x);
              expect_equal(x, seen, x.model, "a read host view");
            });
        return;
      case 2: {
        const std::size_t at = n > 0 ? in.pick(n) : 0;
        const Element v = in.value();
        note(x, ".host_view(read_write)" + on + " and a write at " + str(at));
        apply(
            [&] {
              const std::span<Element> view = x.array.host_view(Access::read_write, stream);
              seen.assign(view.begin(), view.end());
              if (n > 0) view[at] = v;
            },
            [&] {
              write_host(x);
              expect_equal(x, seen, x.model, "a read_write host view");
              if (n > 0) x.model[at] = v;
            });
        return;
      }
      default: {
        const std::vector<Element> fresh = in.values(n);
        note(x, ".host_view(discard)" + on + " and an overwrite");
        apply(
            [&] {
              const std::span<Element> view = x.array.host_view(Access::discard, stream);
              std::copy(fresh.begin(), fresh.end(), view.begin());
            },
            [&] {
              if (n > 0) overwrite_host(x);
              x.model = fresh;
            });
        return;
      }
    }
  }

  void compare(Slot& x, Slot& y) {
    note(x, std::string(" comparisons with ") + y.name);
    bool equal = false;
    bool less = false;
    bool self = false;
    std::strong_ordering order = std::strong_ordering::equal;
    apply(
        [&] {
          equal = x.array == y.array;
          order = x.array <=> y.array;
          less = x.array < y.array;
          self = x.array == x.array;
        },
        [&] {
          read_host(x);
          read_host(y);
          if (equal != (x.model == y.model) || order != (x.model <=> y.model) ||
              less != (x.model < y.model) || !self) {
            diverge(x, "a comparison differs from the model's");
          }
        });
  }

  void copy_to_host(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    const std::size_t form = in.pick(6);
    std::string on;
    const StreamRef stream = pick_stream(in, on);
    if (form == 5) {
      if (n == 0) return;
      note(x, ".copy_to(a destination of " + str(n - 1) + ")");
      expect_throw<std::length_error>(x, "copy_to into a short destination", [&] {
        std::vector<Element> short_dest(n - 1);
        x.array.copy_to(std::span<Element>(short_dest), stream);
      });
      return;
    }
    note(x, " copy to host (form " + str(form) + ") on " + on);
    std::vector<Element> dest;
    apply(
        [&] {
          dest.assign(n, poison_element);
          const std::span<Element> to(dest);
          if (form == 0) {
            x.array.copy_to(to, stream);
          } else if (form == 1) {
            x.array.copy_to(to, stream, false);
            synchronize(stream);
          } else if (form == 2) {
            dest = smartarray::copy_to_host(x.array, stream);
          } else if (form == 3) {
            smartarray::copy_to_host(x.array, to, stream);
          } else {
            const AutoSynchronize done(stream);
            copy_to_host_async(x.array, to, stream);
          }
        },
        [&] {
          // The stale host prefix comes straight from the device; the residency stays.
          if (!single_buffer(x.mode) && x.host_begin > 0) add_d2h<Element>(x, x.host_begin);
          expect_equal(x, dest, x.model, "the copy to the host");
        });
  }

  void numba_host(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    if (x.host_begin > 0 && in.flag()) {
      note(x, ".host_changed() on a stale host copy");
      expect_throw<logic_error>(x, "host_changed() on a stale host copy",
                                [&] { x.array.host_changed(); });
      return;
    }
    const std::size_t at = n > 0 ? in.pick(n) : 0;
    const Element v = in.value();
    note(x, ".host(), a write at " + str(at) + ", host_changed()");
    apply(
        [&] {
          const std::span<Element> host = x.array.host();
          if (n > 0) host[at] = v;
          x.array.host_changed();
        },
        [&] {
          read_host(x);
          x.device_end = 0;
          if (n > 0) x.model[at] = v;
        });
  }

  void numba_gpu(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    std::string on;
    const StreamRef stream = pick_stream(in, on);
    if (x.device_end < n && in.flag()) {
      note(x, ".gpu_changed() on a stale device copy");
      expect_throw<logic_error>(x, "gpu_changed() on a stale device copy",
                                [&] { x.array.gpu_changed(stream); });
      return;
    }
    note(x, ".gpu(" + on + "), a kernel writes through it, gpu_changed()");
    apply(
        [&] {
          const DeviceView<Element> view = x.array.gpu(stream);
          for_each_index(view.size(), ScaleOp{view}, stream);
          x.array.gpu_changed(stream);
        },
        [&] {
          acquire_device(x, Access::read);
          x.host_begin = n;
          for (Element& e : x.model) e = e * 2U + 1U;
        });
  }

  /// A new array of another memory mode made from the old contents, moved into `x`.
  void change_mode(ByteReader& in, Slot& x) {
    const std::size_t form = in.pick(3);
    const MemoryMode mode = pick_mode(in);
    const ArrayOptions options = pick_options(in, mode);
    note(x, std::string(" becomes ") + to_string(mode) +
                (options.read_mostly ? " read-mostly" : "") +
                (form == 0   ? " (from cbegin, cend)"
                 : form == 1 ? " (from a const host view)"
                             : " (from copy_to_host)"));
    if (form == 2) {
      // Two calls: a retry of the second must not repeat the first one's copy.
      std::vector<Element> copied;
      apply([&] { copied = smartarray::copy_to_host(x.array); },
            [&] {
              // Straight from the device: the residency stays as it was.
              if (!single_buffer(x.mode) && x.host_begin > 0) add_d2h<Element>(x, x.host_begin);
            });
      apply([&] { x.array = SmartArray<Element>(copied, options); },
            [&] { fresh_model(x, x.model, mode); });
      return;
    }
    apply(
        [&] {
          if (form == 0) {
            x.array = SmartArray<Element>(x.array.cbegin(), x.array.cend(), options);
          } else {
            x.array = SmartArray<Element>(std::as_const(x.array).host_view(), options);
          }
        },
        [&] {
          read_host(x);
          fresh_model(x, x.model, mode);
        });
  }

  void length_errors(ByteReader& in, Slot& x) {
    const std::size_t form = in.pick(6);
    const std::size_t too_many = SmartArray<Element>::max_size() + 1;
    note(x, " a size past max_size() (form " + str(form) + ")");
    if (form == 5) {
      // cend() reads the host first; the insert then throws before changing anything.
      const std::size_t count = SmartArray<Element>::max_size() - x.model.size() + 1;
      expect_throw<std::length_error>(x, "insert past max_size()",
                                      [&] { x.array.insert(x.array.cend(), count, Element{1}); });
      read_host(x);
      return;
    }
    expect_throw<std::length_error>(x, "a size past max_size()", [&] {
      if (form == 0) {
        x.array.reserve(too_many);
      } else if (form == 1) {
        x.array.resize(too_many);
      } else if (form == 2) {
        x.array.resize(too_many, Element{1});
      } else if (form == 3) {
        x.array.assign(too_many, Element{1});
      } else {
        const SmartArray<Element> huge(too_many);
      }
    });
  }

  void device_read(ByteReader& in, Slot& x) {
    const std::size_t n = x.model.size();
    const bool through_const = in.flag();
    std::string on;
    const StreamRef stream = pick_stream(in, on);
    note(x, std::string(through_const ? " const" : "") + ".device_view(read) on " + on +
                ", a kernel copies it out");
    std::vector<Element> seen;
    apply(
        [&] {
          SmartArray<Element> out(n, poison_element);
          const DeviceView<const Element> from = through_const
                                                     ? std::as_const(x.array).device_view(stream)
                                                     : x.array.device_view(Access::read, stream);
          for_each_index(n, CopyOp{from, out.device_view(Access::discard, stream)}, stream);
          seen = contents(out);
        },
        [&] {
          acquire_device(x, Access::read);
          expect_equal(x, seen, x.model, "what a kernel read");
        });
  }

  void device_read_write(ByteReader& in, Slot& x) {
    std::string on;
    const StreamRef stream = pick_stream(in, on);
    note(x, ".device_view(read_write) on " + on + ", a kernel scales it");
    apply(
        [&] {
          const DeviceView<Element> view = x.array.device_view(Access::read_write, stream);
          for_each_index(view.size(), ScaleOp{view}, stream);
        },
        [&] {
          acquire_device(x, Access::read_write);
          for (Element& e : x.model) e = e * 2U + 1U;
        });
  }

  void device_discard(ByteReader& in, Slot& x) {
    std::string on;
    const StreamRef stream = pick_stream(in, on);
    const Element v = in.value();
    note(x, ".device_view(discard) on " + on + ", a kernel fills it");
    apply(
        [&] {
          const DeviceView<Element> view = x.array.device_view(Access::discard, stream);
          for_each_index(view.size(), FillOp{view, v}, stream);
        },
        [&] {
          acquire_device(x, Access::discard);
          std::fill(x.model.begin(), x.model.end(), v);
        });
  }

  void transform(ByteReader& in, Slot& x, Slot& y) {
    const std::size_t form = in.pick(5);
    const Affine f{in.value(), in.value()};
    std::string on;
    const StreamRef stream = pick_stream(in, on);
    const auto affine = [&f](const std::vector<Element>& from) {
      std::vector<Element> to(from.size());
      std::transform(from.begin(), from.end(), to.begin(), f);
      return to;
    };
    if (form == 0) {
      note(x, " transform(a, f, a) in place on " + on);
      apply([&] { smartarray::transform(x.array, f, x.array, stream); },
            [&] {
              acquire_device(x, Access::read);
              acquire_device(x, Access::read_write);
              x.model = affine(x.model);
            });
      return;
    }
    const bool same_size = x.model.size() == y.model.size();
    if (form == 1) {  // a view operand, acquired by the caller
      note(y, std::string(" transform(out(") + y.name + "), f, " + x.name + ".device_view()) on " +
                  on);
      std::optional<DeviceView<const Element>> view;
      apply([&] { view = std::as_const(x.array).device_view(stream); },
            [&] { acquire_device(x, Access::read); });
      if (!same_size) {
        expect_throw<logic_error>(y, "transform of a view of another size",
                                  [&] { smartarray::transform(out(y.array), f, *view, stream); });
        return;
      }
      // The view is no operand that transform knows: the output is discarded even if it is x.
      apply([&] { smartarray::transform(out(y.array), f, *view, stream); },
            [&] {
              acquire_device(y, Access::discard);
              y.model = affine(x.model);
            });
      return;
    }
    const Element k = form == 4 ? in.value() : Element{1};
    note(y, std::string(" transform (form ") + str(form) + ") of " + x.name + " on " + on);
    if (!same_size) {  // sizes are checked before anything is acquired
      expect_throw<logic_error>(y, "transform of arrays of different sizes",
                                [&] { smartarray::transform(out(y.array), f, x.array, stream); });
      return;
    }
    apply(
        [&] {
          if (form == 2) {
            smartarray::transform(out(y.array), f, x.array, stream);
          } else if (form == 3) {
            smartarray::transform(y.array, f, x.array);  // the default stream
          } else {
            smartarray::transform(y.array, AddScaled{}, x.array, y.array, k, stream);
          }
        },
        [&] {
          // Operands first, then the output: read_write when it is also an operand.
          acquire_device(x, Access::read);
          if (form == 4) {
            acquire_device(y, Access::read);
            acquire_device(y, Access::read_write);
            for (std::size_t i = 0; i < y.model.size(); ++i) {
              y.model[i] = AddScaled{}(x.model[i], y.model[i], k);
            }
          } else {
            acquire_device(y, &x == &y ? Access::read_write : Access::discard);
            y.model = affine(x.model);
          }
        });
  }

  void map(ByteReader& in, Slot& x, Slot& y) {
    const std::size_t form = in.pick(3);
    const Affine f{in.value(), in.value()};
    std::string on;
    const StreamRef stream = pick_stream(in, on);
    const std::size_t n = x.model.size();
    std::vector<Element> mapped(n);
    std::transform(x.model.begin(), x.model.end(), mapped.begin(), f);
    if (form == 0) {
      note(x, " map(f, a) on " + on + ", read back");
      std::vector<Element> seen;
      apply([&] { seen = contents(smartarray::map(f, x.array, stream)); },
            [&] {
              acquire_device(x, Access::read);
              expect_equal(x, seen, mapped, "map's result");
            });
      return;
    }
    const Element k = form == 2 ? in.value() : Element{1};
    note(y, std::string(" = map (form ") + str(form) + ") of " + x.name + " on " + on);
    if (form == 2) {
      if (y.model.size() != n) {
        expect_throw<logic_error>(y, "map over arrays of different sizes", [&] {
          (void)smartarray::map(AddScaled{}, x.array, y.array, k, stream);
        });
        return;
      }
      for (std::size_t i = 0; i < n; ++i) mapped[i] = AddScaled{}(x.model[i], y.model[i], k);
    }
    apply(
        [&] {
          if (form == 1) {
            y.array = smartarray::map(f, x.array, stream);
          } else {
            y.array = smartarray::map(AddScaled{}, x.array, y.array, k, stream);
          }
        },
        [&] {
          acquire_device(x, Access::read);
          if (form == 2) acquire_device(y, Access::read);
          // The result is a new explicit array, valid on the device only.
          device_only_model(y, mapped, MemoryMode::explicit_copy);
        });
  }

  void fill(ByteReader& in, Slot& x) {
    const Element v = in.value();
    std::string on;
    const StreamRef stream = pick_stream(in, on);
    note(x, " fill(a, v) on " + on);
    apply([&] { smartarray::fill(x.array, v, stream); },
          [&] {
            acquire_device(x, Access::discard);
            std::fill(x.model.begin(), x.model.end(), v);
          });
  }

  void copy(ByteReader& in, Slot& x, Slot& y) {
    std::string on;
    const StreamRef stream = pick_stream(in, on);
    note(y, std::string(" copy(") + y.name + ", " + x.name + ") on " + on);
    if (x.model.size() != y.model.size()) {
      expect_throw<logic_error>(y, "copy between arrays of different sizes",
                                [&] { smartarray::copy(y.array, std::as_const(x.array), stream); });
      return;
    }
    // A failed device-to-device copy leaves the destination partly written: the call promises
    // nothing about it until it succeeds.
    apply([&] { smartarray::copy(y.array, std::as_const(x.array), stream); },
          [&] {
            if (&x == &y || x.model.empty()) return;
            acquire_device(x, Access::read);
            acquire_device(y, Access::discard);
            y.model = x.model;
            add_d2d<Element>(y, y.model.size());  // counted on the destination
          },
          &y);
  }

  void reduce(ByteReader& in, Slot& x) {
    const std::size_t form = in.pick(3);
    const Element init = in.value();
    std::string on;
    const StreamRef stream = pick_stream(in, on);
    note(x, (form == 0   ? " reduce(a, init, sum) on "
             : form == 1 ? " reduce(a, init, max) on "
                         : " reduce_async(a, init, sum) on ") +
                on);
    Element result = 0;
    apply(
        [&] {
          if (form == 0) {
            result = smartarray::reduce(x.array, init, Sum{}, stream);
          } else if (form == 1) {
            result = smartarray::reduce(x.array, init, Max{}, stream);
          } else {
            const SmartArray<Element> pending = reduce_async(x.array, init, Sum{}, stream);
            result = pending.host_view(stream)[0];
          }
        },
        [&] {
          acquire_device(x, Access::read);
          Element expected = init;
          for (const Element e : x.model) expected = form == 1 ? Max{}(expected, e) : expected + e;
          if (result != expected) diverge(x, "reduce returned another value");
        });
  }

  /// launch.hpp: intents from the kernel's parameter types, through a raw kernel when the front
  /// end has one, else through bind_kernel_args and for_each_index. `y` is `x` when the sizes
  /// differ.
  void bind_kernel(ByteReader& in, Slot& x, Slot& picked) {
    Slot& y = x.model.size() == picked.model.size() ? picked : x;
    const bool discard = in.flag();
    const bool raw = options_.launch_axpy && in.flag();
    const Element k = in.value();
    std::string on;
    const StreamRef stream = pick_stream(in, on);
    note(y, std::string(raw ? " launch" : " bind_kernel_args") + "(axpy, " + x.name + ", " +
                (discard ? "out(" + std::string(1, y.name) + ")" : std::string(1, y.name)) +
                ") on " + on);
    apply(
        [&] {
          if (raw) {
            options_.launch_axpy(x.array, y.array, discard, k, stream);
            return;
          }
          const auto [xv, yv, scale] =
              discard
                  ? bind_kernel_args(axpy_signature, stream, std::as_const(x.array), out(y.array),
                                     k)
                  : bind_kernel_args(axpy_signature, stream, std::as_const(x.array), y.array, k);
          for_each_index(yv.size(), AxpyOp{xv, yv, scale, discard}, stream);
        },
        [&] {
          // Arrays in parameter order; out() arrays after all the others.
          acquire_device(x, Access::read);
          acquire_device(y, discard ? Access::discard : Access::read_write);
          for (std::size_t i = 0; i < y.model.size(); ++i) {
            y.model[i] = discard ? x.model[i] * k : x.model[i] * k + y.model[i];
          }
        });
  }

  void streams(ByteReader& in) {
    const std::size_t form = in.pick(6);
    const std::size_t which = in.pick(streams_.size());
    const std::string owned = "s" + str(which + 1);
    std::string on;
    const StreamRef stream = pick_stream(in, on);
    switch (form) {
      case 0:
        // Arrays whose pending work names the old stream drop it; its handle may come back.
        note("(streams) " + owned + " replaced by a new stream");
        streams_[which] = Stream();
        return;
      case 1:
        note("(streams) " + owned + ".synchronize()");
        streams_[which].synchronize();
        return;
      case 2:
        note("(streams) synchronize(" + on + ")");
        synchronize(stream);
        return;
      case 3:
        note("(streams) synchronize_device()");
        synchronize_device();
        return;
      case 4: {
        note("(streams) AutoSynchronize(" + on + ")");
        const AutoSynchronize scope(stream);
        return;
      }
      default:
        note("(streams) " + owned + ".query()");
        (void)streams_[which].query();
        return;
    }
  }

  /// The stale-host guard (debug.hpp) protects the stale pages of host copies that go stale from
  /// now on; the model's checks read host copies only where they are valid.
  void toggle_stale_host_guard(ByteReader& in) {
    const bool on = in.flag();
    note(std::string("(debug) set_stale_host_guard(") + (on ? "true" : "false") + ")");
    set_stale_host_guard(on);
  }

  /// A call with one bad argument: a stream destroyed just before (nothing made since can have
  /// taken its handle), a handle that is no stream (host backend), a device that does not exist,
  /// or a range past the end. It must throw and change nothing: no transfer, no validity, no value.
  void misuse(ByteReader& in, Slot& x, Slot& y) {
    ++totals_.misuses;
    const std::size_t form = in.pick(9);
    const Element v = in.value();
    if (form == 8) {
      const int offset = static_cast<int>(in.pick(100));
      const int bad = in.flag() ? device_count() + offset : -1 - offset;
      note(x, " (misuse) is_valid and device_transfer_stats of device " + std::to_string(bad));
      expect_throw<logic_error>(x, "is_valid of a device that does not exist",
                                [&] { (void)x.array.is_valid(Device{bad}); });
      expect_throw<logic_error>(x, "device_transfer_stats of a device that does not exist",
                                [&] { (void)device_transfer_stats(bad); });
      return;
    }
    if (form == 7) {
      const std::size_t n = x.model.size();
      const std::size_t first = in.pick(n + 2);
      const std::size_t count = in.flag() ? std::numeric_limits<std::size_t>::max() - in.pick(4)
                                          : n - std::min(n, first) + 1 + in.pick(4);
      note(x, " (misuse) slice(" + str(first) + ", " + str(count) + ") and at(" + str(n) + ")");
      expect_throw<std::out_of_range>(x, "a slice past the end",
                                      [&] { (void)x.array.slice(first, count); });
      expect_throw<std::out_of_range>(x, "at() past the end", [&] { (void)x.array.at(n); });
      return;
    }
    StreamRef bad;
    std::string name = "a destroyed stream";
    if (in.flag() && backend() == BackendKind::host) {
      bad = StreamRef{reinterpret_cast<void*>(std::uintptr_t{0x4d2})};
      name = "a handle that is no stream";
    } else {
      const Stream made;
      bad = made.ref();
    }
    note(x, " (misuse) form " + str(form) + " on " + name);
    expect_throw<logic_error>(x, "a call on a stream that is not live", [&] {
      switch (form) {
        case 0: (void)std::as_const(x.array).device_view(bad); break;
        case 1: (void)x.array.device_view(Access::read_write, bad); break;
        case 2: (void)x.array.device_view(Access::discard, bad); break;
        case 3: (void)x.array.host_view(Access::read_write, bad); break;
        case 4: smartarray::fill(x.array, v, bad); break;
        case 5: smartarray::copy(y.array, std::as_const(x.array), bad); break;
        default: smartarray::transform(y.array, Affine{v, v}, std::as_const(x.array), bad); break;
      }
    });
  }

  /// Arms a failure of the k-th allocation or copy that the calls of the next operations make.
  void inject(ByteReader& in) {
    armed_kind_ = in.flag() ? testing::Fault::allocation : testing::Fault::copy;
    armed_left_ = 1 + in.pick(4);
    armed_steps_ = armed_operations;
    note(std::string("(inject) ") +
         (armed_kind_ == testing::Fault::allocation ? "allocation" : "copy") + " failure #" +
         str(armed_left_) + " armed for the next " + str(armed_operations) + " operations");
  }

  ApiModelOptions options_;
  std::vector<MemoryMode> modes_;
  bool prefetches_ = false;
  std::array<Stream, 2> streams_{};
  std::array<Slot, 3> slots_{Slot('a'), Slot('b'), Slot('c')};
  std::vector<std::string> log_;
  /// An armed failure: the kind, how many more of those operations until it, and how many more
  /// decoded operations it stays armed for.
  static constexpr int armed_operations = 8;
  testing::Fault armed_kind_ = testing::Fault::allocation;
  std::uint64_t armed_left_ = 0;
  int armed_steps_ = 0;
  ApiModelTotals totals_;
};

/**
 * Runs one sequence: an ApiModel over `input` until the input or `max_operations` is used up,
 * then the final checks, and checks that the default pools got every block back.
 * @throws Divergence naming the difference and listing the operations.
 */
inline ApiModelTotals run_sequence(
    std::span<const std::uint8_t> input, const ApiModelOptions& options,
    std::uint64_t max_operations = std::numeric_limits<std::uint64_t>::max()) {
  const std::size_t device_in_use = default_device_pool().bytes_in_use();
  const std::size_t pinned_in_use = default_pinned_pool().bytes_in_use();
  const bool guard = stale_host_guard();
  ApiModelTotals totals;
  {
    ByteReader in(input);
    ApiModel model(options);
    while (!in.exhausted() && model.totals().operations < max_operations) model.step(in);
    model.check();
    totals = model.totals();
  }
  set_stale_host_guard(guard);
  if (default_device_pool().bytes_in_use() != device_in_use ||
      default_pinned_pool().bytes_in_use() != pinned_in_use) {
    throw Divergence("the default pools hold " +
                     std::to_string(default_device_pool().bytes_in_use()) + " device and " +
                     std::to_string(default_pinned_pool().bytes_in_use()) +
                     " pinned bytes after the sequence, " + std::to_string(device_in_use) +
                     " and " + std::to_string(pinned_in_use) + " before it");
  }
  return totals;
}

}  // namespace smartarray::test
