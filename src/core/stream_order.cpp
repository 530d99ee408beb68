// The pending work of one array, by range. See core/detail/stream_order.hpp.
#include <smartarray/core/detail/stream_order.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include <algorithm>
#include <cstddef>
#include <exception>

namespace smartarray::detail {

namespace {

[[nodiscard]] bool overlaps(std::size_t begin, std::size_t end, ByteRange range) noexcept {
  return begin < range.end && range.begin < end;
}

[[nodiscard]] bool covers(ByteRange outer, ByteRange inner) noexcept {
  return inner.empty() || (outer.begin <= inner.begin && inner.end <= outer.end);
}

/// Makes `stream` wait for `event`, or for everything queued on `producer` when there is none.
void wait_until(StreamRef stream, void* event, StreamRef producer) {
  if (event != nullptr) {
    runtime().stream_wait(stream, event);
  } else {
    stream_wait_stream(stream, producer);
  }
}

}  // namespace

void StreamOrder::forget_retired_until(std::uint64_t generation) {
  const std::uint64_t seen = retired_seen_;
  const auto retired = [seen](StreamRef stream) { return stream_retired_since(stream, seen); };
  const auto retired_use = [&](const Use& use) { return retired(use.stream); };
  for (Segment& segment : segments_) {
    if (segment.writer && retired_use(*segment.writer)) segment.writer.reset();
    std::erase_if(segment.readers, retired_use);
  }
  std::erase_if(segments_, [](const Segment& s) { return !s.writer && s.readers.empty(); });
  for (StreamEntry& entry : streams_) {
    if (!retired(entry.stream)) continue;
    for (const auto& [epoch, event] : entry.closed) PooledEvent::adopt(event);
    entry.closed.clear();
  }
  std::erase_if(streams_, [&](const StreamEntry& entry) { return retired(entry.stream); });
  if (writer_ && retired(*writer_)) writer_.reset();
  for (PendingCopy& copy : host_readers_) {
    if (retired(copy.stream)) copy.stream = StreamRef{};
  }
  merge();
  retired_seen_ = generation;
}

std::optional<StreamRef> StreamOrder::live_writer() const {
  if (writer_ && stream_retired_since(*writer_, retired_seen_)) return std::nullopt;
  return writer_;
}

const StreamOrder::StreamEntry* StreamOrder::find(StreamRef stream) const noexcept {
  for (const StreamEntry& entry : streams_) {
    if (entry.stream == stream) return &entry;
  }
  return nullptr;
}

StreamOrder::StreamEntry& StreamOrder::entry(StreamRef stream) {
  for (StreamEntry& entry : streams_) {
    if (entry.stream == stream) return entry;
  }
  streams_.push_back(StreamEntry{stream, 0, ByteRange{}, false, {}});
  return streams_.back();
}

bool StreamOrder::already_ordered(Access access, ByteRange range, StreamRef stream) const
    noexcept {
  const StreamEntry* const own = find(stream);
  if (own == nullptr || range.empty()) return false;
  const Use now{stream, own->epoch};
  // A use that does not cover its stream's open epoch would close it (begin_use), and so would a
  // read after a write in it.
  if (!covers(range, own->extent) || (access == Access::read && own->wrote)) return false;
  std::size_t reached = range.begin;
  for (const Segment& segment : segments_) {
    if (segment.end <= range.begin) continue;
    if (segment.begin >= range.end) break;
    if (segment.begin > reached) return false;  // a gap: bytes no use has touched yet
    if (access == Access::read) {
      if (std::find(segment.readers.begin(), segment.readers.end(), now) ==
          segment.readers.end()) {
        // A write of this stream's open epoch counts as a read of it.
        if (segment.writer != now) return false;
      }
    } else {
      if (segment.writer != now) return false;
      for (const Use& reader : segment.readers) {
        if (reader != now) return false;
      }
    }
    reached = segment.end;
  }
  return reached >= range.end;
}

void StreamOrder::close_epoch(StreamEntry& entry) {
  PooledEvent event;
  runtime().record(event.get(), entry.stream);
  entry.closed.reserve(entry.closed.size() + 1);  // so that the push below cannot throw
  entry.closed.emplace_back(entry.epoch, event.release());
  ++entry.epoch;
  entry.extent = ByteRange{};
  entry.wrote = false;
}

void* StreamOrder::point_event(const Use& use) {
  StreamEntry& owner = entry(use.stream);
  if (use.epoch == owner.epoch) close_epoch(owner);
  for (const auto& [epoch, event] : owner.closed) {
    if (epoch == use.epoch) return event;
  }
  return nullptr;  // not reached: a record names only epochs whose events are kept
}

void StreamOrder::wait_for(StreamRef stream, const Use& use, std::vector<Use>& waited) {
  if (use.stream == stream) return;  // stream order
  if (std::find(waited.begin(), waited.end(), use) != waited.end()) return;
  void* const event = point_event(use);
  // The wait for a conflicting use, up to its point (gpu_check.sh's mutation phase removes it).
  wait_until(stream, event, use.stream);
  waited.push_back(use);
}

void StreamOrder::begin_use(ByteRange range, StreamRef stream, bool writes) {
  StreamEntry& own = entry(stream);
  if (!own.extent.empty() && (!covers(range, own.extent) || (!writes && own.wrote))) {
    close_epoch(own);
  }
  own.wrote = own.wrote || writes;
  if (own.extent.empty()) {
    own.extent = range;
  } else {
    own.extent = ByteRange{std::min(own.extent.begin, range.begin),
                           std::max(own.extent.end, range.end)};
  }
}

void StreamOrder::order_device_access(Ordering ordering, ByteRange range, StreamRef stream) {
  if (ordering == Ordering::after_writer) {
    wait_writer(range, stream);
    add_user(range, stream);
  } else {
    join_users(range, stream);
    set_exclusive(range, stream);
  }
}

void StreamOrder::join_users(ByteRange range, StreamRef stream) {
  std::vector<Use> waited;
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    const Segment& segment = segments_[i];
    if (!overlaps(segment.begin, segment.end, range)) continue;
    if (segment.writer) wait_for(stream, *segment.writer, waited);
    // wait_for may add a stream entry, never a segment: the reference stays valid.
    for (const Use& reader : segments_[i].readers) wait_for(stream, reader, waited);
  }
}

