// ApiModel's steps: the log, the checks of every array, and each call's injected failures.
#pragma once

#include "support/api_model/model.hpp"

#include <smartarray/diagnostics/testing.hpp>

#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <vector>

namespace smartarray::test {

inline void ApiModel::begin_step() {
  for (Slot& s : slots_) {
    s.expected = {};
    s.before = s.array.transfer_stats();
  }
}

inline void ApiModel::end_step() {
  for (Slot& s : slots_) check_slot(s);
}

inline void ApiModel::note(const Slot& x, const std::string& what) {
  log_.push_back(std::to_string(log_.size()) + ": " + x.name + what + "   [n " +
                 std::to_string(x.model.size()) + "]");
}

/// A line about no array in particular.
inline void ApiModel::note(const std::string& what) {
  log_.push_back(std::to_string(log_.size()) + ": " + what);
}

inline void ApiModel::fail(const std::string& what) const {
  std::string message = what + "\noperations:\n";
  for (const std::string& line : log_) message += "  " + line + "\n";
  throw Divergence(message);
}

inline void ApiModel::diverge(const Slot& s, const std::string& what) const {
  fail(std::string(1, s.name) + ": " + what);
}

/// Runs `body`; an exception that no operation expects is a divergence too.
template <typename Body>
void ApiModel::guarded(Body&& body) {
  try {
    body();
  } catch (const Divergence&) {
    throw;
  } catch (const std::exception& error) {
    fail(std::string("an unexpected exception: ") + error.what());
  }
}

/// The transfer fields only: allocations and waits are not part of the contract.
inline TransferStats ApiModel::transfers(TransferStats stats) {
  stats.allocation_count = stats.allocation_bytes = stats.wait_count = 0;
  return stats;
}

/// Size, capacity, mode, validity and this step's transfers, then the contents.
inline void ApiModel::check_slot(Slot& s) {
  const std::size_t n = s.model.size();
  const TransferStats made = transfers(s.array.transfer_stats() - s.before);
  if (made != s.expected) {
    diverge(s,
            "transfers " + made.to_string() + "; the model's minimum is " + s.expected.to_string());
  }
  if (s.array.size() != n || s.array.empty() != (n == 0) || s.array.capacity() != s.capacity) {
    diverge(s, "size " + std::to_string(s.array.size()) + ", capacity " +
                   std::to_string(s.array.capacity()) + "; the model's size " + std::to_string(n) +
                   ", capacity " + std::to_string(s.capacity));
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
inline std::vector<Element> ApiModel::contents(const SmartArray<Element>& array) {
  if (array.is_valid(Side::host)) {
    const std::span<const Element> view = array.host_view();
    return {view.begin(), view.end()};
  }
  const SmartArray<Element> probe(array);
  const std::span<const Element> view = probe.host_view();
  return {view.begin(), view.end()};
}

inline void ApiModel::check_contents(const Slot& s, const char* when) const {
  const std::vector<Element> got = contents(s.array);
  if (got == s.model) return;
  std::size_t first = 0;
  while (first < got.size() && first < s.model.size() && got[first] == s.model[first]) ++first;
  diverge(s, std::string("contents differ ") + when + ": size " + std::to_string(got.size()) +
                 " (model " + std::to_string(s.model.size()) + "), first difference at " +
                 std::to_string(first));
}

inline void ApiModel::expect_equal(const Slot& s, const std::vector<Element>& got,
                                   const std::vector<Element>& want, const char* what) const {
  if (got != want) diverge(s, std::string(what) + " differs from the model");
}

/// Runs one API call. `run` calls the library and may be run twice; `commit` updates the models
/// once it succeeded. While a failure is armed, it is injected into this call only (the checks
/// between calls must not reach it). An exception must then be the injected one and leave every
/// array as it was (except `output`, which the call overwrites), and the call is repeated with
/// the fault cleared. A call that ends before the failure leaves the rest armed for the next.
template <typename Run, typename Commit>
void ApiModel::apply(Run&& run, Commit&& commit, const Slot* output) {
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
void ApiModel::expect_throw(const Slot& s, const char* what, Run&& run) {
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

}  // namespace smartarray::test
