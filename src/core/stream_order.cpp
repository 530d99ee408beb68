// The pending work of one array. See core/detail/stream_order.hpp.
#include <smartarray/core/detail/stream_order.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include <algorithm>

namespace smartarray::detail {

void StreamOrder::forget_retired_until(std::uint64_t generation) {
  const std::uint64_t seen = retired_seen_;
  const auto retired = [seen](StreamRef stream) { return stream_retired_since(stream, seen); };
  std::erase_if(users_, retired);
  if (writer_ && retired(*writer_)) writer_.reset();
  for (PendingCopy& copy : host_readers_) {
    if (retired(copy.stream)) copy.stream = StreamRef{};
  }
  retired_seen_ = generation;
}

std::optional<StreamRef> StreamOrder::live_writer() const {
  if (writer_ && stream_retired_since(*writer_, retired_seen_)) return std::nullopt;
  return writer_;
}

void StreamOrder::order_device_access(Ordering ordering, StreamRef stream) {
  if (ordering == Ordering::after_writer) {
    wait_writer(stream);
    add_user(stream);
  } else {
    join_users(stream);
    set_exclusive(stream);
  }
}

void StreamOrder::join_users(StreamRef stream) const {
  for (const StreamRef user : users_) stream_wait_stream(stream, user);
}

void StreamOrder::wait_writer(StreamRef stream) const {
  if (writer_) stream_wait_stream(stream, *writer_);
}

void StreamOrder::set_exclusive(StreamRef stream) {
  writer_ = stream;
  users_.assign(1, stream);
}

void StreamOrder::add_user(StreamRef stream) {
  if (std::find(users_.begin(), users_.end(), stream) == users_.end()) users_.push_back(stream);
}

StreamRef StreamOrder::release_stream() const noexcept {
  return writer_.value_or(users_.empty() ? StreamRef{} : users_.front());
}

void StreamOrder::add_host_reader(StreamRef stream, std::size_t end) {
  // Copies queued one after another on one stream (the ranges of one plan) share one event,
  // recorded again after the last: a host writer then waits once.
  if (!host_readers_.empty() && host_readers_.back().stream == stream) {
    runtime().record(host_readers_.back().event, stream);
    host_read_end_ = std::max(host_read_end_, end);
    return;
  }
  PooledEvent event;
  runtime().record(event.get(), stream);
  host_readers_.reserve(host_readers_.size() + 1);  // so that the push below cannot throw
  host_readers_.push_back(PendingCopy{stream, event.release()});
  host_read_end_ = std::max(host_read_end_, end);
}

void StreamOrder::drop_host_readers() noexcept {
  for (const PendingCopy& copy : host_readers_) PooledEvent::adopt(copy.event);
  host_readers_.clear();
  host_read_end_ = 0;
}

void StreamOrder::wait_host_readers() {
  while (!host_readers_.empty()) {
    const PendingCopy& copy = host_readers_.back();
    if (!runtime().query(copy.event)) runtime().synchronize(copy.event);
    PooledEvent::adopt(copy.event);
    host_readers_.pop_back();
  }
  host_read_end_ = 0;
}

void StreamOrder::order_after_host_readers(StreamRef stream) const {
  for (const PendingCopy& copy : host_readers_) {
    if (copy.stream != stream) runtime().stream_wait(stream, copy.event);
  }
}

void StreamOrder::wait_every_device_use() {
  forget_retired();
  while (!users_.empty()) {
    host_wait_stream(users_.back());
    users_.pop_back();
  }
  if (writer_) host_wait_stream(*writer_);
  writer_.reset();
  host_read_end_ = 0;
}

bool StreamOrder::sole_host_reader_done() const noexcept {
  try {
    return runtime().query(host_readers_.front().event);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace smartarray::detail