void StreamOrder::join_every_use(StreamRef stream) {
  join_users(ByteRange{0, static_cast<std::size_t>(-1)}, stream);
}

void StreamOrder::wait_writer(ByteRange range, StreamRef stream) {
  std::vector<Use> waited;
  for (const Segment& segment : segments_) {
    if (!overlaps(segment.begin, segment.end, range) || !segment.writer) continue;
    // A stream that read these bytes since their write already waited for it.
    const auto same_stream = [stream](const Use& use) { return use.stream == stream; };
    if (std::any_of(segment.readers.begin(), segment.readers.end(), same_stream)) continue;
    wait_for(stream, *segment.writer, waited);
  }
}

void StreamOrder::cut(std::size_t at) {
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    Segment& segment = segments_[i];
    if (segment.begin >= at) return;
    if (at < segment.end) {
      Segment tail = segment;
      tail.begin = at;
      segment.end = at;
      segments_.insert(segments_.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(tail));
      return;
    }
  }
}

std::size_t StreamOrder::split(ByteRange range) {
  cut(range.begin);
  cut(range.end);
  // Every segment that overlaps `range` now lies inside it; the gaps between them get empty ones.
  std::size_t i = 0;
  while (i < segments_.size() && segments_[i].end <= range.begin) ++i;
  const std::size_t first = i;
  std::size_t cursor = range.begin;
  while (cursor < range.end) {
    if (i < segments_.size() && segments_[i].begin == cursor) {
      cursor = segments_[i].end;
    } else {
      const std::size_t end =
          i < segments_.size() ? std::min(segments_[i].begin, range.end) : range.end;
      segments_.insert(segments_.begin() + static_cast<std::ptrdiff_t>(i),
                       Segment{cursor, end, std::nullopt, {}});
      cursor = end;
    }
    ++i;
  }
  return first;
}

