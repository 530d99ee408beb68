// Private: the bookkeeping that every locked entry point of ArrayCore shares.
#pragma once

#include <smartarray/core/detail/array_core.hpp>

#include "core/eviction.hpp"

#include <mutex>

namespace smartarray::detail {

/// One entry point's transaction: it takes the array's lock, marks the array as the one this
/// thread is acquiring (eviction skips it, and traces name `where`), drops the retired streams and,
/// for a use, moves the array up the least-recently-used order. Unless the entry point settles
/// them by range itself (`Arrivals::by_range`), the host waits first for every pending prefetch
/// copy into the host buffer, which the entry point may change or free. When it ends (normally or
/// by an exception) it refreshes the observers: the fast-path flags and the lock-free window, the
/// debug view generations and the stale-host guard; after a device acquire, the views start anew.
class ArrayCore::Transaction {
 public:
  /// What the entry point is.
  enum class Kind {
    use,      ///< an access of the data: it counts as a use for eviction
    change,   ///< a change of the array that is not a use
    inspect,  ///< reads or copies out without changing the state: no refresh
  };

  /// How the entry point treats the pending prefetch copies into the host buffer.
  enum class Arrivals {
    settle,    ///< the host waits for all of them first
    by_range,  ///< the entry point waits for those that write bytes it touches
  };

  Transaction(ArrayCore& core, Kind kind, const smartarray::source_location* where = nullptr,
              Arrivals arrivals = Arrivals::settle)
      : core_(core), lock_(core.mutex_), scope_(&core, where), refresh_(kind != Kind::inspect) {
    core.device0_.order.forget_retired();
    for (int device = 1; device < core.device_copies(); ++device) {
      core.device_copy(device).order.forget_retired();
    }
    if (kind == Kind::use) core.touch();
    if (arrivals == Arrivals::settle && !core.arrivals_.empty()) [[unlikely]] {
      core.settle_arrivals_quietly();
    }
  }
  ~Transaction() {
    if (!refresh_) return;
    core_.refresh_state();
    if (start_views_ >= 0) core_.start_views(start_views_);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  /// The views of `device`'s copy handed out from now on see the state this transaction leaves.
  void start_views(int device) noexcept { start_views_ = device; }
  /// The entry point changed nothing (a fast path): the observers need no refresh.
  void changed_nothing() noexcept { refresh_ = false; }

 private:
  ArrayCore& core_;
  std::lock_guard<std::mutex> lock_;
  AcquireScope scope_;
  bool refresh_;
  int start_views_ = -1;  ///< the device whose views start anew, or -1
};

}  // namespace smartarray::detail
