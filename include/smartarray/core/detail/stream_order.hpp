/**
 * @file core/detail/stream_order.hpp
 * @brief Private: the pending work of one array, by range, and the waits that order new work
 * after it.
 *
 * - Device work by range: for each range of bytes, the last use that wrote it and the uses that
 *   read it since, each a *point* on a stream. A use on stream S waits only for the conflicting
 *   uses of the bytes it touches on other streams (a write waits for every use of them, a read for
 *   their writer), and only up to their points, not for later work on their streams.
 * - The copies still reading the host buffer (host to device), with eagerly recorded events:
 *   host writers wait for exactly those copies, not for the kernels queued after them.
 *
 * Points. Each stream that used the array has an open *epoch*; a use joins its stream's open
 * epoch. An epoch closes, with an event recorded on its stream, when another stream must wait for
 * it, or when its stream begins a use (before that use's work is queued) that does not cover the
 * bytes of the epoch's uses or that reads after a write of the epoch: the event then marks where
 * the earlier uses end. A loop on one stream that reads some arrays and writes others over the same
 * ranges closes nothing and records no event; an array written and then read on one stream in
 * each round records one event per round.
 *
 * Streams destroyed through `Stream` (or forgotten with `forget_stream`) retire: their work is
 * complete, and forget_retired() drops them, so that no wait is ever made on a dead handle.
 *
 * The events are the backend's handles, held here as opaque pointers and given back to the event
 * pool in stream_order.cpp: this header, which every SmartArray user includes, does not include
 * the backend interface.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/core/detail/copy_plan.hpp>
#include <smartarray/core/detail/run_list.hpp>
#include <smartarray/runtime/detail/stream_retirement.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace smartarray::detail {

class StreamOrder {
 public:
  SMARTARRAY_CONSTEXPR_EMPTY StreamOrder() noexcept = default;
  /// Gives the events back (the work needs no wait: an array frees or hands back a buffer only
  /// after the work that uses it).
  ~StreamOrder() {
    if (!host_readers_.empty()) drop_host_readers();
    if (!streams_.empty()) clear_device();
  }
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;
  StreamOrder(StreamOrder&& other) = delete;
  StreamOrder& operator=(StreamOrder&& other) = delete;
  /// Exchanges the whole pending work of two trackers.
  void swap(StreamOrder& other) noexcept {
    swap_device_work(other);
    host_readers_.swap(other.host_readers_);
    std::swap(host_read_end_, other.host_read_end_);
  }

  /// Exchanges the device work of two trackers, and leaves the copies reading the host buffer
  /// where they are (a capture sets the device work aside).
  void swap_device_work(StreamOrder& other) noexcept {
    segments_.swap(other.segments_);
    streams_.swap(other.streams_);
    std::swap(writer_, other.writer_);
    std::swap(retired_seen_, other.retired_seen_);
  }

  /// Drops the streams that retired since the last call (one load and compare when none did).
  void forget_retired() {
    const std::uint64_t generation = retired_stream_generation();
    if (generation != retired_seen_) [[unlikely]] forget_retired_until(generation);
  }
  /// Takes the retirement generation that `other`'s streams were last cleaned to, before this
  /// tracker takes streams from it.
  void adopt_generation(const StreamOrder& other) noexcept {
    retired_seen_ = other.retired_seen_;
  }

  /// The stream of the last device write (of any range), unless it retired since this tracker
  /// last checked.
  [[nodiscard]] std::optional<StreamRef> live_writer() const;
  /// True when an access of `range` on `stream` needs no wait and changes nothing here: its
  /// stream's open epoch covers nothing outside `range`, and in that epoch a reader already read
  /// (or wrote) all of it, a writer already wrote all of it and no other use touched it.
  [[nodiscard]] bool already_ordered(Access access, ByteRange range, StreamRef stream) const
      noexcept;

  /// Orders a device access of `range` on `stream` after the conflicting device work: a reader
  /// after the range's writers (and it becomes one of its readers), a writer after every use of
  /// the range (and it becomes its only one).
  void order_device_access(Ordering ordering, ByteRange range, StreamRef stream);
  /// A use of `range` on `stream` begins (a write when `writes`): its stream's open epoch closes
  /// first when the use does not cover that epoch's bytes, or reads after a write of the epoch.
  /// Call before the use's first work is queued.
  void begin_use(ByteRange range, StreamRef stream, bool writes);
  /// Makes `stream` wait for every use of `range` on other streams.
  void join_users(ByteRange range, StreamRef stream);
  /// Makes `stream` wait for every device use on other streams, of any range.
  void join_every_use(StreamRef stream);
  /// Makes `stream` wait for the writers of `range` on other streams.
  void wait_writer(ByteRange range, StreamRef stream);
  /// `stream` wrote `range` of the device copy and is its only user.
  void set_exclusive(ByteRange range, StreamRef stream);
  /// `stream` read `range` of the device copy.
  void add_user(ByteRange range, StreamRef stream);
  /// The stream that a device buffer is freed on: call join_every_use(release_stream()) before
  /// the free, so that the pool reuses the block only after every use.
  [[nodiscard]] StreamRef release_stream() const noexcept;
  /// Forgets the device work (the device buffer is gone).
  void clear_device() noexcept;
  /// The number of ranges with a distinct record of uses (tests and benchmarks).
  [[nodiscard]] std::size_t ranges() const noexcept { return segments_.size(); }

  /// A copy just queued on `stream` reads the host buffer up to byte `end`: records an event after
  /// it, which host writers wait for.
  void add_host_reader(StreamRef stream, std::size_t end);
  [[nodiscard]] bool host_readers_pending() const noexcept { return !host_readers_.empty(); }
  /// The end of the host bytes that pending copies read (0 when none is pending).
  [[nodiscard]] std::size_t host_read_end() const noexcept { return host_read_end_; }
  /// Notes that device work (a kernel on a one-buffer array) may read the host buffer up to `end`.
  void note_host_read(std::size_t end) noexcept {
    host_read_end_ = std::max(host_read_end_, end);
  }
  /// The host waits for the copies still reading the host buffer. Each is dropped once done, so
  /// that a failed wait leaves the rest tracked.
  void wait_host_readers();
  /// Makes `stream` wait for the copies still reading the host buffer, before it writes there (the
  /// host does not block).
  void order_after_host_readers(StreamRef stream) const;
  /// One buffer that both sides address: the host waits for every device use of it.
  void wait_every_device_use();
  /// True when exactly one copy reads the host buffer.
  [[nodiscard]] bool one_host_reader() const noexcept { return host_readers_.size() == 1; }
  /// True when the one copy reading the host buffer has completed (a failed query counts as not
  /// completed: whoever waits next reports it). Requires one_host_reader().
  [[nodiscard]] bool sole_host_reader_done() const noexcept;
  /// The stream of the one pending host reader. Requires one_host_reader().
  [[nodiscard]] StreamRef sole_host_reader_stream() const noexcept {
    return host_readers_.front().stream;
  }
  /// Forgets the host readers without waiting (their buffer was handed back ordered after them).
  void drop_host_readers() noexcept;

 private:
  /// A point on a stream: the end of that stream's uses in epoch `epoch`.
  struct Use {
    StreamRef stream;
    std::uint32_t epoch = 0;
    friend bool operator==(const Use&, const Use&) = default;
  };
  /// The uses of the bytes [begin, end): their last writer and the readers since.
  struct Segment {
    std::size_t begin = 0;
    std::size_t end = 0;
    std::optional<Use> writer;
    std::vector<Use> readers;
  };
  /// A stream that used the array: its open epoch, the bytes that epoch's uses touch, and the
  /// events of its closed epochs that a record still names.
  struct StreamEntry {
    StreamRef stream;
    std::uint32_t epoch = 0;
    ByteRange extent;  ///< the hull of the open epoch's uses (empty: none yet)
    bool wrote = false;  ///< the open epoch holds a write
    std::vector<std::pair<std::uint32_t, void*>> closed;  ///< epoch, the backend's EventHandle
  };

  void forget_retired_until(std::uint64_t generation);
  [[nodiscard]] const StreamEntry* find(StreamRef stream) const noexcept;
  StreamEntry& entry(StreamRef stream);
  /// Closes `entry`'s open epoch: an event recorded on its stream now ends it.
  void close_epoch(StreamEntry& entry);
  /// The event that ends `use`, closing its epoch when it is still open.
  void* point_event(const Use& use);
  /// Makes `stream` wait for `use` (nothing when it is `stream`'s own or was waited already).
  void wait_for(StreamRef stream, const Use& use, std::vector<Use>& waited);
  /// Splits the segment that holds byte `at` (if any starts before it) into two at `at`.
  void cut(std::size_t at);
  /// Splits the segments at `range`'s ends (adding empty ones over its gaps) and returns the index
  /// of the first segment inside it.
  std::size_t split(ByteRange range);
  /// Merges neighbouring segments that hold the same uses.
  void merge();
  /// Gives back the events of closed epochs that no record names any more.
  void collect();

  std::vector<Segment> segments_;  ///< sorted, disjoint; bytes outside every segment: no use
  std::vector<StreamEntry> streams_;
  std::optional<StreamRef> writer_;  ///< the stream of the last write
  std::uint64_t retired_seen_ = 0;

  struct PendingCopy {
    StreamRef stream;
    void* event;  ///< the backend's event (EventHandle), taken from the event pool
  };
  std::vector<PendingCopy> host_readers_;
  std::size_t host_read_end_ = 0;
};

}  // namespace smartarray::detail
