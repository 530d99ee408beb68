// The backend seam's part of stream capture: what the runtime refuses while the calling thread
// captures (host waits on captured work, destroying a captured stream), and the bookkeeping of
// events recorded in a capture.
#include <smartarray/runtime/detail/capture.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/error.hpp>

#include <exception>
#include <iostream>
#include <utility>

namespace smartarray::detail {

std::string capture_refusal(const char* call, const char* why) {
  const CaptureState* const capture = active_capture();
  return concat(call, " inside sa::capture (opened at ", capture->file, ":", capture->line,
                " on stream ", capture->origin.handle(), "): ", why);
}

void refuse_in_capture(const char* call, const char* why) {
  throw logic_error(capture_refusal(call, why));
}

bool keep_stream_until_capture_ends(StreamRef stream) noexcept {
  CaptureState* const capture = active_capture();
  if (capture == nullptr) return false;
  try {
    if (!runtime().is_capturing(stream)) return false;
  } catch (const std::exception&) {  // not a live stream: no part of the capture
    return false;
  }
  // Draining it would wait for work that has not run, and destroying it would end the capture
  // of its work: either breaks the graph. Nothing is done to it until the capture is over.
  try {
    capture->kept_streams.push_back(stream);
    if (capture->failure.empty()) {
      capture->failure = capture_refusal(
          concat("destroying Stream ", stream.handle()).c_str(),
          "the stream is part of the capture, and its work has not run; destroy it after "
          "sa::capture returns (it was kept until the capture ended)");
    }
  } catch (const std::exception& error) {  // no memory to keep it: leaked, still captured
    std::cerr << "smartarray: destroying captured stream " << stream.handle()
              << " inside sa::capture: " << error.what() << "; the stream is leaked\n";
  }
  return true;
}

void release_kept_streams(CaptureState& capture) noexcept {
  for (const StreamRef stream : std::exchange(capture.kept_streams, {})) release_stream(stream);
}

void join_capture(StreamRef stream) {
  CaptureState& capture = *active_capture();
  if (stream.is_default() || stream.default_of_device() >= 0) {
    refuse_in_capture("work on the default stream",
                      "the default stream cannot join a capture; use the captured stream or "
                      "another Stream");
  }
  capture.joined.push_back(stream);
  stream_wait_stream(stream, capture.origin);
}

void join_back(CaptureState& capture) {
  for (const StreamRef stream : capture.joined) stream_wait_stream(capture.origin, stream);
}

void Runtime::record(EventHandle event, StreamRef stream) {
  do_record(event, stream);
  if (CaptureState* const capture = active_capture()) [[unlikely]] {
    if (is_capturing(stream)) {
      capture->captured_events.insert(event);
    } else {
      capture->captured_events.erase(event);
    }
  }
}

void Runtime::begin_capture(StreamRef stream) {
  SMARTARRAY_EXPECTS(!stream.is_default() && stream.default_of_device() < 0, logic_error,
                     "capture on the default stream: the default stream cannot be captured; "
                     "capture on a Stream");
  check_stream(stream);
  SMARTARRAY_EXPECTS(!is_capturing(stream), logic_error, "capture on stream ", stream.handle(),
                     ", which is already capturing");
  do_begin_capture(stream);
}

void Runtime::synchronize(StreamRef stream) {
  if (active_capture() != nullptr && is_capturing(stream)) [[unlikely]] {
    refuse_in_capture("synchronize", "the host would wait for captured work, which has not run");
  }
  global_counters().add_wait();
  do_synchronize(stream);
}

void Runtime::synchronize_device() {
  if (active_capture() != nullptr) [[unlikely]] {
    refuse_in_capture("synchronize_device",
                      "the host would wait for the captured streams, whose work has not run");
  }
  global_counters().add_wait();
  do_synchronize_device();
}

void Runtime::synchronize(EventHandle event) {
  if (const CaptureState* const capture = active_capture()) [[unlikely]] {
    if (capture->captured_events.contains(event)) {
      refuse_in_capture("a host wait",
                        "the event was recorded on a captured stream, whose work has not run");
    }
  }
  global_counters().add_wait();
  do_synchronize(event);
}

}  // namespace smartarray::detail
