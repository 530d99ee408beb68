/**
 * @file host/host_stream.hpp
 * @brief An emulated stream of the host backend: an in-order queue served by one worker thread.
 *
 * Positions in the queue are numbered: the n-th task enqueued has ticket n, and the stream has
 * reached ticket n once its first n tasks have run. Events capture a (stream, ticket) pair, which
 * is how "the current end of the queue" is remembered without putting anything in the queue.
 */
#pragma once

#include "runtime/host/host_capture.hpp"

#include <smartarray/error.hpp>
#include <smartarray/runtime/stream.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace smartarray::detail {

/**
 * @brief An in-order queue of tasks run by its own worker thread.
 *
 * Each task first sleeps for the stream's latency, so that work queued without a matching wait is
 * still pending when the host looks. A task that throws does not stop the worker: the first such
 * failure is kept as the stream's error until `take_error` reports it.
 */
class HostStream {
 public:
  using Task = std::function<void()>;

  /**
   * @brief Starts the worker.
   * @param is_default true for a device's default stream (only used in its name).
   * @param device the emulated device the stream lives on.
   * @param name_device whether the name says the device (when there are several).
   * @param latency the delay before each task.
   * @param priority the priority it reports (the worker runs at the thread's usual priority).
   */
  HostStream(bool is_default, int device, bool name_device, std::chrono::microseconds latency,
             StreamPriority priority = StreamPriority::normal)
      : name_(concat(is_default ? std::string("default stream")
                                : concat("stream ", static_cast<const void*>(this)),
                     name_device ? concat(" of device ", device) : std::string())),
        device_(device),
        latency_(latency),
        priority_(priority) {
    worker_ = std::thread([this] { run(); });
  }
  ~HostStream() { stop_and_join(); }
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  /// "stream 0x..." or "default stream" (with " of device N" when there are several), for
  /// messages.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// The emulated device the stream lives on.
  [[nodiscard]] int device() const noexcept { return device_; }
  /// The priority it was made with.
  [[nodiscard]] StreamPriority priority() const noexcept { return priority_; }

  /// The stream whose worker is the calling thread, or nullptr on any other thread.
  [[nodiscard]] static const HostStream* current() noexcept { return current_; }

  /// Appends `task`, or records it while the stream captures.
  /// @throws logic_error when the stream is being destroyed.
  void enqueue(Task task) {
    {
      std::lock_guard lock(mutex_);
      SMARTARRAY_EXPECTS(!stopping_, logic_error, "enqueue on ", name_,
                         ", which is being destroyed");
      if (capture_ != nullptr) {
        capture_->append(this, std::move(task));
        return;
      }
      queue_.push_back(std::move(task));
      ++enqueued_;
    }
    work_ready_.notify_one();
  }

  /// The capture that records this stream's work, or nullptr.
  [[nodiscard]] std::shared_ptr<HostCapture> capture() {
    std::lock_guard lock(mutex_);
    return capture_;
  }
  /// Records the work queued from now on into `capture` (nullptr: runs it again).
  void set_capture(std::shared_ptr<HostCapture> capture) {
    std::lock_guard lock(mutex_);
    capture_ = std::move(capture);
  }

  /// The ticket of the last task enqueued so far (0 when none was).
  [[nodiscard]] std::uint64_t tail() {
    std::lock_guard lock(mutex_);
    return enqueued_;
  }

  /// True once the first `ticket` tasks have run.
  [[nodiscard]] bool reached(std::uint64_t ticket) {
    std::lock_guard lock(mutex_);
    return completed_ >= ticket;
  }

  /// True when every task enqueued so far has run.
  [[nodiscard]] bool idle() {
    std::lock_guard lock(mutex_);
    return completed_ == enqueued_;
  }

  /// Blocks until the first `ticket` tasks have run.
  void wait_for(std::uint64_t ticket) {
    std::unique_lock lock(mutex_);
    progress_.wait(lock, [&] { return completed_ >= ticket; });
  }

  /// The first failure of a task since the last call, as a message; clears it.
  [[nodiscard]] std::optional<std::string> take_error() {
    std::lock_guard lock(mutex_);
    return std::exchange(error_, std::nullopt);
  }

  /// Lets the worker drain the queue, then joins it. Idempotent; never call it from the worker.
  void stop_and_join() noexcept {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_one();
    if (worker_.joinable()) worker_.join();
  }

 private:
  void run() noexcept {
    current_ = this;
    std::unique_lock lock(mutex_);
    for (;;) {
      work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      Task task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      execute(task);
      // The task's captures die before it counts as done, so a synchronize releases them.
      task = nullptr;
      lock.lock();
      ++completed_;
      progress_.notify_all();
    }
  }

  void execute(const Task& task) noexcept {
    if (latency_.count() > 0) std::this_thread::sleep_for(latency_);
    try {
      task();
    } catch (const std::exception& error) {
      keep_error(error.what());
    } catch (...) {
      keep_error("unknown exception");
    }
  }

  void keep_error(const char* what) noexcept {
    std::string message = concat("host function on ", name_, " failed: ", what);
    std::lock_guard lock(mutex_);
    if (!error_) {
      error_ = std::move(message);
    } else {
      // Only the first failure is reported by the next synchronize; later ones are logged.
      std::cerr << "smartarray: " << message << " (an earlier failure is still unreported)\n";
    }
  }

  // Trivially destructible, so a worker still parked at exit touches no destroyed state.
  static inline thread_local const HostStream* current_ = nullptr;

  const std::string name_;
  const int device_;
  const std::chrono::microseconds latency_;
  const StreamPriority priority_;
  std::mutex mutex_;
  std::condition_variable work_ready_;  // the worker waits here for tasks
  std::condition_variable progress_;    // the host and other workers wait here for tickets
  std::deque<Task> queue_;
  std::uint64_t enqueued_ = 0;
  std::uint64_t completed_ = 0;
  bool stopping_ = false;
  std::optional<std::string> error_;
  std::shared_ptr<HostCapture> capture_;
  std::thread worker_;
};

}  // namespace smartarray::detail
