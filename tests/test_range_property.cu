// The property test of range-granular residency: random sequences of slice acquires (host and
// device, every access), element reads and writes, whole-array accesses, appends and truncations
// over arrays of a few tiles, checked after every operation against a model that keeps, for each
// element, its value and the sides that hold it. Each array's own transfer counters must equal what
// the model predicts: one copy per stale run inside the range, element access by tile with the
// readahead policy, and a device reallocation moving what the device holds.
//
// SMARTARRAY_RANGE_PROPERTY_OPS (operations in all) and SMARTARRAY_RANGE_PROPERTY_SEED override
// the defaults; the GPU script runs a longer one. The last line says how many operations ran:
// "range property test: <backend>: <ops> operations, 0 divergences".
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using Value = std::uint32_t;

namespace {

constexpr std::uint64_t default_seed = 20261125;
constexpr std::uint64_t default_operations = 30000;
/// A small tile, so that arrays of a few thousand elements span several.
constexpr std::size_t tile_bytes = 4096;
constexpr std::size_t per_tile = tile_bytes / sizeof(Value);
constexpr std::size_t max_elements = 6 * per_tile;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10) : fallback;
}

/// The device operations (namespace scope: nvcc's extended lambdas cannot live in a test body).
void scale_view(sa::DeviceView<Value> v) {
  sa::for_each_index(v.size(), [v] SMARTARRAY_HOST_DEVICE(std::size_t i) { v[i] = v[i] * 3 + 1; });
}
void fill_view(sa::DeviceView<Value> v, Value value) {
  sa::for_each_index(v.size(), [v, value] SMARTARRAY_HOST_DEVICE(std::size_t i) { v[i] = value; });
}
void copy_view(sa::DeviceView<Value> to, sa::DeviceView<const Value> from) {
  sa::for_each_index(to.size(),
                     [to, from] SMARTARRAY_HOST_DEVICE(std::size_t i) { to[i] = from[i]; });
}

constexpr std::uint8_t on_host = 1;
constexpr std::uint8_t on_device = 2;

/// The model of one array.
struct Model {
  std::vector<Value> values;
  std::vector<std::uint8_t> holder;  // per element: on_host, on_device or both
  std::size_t device_capacity = 0;   // elements of the device buffer
  // The run of element-access misses on consecutive tiles (ArrayCore::acquire_element).
  std::size_t miss_tile = 0;
  unsigned miss_run = 0;
  int miss_step = 0;
  sa::TransferStats expected{};

  [[nodiscard]] std::size_t size() const { return values.size(); }

  void copy_runs(std::uint8_t side, std::size_t first, std::size_t last) {
    std::size_t i = first;
    while (i < last) {
      if ((holder[i] & side) != 0) {
        ++i;
        continue;
      }
      std::size_t end = i;
      while (end < last && (holder[end] & side) == 0) ++end;
      const std::size_t bytes = (end - i) * sizeof(Value);
      if (side == on_host) {
        ++expected.d2h_count;
        expected.d2h_bytes += bytes;
      } else {
        ++expected.h2d_count;
        expected.h2d_bytes += bytes;
      }
      i = end;
    }
  }
  /// An acquire of [first, last) on `side` (the device's buffer checked first).
  void acquire(std::uint8_t side, Access access, std::size_t first, std::size_t last,
               std::size_t host_capacity) {
    if (side == on_device && device_capacity < size()) {
      std::size_t extent = size();
      while (extent > 0 && holder[extent - 1] == on_host) --extent;
      const bool overwrites_all = access == Access::discard && first == 0 && last == size();
      if (device_capacity > 0 && !overwrites_all && extent > 0) {
        ++expected.d2d_count;
        expected.d2d_bytes += extent * sizeof(Value);
      }
      device_capacity = std::max(host_capacity, size());
    }
    if (access != Access::discard) copy_runs(side, first, last);
    for (std::size_t i = first; i < last; ++i) {
      holder[i] = access == Access::read ? static_cast<std::uint8_t>(holder[i] | side) : side;
    }
  }
  /// Host element access of element `i` (tile fetch and readahead).
  void element(Access access, std::size_t i) {
    const std::size_t tile = i / per_tile;
    const std::size_t first = tile * per_tile;
    const std::size_t last = std::min(size(), first + per_tile);
    const bool held = std::all_of(holder.begin() + first, holder.begin() + last,
                                  [](std::uint8_t h) { return (h & on_host) != 0; });
    if (!held) {
      const int step = tile == miss_tile + 1 ? 1 : tile + 1 == miss_tile ? -1 : 0;
      if (step != 0 && (miss_run <= 1 || step == miss_step)) {
        ++miss_run;
      } else {
        miss_run = 1;
      }
      miss_step = step;
      miss_tile = tile;
      if (miss_run >= 3) {
        if (step > 0) {
          acquire(on_host, Access::read, first, size(), 0);
        } else {
          acquire(on_host, Access::read, 0, last, 0);
        }
      }
    }
    acquire(on_host, access, first, last, 0);
  }
};

