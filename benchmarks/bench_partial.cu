// Range-granular residency: SmartArray against hand-written explicit copies when the host reads or
// writes a small part of an array that the device works on (core/slice.hpp; element access by
// tiles, ArrayOptions::tile).
//
// Names are BM_<workload>/<contender>/<n>, contenders `explicit` (cudaMemcpyAsync on pinned memory
// and cudaStreamSynchronize, through `Raw`) and `smartarray`. Every call starts with a kernel that
// writes all n floats with fresh values (`value_at`, never zero, different in every call):
// - scalar_read: the host then reads the middle element. explicit: a 4-byte D2H copy; smartarray:
//   `std::as_const(a)[n / 2]`, which fetches the element's tile. n = 1e6, 1.6e7, 1e8; target: at
//   most 1.2x explicit.
// - boundary_update: the host writes 32 elements at each end, then a kernel reads all n (writing
//   only where it finds a NaN, so that the reads stay). The first kernel writes the initial values
//   once, before the calls. explicit: the 64 values in pinned memory, two 128-byte H2D copies;
//   smartarray: `a[i] = v`, which marks only the two end tiles stale on the device, and a device
//   view for reading, which copies those two tiles. n = 1e6, 1.6e7, 1e8; target: at most 1.2x.
// - slice_read: the host then reads 1000 elements from the middle. explicit: one 4000-byte D2H
//   copy; smartarray: the host view of `a.slice(n / 2, 1000)` for reading, which copies the same
//   4000 bytes. n = 1.6e7; target: at most 1.2x.
// - range_for: the host then sums the whole array in a range-for (the elements' bit patterns, in
//   integers: a loop at the speed of memory). explicit: a D2H copy of the array into pinned
//   memory and the same loop over it; smartarray: `for (float x : std::as_const(a))`, one D2H
//   copy of the array. n = 1.6e7; target: at most 1.05x.
// - copy_latency/<bytes> (explicit only): one D2H copy of 4 B to 4 MiB into pinned memory and a
//   synchronize. Its time per copy and bytes per second show where a copy's fixed cost meets its
//   transfer time.
// - scalar_read/smartarray_tile16k and boundary_update/smartarray_tile16k: the smartarray
//   contender with 16 KiB tiles instead of the default 4 KiB, for the choice of the default
//   (docs/residency.md).
//
// A timed iteration is one call, bracketed by the host clock: every call returns with its work
// done (the host holds what it read, or the last kernel finished), so this is the call's wall
// time, host and device together, as the user waits for it. One untimed call first takes the
// allocations and module loads out. scripts/bench_report.py divides smartarray by explicit of the
// same run, and the targets phase of scripts/gpu_check.sh runs them again as interleaved
// repetitions.
//
// Checks: each run checks the last call's results (the host read what the kernel wrote; the
// device holds what the host wrote) and the smartarray contender's copies in every timed call,
// counted by the library (global_transfer_stats()): scalar_read one tile D2H, boundary_update
// the two end tiles H2D, slice_read and range_for exactly their bytes D2H, and nothing else. A
// failed check fails the run ("FAILED: ...") and the exit status. Counters: the copies and bytes
// per call each way (h2d_per_call, d2h_per_call, h2d_bytes_per_call, d2h_bytes_per_call):
// smartarray's as counted, explicit's as its code makes them.
//
// Runs on both backends: the hand-written calls go through `Raw` (bench_support.cuh), the CUDA
// runtime itself on the cuda backend. `--quick` runs small sizes briefly, for CTest's
// host.bench_partial_smoke.
#include <smartarray/adapters/transform.hpp>
#include <smartarray/core/slice.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/runtime/stream.hpp>

#include "bench_main.hpp"
#include "bench_support.cuh"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::bench::Raw;

