// The fault-injection sweep. Each scenario is a script of public API calls ("steps") over a few
// arrays, with a std::vector model of what each array holds. The sweep runs a scenario once per
// injection point: the k-th allocation (then, separately, the k-th copy) from the scenario's start
// fails, for k = 1, 2, ... until a run ends with its failure still pending (never reached).
//
// When a step throws, the sweep checks that the message names the operation and its bytes, that
// every array still holds what the model committed before that step, and then clears the fault and
// retries the step, so the rest of the script runs and its results are checked too. Each run must
// also hand every pool block back. Leaks of host memory are caught by running this binary under
// LeakSanitizer (the asan preset).
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/memory/default_resources.hpp>
#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::testing::Fault;
using sa::test::random_value;
using sa::test::random_values;

namespace {

using sa::test::copy_on_device;
using sa::test::fill_on_device;
using sa::test::host_copy;
using sa::test::scale_on_device;
using sa::test::scaled;

constexpr std::size_t n = 1000;
/// Far more than any scenario reaches: a sweep that gets here never ends.
constexpr std::uint64_t max_points = 2000;

const char* to_string(Fault kind) { return kind == Fault::allocation ? "allocation" : "copy"; }

/// The poison written over outputs, as a float that compares equal to itself.
const float poison_value = std::bit_cast<float>(0xA5A5A5A5U);

/// Totals over every sweep of the process, printed once at the end.
struct Totals {
  std::uint64_t points = 0;    ///< injection points reached (the armed failure fired)
  std::uint64_t thrown = 0;    ///< of those, the ones that reached the caller as an exception
  std::uint64_t lost = 0;      ///< checks that found an array's contents differing from the model
  std::uint64_t unnamed = 0;   ///< exceptions whose message did not name the operation
  std::uint64_t leaked = 0;    ///< runs after which a pool had more bytes in use than before
};

Totals& totals() {
  static Totals all;
  return all;
}

/// Prints the line that docs/reliability.md quotes, after the last test.
class SweepSummary : public ::testing::Environment {
 public:
  void TearDown() override {
    const Totals& all = totals();
    if (all.points == 0) return;  // skipped (no device), or filtered out
    std::cout << "fault sweep: " << all.points << " injection points, " << all.lost
              << " lost contents (" << all.thrown << " thrown, " << all.unnamed
              << " unnamed, " << all.leaked << " leaking runs)\n";
  }
};
[[maybe_unused]] ::testing::Environment* const sweep_summary =
    ::testing::AddGlobalTestEnvironment(new SweepSummary);  // gtest takes ownership

/// The two streams of the multi-stream scenario. Made once and never destroyed, like the runtime.
struct Streams {
  sa::Stream first;
  sa::Stream second;
};
Streams& streams() {
  static auto* both = new Streams;
  return *both;
}

/// Bytes in use in the default pools: a run must give back everything it took.
std::pair<std::size_t, std::size_t> pool_bytes_in_use() {
  return {sa::default_device_pool().bytes_in_use(), sa::default_pinned_pool().bytes_in_use()};
}

/**
 * One run of a scenario with one armed failure. Scenarios call `watch` for each array with its
 * model, `step` for each API call, and `finish` at the end.
 */
class Run {
 public:
  Run(std::string scenario, Fault kind, std::uint64_t nth)
      : scenario_(std::move(scenario)), kind_(kind), nth_(nth) {}

  /// Checks `array` against `model` after every failure and at the end.
  template <typename T>
  void watch(const char* name, const SmartArray<T>& array, const std::vector<T>& model) {
    checks_.push_back([name, &array, &model]() -> std::string {
      const std::vector<T> got = host_copy(array);
      if (got == model) return {};
      return mismatch(name, got, model);
    });
  }
  /// The same for an array that a step constructs (empty until then).
  template <typename T>
  void watch(const char* name, const std::optional<SmartArray<T>>& array,
             const std::vector<T>& model) {
    checks_.push_back([name, &array, &model]() -> std::string {
      if (!array) return {};
      const std::vector<T> got = host_copy(*array);
      if (got == model) return {};
      return mismatch(name, got, model);
    });
  }

