// dist::exchange_halos' checks and neighbours (distributed/halo.hpp).
#include <smartarray/distributed/halo.hpp>
#include <smartarray/error.hpp>

namespace smartarray::dist::detail {

void check_halo(std::size_t size, std::size_t element_bytes, const Halo& halo,
                const Communicator& comm) {
  const std::size_t w = halo.width;
  SMARTARRAY_EXPECTS(size >= 2 * w && size - 2 * w >= w, logic_error, "exchange_halos: rank ",
                     comm.rank(), ": halos of ", w, " elements at both ends of an array of ", size,
                     " elements are wider than the interior between them (",
                     size >= 2 * w ? size - 2 * w : 0, " elements)");
  check_count("exchange_halos", w * element_bytes, "bytes", comm);
}

Neighbours halo_neighbours(const Halo& halo, const Communicator& comm) {
  const int last = comm.size() - 1;
  Neighbours neighbours{comm.rank() - 1, comm.rank() + 1 > last ? -1 : comm.rank() + 1};
  if (halo.periodic) {  // one rank alone is its own neighbour on both sides
    if (neighbours.left < 0) neighbours.left = last;
    if (neighbours.right < 0) neighbours.right = 0;
  }
  return neighbours;
}

}  // namespace smartarray::dist::detail
