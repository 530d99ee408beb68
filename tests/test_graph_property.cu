// The property test of graphs: random sequences that interleave replays of one captured graph
// with host writes and reads and eager device work, on two streams, checked after every operation
// against a model that keeps each element's value and, per tile, which sides hold it. Each
// array's own counters must equal what the model predicts: a replay copies one run per stale run
// of the graph's precondition and waits for nothing; a host read copies back one run per stale
// run. Run under SMARTARRAY_HOST_LATENCY_US too, a missing wait shows up as a wrong value.
//
// SMARTARRAY_GRAPH_PROPERTY_OPS and SMARTARRAY_GRAPH_PROPERTY_SEED override the defaults. The last
// line says how many operations ran: "graph property test: <ops> operations, <launches> launches".
#include "support/graph_ops.cuh"
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using u32 = std::uint32_t;

using smartarray::test::env_or;
using smartarray::test::graphs::Axpy;
using smartarray::test::graphs::Mix;

namespace {

constexpr std::size_t tile_bytes = 4096;
constexpr std::size_t per_tile = tile_bytes / sizeof(u32);
constexpr std::size_t tiles = 5;
constexpr std::size_t n = tiles * per_tile;
/// The graph works on the first `graph_tiles` tiles of each array.
constexpr std::size_t graph_tiles = 4;
constexpr std::size_t graph_n = graph_tiles * per_tile;

/// One array: its values, and per tile whether the host and the device hold it.
struct Model {
  std::vector<u32> values;
  std::vector<bool> host = std::vector<bool>(tiles, true);
  std::vector<bool> device = std::vector<bool>(tiles, false);
};

/// Maximal runs of tiles in [0, last) that `held` lacks: the copies of a bulk acquire.
std::uint64_t stale_runs(const std::vector<bool>& held, std::size_t last) {
  std::uint64_t runs = 0;
  for (std::size_t t = 0; t < last; ++t) runs += !held[t] && (t == 0 || held[t - 1]);
  return runs;
}
std::uint64_t stale_bytes(const std::vector<bool>& held, std::size_t last) {
  std::uint64_t bytes = 0;
  for (std::size_t t = 0; t < last; ++t) bytes += held[t] ? 0 : tile_bytes;
  return bytes;
}

class GraphProperty {
 public:
  explicit GraphProperty(std::uint64_t seed) : rng_(seed) {
    for (Model* m : {&mx_, &my_}) {
      m->values.resize(n);
      for (u32& value : m->values) value = static_cast<u32>(rng_());
    }
    x_ = SmartArray<u32>(mx_.values);
    y_ = SmartArray<u32>(my_.values);
    // y[0, graph_n) = 5 x + y; then y = mix(y, x) on the same range.
    graph_ = sa::capture(streams_[0], [&](sa::StreamRef s) {
      sa::transform(y_.slice(0, graph_n), Axpy{5}, x_.slice(0, graph_n), y_.slice(0, graph_n), s);
      sa::transform(y_.slice(0, graph_n), Mix{}, y_.slice(0, graph_n), x_.slice(0, graph_n), s);
    });
  }

  void step() {
    switch (rng_() % 6) {
      case 0:
      case 1: launch(); break;
      case 2: host_write_element(rng_() % 2 == 0); break;
      case 3: host_read(rng_() % 2 == 0); break;
      case 4: eager_x(); break;
      default: host_write_all(); break;
    }
  }
  [[nodiscard]] std::uint64_t launches() const noexcept { return launches_; }

 private:
  sa::StreamRef any_stream() { return streams_[rng_() % 2]; }

