// dist::exchange_halos' checks and neighbours (distributed/halo.hpp).
#include <smartarray/distributed/halo.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>

#include "distributed/transport.hpp"

#include <string>

namespace smartarray::dist::detail {

Neighbours halo_neighbours(std::size_t size, std::size_t element_bytes, const Halo& halo,
                           const Communicator& comm, StreamRef stream) {
  require_mpi_running("exchange_halos");
  check_stream("exchange_halos", comm, stream);
  const std::size_t w = halo.width;
  SMARTARRAY_EXPECTS(size >= 2 * w && size - 2 * w >= w, logic_error, "exchange_halos: rank ",
                     comm.rank(), ": halos of ", w, " elements at both ends of an array of ",
                     size, " elements are wider than the interior between them (",
                     size >= 2 * w ? size - 2 * w : 0, " elements)");
  check_count("exchange_halos", w * element_bytes, "bytes", comm);
  if (comm.checks_sizes()) {
    const std::vector<long long> widths =
        gather_sizes({static_cast<long long>(w * element_bytes)}, comm);
    for (int rank = 0; rank < comm.size(); ++rank) {
      const long long other = widths[static_cast<std::size_t>(rank)];
      SMARTARRAY_EXPECTS(other == widths[0], logic_error, "exchange_halos: rank ", comm.rank(),
                         ": the halos differ between ranks: rank 0's are ", widths[0],
                         " bytes, rank ", rank, "'s ", other,
                         " bytes (every rank exchanges halos of the same bytes)");
    }
  }
  const int last = comm.size() - 1;
  Neighbours neighbours{comm.rank() - 1, comm.rank() + 1 > last ? -1 : comm.rank() + 1};
  if (halo.periodic) {  // one rank alone is its own neighbour on both sides
    if (neighbours.left < 0) neighbours.left = last;
    if (neighbours.right < 0) neighbours.right = 0;
  }
  return neighbours;
}

}  // namespace smartarray::dist::detail