  /// Runs `action`; when it throws, checks the message and the contents, clears the fault and
  /// runs it again. Then `commit` updates the models.
  template <typename Action, typename Commit>
  void step(const char* what, Action&& action, Commit&& commit) {
    try {
      action();
    } catch (const std::exception& error) {
      sa::testing::clear_injected_failures();
      ++totals().thrown;
      check_message(what, error.what());
      check_contents(what);
      action();
    }
    commit();
  }
  template <typename Action>
  void step(const char* what, Action&& action) {
    step(what, std::forward<Action>(action), [] {});
  }

  /// Ends the run: notes whether the failure was reached, disarms it and checks every array.
  void finish() {
    reached_ = !sa::testing::failure_pending(kind_);
    sa::testing::clear_injected_failures();
    check_contents("the end of the scenario");
  }

  [[nodiscard]] bool reached() const noexcept { return reached_; }

 private:
  template <typename T>
  static std::string mismatch(const char* name, const std::vector<T>& got,
                              const std::vector<T>& want) {
    std::size_t first = 0;
    while (first < got.size() && first < want.size() && got[first] == want[first]) ++first;
    return sa::detail::concat(name, ": size ", got.size(), " (model ", want.size(),
                              "), first difference at element ", first);
  }

  [[nodiscard]] std::string where() const {
    return sa::detail::concat(scenario_, ", ", to_string(kind_), " failure #", nth_);
  }

  void check_message(const char* what, std::string_view message) const {
    static constexpr std::string_view operations[] = {
        "device allocation", "pinned host allocation", "managed allocation", "pool allocate",
        "host-to-device",    "device-to-host",         "device-to-device",   "managed prefetch"};
    bool named = false;
    for (const std::string_view operation : operations) {
      named = named || message.find(operation) != std::string_view::npos;
    }
    if (named && message.find(" bytes") != std::string_view::npos) return;
    ++totals().unnamed;
    ADD_FAILURE() << where() << ", step '" << what
                  << "': the message does not name the operation and its bytes: " << message;
  }

  void check_contents(const char* when) const {
    for (const auto& check : checks_) {
      const std::string problem = check();
      if (problem.empty()) continue;
      ++totals().lost;
      ADD_FAILURE() << where() << ", after " << when << ": " << problem;
    }
  }

