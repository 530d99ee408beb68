// The contenders of bench_pipelines' workloads, and `measure`, which runs any of them.
//
// A workload (pipelines/elementwise.cu, chain.cu, iterative.cu) is a base class derived from
// `Contender`: it makes the host inputs and checks the results against its host reference. Each of
// its seven contenders is a small class derived from that base: it puts the inputs where it keeps
// them (set up), makes one call of the workload (the timed part) and hands its results to the
// check. What all of them share is written once, in `measure`: the contenders that need CUDA are
// skipped on the host backend, CallTimer brackets the calls, and a failed check fails the run.
#pragma once

#include <smartarray/runtime/stream.hpp>

#include "bench_support.cuh"

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <utility>

namespace smartarray::bench::pipelines {

/// The contenders of every workload but bandwidth.
enum class ContenderKind {
  naive,
  explicit_copies,
  smartarray,
  managed_prefetch,
  managed,
  mapped,
  thrust
};

/// The contenders as their benchmark names call them, in the order of the published tables.
inline constexpr std::pair<const char*, ContenderKind> contender_kinds[] = {
    {"naive", ContenderKind::naive},
    {"explicit", ContenderKind::explicit_copies},
    {"smartarray", ContenderKind::smartarray},
    {"managed_prefetch", ContenderKind::managed_prefetch},
    {"managed", ContenderKind::managed},
    {"mapped", ContenderKind::mapped},
    {"thrust", ContenderKind::thrust},
};

/// Managed and mapped memory and Thrust are CUDA itself; the host backend does not emulate them.
constexpr bool cuda_only(ContenderKind kind) {
  return kind != ContenderKind::naive && kind != ContenderKind::explicit_copies &&
         kind != ContenderKind::smartarray;
}

/// Runs that failed a check: main's exit status.
[[nodiscard]] int failed_runs();

/**
 * @brief What a contender's check reports to: its benchmark run, and the calls that CallTimer
 *        made. A failed check fails the run, with a message that starts with "FAILED".
 */
class Checks {
 public:
  /// @brief Checks the run `state`, whose calls `timer` made.
  Checks(benchmark::State& state, const CallTimer& timer) : state_(state), timer_(timer) {}

  /// @brief The calls made, the warm-up included.
  [[nodiscard]] std::int64_t calls() const noexcept { return timer_.calls(); }

  /// @brief Compares results with the host reference `expected(i)`, within `tolerance` relative
  ///        to max(1, |expected|).
  template <typename Expected>
  void results(std::span<const float> got, Expected expected, double tolerance) {
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double e = expected(i);
      if (std::fabs(static_cast<double>(got[i]) - e) > tolerance * std::fmax(1.0, std::fabs(e))) {
        char line[160];
        std::snprintf(line, sizeof line, "result %zu is %.9g, host reference %.9g", i,
                      static_cast<double>(got[i]), e);
        fail(line);
        return;
      }
    }
  }

  /// @brief Publishes the smartarray contender's copies per timed call, and fails the run when
  ///        they are not the ones the residency contract promises.
  void transfers(std::uint64_t h2d, std::uint64_t d2h);

 private:
  void fail(const std::string& why);

  benchmark::State& state_;
  const CallTimer& timer_;
};

/**
 * @brief One contender of one workload. `measure` sets it up, makes a warm-up call and one timed
 *        call per iteration, checks it and tears it down.
 */
class Contender {
 public:
  /// @brief Works on `stream`, which is idle when a timed call starts.
  explicit Contender(StreamRef stream) : stream_(stream), raw_(stream) {}
  virtual ~Contender() = default;
  Contender(const Contender&) = delete;
  Contender& operator=(const Contender&) = delete;

  /// @brief Makes the inputs of a call over `n` elements and allocates and fills what the
  ///        contender keeps them in.
  virtual void set_up(std::size_t n) = 0;
  /// @brief One call of the workload: the timed part.
  virtual void call() = 0;
  /// @brief The bytes that one call moves, for SetBytesProcessed; 0 reports none.
  [[nodiscard]] virtual std::size_t bytes_per_call() const { return 0; }
  /// @brief Checks the results of the calls made against the host reference.
  virtual void check(Checks& checks) = 0;
  /// @brief Frees what `set_up` allocated and no destructor frees.
  virtual void tear_down() {}

 protected:
  StreamRef stream_;
  Raw raw_;
};

/// Makes the contender `kind` of one workload, working on `stream`.
using Factory = std::unique_ptr<Contender> (*)(ContenderKind kind, StreamRef stream);

/// The factory of a workload whose contenders are these classes. Each is constructed from the
/// stream; `Managed` also takes the kind, which says whether it prefetches.
template <typename Naive, typename ExplicitCopies, typename WithSmartArray, typename Managed,
          typename Mapped, typename Thrust>
std::unique_ptr<Contender> make_contender(ContenderKind kind, StreamRef stream) {
  switch (kind) {
    case ContenderKind::naive: return std::make_unique<Naive>(stream);
    case ContenderKind::explicit_copies: return std::make_unique<ExplicitCopies>(stream);
    case ContenderKind::smartarray: return std::make_unique<WithSmartArray>(stream);
    case ContenderKind::managed_prefetch:
    case ContenderKind::managed: return std::make_unique<Managed>(stream, kind);
    case ContenderKind::mapped: return std::make_unique<Mapped>(stream);
    case ContenderKind::thrust: break;
  }
  return std::make_unique<Thrust>(stream);
}

/// One run of the contender `kind` of the workload that `make` makes, at n = state.range(0):
/// skipped where it needs CUDA and the backend is host, else set up, timed (CallTimer: one
/// warm-up call, then one call per iteration), checked and torn down.
void measure(benchmark::State& state, ContenderKind kind, Factory make);

}  // namespace smartarray::bench::pipelines
