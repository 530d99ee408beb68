// The host backend's streams and events: made, found and destroyed by handle, recorded, waited on
// and synchronized (each stream's queue and worker are host_stream.hpp).
#include "runtime/host/host_runtime.hpp"

#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>

#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace smartarray::detail {

void HostRuntime::launch_host_func(StreamRef stream, std::function<void()> fn) {
  std::shared_ptr<HostStream> queue = stream_for(stream);
  SMARTARRAY_EXPECTS(fn != nullptr, logic_error, "launch_host_func on ", queue->name(),
                     ": the function is empty");
  queue->enqueue(std::move(fn));
}

StreamRef HostRuntime::do_create_stream(int device, StreamPriority priority) {
  std::shared_ptr<HostStream> stream = make_stream(false, device, priority);
  std::lock_guard lock(streams_mutex_);
  streams_.emplace(stream.get(), stream);
  return StreamRef{stream.get()};
}

void HostRuntime::do_check_stream(StreamRef stream) { (void)stream_for(stream); }

void HostRuntime::do_destroy_stream(StreamRef stream) noexcept {
  if (stream.is_default() || stream.default_of_device() >= 0) {
    std::cerr << "smartarray: destroy_stream: the default stream cannot be destroyed\n";
    return;
  }
  std::shared_ptr<HostStream> queue;
  {
    std::lock_guard lock(streams_mutex_);
    const auto it = streams_.find(stream.handle());
    if (it == streams_.end()) {
      std::cerr << "smartarray: destroy_stream: " << stream.handle()
                << " is not a live stream of the host backend\n";
      return;
    }
    queue = std::move(it->second);
    streams_.erase(it);
  }
  // Events recorded on the stream may keep its queue object alive; its worker ends here.
  queue->stop_and_join();
  if (std::optional<std::string> error = queue->take_error()) {
    std::cerr << "smartarray: destroy_stream: " << *error
              << " (never reported by a synchronize)\n";
  }
}

bool HostRuntime::query(StreamRef stream) {
  std::shared_ptr<HostStream> queue = stream_for(stream);
  refuse_capturing(*queue, "query");
  return queue->idle();
}

int HostRuntime::do_stream_device(StreamRef stream) { return stream_for(stream)->device(); }

StreamPriority HostRuntime::do_stream_priority(StreamRef stream) {
  return stream_for(stream)->priority();
}

EventHandle HostRuntime::create_event() {
  auto event = std::make_unique<HostEvent>();
  EventHandle handle = event.get();
  std::lock_guard lock(events_mutex_);
  events_.emplace(handle, std::move(event));
  return handle;
}

void HostRuntime::destroy_event(EventHandle event) noexcept {
  std::unique_ptr<HostEvent> owned;  // destroyed after the lock is released
  {
    std::lock_guard lock(events_mutex_);
    const auto it = events_.find(event);
    if (it == events_.end()) {
      std::cerr << "smartarray: destroy_event: " << event
                << " is not a live event of the host backend\n";
      return;
    }
    owned = std::move(it->second);
    events_.erase(it);
  }
}

void HostRuntime::do_record(EventHandle event, StreamRef stream) {
  std::shared_ptr<HostStream> queue = stream_for(stream);
  HostEvent& target = event_for(event);
  std::shared_ptr<HostCapture> capture = queue->capture();
  const std::size_t position = capture != nullptr ? capture->recorded(queue.get()) : 0;
  const std::uint64_t ticket = queue->tail();
  target.set(Marker{std::move(queue), ticket, std::move(capture), position});
}

void HostRuntime::stream_wait(StreamRef stream, EventHandle event) {
  std::shared_ptr<HostStream> waiter = stream_for(stream);
  Marker marker = event_for(event).get();
  const std::shared_ptr<HostCapture> capturing = waiter->capture();
  if (marker.capture != nullptr) {
    // A point of a capture: the waiter joins it (fork), or the origin joins a member back. The
    // replay's order already puts the waiter's later work after it.
    SMARTARRAY_EXPECTS(capturing == nullptr || capturing == marker.capture, logic_error,
                       waiter->name(), " waits for an event of another stream's capture");
    if (capturing == nullptr) {
      marker.capture->add_member(waiter.get());
      waiter->set_capture(marker.capture);
    } else if (waiter.get() == marker.capture->origin()) {
      marker.capture->join(marker.stream.get(), marker.position);
    }
    return;
  }
  if (marker.stream == nullptr) return;  // never recorded: nothing to wait for
  // As CUDA (cudaErrorStreamCaptureIsolation): a graph cannot wait for work outside it.
  SMARTARRAY_EXPECTS(capturing == nullptr, logic_error, waiter->name(),
                     " captures and waits for an event recorded outside the capture: a "
                     "dependency may not cross the capture's boundary");
  waiter->enqueue([marker = std::move(marker)] { marker.stream->wait_for(marker.ticket); });
}