  std::string scenario_;
  Fault kind_;
  std::uint64_t nth_;
  bool reached_ = false;
  std::vector<std::function<std::string()>> checks_;
};

/// Sweeps `scenario` over every allocation and every copy it makes; prints and returns the points.
template <typename Scenario>
std::uint64_t sweep(const char* name, Scenario scenario) {
  sa::test::ClearFaults clear;
  std::uint64_t all_points = 0;
  for (const Fault kind : {Fault::allocation, Fault::copy}) {
    std::uint64_t points = 0;
    for (std::uint64_t nth = 1; nth <= max_points; ++nth) {
      const auto pools_before = pool_bytes_in_use();
      Run run(name, kind, nth);
      sa::testing::inject_failure(kind, nth);
      try {
        scenario(run);
      } catch (const std::exception& error) {
        sa::testing::clear_injected_failures();
        ADD_FAILURE() << name << ", " << to_string(kind) << " failure #" << nth
                      << ": the scenario failed after the fault was cleared: " << error.what();
        break;
      }
      if (pool_bytes_in_use() != pools_before) {
        ++totals().leaked;
        ADD_FAILURE() << name << ", " << to_string(kind) << " failure #" << nth
                      << ": pool bytes in use (device, pinned) went from "
                      << pools_before.first << ", " << pools_before.second << " to "
                      << pool_bytes_in_use().first << ", " << pool_bytes_in_use().second;
      }
      if (!run.reached()) break;
      ++points;
      EXPECT_LT(nth, max_points) << name << ": the sweep did not end";
    }
    std::cout << "fault sweep: " << name << ": " << points << " " << to_string(kind)
              << " points\n";
    EXPECT_GT(points, 0U) << name << " reached no " << to_string(kind);
    all_points += points;
  }
  totals().points += all_points;
  return all_points;
}

// --- the scenarios ---------------------------------------------------------------------------

void construction(Run& run) {
  const auto values = random_values<float>(n);
  const float fill = random_value<float>();
  std::optional<SmartArray<float>> a, b, c;
  std::vector<float> ma, mb, mc;
  run.watch("a", a, ma);
  run.watch("b", b, mb);
  run.watch("c", c, mc);
  run.step("SmartArray(vector)", [&] { a.emplace(values); }, [&] { ma = values; });
  run.step("SmartArray(n, value)", [&] { b.emplace(n, fill); }, [&] { mb.assign(n, fill); });
  run.step("SmartArray(first, last)", [&] { c.emplace(values.begin(), values.begin() + n / 2); },
           [&] { mc.assign(values.begin(), values.begin() + n / 2); });
  run.step("kernel read_write on a", [&] { scale_on_device(*a); }, [&] { ma = scaled(ma); });
  run.step("kernel a -> b", [&] { copy_on_device(*b, *a); }, [&] { mb = ma; });
  run.finish();
}

void push_back_growth(Run& run) {
  const auto values = random_values<float>(100);
  const auto tail = random_values<float>(300);
  SmartArray<float> a(values);
  std::vector<float> model = values;
  run.watch("a", a, model);
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  // Appends while the device is valid: the host buffer reallocates twice.
  for (std::size_t i = 0; i < 200; ++i) {
    run.step("push_back after a device write", [&] { a.push_back(tail[i]); },
             [&] { model.push_back(tail[i]); });
  }
  run.step("kernel over the appended tail", [&] { scale_on_device(a); },
           [&] { model = scaled(model); });
  for (std::size_t i = 200; i < tail.size(); ++i) {
    run.step("push_back while the host is stale", [&] { a.push_back(tail[i]); },
             [&] { model.push_back(tail[i]); });
  }
  run.step("host read of the stale prefix", [&] { (void)std::as_const(a)[0]; });
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.finish();
}

void resize(Run& run) {
  const auto values = random_values<float>(n);
  const float first_fill = random_value<float>();
  const float second_fill = random_value<float>();
  SmartArray<float> a(values);
  std::vector<float> model = values;
  run.watch("a", a, model);
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.step("resize up while the host is stale", [&] { a.resize(n + 500, first_fill); },
           [&] { model.resize(n + 500, first_fill); });
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.step("resize down", [&] { a.resize(n / 2); }, [&] { model.resize(n / 2); });
  run.step("resize up past the capacity", [&] { a.resize(4 * n, second_fill); },
           [&] { model.resize(4 * n, second_fill); });
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.step("resize up with value-initialized elements", [&] { a.resize(5 * n); },
           [&] { model.resize(5 * n); });
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.finish();
}

void reserve(Run& run) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  std::vector<float> model = values;
  run.watch("a", a, model);
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.step("reserve while the host is stale", [&] { a.reserve(4 * n); });
  run.step("host read", [&] { (void)std::as_const(a).host_view(); });
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.step("host read", [&] { (void)std::as_const(a)[0]; });
  run.step("reserve while both sides hold data", [&] { a.reserve(8 * n); });
  run.step("push_back", [&] { a.push_back(1.5F); }, [&] { model.push_back(1.5F); });
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.finish();
}