namespace {

using sa::bench::fail_run;

/// The value that call `call` puts at index `i`: 23 bits of a hash of both (splitmix64) as the
/// fraction of a float in [1, 2). Never zero, new in every call (a stale copy shows), and computed
/// exactly alike on the host and the device, so checks compare with ==.
SMARTARRAY_HOST_DEVICE inline float value_at(std::uint64_t i, std::uint64_t call) {
  std::uint64_t x = i + call * 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return 1.0F + static_cast<float>(x >> 41) * 0x1p-23F;
}

/// The writer kernel of every call: out[i] = value_at(i, call).
struct Fill {
  float* out;
  std::uint64_t call;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { out[i] = value_at(i, call); }
};

/// The reader kernel of boundary_update: reads every element and writes only where one is NaN
/// (none is), so that the reads cannot be optimized away and the array is left as it is.
struct FindNan {
  const float* in;
  int* flag;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const {
    if (in[i] != in[i]) *flag = 1;
  }
};

/// The copies that one call makes each way.
struct Copies {
  std::uint64_t h2d = 0;
  std::uint64_t h2d_bytes = 0;
  std::uint64_t d2h = 0;
  std::uint64_t d2h_bytes = 0;
};

/// The bytes of the tile of `tile` bytes that holds byte `offset` of an array of `size` bytes:
/// what element access copies for an element there.
std::uint64_t tile_bytes_at(std::size_t offset, std::size_t tile, std::size_t size) {
  const std::size_t begin = offset / tile * tile;
  return std::min(size, begin + tile) - begin;
}

/**
 * @brief One contender of one workload: `measure` sets it up, makes an untimed call and one timed
 *        call per iteration, checks it and tears it down.
 */
class Contender {
 public:
  /// @brief Works on `stream`.
  explicit Contender(sa::StreamRef stream) : stream_(stream), raw_(stream) {}
  virtual ~Contender() = default;
  Contender(const Contender&) = delete;
  Contender& operator=(const Contender&) = delete;

  /// @brief Allocates what a call over `n` floats works on.
  virtual void set_up(std::size_t n) = 0;
  /// @brief One call: the timed part. Returns with its work done.
  virtual void call() = 0;
  /// @brief The copies one call makes: explicit's by construction, smartarray's as the residency
  ///        contract promises them.
  [[nodiscard]] virtual Copies copies_per_call() const = 0;
  /// @brief True when the library makes the copies, so that the run checks them against its
  ///        counters.
  [[nodiscard]] virtual bool library_copies() const { return false; }
  /// @brief An empty string when the last call's results are right, else what is wrong.
  [[nodiscard]] virtual std::string check() = 0;
  /// @brief Frees what `set_up` allocated through `raw_`.
  virtual void tear_down() {}

 protected:
  sa::StreamRef stream_;
  Raw raw_;
  std::size_t n_ = 0;
  std::uint64_t call_ = 0;  // the calls made; the last one wrote value_at(i, call_)
};

/// "what [i] is x, the kernel wrote y" when `got` differs from the last call's value at `i`.
std::string compare(const char* what, std::size_t i, float got, std::uint64_t call) {
  const float expected = value_at(i, call);
  if (got == expected) return {};
  return std::string(what) + " [" + std::to_string(i) + "] is " + std::to_string(got) +
         ", call " + std::to_string(call) + " wrote " + std::to_string(expected);
}

// --- scalar_read ---------------------------------------------------------------------------------

/// A kernel writes the array, the host reads its middle element.
class ScalarRead : public Contender {
 public:
  using Contender::Contender;
  std::string check() override { return compare("the element read", n_ / 2, got_, call_); }

 protected:
  float got_ = 0;
};

class ScalarReadExplicit final : public ScalarRead {
 public:
  using ScalarRead::ScalarRead;
  void set_up(std::size_t n) override {
    n_ = n;
    device_ = raw_.allocate_device<float>(n);
    pinned_ = raw_.allocate_pinned<float>(1);
  }
  void call() override {
    raw_.launch(n_, Fill{device_, ++call_});
    raw_.copy_to_host_async(pinned_, device_ + n_ / 2, sizeof(float));
    raw_.synchronize();
    got_ = *pinned_;
  }
  [[nodiscard]] Copies copies_per_call() const override { return {.d2h = 1, .d2h_bytes = 4}; }
  void tear_down() override {
    raw_.free_device(device_);
    raw_.free_pinned(pinned_);
  }

