// Out-of-core access (core/detail/chunked_access.hpp): the streams, the chunk size, the chunks'
// buffers and the ordering of a chunked call.
#include <smartarray/core/detail/chunked_access.hpp>
#include <smartarray/core/array_options.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/error.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include <mutex>

namespace smartarray::detail {

// The memory layer cannot see tiles: the smallest budget it accepts is stated there as a number.
static_assert(min_device_budget == TileSize::min_bytes,
              "the smallest device budget is one tile of the smallest size");

std::array<StreamRef, chunk_slots> chunk_streams(int device) {
  // Made once per device and never destroyed: chunked calls may run until the process ends.
  static std::mutex mutex;
  static std::array<std::array<StreamRef, chunk_slots>, max_devices> made{};
  std::lock_guard lock(mutex);
  std::array<StreamRef, chunk_slots>& streams = made[static_cast<std::size_t>(device)];
  if (streams[0].is_default()) {
    for (StreamRef& stream : streams) stream = runtime().create_stream(device);
  }
  return streams;
}

std::size_t chunk_elements(const char* what, std::size_t n, std::size_t element_bytes,
                           int device) {
  constexpr std::size_t granule = 256;
  const std::size_t budget = device_budget(device);
  // Half the budget for the buffers of every array and slot: the rest stays for the pool's other
  // users and its rounding.
  const std::size_t chunk = budget / 2 / (chunk_slots * element_bytes) / granule * granule;
  if (chunk == 0) {
    throw out_of_memory(concat(what, " over ", n, " elements in chunks: a chunk of ", granule,
                               " elements in each of ", chunk_slots, " slots takes ",
                               2 * chunk_slots * granule * element_bytes,
                               " bytes of device memory, more than the device budget of ", budget,
                               " bytes allows (set_device_budget, SMARTARRAY_DEVICE_BUDGET)"));
  }
  return std::min(chunk, n);
}

ChunkBuffers::ChunkBuffers(std::size_t bytes, const std::array<StreamRef, chunk_slots>& streams,
                           int device)
    : resource_(&smartarray::device_resource(device)), streams_(streams), bytes_(bytes) {
  try {
    for (std::size_t b = 0; b < chunk_slots; ++b) {
      buffer_[b] = static_cast<std::byte*>(resource_->allocate(streams_[b], bytes_));
    }
  } catch (...) {
    release();
    throw;
  }
}

ChunkBuffers::~ChunkBuffers() { release(); }

void ChunkBuffers::release() noexcept {
  for (std::size_t b = 0; b < chunk_slots; ++b) {
    if (buffer_[b] != nullptr) resource_->deallocate(streams_[b], buffer_[b], bytes_);
    buffer_[b] = nullptr;
  }
}

ChunkedCall::ChunkedCall(const char* what, std::size_t n, std::size_t element_bytes,
                         StreamRef stream, const smartarray::source_location& where)
    : n_(n),
      stream_(stream),
      where_(where),
      device_(runtime().stream_device(stream)),
      chunk_(chunk_elements(what, n, element_bytes, device_)),
      streams_(chunk_streams(device_)) {}

void ChunkedCall::begin() const {
  for (const StreamRef chunk_stream : streams_) stream_wait_stream(chunk_stream, stream_);
}

void ChunkedCall::end() const {
  for (const StreamRef chunk_stream : streams_) {
    host_wait_stream(chunk_stream);
    stream_wait_stream(stream_, chunk_stream);
  }
}

void ChunkedCall::drain() const noexcept {
  for (const StreamRef chunk_stream : streams_) {
    try {
      runtime().synchronize(chunk_stream);
    } catch (const std::exception&) {
      // The first failure is the one reported.
    }
  }
}

}  // namespace smartarray::detail