void copy_construction(Run& run) {
  const auto values = random_values<float>(n);
  const auto other = random_values<float>(n / 3);
  SmartArray<float> a(values);
  SmartArray<float> e(other);
  std::optional<SmartArray<float>> host_copy_of_a, device_copy_of_a, mixed_copy_of_a;
  std::vector<float> model = values, m_host, m_device, m_mixed, m_e = other;
  run.watch("a", a, model);
  run.watch("e", e, m_e);
  run.watch("host-valid copy", host_copy_of_a, m_host);
  run.watch("device-valid copy", device_copy_of_a, m_device);
  run.watch("mixed copy", mixed_copy_of_a, m_mixed);
  run.step("copy of a host-valid array", [&] { host_copy_of_a.emplace(a); },
           [&] { m_host = model; });
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.step("copy of a device-valid array", [&] { device_copy_of_a.emplace(a); },
           [&] { m_device = model; });
  run.step("push_back after a device write", [&] { a.push_back(2.5F); },
           [&] { model.push_back(2.5F); });
  run.step("copy of a device prefix with a host tail", [&] { mixed_copy_of_a.emplace(a); },
           [&] { m_mixed = model; });
  // Copy assignment has the strong guarantee: a failed one leaves `e` as it was.
  run.step("copy assignment", [&] { e = a; }, [&] { m_e = model; });
  run.step("kernel on the device-valid copy", [&] { scale_on_device(*device_copy_of_a); },
           [&] { m_device = scaled(m_device); });
  run.step("kernel on the mixed copy", [&] { scale_on_device(*mixed_copy_of_a); },
           [&] { m_mixed = scaled(m_mixed); });
  run.step("kernel on a", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.finish();
}

void device_views(Run& run) {
  const auto values = random_values<float>(n);
  const float fill = random_value<float>();
  SmartArray<float> a(values);
  SmartArray<float> out(n, poison_value);
  std::vector<float> model = values, m_out(n, poison_value);
  run.watch("a", a, model);
  run.watch("out", out, m_out);
  run.step("device read of a, discard of out", [&] { copy_on_device(out, a); },
           [&] { m_out = model; });
  run.step("device read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.step("device discard", [&] { fill_on_device(a, fill); }, [&] { model.assign(n, fill); });
  run.step("host write", [&] { a[n / 2] = 0.5F; }, [&] { model[n / 2] = 0.5F; });
  run.step("device read after a host write", [&] { copy_on_device(out, a); },
           [&] { m_out = model; });
  run.finish();
}

void host_views(Run& run) {
  const auto values = random_values<float>(n);
  const auto fresh = random_values<float>(n);
  SmartArray<float> a(values);
  std::vector<float> model = values;
  run.watch("a", a, model);
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.step("host_view(read)", [&] { (void)a.host_view(Access::read); });
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.step(
      "host_view(read_write)",
      [&] {
        const auto host = a.host_view(Access::read_write);
        for (float& x : host) x += 1.0F;
      },
      [&] {
        for (float& x : model) x += 1.0F;
      });
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.step(
      "host_view(discard)",
      [&] {
        const auto host = a.host_view(Access::discard);
        std::copy(fresh.begin(), fresh.end(), host.begin());
      },
      [&] { model = fresh; });
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { model = scaled(model); });
  run.step("const element access", [&] { (void)std::as_const(a)[n - 1]; });
  run.step("non-const element access", [&] { a[1] = 4.5F; }, [&] { model[1] = 4.5F; });
  run.finish();
}

/// v[i] = v[i] * 2 + 1 on the device.
void scale_view(sa::DeviceView<float> v) {
  sa::for_each_index(v.size(), [v] SMARTARRAY_HOST_DEVICE(std::size_t i) { v[i] = v[i] * 2 + 1; });
}

void slices_and_elements(Run& run) {
  // Three tiles and a bit, so that element access and slices move parts of the array.
  constexpr std::size_t per_tile = sa::TileSize{}.bytes() / sizeof(float);
  constexpr std::size_t big = 3 * per_tile + 100;
  const auto values = random_values<float>(big);
  const float fill = random_value<float>();
  SmartArray<float> a(values);
  std::vector<float> model = values;
  run.watch("a", a, model);
  const auto scale_model = [&](std::size_t first, std::size_t count) {
    for (std::size_t i = first; i < first + count; ++i) model[i] = model[i] * 2 + 1;
  };
  run.step("kernel read_write", [&] { scale_on_device(a); }, [&] { scale_model(0, big); });
  run.step("const element read of a stale tile",
           [&] { (void)std::as_const(a)[per_tile + 5]; });
  run.step("non-const element write of a stale tile", [&] { a[2 * per_tile + 1] = 6.5F; },
           [&] { model[2 * per_tile + 1] = 6.5F; });
  run.step(
      "slice device read_write",
      [&] { scale_view(a.slice(per_tile - 50, 100).device_view(Access::read_write)); },
      [&] { scale_model(per_tile - 50, 100); });
  run.step("slice host read",
           [&] { (void)std::as_const(a).slice(per_tile - 60, 200).host_view(); });
  run.step("slice device discard",
           [&] { sa::test::fill_view(a.slice(10, 30).device_view(Access::discard), fill); },
           [&] { std::fill(model.begin() + 10, model.begin() + 40, fill); });
  run.step(
      "slice host write",
      [&] {
        const std::span<float> tail = a.slice(big - 20, 20).host_view();
        for (float& x : tail) x += 1.0F;
      },
      [&] {
        for (std::size_t i = big - 20; i < big; ++i) model[i] += 1.0F;
      });
  run.step("kernel read_write after partial writes", [&] { scale_on_device(a); },
           [&] { scale_model(0, big); });
  run.step("sequential element reads (readahead)", [&] {
    float sum = 0;
    for (std::size_t i = 0; i < big; ++i) sum += std::as_const(a)[i];
    EXPECT_EQ(sum, std::accumulate(model.begin(), model.end(), 0.0F));
  });
  run.finish();
}

void two_streams(Run& run) {
  const sa::StreamRef first = streams().first;
  const sa::StreamRef second = streams().second;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  SmartArray<float> b(n, poison_value);
  std::vector<float> ma = values, mb(n, poison_value);
  run.watch("a", a, ma);
  run.watch("b", b, mb);
  run.step("kernel on the first stream", [&] { scale_on_device(a, first); },
           [&] { ma = scaled(ma); });
  run.step("copy a -> b on the second stream", [&] { copy_on_device(b, a, second); },
           [&] { mb = ma; });
  run.step("kernel on b on the first stream", [&] { scale_on_device(b, first); },
           [&] { mb = scaled(mb); });
  run.step("kernel on a on the second stream", [&] { scale_on_device(a, second); },
           [&] { ma = scaled(ma); });
  run.step("host read of a through the first stream",
           [&] { (void)std::as_const(a).host_view(first); });
  run.step("host write of b", [&] { b[0] = 8.5F; }, [&] { mb[0] = 8.5F; });
  run.step("kernel on b on the second stream", [&] { scale_on_device(b, second); },
           [&] { mb = scaled(mb); });
  run.finish();
}

}  // namespace

TEST(FaultSweep, Construction) { sweep("construction", construction); }
TEST(FaultSweep, PushBackGrowth) { sweep("push_back growth", push_back_growth); }
TEST(FaultSweep, Resize) { sweep("resize", resize); }
TEST(FaultSweep, Reserve) { sweep("reserve", reserve); }
TEST(FaultSweep, CopyConstructionAndAssignment) { sweep("copy construction", copy_construction); }
TEST(FaultSweep, DeviceViews) { sweep("device views", device_views); }
TEST(FaultSweep, HostViewsAfterDeviceWrites) { sweep("host views", host_views); }
TEST(FaultSweep, TwoStreams) { sweep("two streams", two_streams); }
TEST(FaultSweep, SlicesAndElementAccess) {
  sweep("slices and element access", slices_and_elements);
}