 private:
  float* device_ = nullptr;
  float* pinned_ = nullptr;
};

/// Arrays of `TileBytes` tiles; 0 is the default tile.
template <std::size_t TileBytes>
sa::SmartArray<float> tiled_array(std::size_t n) {
  sa::ArrayOptions options;
  if constexpr (TileBytes != 0) options.tile = sa::TileSize(TileBytes);
  return sa::SmartArray<float>(n, sa::no_init, sa::Allocator<float>(options));
}

template <std::size_t TileBytes = 0>
class ScalarReadSmart final : public ScalarRead {
 public:
  using ScalarRead::ScalarRead;
  void set_up(std::size_t n) override {
    n_ = n;
    array_ = tiled_array<TileBytes>(n);
  }
  void call() override {
    raw_.launch(n_, Fill{array_.device_view(Access::discard, stream_).data(), ++call_});
    got_ = std::as_const(array_)[n_ / 2];
  }
  [[nodiscard]] Copies copies_per_call() const override {
    const std::size_t tile = array_.get_allocator().options().tile.bytes();
    return {.d2h = 1, .d2h_bytes = tile_bytes_at(n_ / 2 * sizeof(float), tile, n_ * sizeof(float))};
  }
  [[nodiscard]] bool library_copies() const override { return true; }

 private:
  sa::SmartArray<float> array_;
};

// --- boundary_update -----------------------------------------------------------------------------

/// boundary_update's host writes: this many elements at each end of the array.
constexpr std::size_t edge = 32;

/// The array index of the k-th of the 2 x `edge` elements that boundary_update writes.
SMARTARRAY_HOST_DEVICE inline std::size_t boundary_index(std::size_t k, std::size_t n) {
  return k < edge ? k : n - 2 * edge + k;
}

/// boundary_update's check, on the device: out[k] = in[boundary_index(k, n)].
struct GatherBoundary {
  const float* in;
  float* out;
  std::size_t n;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t k) const { out[k] = in[boundary_index(k, n)]; }
};

/// The host writes `edge` elements at each end of the array, then a kernel reads all of it.
class BoundaryUpdate : public Contender {
 public:
  using Contender::Contender;

  /// Checks the device copy: the 2 x `edge` elements that a kernel reads there are the host's.
  std::string check() override {
    float* gathered = raw_.allocate_device<float>(2 * edge);
    raw_.launch(2 * edge, GatherBoundary{device_data(), gathered, n_});
    std::vector<float> got(2 * edge);
    raw_.copy_to_host_async(got.data(), gathered, 2 * edge * sizeof(float));
    raw_.synchronize();
    raw_.free_device(gathered);
    for (std::size_t k = 0; k < 2 * edge; ++k) {
      std::string why = compare("the device's element", index(k), got[k], call_);
      if (!why.empty()) return why;
    }
    return {};
  }

 protected:
  [[nodiscard]] std::size_t index(std::size_t k) const { return boundary_index(k, n_); }
  /// The device copy of the array, for the check.
  [[nodiscard]] virtual const float* device_data() = 0;

  int* nan_flag_ = nullptr;  // where FindNan writes; never read
};

class BoundaryUpdateExplicit final : public BoundaryUpdate {
 public:
  using BoundaryUpdate::BoundaryUpdate;
  void set_up(std::size_t n) override {
    n_ = n;
    device_ = raw_.allocate_device<float>(n);
    pinned_ = raw_.allocate_pinned<float>(2 * edge);
    nan_flag_ = raw_.allocate_device<int>(1);
    raw_.launch(n, Fill{device_, 0});
    raw_.synchronize();
  }
  void call() override {
    ++call_;
    for (std::size_t k = 0; k < 2 * edge; ++k) pinned_[k] = value_at(index(k), call_);
    raw_.copy_to_device_async(device_, pinned_, edge * sizeof(float));
    raw_.copy_to_device_async(device_ + n_ - edge, pinned_ + edge, edge * sizeof(float));
    raw_.launch(n_, FindNan{device_, nan_flag_});
    raw_.synchronize();
  }
  [[nodiscard]] Copies copies_per_call() const override {
    return {.h2d = 2, .h2d_bytes = 2 * edge * sizeof(float)};
  }
  void tear_down() override {
    raw_.free_device(device_);
    raw_.free_device(nan_flag_);
    raw_.free_pinned(pinned_);
  }

 private:
  const float* device_data() override { return device_; }

