// The out-of-core adapters' streams and chunk size (adapters/detail/chunked.hpp).
#include <smartarray/adapters/detail/chunked.hpp>
#include <smartarray/error.hpp>

#include <mutex>

namespace smartarray::detail {

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

}  // namespace smartarray::detail