class RangeProperty {
 public:
  explicit RangeProperty(std::uint64_t seed) : rng_(seed) {}

  /// Runs `operations` random operations; false at the first divergence (reported).
  bool run(std::uint64_t operations) {
    for (std::uint64_t op = 0; op < operations; ++op) {
      if (op % 2000 == 0) restart();
      const std::size_t which = pick(arrays_.size());
      if (!step(arrays_[which], models_[which])) {
        ADD_FAILURE() << "divergence at operation " << op << " on array " << which << ": "
                      << log_.str();
        return false;
      }
      ++done_;
    }
    return true;
  }
  [[nodiscard]] std::uint64_t done() const { return done_; }

 private:
  std::size_t pick(std::size_t bound) {
    return std::uniform_int_distribution<std::size_t>(0, bound - 1)(rng_);
  }
  Value value() { return std::uniform_int_distribution<Value>(1, 1U << 30)(rng_); }

  void restart() {
    arrays_.clear();
    models_.clear();
    for (int k = 0; k < 2; ++k) {
      std::vector<Value> values(1 + pick(max_elements));
      for (Value& v : values) v = value();
      arrays_.emplace_back(values, sa::ArrayOptions{.tile = sa::TileSize(tile_bytes)});
      Model model;
      model.values = values;
      model.holder.assign(values.size(), on_host);
      models_.push_back(model);
    }
  }

