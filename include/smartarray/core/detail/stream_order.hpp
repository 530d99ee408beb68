/**
 * @file core/detail/stream_order.hpp
 * @brief Private: the pending work of one array, and the waits that order new work after it.
 *
 * - The stream of the last operation that wrote the device copy, and the streams that used it
 *   since. Their events are recorded lazily, only when another stream or the host must wait.
 * - The copies still reading the host buffer (host to device), with eagerly recorded events:
 *   host writers wait for exactly those copies, not for the kernels queued after them.
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
#include <smartarray/core/detail/residency_state.hpp>
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
  /// Gives the pending copies' events back (the copies themselves need no wait: an array frees or
  /// hands back the buffer they read only after them).
  ~StreamOrder() {
    if (!host_readers_.empty()) drop_host_readers();
  }
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;
  StreamOrder(StreamOrder&& other) = delete;
  StreamOrder& operator=(StreamOrder&& other) = delete;
  /// Exchanges the whole pending work of two trackers.
  void swap(StreamOrder& other) noexcept {
    std::swap(writer_, other.writer_);
    users_.swap(other.users_);
    std::swap(retired_seen_, other.retired_seen_);
    host_readers_.swap(other.host_readers_);
    std::swap(host_read_end_, other.host_read_end_);
  }

  /// Exchanges the device work (the last writer and the users) of two trackers, and leaves the
  /// copies reading the host buffer where they are (a capture sets the device work aside).
  void swap_device_work(StreamOrder& other) noexcept {
    std::swap(writer_, other.writer_);
    users_.swap(other.users_);
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

  /// The last device writer, unless its stream retired since this tracker last checked.
  [[nodiscard]] std::optional<StreamRef> live_writer() const;
  /// True when an access on `stream` is already ordered: a reader when `stream` uses the device
  /// copy after its last writer, a writer when `stream` is the only user and the writer.
  [[nodiscard]] bool already_ordered(Access access, StreamRef stream) const noexcept {
    const bool user = std::find(users_.begin(), users_.end(), stream) != users_.end();
    if (access == Access::read) return (!writer_ || *writer_ == stream) && user;
    return writer_ == stream && users_.size() == 1 && user;
  }

  /// Orders a device access on `stream` after the pending device work: a reader after the last
  /// writer (and it becomes a user), a writer after every use (and it becomes the only one).
  void order_device_access(Ordering ordering, StreamRef stream);
  /// Makes `stream` wait for every stream that used the device copy.
  void join_users(StreamRef stream) const;
  /// Makes `stream` wait for the last device writer.
  void wait_writer(StreamRef stream) const;
  /// `stream` wrote the device copy and is its only user.
  void set_exclusive(StreamRef stream);
  /// `stream` read the device copy.
  void add_user(StreamRef stream);
  /// The stream that a device buffer is freed on: it joined every user first, so that the pool
  /// reuses the block only after them. Call join_users(release_stream()) before the free.
  [[nodiscard]] StreamRef release_stream() const noexcept;
  /// Forgets the device work (the device buffer is gone).
  void clear_device() noexcept {
    writer_.reset();
    users_.clear();
  }

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
  /// Drops the streams retired after retired_seen_, and records `generation` (read before) as
  /// seen: a stream that retires meanwhile is dropped at the next call.
  void forget_retired_until(std::uint64_t generation);

  struct PendingCopy {
    StreamRef stream;
    void* event;  ///< the backend's event (EventHandle), taken from the event pool
  };

  std::optional<StreamRef> writer_;
  std::vector<StreamRef> users_;
  std::uint64_t retired_seen_ = 0;
  std::vector<PendingCopy> host_readers_;
  std::size_t host_read_end_ = 0;
};

}  // namespace smartarray::detail
