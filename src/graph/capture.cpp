// The graph layer: a capture session (open, end, or drop after an error) and the replays of its
// graph. The arrays' part is core/array_core/capture.hpp, the backends' runtime/detail/capture.hpp.
#include <smartarray/graph/capture.hpp>
#include "core/array_core/capture.hpp"
#include <smartarray/core/detail/array_core.hpp>
#include <smartarray/core/detail/stream_order.hpp>
#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/runtime/detail/capture.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/runtime/device.hpp>
#include <smartarray/error.hpp>

#include <iostream>
#include <utility>

namespace smartarray {

struct Graph::Impl {
  detail::GraphHandle handle = nullptr;
  int device = 0;
  std::vector<detail::GraphBinding> bindings;
  /// Per binding, whether the launch in progress must commit its writes.
  std::vector<bool> commit;
  std::vector<detail::KeptBlock> kept_blocks;
  std::vector<std::shared_ptr<void>> keep_alive;
  std::uint64_t launches = 0;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();
};

Graph::Impl::~Impl() {
  for (const detail::GraphBinding& binding : bindings) {
    binding.token->pins.fetch_sub(1, std::memory_order_acq_rel);
  }
  detail::Runtime& rt = detail::runtime();
  try {
    // Replays may still run, and read or write the temporaries.
    if (launches > 0 || !kept_blocks.empty()) {
      const DeviceGuard on_device(Device{device});
      rt.synchronize_device();
    }
  } catch (const std::exception& error) {
    std::cerr << "smartarray: destroying a graph: waiting for its device failed (" << error.what()
              << "); its temporaries are leaked\n";
    kept_blocks.clear();
  }
  if (handle != nullptr) rt.destroy_graph(handle);
  for (const detail::KeptBlock& block : kept_blocks) {
    block.resource->deallocate_sync(block.ptr, block.bytes, block.alignment);
  }
}

Graph::Graph() noexcept = default;
Graph::Graph(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Graph::~Graph() = default;
Graph::Graph(Graph&& other) noexcept = default;
Graph& Graph::operator=(Graph&& other) noexcept = default;

int Graph::device() const {
  SMARTARRAY_EXPECTS(impl_ != nullptr, logic_error, "device() of an empty Graph");
  return impl_->device;
}

std::uint64_t Graph::launches() const noexcept { return impl_ == nullptr ? 0 : impl_->launches; }

std::vector<GraphArray> Graph::arrays() const {
  std::vector<GraphArray> arrays;
  if (impl_ == nullptr) return arrays;
  for (const detail::GraphBinding& binding : impl_->bindings) {
    arrays.push_back({binding.id, binding.name, binding.device, binding.reads.bytes(),
                      binding.writes.bytes()});
  }
  return arrays;
}

void Graph::launch(StreamRef stream, smartarray::source_location where) {
  SMARTARRAY_EXPECTS(impl_ != nullptr, logic_error, "launch of an empty Graph (default-constructed "
                     "or moved from) at ", where.file_name(), ":", where.line());
  if (detail::active_capture() != nullptr) [[unlikely]] {
    detail::refuse_in_capture(
        detail::concat("Graph::launch at ", where.file_name(), ":", where.line()).c_str(),
        "a replay's fix-up copies would be recorded into the capture; launch graphs one after "
        "the other instead");
  }
  detail::Runtime& rt = detail::runtime();
  const StreamRef on = rt.canonical(stream);
  rt.check_stream(on);
  if (rt.device_count() > 1) {
    SMARTARRAY_EXPECTS(rt.stream_device(on) == impl_->device, logic_error, "launch at ",
                       where.file_name(), ":", where.line(), " on stream ", on.handle(),
                       " of device ", rt.stream_device(on), ": the graph was captured on device ",
                       impl_->device);
  }
  // Every array is checked before the first fix-up copy, so that a refused launch copies nothing.
  for (const detail::GraphBinding& binding : impl_->bindings) {
    SMARTARRAY_EXPECTS(binding.token->alive.load(std::memory_order_acquire), logic_error,
                       binding.name, " was destroyed since the graph was captured; capture the "
                       "graph again");
    binding.array->check_replay(binding);
  }
  // A fix-up that fails (a copy, or an array changed by another thread since the check) leaves
  // the arrays before it with more valid bytes, never fewer, and the graph's writes uncommitted.
  std::vector<bool>& commit = impl_->commit;
  for (std::size_t i = 0; i < impl_->bindings.size(); ++i) {
    commit[i] = impl_->bindings[i].array->prepare_replay(impl_->bindings[i], on, where);
  }
  rt.launch_graph(impl_->handle, on);
  ++impl_->launches;
  for (std::size_t i = 0; i < impl_->bindings.size(); ++i) {
    if (commit[i]) impl_->bindings[i].array->commit_replay(impl_->bindings[i]);
  }
}

namespace detail {

struct CaptureSession::State {
  CaptureState runtime_side;
  ArrayCapture arrays;
  bool open = true;       ///< the thread's capture state is set, and the backend captures
  bool finished = false;  ///< a graph took the kept blocks

  State(StreamRef origin, int device, const char* file, unsigned line) : arrays(device) {
    runtime_side.origin = origin;
    runtime_side.device = device;
    runtime_side.file = file;
    runtime_side.line = line;
  }

  /// Ends the thread's capture state: from here on nothing is recorded or kept.
  void close() noexcept {
    active_capture_state = nullptr;
    active_array_capture = nullptr;
    open = false;
  }
  /// Every array that still exists gets its tracker back.
  void restore_arrays() noexcept {
    for (CapturedArray& entry : arrays.arrays()) {
      if (!entry.released) entry.binding.array->end_capture(entry);
    }
  }
  /// The first array released inside the capture after the graph read it: no array holds the
  /// data the graph reads at its replays any more.
  [[nodiscard]] const CapturedArray* released_after_read() noexcept {
    for (const CapturedArray& entry : arrays.arrays()) {
      if (entry.released && !entry.binding.reads.empty()) return &entry;
    }
    return nullptr;
  }
};

CaptureSession::CaptureSession(StreamRef stream, const smartarray::source_location& where)
    : CaptureSession(stream, where.file_name(), static_cast<unsigned>(where.line())) {}

CaptureSession::CaptureSession(StreamRef stream, const char* file, unsigned line) {
  if (const CaptureState* const open = active_capture()) {
    throw logic_error(concat("sa::capture at ", file, ":", line,
                             " inside the capture opened at ", open->file, ":", open->line,
                             ": captures do not nest"));
  }
  Runtime& rt = runtime();
  const StreamRef on = rt.canonical(stream);
  rt.begin_capture(on);
  state_ = std::make_unique<State>(on, rt.stream_device(on), file, line);
  active_capture_state = &state_->runtime_side;
  active_array_capture = &state_->arrays;
}

CaptureSession::~CaptureSession() {
  if (state_ == nullptr || state_->finished) return;
  if (state_->open) {
    state_->close();
    runtime().abort_capture(state_->runtime_side.origin);
  }
  state_->restore_arrays();
  // Nothing recorded will run: the blocks go back as they were released.
  for (const KeptBlock& block : state_->runtime_side.kept_blocks) {
    block.resource->deallocate(block.stream, block.ptr, block.bytes, block.alignment);
  }
  release_kept_streams(state_->runtime_side);
}

StreamRef CaptureSession::stream() const noexcept { return state_->runtime_side.origin; }

Graph CaptureSession::finish() {
  State& state = *state_;
  Runtime& rt = runtime();
  auto impl = std::make_unique<Graph::Impl>();
  impl->device = state.runtime_side.device;
  std::string failure = state.arrays.failure();
  if (failure.empty()) {
    if (const CapturedArray* entry = state.released_after_read()) {
      failure = concat(entry->binding.name,
                       " was destroyed or assigned to inside the capture after the graph read "
                       "it: no array holds the data the graph reads at its replays");
    }
  }
  if (!failure.empty()) {
    failure = concat("sa::capture at ", state.runtime_side.file, ":", state.runtime_side.line,
                     ": ", failure);
  } else {
    failure = state.runtime_side.failure;  // names the capture already
  }
  // Whatever happens next, the capture is over; on an error the destructor puts the arrays
  // back and releases the kept blocks and streams.
  join_back(state.runtime_side);
  state.close();
  impl->handle = rt.end_capture(state.runtime_side.origin);
  if (!failure.empty()) {
    rt.destroy_graph(impl->handle);
    impl->handle = nullptr;
    throw logic_error(failure);
  }
  for (CapturedArray& entry : state.arrays.arrays()) {
    if (entry.released) continue;  // a temporary of the graph: its buffer is a kept block
    entry.binding.token = entry.binding.array->graph_token();
    entry.binding.token->pins.fetch_add(1, std::memory_order_acq_rel);
    impl->bindings.push_back(entry.binding);
  }
  impl->commit.assign(impl->bindings.size(), false);
  state.restore_arrays();
  impl->kept_blocks = std::move(state.runtime_side.kept_blocks);
  impl->keep_alive = std::move(state.runtime_side.keep_alive);
  state.finished = true;
  return Graph(std::move(impl));
}

}  // namespace detail
}  // namespace smartarray
