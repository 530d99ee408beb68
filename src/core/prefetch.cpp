// The token of prefetch_to_host: its copies' events, waited for by the token and by the array. See
// core/prefetch.hpp.
#include <smartarray/core/prefetch.hpp>
#include "core/prefetch_copies.hpp"

#include <algorithm>

namespace smartarray {
namespace detail {

void PrefetchCopies::record(StreamRef stream) {
  const auto same = [stream](const Recorded& recorded) { return recorded.stream == stream; };
  auto it = std::find_if(events.begin(), events.end(), same);
  if (it == events.end()) {
    events.push_back(Recorded{stream, PooledEvent()});
    it = events.end() - 1;
  }
  runtime().record(it->event.get(), stream);
}

bool PrefetchCopies::wait() {
  if (done.load(std::memory_order_acquire)) return false;
  bool waited = false;
  for (const Recorded& recorded : events) {
    if (runtime().query(recorded.event.get())) continue;
    runtime().synchronize(recorded.event.get());
    waited = true;
  }
  done.store(true, std::memory_order_release);
  return waited;
}

bool PrefetchCopies::ready() {
  if (done.load(std::memory_order_acquire)) return true;
  for (const Recorded& recorded : events) {
    if (!runtime().query(recorded.event.get())) return false;
  }
  done.store(true, std::memory_order_release);
  return true;
}

}  // namespace detail

void Prefetch::wait() const {
  if (copies_) copies_->wait();
}

bool Prefetch::ready() const { return !copies_ || copies_->ready(); }

}  // namespace smartarray
