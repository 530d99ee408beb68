// The out-of-core adapters' streams and chunk size (adapters/detail/chunked.hpp).
#include <smartarray/adapters/detail/chunked.hpp>
#include <smartarray/error.hpp>

namespace smartarray::detail {

std::array<StreamRef, chunk_slots> chunk_streams() {
  // Made once and never destroyed: chunked calls may run until the process ends.
  static auto* streams = new std::array<Stream, chunk_slots>;
  std::array<StreamRef, chunk_slots> refs;
  for (std::size_t b = 0; b < chunk_slots; ++b) refs[b] = (*streams)[b];
  return refs;
}

std::size_t chunk_elements(const char* what, std::size_t n, std::size_t element_bytes) {
  constexpr std::size_t granule = 256;
  const std::size_t budget = device_budget();
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
