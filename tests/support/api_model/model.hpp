// The interpreter's model of three arrays (ApiModel), its options and totals. The class declares
// its members here; their definitions are in the other headers of api_model/, each one concept:
// include support/api_model.hpp, which includes them all.
#pragma once

#include "support/api_model/byte_reader.hpp"
#include "support/api_model/kernels.hpp"
#include "support/residency_model.hpp"

#include <smartarray/diagnostics/testing.hpp>
#include <smartarray/smartarray.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace smartarray::test {

/// A difference between the library and the model; the message ends with the operations so far.
class Divergence : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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

  // --- the residency model (api_model/residency.hpp) ---------------------------------------------

  [[nodiscard]] static bool single_buffer(MemoryMode mode) noexcept;
  [[nodiscard]] bool prefetches(const Slot& s) const noexcept;
  static void add_prefetch(Slot& s);
  static std::size_t grown(std::size_t needed, std::size_t capacity);
  static void reallocate(Slot& s, std::size_t capacity);
  static void grow(Slot& s, std::size_t n);
  void read_host(Slot& s);
  void write_host(Slot& s);
  void access_host(Slot& s, bool writes);
  void acquire_device(Slot& s, Access access);
  static void truncate(Slot& s, std::size_t m);
  void insert_model(Slot& s, std::size_t index, const std::vector<Element>& inserted);
  void erase_model(Slot& s, std::size_t first, std::size_t last);
  static void assign_model(Slot& s, std::vector<Element> values);
  static std::size_t copy_model(Slot& to, const Slot& from);
  static void fresh_model(Slot& s, std::vector<Element> values, MemoryMode mode);
  static void device_only_model(Slot& s, std::vector<Element> values, MemoryMode mode);
  static void moved_from(Slot& s);
  static void swap_models(Slot& x, Slot& y);

  // --- steps, logging and checks (api_model/checks.hpp) ------------------------------------------

  void begin_step();
  void end_step();
  void note(const Slot& x, const std::string& what);
  void note(const std::string& what);
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void diverge(const Slot& s, const std::string& what) const;
  template <typename Body>
  void guarded(Body&& body);
  static TransferStats transfers(TransferStats stats);
  void check_slot(Slot& s);
  static std::vector<Element> contents(const SmartArray<Element>& array);
  void check_contents(const Slot& s, const char* when) const;
  void expect_equal(const Slot& s, const std::vector<Element>& got,
                    const std::vector<Element>& want, const char* what) const;
  template <typename Run, typename Commit>
  void apply(Run&& run, Commit&& commit, const Slot* output = nullptr);
  template <typename E, typename Run>
  void expect_throw(const Slot& s, const char* what, Run&& run);

  // --- decoding helpers (api_model/decoding.hpp) -------------------------------------------------

  Slot& pick_slot(ByteReader& in);
  StreamRef pick_stream(ByteReader& in, std::string& name);
  MemoryMode pick_mode(ByteReader& in);
  static std::size_t pick_size(ByteReader& in);
  static ArrayOptions pick_options(ByteReader& in, MemoryMode mode);
  static std::size_t room(const Slot& s);
  static std::string str(std::size_t v);
  void check_iterator(const Slot& s, ConstIterator it, std::size_t index) const;
  void run(Op op, ByteReader& in);

  // --- operations: the std::vector interface (api_model/vector_ops.hpp) --------------------------

  void push_back(ByteReader& in, Slot& x);
  void pop_back(Slot& x);
  void resize(ByteReader& in, Slot& x);
  void resize_model(Slot& x, std::size_t m, Element v);
  void clear(Slot& x);
  void reserve(ByteReader& in, Slot& x);
  void shrink_to_fit(Slot& x);
  void insert(ByteReader& in, Slot& x);
  void erase(ByteReader& in, Slot& x);
  void erase_value(ByteReader& in, Slot& x);
  void erase_value_model(Slot& x, std::size_t removed, std::size_t expected);
  void assign(ByteReader& in, Slot& x);

  // --- operations: assignment, construction, swap (api_model/construction_ops.hpp) ---------------

  void copy_assign(Slot& x, Slot& y);
  void move_assign(Slot& x, Slot& y);
  void copy_construct(Slot& x, Slot& y);
  void construct(ByteReader& in, Slot& x);
  void swap(ByteReader& in, Slot& x, Slot& y);

  // --- operations: host access (api_model/host_ops.hpp) ------------------------------------------

  static bool one_tile(const Slot& s);
  static const Element& own(const Slot& s, std::size_t at);
  void const_reads(ByteReader& in, Slot& x);
  void mutable_access(ByteReader& in, Slot& x);
  void host_view(ByteReader& in, Slot& x);
  void compare(Slot& x, Slot& y);
  void copy_to_host(ByteReader& in, Slot& x);
  void numba_host(ByteReader& in, Slot& x);
  void change_mode(ByteReader& in, Slot& x);
  void length_errors(ByteReader& in, Slot& x);

  // --- operations: device views and adapters (api_model/device_ops.hpp) --------------------------

  void device_read(ByteReader& in, Slot& x);
  void device_read_write(ByteReader& in, Slot& x);
  void device_discard(ByteReader& in, Slot& x);
  void numba_gpu(ByteReader& in, Slot& x);
  void transform(ByteReader& in, Slot& x, Slot& y);
  void map(ByteReader& in, Slot& x, Slot& y);
  void fill(ByteReader& in, Slot& x);
  void copy(ByteReader& in, Slot& x, Slot& y);
  void reduce(ByteReader& in, Slot& x);
  void bind_kernel(ByteReader& in, Slot& x, Slot& picked);

  // --- operations: streams, misuse, faults (api_model/streams_and_faults.hpp) --------------------

  void streams(ByteReader& in);
  void toggle_stale_host_guard(ByteReader& in);
  void misuse(ByteReader& in, Slot& x, Slot& y);
  void inject(ByteReader& in);

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

}  // namespace smartarray::test