bool HostRuntime::query(EventHandle event) {
  const Marker marker = event_for(event).get();
  refuse_captured(marker, "query an event");
  return marker.stream == nullptr || marker.stream->reached(marker.ticket);
}

void HostRuntime::do_synchronize(StreamRef stream) {
  std::shared_ptr<HostStream> queue = stream_for(stream);
  refuse_capturing(*queue, "synchronize");
  block_until(*queue, queue->tail(), "synchronize");
  report_error(*queue);
}

void HostRuntime::do_synchronize_device() {
  std::vector<std::shared_ptr<HostStream>> queues = all_streams();
  std::erase_if(queues, [device = current_device()](const std::shared_ptr<HostStream>& queue) {
    return queue->device() != device;
  });
  for (const auto& queue : queues) block_until(*queue, queue->tail(), "synchronize_device");
  for (const auto& queue : queues) report_error(*queue);
}

void HostRuntime::do_synchronize(EventHandle event) {
  const Marker marker = event_for(event).get();
  refuse_captured(marker, "synchronize an event");
  if (marker.stream == nullptr) return;
  block_until(*marker.stream, marker.ticket, "synchronize an event");
  report_error(*marker.stream);
}

std::shared_ptr<HostStream> HostRuntime::make_stream(bool is_default, int device,
                                                     StreamPriority priority) {
  try {
    return std::make_shared<HostStream>(is_default, device, devices_ > 1, latency_, priority);
  } catch (const std::system_error& error) {
    throw cuda_error(concat("create a stream: cannot start its worker thread: ", error.what()),
                     -1);
  }
}

std::shared_ptr<HostStream> HostRuntime::stream_for(StreamRef stream) {
  const int default_of = stream.is_default() ? current_device() : stream.default_of_device();
  std::lock_guard lock(streams_mutex_);
  if (default_of >= 0) {
    SMARTARRAY_EXPECTS(default_of < devices_, logic_error, "the default stream of device ",
                       default_of, ": the host backend has ", devices_, " devices");
    std::shared_ptr<HostStream>& queue = default_streams_[static_cast<std::size_t>(default_of)];
    if (queue == nullptr) queue = make_stream(true, default_of);
    return queue;
  }
  const auto it = streams_.find(stream.handle());
  SMARTARRAY_EXPECTS(it != streams_.end(), logic_error, "stream ", stream.handle(),
                     " is not a live stream of the host backend (destroyed, or made by "
                     "another backend)");
  return it->second;
}

std::vector<std::shared_ptr<HostStream>> HostRuntime::all_streams() {
  std::lock_guard lock(streams_mutex_);
  std::vector<std::shared_ptr<HostStream>> queues;
  queues.reserve(streams_.size() + default_streams_.size());
  for (const auto& queue : default_streams_) {
    if (queue != nullptr) queues.push_back(queue);
  }
  for (const auto& entry : streams_) queues.push_back(entry.second);
  return queues;
}

std::vector<std::shared_ptr<HostStream>> HostRuntime::take_all_streams() {
  std::vector<std::shared_ptr<HostStream>> queues = all_streams();
  std::lock_guard lock(streams_mutex_);
  streams_.clear();
  for (auto& queue : default_streams_) queue.reset();
  return queues;
}

HostEvent& HostRuntime::event_for(EventHandle event) {
  std::lock_guard lock(events_mutex_);
  const auto it = events_.find(event);
  SMARTARRAY_EXPECTS(it != events_.end(), logic_error, "event ", event,
                     " is not a live event of the host backend (destroyed, or made by another "
                     "backend)");
  return *it->second;
}

void HostRuntime::block_until(HostStream& stream, std::uint64_t ticket, const char* what) {
  SMARTARRAY_EXPECTS(HostStream::current() != &stream || stream.reached(ticket), logic_error,
                     what, " from a host function running on ", stream.name(),
                     " would wait for itself");
  stream.wait_for(ticket);
}

void HostRuntime::report_error(HostStream& stream) {
  if (std::optional<std::string> error = stream.take_error()) throw cuda_error(*error, -1);
}

void HostRuntime::wait_for_queued_work() noexcept {
  // A host function must not call the runtime (as in CUDA); if it frees memory anyway, waiting
  // for its own stream would deadlock.
  if (HostStream::current() != nullptr) return;
  for (const auto& queue : all_streams()) queue->wait_for(queue->tail());
}

}  // namespace smartarray::detail