void StreamOrder::merge() {
  if (segments_.size() < 2) return;
  std::size_t kept = 0;
  for (std::size_t i = 1; i < segments_.size(); ++i) {
    Segment& last = segments_[kept];
    Segment& segment = segments_[i];
    if (last.end == segment.begin && last.writer == segment.writer &&
        last.readers == segment.readers) {
      last.end = segment.end;
    } else {
      ++kept;
      if (kept != i) segments_[kept] = std::move(segment);
    }
  }
  segments_.resize(kept + 1);
}

void StreamOrder::set_exclusive(ByteRange range, StreamRef stream) {
  if (range.empty()) return;
  begin_use(range, stream, true);
  const Use now{stream, entry(stream).epoch};
  if (segments_.size() == 1 && segments_.front().begin == range.begin &&
      segments_.front().end == range.end) {
    // The steady state of whole-array writes: one segment, rewritten in place.
    Segment& only = segments_.front();
    only.writer = now;
    only.readers.clear();
  } else {
    std::size_t i = split(range);
    for (; i < segments_.size() && segments_[i].end <= range.end; ++i) {
      segments_[i].writer = now;
      segments_[i].readers.clear();
    }
    merge();
  }
  writer_ = stream;
  collect();
}

void StreamOrder::add_user(ByteRange range, StreamRef stream) {
  if (range.empty()) return;
  begin_use(range, stream, false);
  const Use now{stream, entry(stream).epoch};
  const auto read = [&](Segment& segment) {
    if (segment.writer == now) return;  // the write of this epoch covers the read
    const auto same = [stream](const Use& use) { return use.stream == stream; };
    const auto it = std::find_if(segment.readers.begin(), segment.readers.end(), same);
    if (it != segment.readers.end()) {
      it->epoch = now.epoch;
    } else {
      segment.readers.push_back(now);
    }
  };
  if (segments_.size() == 1 && segments_.front().begin == range.begin &&
      segments_.front().end == range.end) {
    read(segments_.front());
  } else {
    std::size_t i = split(range);
    for (; i < segments_.size() && segments_[i].end <= range.end; ++i) read(segments_[i]);
    merge();
  }
  collect();
}

void StreamOrder::collect() {
  for (StreamEntry& entry : streams_) {
    if (entry.closed.empty()) continue;
    const auto named = [&](std::uint32_t epoch) {
      const Use use{entry.stream, epoch};
      for (const Segment& segment : segments_) {
        if (segment.writer == use) return true;
        if (std::find(segment.readers.begin(), segment.readers.end(), use) !=
            segment.readers.end()) {
          return true;
        }
      }
      return false;
    };
    std::erase_if(entry.closed, [&](const std::pair<std::uint32_t, void*>& closed) {
      if (named(closed.first)) return false;
      PooledEvent::adopt(closed.second);
      return true;
    });
  }
}

StreamRef StreamOrder::release_stream() const noexcept {
  if (writer_) return *writer_;
  return streams_.empty() ? StreamRef{} : streams_.front().stream;
}

void StreamOrder::clear_device() noexcept {
  for (StreamEntry& entry : streams_) {
    for (const auto& [epoch, event] : entry.closed) PooledEvent::adopt(event);
  }
  streams_.clear();
  segments_.clear();
  writer_.reset();
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
  while (!streams_.empty()) {
    host_wait_stream(streams_.back().stream);
    for (const auto& [epoch, event] : streams_.back().closed) PooledEvent::adopt(event);
    streams_.pop_back();
  }
  segments_.clear();
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