  float* device_ = nullptr;
  float* pinned_ = nullptr;
};

template <std::size_t TileBytes = 0>
class BoundaryUpdateSmart final : public BoundaryUpdate {
 public:
  using BoundaryUpdate::BoundaryUpdate;
  void set_up(std::size_t n) override {
    n_ = n;
    array_ = tiled_array<TileBytes>(n);
    nan_flag_ = raw_.allocate_device<int>(1);
    raw_.launch(n, Fill{array_.device_view(Access::discard, stream_).data(), 0});
    raw_.synchronize();
  }
  void call() override {
    ++call_;
    for (std::size_t k = 0; k < 2 * edge; ++k) array_[index(k)] = value_at(index(k), call_);
    raw_.launch(n_, FindNan{std::as_const(array_).device_view(stream_).data(), nan_flag_});
    raw_.synchronize();
  }
  /// The two end tiles, H2D; one copy where they touch or are one tile (the stale bytes are then
  /// one run).
  [[nodiscard]] Copies copies_per_call() const override {
    const std::size_t tile = array_.get_allocator().options().tile.bytes();
    const std::size_t size = n_ * sizeof(float);
    const std::uint64_t first = tile_bytes_at(0, tile, size);
    const std::uint64_t last = tile_bytes_at(size - 1, tile, size);
    if (first + last >= size) return {.h2d = 1, .h2d_bytes = size};
    return {.h2d = 2, .h2d_bytes = first + last};
  }
  [[nodiscard]] bool library_copies() const override { return true; }
  void tear_down() override { raw_.free_device(nan_flag_); }

 private:
  const float* device_data() override { return std::as_const(array_).device_view(stream_).data(); }

  sa::SmartArray<float> array_;
};

// --- slice_read ----------------------------------------------------------------------------------

/// A kernel writes the array, the host reads `slice_elements` elements from its middle.
class SliceRead : public Contender {
 public:
  using Contender::Contender;
  static constexpr std::size_t slice_elements = 1000;

  std::string check() override {
    for (std::size_t j = 0; j < read_.size(); ++j) {
      std::string why = compare("the slice's element", first() + j, read_[j], call_);
      if (!why.empty()) return why;
    }
    return read_.size() == slice_elements ? std::string{} : "the slice read is not 1000 elements";
  }

 protected:
  [[nodiscard]] std::size_t first() const { return n_ / 2; }

  std::span<const float> read_;  // the elements the last call read
};

class SliceReadExplicit final : public SliceRead {
 public:
  using SliceRead::SliceRead;
  void set_up(std::size_t n) override {
    n_ = n;
    device_ = raw_.allocate_device<float>(n);
    pinned_ = raw_.allocate_pinned<float>(slice_elements);
  }
  void call() override {
    raw_.launch(n_, Fill{device_, ++call_});
    raw_.copy_to_host_async(pinned_, device_ + first(), slice_elements * sizeof(float));
    raw_.synchronize();
    read_ = {pinned_, slice_elements};
  }
  [[nodiscard]] Copies copies_per_call() const override {
    return {.d2h = 1, .d2h_bytes = slice_elements * sizeof(float)};
  }
  void tear_down() override {
    raw_.free_device(device_);
    raw_.free_pinned(pinned_);
  }

 private:
  float* device_ = nullptr;
  float* pinned_ = nullptr;
};

class SliceReadSmart final : public SliceRead {
 public:
  using SliceRead::SliceRead;
  void set_up(std::size_t n) override {
    n_ = n;
    array_ = sa::SmartArray<float>(n, sa::no_init);
  }
  void call() override {
    raw_.launch(n_, Fill{array_.device_view(Access::discard, stream_).data(), ++call_});
    // For reading: only the slice's bytes are copied, and the device copy stays valid.
    read_ = std::as_const(array_).slice(first(), slice_elements).host_view();
  }
  [[nodiscard]] Copies copies_per_call() const override {
    return {.d2h = 1, .d2h_bytes = slice_elements * sizeof(float)};
  }
  [[nodiscard]] bool library_copies() const override { return true; }

 private:
  sa::SmartArray<float> array_;
};

// --- range_for -----------------------------------------------------------------------------------

