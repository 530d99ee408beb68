// The host backend's stream capture and graphs: a capture records the tasks that its streams are
// given (host_capture.hpp), and a replay queues them again on the launch stream.
#include "runtime/host/host_runtime.hpp"

#include <smartarray/error.hpp>

#include <memory>
#include <optional>
#include <utility>

namespace smartarray::detail {

void HostRuntime::refuse_capturing(HostStream& stream, const char* what) {
  SMARTARRAY_EXPECTS(stream.capture() == nullptr, logic_error, what, " of ", stream.name(),
                     ", which captures: its work has not run");
}

void HostRuntime::refuse_captured(const Marker& marker, const char* what) {
  SMARTARRAY_EXPECTS(marker.capture == nullptr, logic_error, what, " last recorded on ",
                     marker.stream->name(), " during a capture: it marks a point of a graph");
}

void HostRuntime::do_begin_capture(StreamRef stream) {
  std::shared_ptr<HostStream> queue = stream_for(stream);
  queue->set_capture(std::make_shared<HostCapture>(queue.get()));
}

bool HostRuntime::is_capturing(StreamRef stream) { return stream_for(stream)->capture() != nullptr; }

void HostRuntime::release_capture(HostCapture& capture) noexcept {
  for (const std::shared_ptr<HostStream>& queue : all_streams()) {
    if (queue->capture().get() == &capture) queue->set_capture(nullptr);
  }
}

GraphHandle HostRuntime::end_capture(StreamRef stream) {
  std::shared_ptr<HostStream> queue = stream_for(stream);
  const std::shared_ptr<HostCapture> capture = queue->capture();
  SMARTARRAY_EXPECTS(capture != nullptr && capture->origin() == queue.get(), logic_error,
                     "end a capture on ", queue->name(), ", which did not begin one");
  release_capture(*capture);
  if (const std::optional<const HostStream*> member = capture->unjoined()) {
    throw logic_error(concat("end the capture on ", queue->name(), ": ", (*member)->name(),
                             " waited for an event of the capture and was not joined back into "
                             "the capture's stream (as CUDA's cudaErrorStreamCaptureUnjoined)"));
  }
  return new HostGraph{capture->take_tasks()};
}

void HostRuntime::abort_capture(StreamRef stream) noexcept {
  try {
    if (const std::shared_ptr<HostCapture> capture = stream_for(stream)->capture()) {
      release_capture(*capture);
    }
  } catch (...) {  // a stream that is gone captures nothing any more
  }
}

void HostRuntime::launch_graph(GraphHandle graph, StreamRef stream) {
  std::shared_ptr<HostStream> queue = stream_for(stream);
  for (const HostCapture::Task& task : static_cast<HostGraph*>(graph)->tasks) {
    queue->enqueue(task);
  }
}

void HostRuntime::destroy_graph(GraphHandle graph) noexcept {
  delete static_cast<HostGraph*>(graph);
}

}  // namespace smartarray::detail