  void launch() {
    const std::uint64_t waits = sa::global_counters().snapshot().wait_count;
    {
      sa::ExpectTransfers on_x(x_.counters(), {.h2d = stale_runs(mx_.device, graph_tiles),
                                               .h2d_bytes = stale_bytes(mx_.device, graph_tiles)});
      sa::ExpectTransfers on_y(y_.counters(), {.h2d = stale_runs(my_.device, graph_tiles),
                                               .h2d_bytes = stale_bytes(my_.device, graph_tiles)});
      graph_.launch(any_stream());
    }
    ASSERT_EQ(sa::global_counters().snapshot().wait_count, waits) << "a launch waited";
    ++launches_;
    for (std::size_t i = 0; i < graph_n; ++i) {
      const u32 y = 5 * mx_.values[i] + my_.values[i];
      my_.values[i] = Mix{}(y, mx_.values[i]);
    }
    for (std::size_t t = 0; t < graph_tiles; ++t) {
      mx_.device[t] = true;
      my_.device[t] = true;
      my_.host[t] = false;
    }
  }

  /// An element of a tile that the host holds (no copy): the tile becomes stale on the device.
  void host_write_element(bool of_x) {
    SmartArray<u32>& a = of_x ? x_ : y_;
    Model& m = of_x ? mx_ : my_;
    const std::size_t t = rng_() % tiles;
    if (!m.host[t]) return;
    const std::size_t i = t * per_tile + rng_() % per_tile;
    m.values[i] = static_cast<u32>(rng_());
    {
      sa::ExpectTransfers none(a.counters(), {});
      a[i] = m.values[i];
    }
    m.device[t] = false;
  }

  void host_read(bool of_x) {
    SmartArray<u32>& a = of_x ? x_ : y_;
    Model& m = of_x ? mx_ : my_;
    {
      sa::ExpectTransfers back(a.counters(), {.d2h = stale_runs(m.host, tiles),
                                              .d2h_bytes = stale_bytes(m.host, tiles)});
      const auto view = std::as_const(a).host_view();
      ASSERT_TRUE(std::equal(view.begin(), view.end(), m.values.begin()))
          << (of_x ? "x" : "y") << " differs after " << launches_ << " launches";
    }
    m.host.assign(tiles, true);
  }

  /// x = 3 x + 1 on the device, eagerly.
  void eager_x() {
    {
      sa::ExpectTransfers up(x_.counters(), {.h2d = stale_runs(mx_.device, tiles),
                                             .h2d_bytes = stale_bytes(mx_.device, tiles)});
      sa::transform(x_, Axpy{3}, x_, 1U, any_stream());
    }
    for (u32& value : mx_.values) value = 3 * value + 1;
    mx_.device.assign(tiles, true);
    mx_.host.assign(tiles, false);
  }

  /// Every element of y written on the host (a read_write view: the stale runs come back first).
  void host_write_all() {
    {
      sa::ExpectTransfers back(y_.counters(), {.d2h = stale_runs(my_.host, tiles),
                                               .d2h_bytes = stale_bytes(my_.host, tiles)});
      const auto view = y_.host_view(Access::read_write);
      for (std::size_t i = 0; i < n; ++i) view[i] = my_.values[i] = view[i] + 11;
    }
    my_.host.assign(tiles, true);
    my_.device.assign(tiles, false);
  }

  std::mt19937_64 rng_;
  Model mx_;
  Model my_;
  sa::Stream streams_[2];
  SmartArray<u32> x_;
  SmartArray<u32> y_;
  sa::Graph graph_;
  std::uint64_t launches_ = 0;
};

}  // namespace

TEST(GraphProperty, ReplaysInterleavedWithHostAndDeviceWorkMatchTheModel) {
  const std::uint64_t seed = env_or("SMARTARRAY_GRAPH_PROPERTY_SEED", 20261127);
  const std::uint64_t operations = env_or("SMARTARRAY_GRAPH_PROPERTY_OPS", 3000);
  GraphProperty property(seed);
  for (std::uint64_t op = 0; op < operations; ++op) {
    property.step();
    if (::testing::Test::HasFatalFailure() || ::testing::Test::HasNonfatalFailure()) {
      FAIL() << "seed " << seed << ", operation " << op;
    }
  }
  std::cout << "graph property test: " << operations << " operations, " << property.launches()
            << " launches\n";
}
