/**
 * @file host/host_capture.hpp
 * @brief The host backend's stream capture: the tasks that captured streams would have run, in
 * the order they were queued, and the streams that joined the capture.
 *
 * A replay queues the recorded tasks on the launch stream in that order. The order is one that
 * the captured streams' dependencies allow (a task is queued after everything it waits for), so
 * that one in-order queue runs the graph correctly, if without its concurrency.
 */
#pragma once

#include <smartarray/error.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace smartarray::detail {

class HostStream;

class HostCapture {
 public:
  using Task = std::function<void()>;

  explicit HostCapture(const HostStream* origin) : origin_(origin) { members_.push_back({origin}); }

  [[nodiscard]] const HostStream* origin() const noexcept { return origin_; }

  /// Records `task`, queued on `stream` (a member).
  void append(const HostStream* stream, Task task) {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
    ++member(stream).recorded;
  }
  /// `stream` joined the capture: it waited for one of the capture's events.
  void add_member(const HostStream* stream) {
    std::lock_guard lock(mutex_);
    members_.push_back({stream});
  }
  /// The number of tasks recorded on `stream` so far (an event's position in it).
  [[nodiscard]] std::size_t recorded(const HostStream* stream) {
    std::lock_guard lock(mutex_);
    return member(stream).recorded;
  }
  /// The origin waited for the first `position` tasks of member `stream`.
  void join(const HostStream* stream, std::size_t position) {
    std::lock_guard lock(mutex_);
    Member& joined = member(stream);
    joined.joined = std::max(joined.joined, position);
    joined.waited = true;
  }
  /// The first member (besides the origin) whose work the origin did not wait for, if any.
  [[nodiscard]] std::optional<const HostStream*> unjoined() {
    std::lock_guard lock(mutex_);
    for (const Member& m : members_) {
      if (m.stream != origin_ && (!m.waited || m.joined < m.recorded)) return m.stream;
    }
    return std::nullopt;
  }
  /// The recorded tasks, in the order they were queued.
  [[nodiscard]] std::vector<Task> take_tasks() {
    std::lock_guard lock(mutex_);
    return std::move(tasks_);
  }

 private:
  struct Member {
    const HostStream* stream;
    std::size_t recorded = 0;
    std::size_t joined = 0;
    bool waited = false;
  };
  Member& member(const HostStream* stream) {
    for (Member& m : members_) {
      if (m.stream == stream) return m;
    }
    throw logic_error("host capture: a stream that is not part of the capture");
  }

  const HostStream* const origin_;
  std::mutex mutex_;
  std::vector<Member> members_;
  std::vector<Task> tasks_;
};

/// An instantiated graph of the host backend: the tasks a replay queues.
struct HostGraph {
  std::vector<HostCapture::Task> tasks;
};

}  // namespace smartarray::detail
