/**
 * @file runtime/detail/capture.hpp
 * @brief Private: the stream capture that the calling thread runs (`sa::capture`), as every layer
 * sees it.
 *
 * While a thread captures, the runtime refuses host waits on captured work, memory resources
 * keep every block released on that thread for the graph (its temporaries), pools do not take
 * the out-of-memory path (which synchronizes and evicts), and a captured stream whose `Stream` is
 * destroyed stays alive until the capture ends, which then fails. The graph layer opens and
 * closes the capture; the layers below only look at `active_capture()`, one thread-local load.
 */
#pragma once

#include <smartarray/runtime/stream.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace smartarray {
class MemoryResource;
}  // namespace smartarray

namespace smartarray::detail {

/// An instantiated graph of the active backend (a cudaGraphExec_t on the cuda backend).
using GraphHandle = void*;

/// A block that a resource was asked to release during a capture: the graph keeps it.
struct KeptBlock {
  MemoryResource* resource = nullptr;
  StreamRef stream;
  void* ptr = nullptr;
  std::size_t bytes = 0;
  std::size_t alignment = 0;
};

/// The capture that a thread runs.
struct CaptureState {
  /// The stream the capture began on, and its device.
  StreamRef origin;
  int device = 0;
  /// The call that opened the capture, for messages ("sa::capture at file:line").
  const char* file = "";
  unsigned line = 0;
  /// Blocks released during the capture: the graph's temporaries, freed with the graph.
  std::vector<KeptBlock> kept_blocks;
  /// What must live as long as the graph (host functions that its nodes call).
  std::vector<std::shared_ptr<void>> keep_alive;
  /// The events recorded on captured streams: the host cannot wait for them.
  std::unordered_set<const void*> captured_events;
  /// The streams that joined the capture through join_capture(), joined back at its end.
  std::vector<StreamRef> joined;
  /// Captured streams whose `Stream` was destroyed inside the capture: destroying one would end
  /// its part of the capture, so it lives until release_kept_streams().
  std::vector<StreamRef> kept_streams;
  /// A refusal that could not be thrown where it happened (in a destructor): the capture fails
  /// with it when it ends.
  std::string failure;
};

/// The capture of the calling thread (set by the graph layer), or nullptr.
inline thread_local CaptureState* active_capture_state = nullptr;
[[nodiscard]] inline CaptureState* active_capture() noexcept { return active_capture_state; }

/// Makes `stream` (of the capture's device, not yet captured) part of the capture: it waits for
/// the origin's work so far, so that what it is given from now on is recorded after that work.
/// The capture joins it back into the origin before it ends.
void join_capture(StreamRef stream);
/// Makes the origin wait for every stream that join_capture() added (before the capture ends).
void join_back(CaptureState& capture);

/// Throws logic_error naming `call` and the open capture: `call` cannot run inside one.
[[noreturn]] void refuse_in_capture(const char* call, const char* why);
/// The message of refuse_in_capture(), for a refusal that cannot throw.
[[nodiscard]] std::string capture_refusal(const char* call, const char* why);

/// Called by a `Stream` about to be destroyed on a thread that captures: when `stream` is part of
/// the capture, keeps it alive until the capture ends and makes the capture fail, and returns
/// true (the caller must leave the stream alone). False otherwise.
[[nodiscard]] bool keep_stream_until_capture_ends(StreamRef stream) noexcept;
/// Drains and destroys the streams that keep_stream_until_capture_ends() kept, once the capture
/// has ended (the thread's capture state is cleared).
void release_kept_streams(CaptureState& capture) noexcept;

}  // namespace smartarray::detail
