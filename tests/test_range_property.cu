// The property test of range-granular residency: random sequences of slice acquires (host and
// device, every access), element reads and writes, whole-array accesses, appends and truncations
// over arrays of a few tiles, checked after every operation against a model that keeps, for each
// element, its value and the places (the host, each device) that hold it. Each device operation
// runs on one of three streams of a device, both picked at random (SMARTARRAY_HOST_DEVICES=2 on the
// host backend, every GPU on the cuda backend), and nothing waits between operations: uses of
// overlapping ranges on two streams, one of them a write, must be ordered by the arrays (stream
// order by range), and a missing wait shows up as wrong contents in the runs at latency. Each
// array's own transfer counters must equal what the model predicts: one copy per stale run inside
// the range (from a peer device it can reach, else the host, else down to the host and up), element
// access by tile with the readahead policy, and a device reallocation moving what that device
// holds.
//
// SMARTARRAY_RANGE_PROPERTY_OPS (operations in all) and SMARTARRAY_RANGE_PROPERTY_SEED override
// the defaults; the GPU script runs a longer one. The last line says how many operations ran:
// "range property test: <backend>: <ops> operations, 0 divergences".
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
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

using smartarray::test::env_or;

namespace {

constexpr std::uint64_t default_seed = 20261125;
constexpr std::uint64_t default_operations = 30000;
/// A small tile, so that arrays of a few thousand elements span several.
constexpr std::size_t tile_bytes = 4096;
constexpr std::size_t per_tile = tile_bytes / sizeof(Value);
constexpr std::size_t max_elements = 6 * per_tile;
/// The streams of each device that the operations pick from.
constexpr int streams_per_device = 3;

/// The device operations (namespace scope: nvcc's extended lambdas cannot live in a test body).
void scale_view(sa::DeviceView<Value> v, sa::StreamRef stream) {
  sa::for_each_index(
      v.size(), [v] SMARTARRAY_HOST_DEVICE(std::size_t i) { v[i] = v[i] * 3 + 1; }, stream);
}
void fill_view(sa::DeviceView<Value> v, Value value, sa::StreamRef stream) {
  sa::for_each_index(
      v.size(), [v, value] SMARTARRAY_HOST_DEVICE(std::size_t i) { v[i] = value; }, stream);
}
void copy_view(sa::DeviceView<Value> to, sa::DeviceView<const Value> from, sa::StreamRef stream) {
  sa::for_each_index(
      to.size(), [to, from] SMARTARRAY_HOST_DEVICE(std::size_t i) { to[i] = from[i]; }, stream);
}

/// The places that hold an element, as in the library: bit 0 the host, bit 1 + d device d.
using Holder = std::uint32_t;
constexpr Holder on_host = 1;
constexpr Holder on_device(int device) { return Holder{2} << device; }
/// The lowest device of a non-empty mask of device ordinals.
int lowest(std::uint32_t devices) { return std::countr_zero(devices); }

/// The model of one array.
struct Model {
  std::vector<Value> values;
  std::vector<Holder> holder;               // per element: the places that hold it
  std::vector<std::size_t> device_capacity;  // per device: elements of its buffer
  // The run of element-access misses on consecutive tiles (ArrayCore::acquire_element).
  std::size_t miss_tile = 0;
  unsigned miss_run = 0;
  int miss_step = 0;
  sa::TransferStats expected{};

  [[nodiscard]] std::size_t size() const { return values.size(); }

  /// The copies that make [first, last) held by `device` (-1: the host), which copies directly
  /// from the devices in `reach`: consecutive elements that come the same way are one copy.
  /// Returns the elements staged through the host (a device read of data that only devices it
  /// cannot reach hold).
  std::vector<bool> copy_runs(int device, std::size_t first, std::size_t last,
                              std::uint32_t reach) {
    std::vector<bool> staged(last - first, false);
    // The copy being extended in each direction: its source (device, or -1 for the host) and end.
    int down_source = -2;
    std::size_t down_end = 0;
    int up_source = -2;
    std::size_t up_end = 0;
    const auto down = [&](std::size_t i, int source, bool stage) {
      if (down_source == source && down_end == i) {
        expected.d2h_bytes += sizeof(Value);
        if (stage) expected.staged_bytes += sizeof(Value);
      } else {
        ++expected.d2h_count;
        expected.d2h_bytes += sizeof(Value);
        if (stage) {
          ++expected.staged_count;
          expected.staged_bytes += sizeof(Value);
        }
      }
      down_source = source;
      down_end = i + 1;
    };
    const auto up = [&](std::size_t i, int source) {
      const bool peer = source >= 0;
      if (up_source == source && up_end == i) {
        (peer ? expected.d2d_peer_bytes : expected.h2d_bytes) += sizeof(Value);
      } else {
        ++(peer ? expected.d2d_peer_count : expected.h2d_count);
        (peer ? expected.d2d_peer_bytes : expected.h2d_bytes) += sizeof(Value);
      }
      up_source = source;
      up_end = i + 1;
    };
    for (std::size_t i = first; i < last; ++i) {
      const Holder h = holder[i];
      const std::uint32_t devices = h >> 1;
      if (device < 0) {
        if ((h & on_host) == 0) down(i, lowest(devices), false);
        continue;
      }
      if ((h & on_device(device)) != 0) continue;
      if ((devices & reach) != 0) {
        up(i, lowest(devices & reach));
      } else if ((h & on_host) != 0) {
        up(i, -1);
      } else {
        down(i, lowest(devices), true);
        up(i, -1);
        staged[i - first] = true;
      }
    }
    return staged;
  }
  /// An acquire of [first, last) on `device` (-1: the host; a device's buffer is checked first).
  void acquire(int device, Access access, std::size_t first, std::size_t last,
               std::size_t host_capacity, std::uint32_t reach) {
    if (device >= 0 && device_capacity[static_cast<std::size_t>(device)] < size()) {
      std::size_t& capacity = device_capacity[static_cast<std::size_t>(device)];
      std::size_t extent = size();
      while (extent > 0 && (holder[extent - 1] & on_device(device)) == 0) --extent;
      const bool overwrites_all = access == Access::discard && first == 0 && last == size();
      if (capacity > 0 && !overwrites_all && extent > 0) {
        ++expected.d2d_count;
        expected.d2d_bytes += extent * sizeof(Value);
      }
      capacity = std::max(host_capacity, size());
    }
    std::vector<bool> staged(last - first, false);
    if (access != Access::discard) staged = copy_runs(device, first, last, reach);
    const Holder place = device < 0 ? on_host : on_device(device);
    for (std::size_t i = first; i < last; ++i) {
      holder[i] = access == Access::read ? holder[i] | place | (staged[i - first] ? on_host : 0U)
                                         : place;
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
          acquire(-1, Access::read, first, size(), 0, 0);
        } else {
          acquire(-1, Access::read, 0, last, 0, 0);
        }
      }
    }
    acquire(-1, access, first, last, 0, 0);
  }
};

