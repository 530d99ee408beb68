// Private: the copies of one prefetch_to_host call, shared by its Prefetch tokens and by the array
// whose host bytes they write (until the array settles them).
#pragma once

#include <smartarray/runtime/detail/runtime.hpp>

#include <atomic>
#include <vector>

namespace smartarray::detail {

struct PrefetchCopies {
  /// Records the end of the copies queued so far on `stream` (one event per stream).
  void record(StreamRef stream);
  /// Blocks the host until every copy is done. Returns whether one was still running.
  bool wait();
  /// True when every copy is done (without blocking).
  [[nodiscard]] bool ready();
  /// Nothing was recorded: the copies were done when the call returned.
  [[nodiscard]] bool empty() const noexcept { return events.empty(); }

  struct Recorded {
    StreamRef stream;
    PooledEvent event;
  };
  /// Written only by the prefetch call that made this, before any token shares it.
  std::vector<Recorded> events;
  /// Every copy is known to be done: later waits return at once.
  std::atomic<bool> done{false};
};

}  // namespace smartarray::detail