/// The host loop of range_for, one function for both contenders, so that both run the same code
/// over their ranges: the sum of the elements' bit patterns. Integer additions have no order, so
/// the loop runs at the speed of memory (the compiler vectorizes it). A sum of the floats
/// themselves is one chain of dependent additions, 4 cycles per element: 15-22 ms of the call at
/// 1.6e7 that moved with the VM's clock, which was 0.84x-1.09x of explicit from run to run.
template <typename Range>
[[gnu::noinline]] std::uint64_t range_for_sum(const Range& range) {
  std::uint64_t sum = 0;
  for (float x : range) sum += std::bit_cast<std::uint32_t>(x);
  return sum;
}

/// A kernel writes the array, the host sums all of it.
class RangeFor : public Contender {
 public:
  using Contender::Contender;

  /// The sum of the bit patterns of the last call's values.
  std::string check() override {
    std::uint64_t expected = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      expected += std::bit_cast<std::uint32_t>(value_at(i, call_));
    }
    if (sum_ == expected) return {};
    return "the host's sum is " + std::to_string(sum_) + ", the values call " +
           std::to_string(call_) + " wrote sum to " + std::to_string(expected);
  }

 protected:
  std::uint64_t sum_ = 0;
};

class RangeForExplicit final : public RangeFor {
 public:
  using RangeFor::RangeFor;
  void set_up(std::size_t n) override {
    n_ = n;
    device_ = raw_.allocate_device<float>(n);
    pinned_ = raw_.allocate_pinned<float>(n);
  }
  void call() override {
    raw_.launch(n_, Fill{device_, ++call_});
    raw_.copy_to_host_async(pinned_, device_, n_ * sizeof(float));
    raw_.synchronize();
    sum_ = range_for_sum(std::span<const float>(pinned_, n_));
  }
  [[nodiscard]] Copies copies_per_call() const override {
    return {.d2h = 1, .d2h_bytes = n_ * sizeof(float)};
  }
  void tear_down() override {
    raw_.free_device(device_);
    raw_.free_pinned(pinned_);
  }

 private:
  float* device_ = nullptr;
  float* pinned_ = nullptr;
};

class RangeForSmart final : public RangeFor {
 public:
  using RangeFor::RangeFor;
  void set_up(std::size_t n) override {
    n_ = n;
    array_ = sa::SmartArray<float>(n, sa::no_init);
  }
  void call() override {
    raw_.launch(n_, Fill{array_.device_view(Access::discard, stream_).data(), ++call_});
    sum_ = range_for_sum(std::as_const(array_));
  }
  [[nodiscard]] Copies copies_per_call() const override {
    return {.d2h = 1, .d2h_bytes = n_ * sizeof(float)};
  }
  [[nodiscard]] bool library_copies() const override { return true; }

 private:
  sa::SmartArray<float> array_;
};

// --- out_of_core ---------------------------------------------------------------------------------

/// y = x + call over arrays of four times the device budget each: the arrays live on the host and
/// stream through the device in chunks.
struct AddCall {
  float add;
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return x + add; }
};
/// The hand-written loop's kernel over one chunk.
struct AddCallChunk {
  const float* x;
  float* y;
  float add;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { y[i] = x[i] + add; }
};

/// The device budget of an out_of_core run over `n` floats per array: a quarter of one array.
std::size_t out_of_core_budget(std::size_t n) { return n * sizeof(float) / 4; }

/// The chunk of the library's out-of-core calls (core/detail/chunked_access.hpp) for two float
/// arrays: a buffer per array and slot within half the budget, a multiple of 256 elements. The
/// hand-written loop uses the same chunks, double-buffered.
std::size_t out_of_core_chunk(std::size_t n) {
  return out_of_core_budget(n) / 2 / (sa::detail::chunk_slots * 2 * sizeof(float)) / 256 * 256;
}

class OutOfCore : public Contender {
 public:
  using Contender::Contender;
  std::string check() override {
    for (std::size_t i = 0; i < n_; i += 4099) {
      const float expected = value_at(i, 0) + static_cast<float>(call_);
      if (y_[i] != expected) {
        return "y[" + std::to_string(i) + "] is " + std::to_string(y_[i]) + ", call " +
               std::to_string(call_) + " made " + std::to_string(expected);
      }
    }
    return {};
  }
  [[nodiscard]] Copies copies_per_call() const override {
    const std::size_t chunks = (n_ + out_of_core_chunk(n_) - 1) / out_of_core_chunk(n_);
    return {.h2d = chunks, .h2d_bytes = n_ * sizeof(float), .d2h = chunks,
            .d2h_bytes = n_ * sizeof(float)};
  }

