/**
 * @file graph/capture.hpp
 * @brief `sa::capture(stream, fn)` records a pipeline of SmartArray calls once as a graph (a CUDA
 *        graph on the cuda backend), and `Graph::launch` replays it with exact residency.
 *
 * The capture runs `fn` once under stream capture. Nothing it enqueues runs then, and no copy is
 * made: each device acquire records, per array, the bytes the graph reads on its device before
 * writing them (the precondition), the bytes it writes (the postcondition) and the device buffer
 * it binds. Each `launch` then:
 * 1. copies, counted and traced as usual, exactly the bytes of the precondition that the device
 *    lacks (what the host wrote since the last replay; one upload per array read on the first
 *    replay of host-valid arrays), and orders the launch stream after the arrays' pending work;
 * 2. enqueues the graph;
 * 3. commits the postcondition: the written bytes are held by the device alone, so a later host
 *    read copies back exactly them, and only when it reads.
 * A replay with nothing stale makes no copy and no host wait.
 *
 * Inside the capture, these throw `logic_error` naming the call and where the capture was opened,
 * before they change anything: a host access of an array the graph writes, a host wait on
 * captured work (`synchronize`), an allocation that would take the pool's out-of-memory path
 * (waits and eviction), `release_device_memory`, device work on a stream that is not captured or
 * on another device, and arrays in the mapped or managed mode. A `Stream` of the capture destroyed
 * inside `fn` cannot throw: its stream is kept alive, untouched, until the capture ends, and then
 * `sa::capture` throws `logic_error` naming it. Temporaries that the captured calls
 * allocate and release (a `map` result, CUB's scratch) come from the pool at capture time and stay
 * reserved for the graph until it is destroyed. An exception thrown inside `fn` ends the capture,
 * leaves the stream usable and every array's residency as it was.
 *
 * A graph binds arrays by object and device buffer. `launch` throws `logic_error`, naming the
 * array, when one was destroyed, resized, reallocated, moved, swapped or assigned to since the
 * capture; capture again then. While a graph exists its arrays' device copies are not evicted.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/runtime/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace smartarray {

class Graph;

namespace detail {
class CaptureSession;
}  // namespace detail

/// @brief One array that a graph uses, as `Graph::arrays()` reports it.
struct GraphArray {
  std::uint64_t id = 0;
  /// "SmartArray #3 'x'": the array's number and label at capture.
  std::string name;
  /// The device the graph uses it on.
  int device = 0;
  /// Bytes that must be valid on the device before each replay (copied there when stale).
  std::size_t bytes_read = 0;
  /// Bytes that each replay leaves valid on the device alone.
  std::size_t bytes_written = 0;
};

/**
 * @brief A captured pipeline that replays with exact residency. Movable, not copyable.
 *
 * Destroying a graph that was launched, or that holds temporaries, waits for its device first.
 * One thread launches a given graph at a time (as CUDA replays one executable graph at a time);
 * different graphs may be launched from different threads.
 */
class Graph {
 public:
  /// @brief An empty graph: launching it throws.
  Graph() noexcept;
  ~Graph();
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /**
   * @brief Replays the graph on `stream`, after the fix-up copies its arrays need.
   * @param stream a stream of the graph's device (the default stream too).
   * @param where the caller's source location, for the migration trace.
   * @throws logic_error naming the array when one was destroyed, resized, reallocated, moved,
   *         swapped or assigned to since the capture (no array loses data), or when the graph is
   *         empty or `stream` is on another device.
   * @throws cuda_error or out_of_memory when a fix-up copy or the launch fails; the graph's
   *         writes are then not committed, and every array keeps its contents.
   */
  void launch(StreamRef stream = {},
              smartarray::source_location where = smartarray::source_location::current());
  /// @brief The arrays the graph uses, in the order the capture first touched them.
  [[nodiscard]] std::vector<GraphArray> arrays() const;
  /// @brief True for a default-constructed or moved-from graph.
  [[nodiscard]] bool empty() const noexcept { return impl_ == nullptr; }
  /// @brief The device the graph runs on.
  [[nodiscard]] int device() const;
  /// @brief The number of launches so far.
  [[nodiscard]] std::uint64_t launches() const noexcept;

 private:
  friend class detail::CaptureSession;
  struct Impl;
  explicit Graph(std::unique_ptr<Impl> impl) noexcept;

  std::unique_ptr<Impl> impl_;
};

namespace detail {
/// One capture: opened by its constructor, ended by finish() or, after an exception, by the
/// destructor, which drops what was recorded and leaves every array as it was.
class CaptureSession {
 public:
  CaptureSession(StreamRef stream, const smartarray::source_location& where);
  /// For callers that are no C++ code (the Python binding): where the capture began, as a file
  /// name and a line that errors name. `file` must outlive the session.
  CaptureSession(StreamRef stream, const char* file, unsigned line);
  ~CaptureSession();
  CaptureSession(const CaptureSession&) = delete;
  CaptureSession& operator=(const CaptureSession&) = delete;

  /// The captured stream, as `fn` receives it.
  [[nodiscard]] StreamRef stream() const noexcept;
  /// Ends the capture and returns its graph. @throws logic_error for a misuse noted during it.
  [[nodiscard]] Graph finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};
}  // namespace detail

/**
 * @brief Runs `fn(stream)` once under stream capture and returns the graph it recorded.
 *
 * @param stream the stream to capture (an `sa::Stream` or a `StreamRef`; not a default stream).
 *        Other streams join by waiting for an event recorded on a captured stream, and must be
 *        joined back into `stream` before `fn` returns.
 * @param fn called once with `stream`; it enqueues SmartArray work (adapters, `sa::launch`,
 *        Thrust on `interop::device_begin`/`device_end`, `copy`, `fill`, slices) on captured
 *        streams.
 * @param where the caller's source location, named in errors.
 * @throws logic_error for a default stream, a nested capture, or a misuse inside `fn` (see the
 *         file comment); whatever `fn` throws. Either way the capture is over, the stream usable
 *         and every array's residency as before.
 */
template <typename Fn>
[[nodiscard]] Graph capture(StreamRef stream, Fn&& fn,
                            smartarray::source_location where =
                                smartarray::source_location::current()) {
  static_assert(std::is_invocable_v<Fn&&, StreamRef>,
                "sa::capture: fn must be callable with an sa::StreamRef");
  detail::CaptureSession session(stream, where);
  std::invoke(std::forward<Fn>(fn), session.stream());
  return session.finish();
}

}  // namespace smartarray