  bool step(SmartArray<Value>& a, Model& m) {
    log_.str("");
    const sa::TransferStats before = a.transfer_stats();
    m.expected = {};
    const std::size_t n = m.size();
    const std::size_t first = n == 0 ? 0 : pick(n);
    const std::size_t count = n == 0 ? 0 : 1 + pick(std::min<std::size_t>(n - first, 3 * per_tile));
    const std::size_t i = first;
    const auto access = static_cast<Access>(pick(3));
    bool ok = true;
    switch (pick(12)) {
      case 0: {  // slice host read
        log_ << "slice(" << first << ", " << count << ").host_view()";
        const std::span<const Value> view = std::as_const(a).slice(first, count).host_view();
        m.acquire(on_host, Access::read, first, first + count, a.capacity());
        ok = std::equal(view.begin(), view.end(), m.values.begin() + first);
        break;
      }
      case 1: {  // slice host write (read_write or discard)
        const Access write = access == Access::read ? Access::read_write : access;
        log_ << "slice(" << first << ", " << count << ").host_view(" << sa::to_string(write) << ")";
        const std::span<Value> view = a.slice(first, count).host_view(write);
        m.acquire(on_host, write, first, first + count, a.capacity());
        for (std::size_t k = 0; k < count; ++k) {
          const Value next = write == Access::discard ? value() : view[k] + 7;
          if (write == Access::read_write && view[k] != m.values[first + k]) ok = false;
          view[k] = next;
          m.values[first + k] = next;
        }
        break;
      }
      case 2:
      case 3: {  // slice device access
        log_ << "slice(" << first << ", " << count << ").device_view(" << sa::to_string(access)
             << ")";
        if (count == 0) break;
        if (access == Access::read) {
          SmartArray<Value> scratch(count);
          copy_view(scratch.device_view(Access::discard),
                    std::as_const(a).slice(first, count).device_view());
          m.acquire(on_device, Access::read, first, first + count, a.capacity());
          const std::span<const Value> got = std::as_const(scratch).host_view();
          ok = std::equal(got.begin(), got.end(), m.values.begin() + first);
        } else if (access == Access::read_write) {
          scale_view(a.slice(first, count).device_view(Access::read_write));
          m.acquire(on_device, access, first, first + count, a.capacity());
          for (std::size_t k = first; k < first + count; ++k) m.values[k] = m.values[k] * 3 + 1;
        } else {
          const Value fill = value();
          fill_view(a.slice(first, count).device_view(Access::discard), fill);
          m.acquire(on_device, access, first, first + count, a.capacity());
          std::fill(m.values.begin() + first, m.values.begin() + first + count, fill);
        }
        break;
      }
      case 4:
      case 5: {  // const element reads, a few in a row from `i`
        log_ << "const operator[] from " << i;
        for (std::size_t k = i; k < std::min(n, i + 3 * per_tile); k += per_tile / 2) {
          const Value got = std::as_const(a)[k];
          m.element(Access::read, k);
          if (got != m.values[k]) ok = false;
        }
        break;
      }
      case 6: {  // element writes
        log_ << "operator[] write at " << i;
        if (n == 0) break;
        const Value next = value();
        a[i] = next;
        m.element(Access::read_write, i);
        m.values[i] = next;
        break;
      }
      case 7: {  // whole host read
        log_ << "host_view()";
        const std::span<const Value> view = std::as_const(a).host_view();
        m.acquire(on_host, Access::read, 0, n, a.capacity());
        ok = std::equal(view.begin(), view.end(), m.values.begin(), m.values.end());
        break;
      }
      case 8: {  // whole device read_write
        log_ << "device_view(read_write)";
        if (n == 0) break;
        scale_view(a.device_view(Access::read_write));
        m.acquire(on_device, Access::read_write, 0, n, a.capacity());
        for (Value& v : m.values) v = v * 3 + 1;
        break;
      }
      case 9: {  // appends
        const std::size_t extra = 1 + pick(per_tile);
        log_ << "push_back x" << extra;
        for (std::size_t k = 0; k < extra && m.size() < max_elements; ++k) {
          const Value next = value();
          a.push_back(next);
          m.values.push_back(next);
          m.holder.push_back(on_host);
        }
        break;
      }
      case 10: {  // truncation
        const std::size_t keep = n == 0 ? 0 : pick(n);
        log_ << "resize(" << keep << ")";
        a.resize(keep);
        m.values.resize(keep);
        m.holder.resize(keep);
        break;
      }
      default: {  // a sequential scan through element access (readahead)
        log_ << "const scan";
        for (std::size_t k = 0; k < n; ++k) {
          const Value got = std::as_const(a)[k];
          // The first access of a tile leaves it held: the rest of the tile changes nothing.
          if (k % per_tile == 0) m.element(Access::read, k);
          if (got != m.values[k]) ok = false;
        }
        break;
      }
    }
    if (!ok) {
      log_ << ": contents differ";
      return false;
    }
    const sa::TransferStats after = a.transfer_stats();
    const sa::TransferStats made{
        .h2d_count = after.h2d_count - before.h2d_count,
        .h2d_bytes = after.h2d_bytes - before.h2d_bytes,
        .d2h_count = after.d2h_count - before.d2h_count,
        .d2h_bytes = after.d2h_bytes - before.d2h_bytes,
        .d2d_count = after.d2d_count - before.d2d_count,
        .d2d_bytes = after.d2d_bytes - before.d2d_bytes,
    };
    const sa::TransferStats& want = m.expected;
    if (made.h2d_count != want.h2d_count || made.h2d_bytes != want.h2d_bytes ||
        made.d2h_count != want.d2h_count || made.d2h_bytes != want.d2h_bytes ||
        made.d2d_count != want.d2d_count || made.d2d_bytes != want.d2d_bytes) {
      log_ << ": transfers h2d " << made.h2d_count << " (" << made.h2d_bytes << " B), d2h "
           << made.d2h_count << " (" << made.d2h_bytes << " B), d2d " << made.d2d_count << " ("
           << made.d2d_bytes << " B); the model: h2d " << want.h2d_count << " (" << want.h2d_bytes
           << " B), d2h " << want.d2h_count << " (" << want.d2h_bytes << " B), d2d "
           << want.d2d_count << " (" << want.d2d_bytes << " B)";
      return false;
    }
    return a.size() == m.size();
  }

  std::mt19937_64 rng_;
  std::vector<SmartArray<Value>> arrays_;
  std::vector<Model> models_;
  std::ostringstream log_;
  std::uint64_t done_ = 0;
};

}  // namespace

TEST(RangeProperty, RandomSlicesAndElementAccessMatchTheModel) {
  const std::uint64_t seed = env_or("SMARTARRAY_RANGE_PROPERTY_SEED", default_seed);
  const std::uint64_t operations = env_or("SMARTARRAY_RANGE_PROPERTY_OPS", default_operations);
  RangeProperty property(seed);
  const bool agreed = property.run(operations);
  std::cout << "range property test: " << sa::to_string(sa::backend()) << ": " << property.done()
            << " operations, " << (agreed ? 0 : 1) << " divergences (seed " << seed << ")\n";
}