 protected:
  /// Writes x's values (value_at(i, 0)) on the host.
  void fill_x(float* x) const {
    for (std::size_t i = 0; i < n_; ++i) x[i] = value_at(i, 0);
  }
  std::span<const float> y_;
};

class OutOfCoreExplicit final : public OutOfCore {
 public:
  using OutOfCore::OutOfCore;
  void set_up(std::size_t n) override {
    n_ = n;
    chunk_ = out_of_core_chunk(n);
    x_ = raw_.allocate_pinned<float>(n);
    y_pinned_ = raw_.allocate_pinned<float>(n);
    for (float*& buffer : buffers_) buffer = raw_.allocate_device<float>(chunk_);
    fill_x(x_);
    y_ = {y_pinned_, n};
  }
  /// Double buffering by hand: chunk k on stream k % 2 with its own pair of buffers.
  void call() override {
    ++call_;
    const Raw* raws[2] = {&raw_, &second_raw_};
    for (std::size_t first = 0, k = 0; first < n_; first += chunk_, ++k) {
      const std::size_t b = k % 2;
      const std::size_t count = std::min(chunk_, n_ - first);
      raws[b]->copy_to_device_async(buffers_[2 * b], x_ + first, count * sizeof(float));
      raws[b]->launch(count, AddCallChunk{buffers_[2 * b], buffers_[2 * b + 1],
                                          static_cast<float>(call_)});
      raws[b]->copy_to_host_async(y_pinned_ + first, buffers_[2 * b + 1], count * sizeof(float));
    }
    raw_.synchronize();
    second_raw_.synchronize();
  }
  void tear_down() override {
    for (float* buffer : buffers_) raw_.free_device(buffer);
    raw_.free_pinned(x_);
    raw_.free_pinned(y_pinned_);
  }

 private:
  sa::Stream second_stream_;
  Raw second_raw_{second_stream_};
  std::size_t chunk_ = 0;
  float* x_ = nullptr;
  float* y_pinned_ = nullptr;
  float* buffers_[4] = {};  // x and y of stream 0, then of stream 1
};

class OutOfCoreSmart final : public OutOfCore {
 public:
  using OutOfCore::OutOfCore;
  void set_up(std::size_t n) override {
    n_ = n;
    previous_budget_ = sa::default_device_pool().maximum_size();
    sa::set_device_budget(out_of_core_budget(n));
    (void)sa::default_device_pool().trim();
    x_ = sa::SmartArray<float>(n, sa::no_init);
    fill_x(x_.host_view(Access::discard).data());
    y_array_ = sa::SmartArray<float>(n, sa::no_init);
  }
  void call() override {
    sa::transform(y_array_, AddCall{static_cast<float>(++call_)}, x_, stream_);
    y_ = std::as_const(y_array_).host_view();
  }
  [[nodiscard]] bool library_copies() const override { return true; }
  void tear_down() override {
    x_ = {};
    y_array_ = {};
    sa::set_device_budget(previous_budget_);
  }

 private:
  std::optional<std::size_t> previous_budget_;
  sa::SmartArray<float> x_;
  sa::SmartArray<float> y_array_;
};

// --- measuring -----------------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;

/// Makes one contender of one workload, working on `stream`.
using Factory = std::unique_ptr<Contender> (*)(sa::StreamRef stream);

template <typename C>
std::unique_ptr<Contender> make(sa::StreamRef stream) {
  return std::make_unique<C>(stream);
}