class RangeProperty {
 public:
  explicit RangeProperty(std::uint64_t seed) : rng_(seed) {
    for (int device = 0; device < sa::device_count(); ++device) {
      streams_.emplace_back();
      for (int k = 0; k < streams_per_device; ++k) streams_.back().emplace_back(sa::Device{device});
      std::uint32_t reach = 0;
      for (int owner = 0; owner < sa::device_count(); ++owner) {
        if (owner != device && sa::peer_access(sa::Device{device}, sa::Device{owner})) {
          reach |= 1U << owner;
        }
      }
      reach_.push_back(reach);
    }
  }

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
      model.device_capacity.assign(streams_.size(), 0);
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
    const int device = static_cast<int>(pick(streams_.size()));
    const sa::StreamRef stream =
        streams_[static_cast<std::size_t>(device)][pick(streams_per_device)];
    const std::uint32_t reach = reach_[static_cast<std::size_t>(device)];
    bool ok = true;
    switch (pick(12)) {
      case 0: {  // slice host read
        log_ << "slice(" << first << ", " << count << ").host_view()";
        const std::span<const Value> view = std::as_const(a).slice(first, count).host_view();
        m.acquire(-1, Access::read, first, first + count, a.capacity(), 0);
        ok = std::equal(view.begin(), view.end(), m.values.begin() + first);
        break;
      }
      case 1: {  // slice host write (read_write or discard)
        const Access write = access == Access::read ? Access::read_write : access;
        log_ << "slice(" << first << ", " << count << ").host_view(" << sa::to_string(write) << ")";
        const std::span<Value> view = a.slice(first, count).host_view(write);
        m.acquire(-1, write, first, first + count, a.capacity(), 0);
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
             << ") on device " << device;
        if (count == 0) break;
        if (access == Access::read) {
          SmartArray<Value> scratch(count);
          copy_view(scratch.device_view(Access::discard, stream),
                    std::as_const(a).slice(first, count).device_view(stream), stream);
          m.acquire(device, Access::read, first, first + count, a.capacity(), reach);
          const std::span<const Value> got = std::as_const(scratch).host_view();
          ok = std::equal(got.begin(), got.end(), m.values.begin() + first);
        } else if (access == Access::read_write) {
          scale_view(a.slice(first, count).device_view(Access::read_write, stream), stream);
          m.acquire(device, access, first, first + count, a.capacity(), reach);
          for (std::size_t k = first; k < first + count; ++k) m.values[k] = m.values[k] * 3 + 1;
        } else {
          const Value fill = value();
          fill_view(a.slice(first, count).device_view(Access::discard, stream), fill, stream);
          m.acquire(device, access, first, first + count, a.capacity(), reach);
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
        m.acquire(-1, Access::read, 0, n, a.capacity(), 0);
        ok = std::equal(view.begin(), view.end(), m.values.begin(), m.values.end());
        break;
      }
      case 8: {  // whole device read_write
        log_ << "device_view(read_write) on device " << device;
        if (n == 0) break;
        scale_view(a.device_view(Access::read_write, stream), stream);
        m.acquire(device, Access::read_write, 0, n, a.capacity(), reach);
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
        .d2d_peer_count = after.d2d_peer_count - before.d2d_peer_count,
        .d2d_peer_bytes = after.d2d_peer_bytes - before.d2d_peer_bytes,
        .staged_count = after.staged_count - before.staged_count,
        .staged_bytes = after.staged_bytes - before.staged_bytes,
    };
    const sa::TransferStats& want = m.expected;
    if (made.h2d_count != want.h2d_count || made.h2d_bytes != want.h2d_bytes ||
        made.d2h_count != want.d2h_count || made.d2h_bytes != want.d2h_bytes ||
        made.d2d_count != want.d2d_count || made.d2d_bytes != want.d2d_bytes ||
        made.d2d_peer_count != want.d2d_peer_count ||
        made.d2d_peer_bytes != want.d2d_peer_bytes || made.staged_count != want.staged_count ||
        made.staged_bytes != want.staged_bytes) {
      log_ << ": transfers " << made.to_string() << "; the model: " << want.to_string();
      return false;
    }
    return a.size() == m.size();
  }

  std::mt19937_64 rng_;
  std::vector<std::vector<sa::Stream>> streams_;  // per device, streams_per_device
  std::vector<std::uint32_t> reach_;  // per device: the devices it copies from directly
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