/// Publishes the copies per call, and fails the run when a library contender's copies, counted by
/// the library over the timed calls, differ from the ones it promises.
void check_copies(benchmark::State& state, const Contender& contender,
                  const sa::TransferStats& made) {
  const Copies promised = contender.copies_per_call();
  const auto calls = static_cast<std::uint64_t>(state.iterations());
  Copies reported = promised;
  if (contender.library_copies() && calls != 0) {
    reported = {made.h2d_count / calls, made.h2d_bytes / calls, made.d2h_count / calls,
                made.d2h_bytes / calls};
  }
  state.counters["h2d_per_call"] = static_cast<double>(reported.h2d);
  state.counters["d2h_per_call"] = static_cast<double>(reported.d2h);
  state.counters["h2d_bytes_per_call"] = static_cast<double>(reported.h2d_bytes);
  state.counters["d2h_bytes_per_call"] = static_cast<double>(reported.d2h_bytes);
  if (!contender.library_copies()) return;
  if (made.h2d_count != promised.h2d * calls || made.h2d_bytes != promised.h2d_bytes * calls ||
      made.d2h_count != promised.d2h * calls || made.d2h_bytes != promised.d2h_bytes * calls ||
      made.d2d_count != 0) {
    fail_run(state, "expected " + std::to_string(promised.h2d) + " H2D (" +
                    std::to_string(promised.h2d_bytes) + " B) and " +
                    std::to_string(promised.d2h) + " D2H (" + std::to_string(promised.d2h_bytes) +
                    " B) per call; smartarray made " + made.to_string() + " in " +
                    std::to_string(calls) + " timed calls");
  }
}

/// One run of a contender at n = state.range(0): set up, one untimed call, then one call per
/// iteration timed by the host clock, checked and torn down.
void measure(benchmark::State& state, Factory factory) {
  const sa::Stream stream;
  const std::unique_ptr<Contender> contender = factory(stream);
  contender->set_up(static_cast<std::size_t>(state.range(0)));
  contender->call();
  const sa::TransferStats before = sa::global_transfer_stats();
  for (auto _ : state) {
    const auto start = Clock::now();
    contender->call();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  check_copies(state, *contender, sa::global_transfer_stats() - before);
  if (std::string why = contender->check(); !why.empty()) fail_run(state, why);
  contender->tear_down();
}

/// copy_latency: one D2H copy of state.range(0) bytes into pinned memory and a synchronize, per
/// iteration.
void copy_latency(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const sa::Stream stream;
  const Raw raw(stream);
  const std::size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
  float* device = raw.allocate_device<float>(floats);
  float* pinned = raw.allocate_pinned<float>(floats);
  raw.launch(floats, Fill{device, 1});  // copies read written memory
  raw.synchronize();
  for (auto _ : state) {
    const auto start = Clock::now();
    raw.copy_to_host_async(pinned, device, bytes);
    raw.synchronize();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  raw.free_device(device);
  raw.free_pinned(pinned);
}

/// pinned_h2d: one host-to-device copy of state.range(0) floats from pinned memory, the bandwidth
/// that out_of_core is measured against.
void pinned_h2d(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const sa::Stream stream;
  const Raw raw(stream);
  float* device = raw.allocate_device<float>(n);
  float* pinned = raw.allocate_pinned<float>(n);
  std::fill(pinned, pinned + n, 1.5F);
  for (auto _ : state) {
    const auto start = Clock::now();
    raw.copy_to_device_async(device, pinned, n * sizeof(float));
    raw.synchronize();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  raw.free_device(device);
  raw.free_pinned(pinned);
}

/// pinned_duplex: a host-to-device copy and a device-to-host copy of state.range(0) floats each,
/// from and to pinned memory, on two streams at once: what the copy engines reach when out-of-core
/// calls run both ways together.
void pinned_duplex(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const sa::Stream up_stream;
  const sa::Stream down_stream;
  const Raw up(up_stream);
  const Raw down(down_stream);
  float* device_in = up.allocate_device<float>(n);
  float* device_out = up.allocate_device<float>(n);
  float* pinned_in = up.allocate_pinned<float>(n);
  float* pinned_out = up.allocate_pinned<float>(n);
  std::fill(pinned_in, pinned_in + n, 1.5F);
  up.launch(n, Fill{device_out, 1});  // the download reads written memory
  up.synchronize();
  for (auto _ : state) {
    const auto start = Clock::now();
    up.copy_to_device_async(device_in, pinned_in, n * sizeof(float));
    down.copy_to_host_async(pinned_out, device_out, n * sizeof(float));
    up.synchronize();
    down.synchronize();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  up.free_device(device_in);
  up.free_device(device_out);
  up.free_pinned(pinned_in);
  up.free_pinned(pinned_out);
}

/// The workloads: their explicit and smartarray contenders.
struct Workload {
  const char* name;
  Factory explicit_copies;
  Factory smartarray;
};
const Workload workloads[] = {
    {"scalar_read", make<ScalarReadExplicit>, make<ScalarReadSmart<>>},
    {"boundary_update", make<BoundaryUpdateExplicit>, make<BoundaryUpdateSmart<>>},
    {"slice_read", make<SliceReadExplicit>, make<SliceReadSmart>},
    {"range_for", make<RangeForExplicit>, make<RangeForSmart>},
    {"out_of_core", make<OutOfCoreExplicit>, make<OutOfCoreSmart>},
};

/// The sizes each workload runs at (bytes for copy_latency), by workload.
using Sizes = std::map<std::string, std::vector<std::int64_t>>;

/// The published run.
const Sizes full_sizes{{"scalar_read", {1'000'000, 16'000'000, 100'000'000}},
                       {"boundary_update", {1'000'000, 16'000'000, 100'000'000}},
                       {"slice_read", {16'000'000}},
                       {"range_for", {16'000'000}},
                       {"out_of_core", {1 << 28}},
                       {"pinned_h2d", {1 << 28}},
                       {"pinned_duplex", {1 << 28}},
                       {"copy_latency",
                        {4, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}}};
/// CTest's smoke (--quick): arrays of less than one tile (10,000 floats: the tiles are clipped at
/// the end, and the two end tiles are one) and of several.
const Sizes quick_sizes{{"scalar_read", {10'000, 100'000}},
                        {"boundary_update", {10'000, 100'000}},
                        {"slice_read", {100'000}},
                        {"range_for", {100'000}},
                        {"out_of_core", {1 << 21}},
                        {"pinned_h2d", {1 << 21}},
                        {"pinned_duplex", {1 << 21}},
                        {"copy_latency", {4, 64 << 10}}};

/// The workloads whose calls take milliseconds (range_for, out_of_core and its bandwidth bounds,
/// 20-25 ms) run at least this long per repetition in the published run, whatever
/// --benchmark_min_time says: at the scripts' 0.1-0.2 s a repetition averages only 4-12 calls.
constexpr double long_call_min_time = 1.0;
const std::set<std::string> long_calls{"range_for", "out_of_core", "pinned_h2d", "pinned_duplex"};

void register_all(const Sizes& sizes, bool quick) {
  const auto add = [&](const std::string& workload, const std::string& name, auto fn) {
    auto* b = benchmark::RegisterBenchmark(("BM_" + name).c_str(), fn);
    for (const std::int64_t n : sizes.at(workload)) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
    if (!quick && long_calls.contains(workload)) b->MinTime(long_call_min_time);
  };
  for (const Workload& w : workloads) {
    const std::string name = w.name;
    add(name, name + "/explicit",
        [f = w.explicit_copies](benchmark::State& s) { measure(s, f); });
    add(name, name + "/smartarray", [f = w.smartarray](benchmark::State& s) { measure(s, f); });
  }
  // The default tile against a larger one (docs/residency.md).
  add("scalar_read", "scalar_read/smartarray_tile16k",
      [](benchmark::State& s) { measure(s, make<ScalarReadSmart<16 << 10>>); });
  add("boundary_update", "boundary_update/smartarray_tile16k",
      [](benchmark::State& s) { measure(s, make<BoundaryUpdateSmart<16 << 10>>); });
  add("copy_latency", "copy_latency", copy_latency);
  add("pinned_h2d", "pinned_h2d", pinned_h2d);
  add("pinned_duplex", "pinned_duplex", pinned_duplex);
}

}  // namespace

/// bench_partial [--quick] [Google Benchmark flags]: the published run, or with --quick small sizes
/// and short runs (CTest's host.bench_partial_smoke). Exits non-zero when a run fails its checks.
int main(int argc, char** argv) {
  return sa::bench::run_main(
      argc, argv, [](bool quick) { register_all(quick ? quick_sizes : full_sizes, quick); },
      &sa::bench::failed_runs);
}
