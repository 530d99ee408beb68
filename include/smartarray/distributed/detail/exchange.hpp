/**
 * @file distributed/detail/exchange.hpp
 * @brief Private: the messages of one exchange (a halo exchange), posted together (NCCL's group,
 *        or MPI's non-blocking messages waited for together), so that no order of the ranks' calls
 *        can deadlock.
 */
#pragma once

#include <smartarray/distributed/communicator.hpp>
#include <smartarray/runtime/stream.hpp>

#include <cstddef>
#include <vector>

namespace smartarray::dist::detail {

/// One message of an exchange: `bytes` bytes at `data` to or from rank `peer` with `tag`.
struct Message {
  void* data;
  std::size_t bytes;
  int peer;
  int tag;
};

/// Every receive and send of an exchange. With nccl, one NCCL group on `stream`. With MPI, it
/// starts every receive, then every send, and waits for all of them (MPI_Irecv, MPI_Isend,
/// MPI_Waitall), after the host waited for `stream` with `mpi_device`; on a failure it still
/// waits for the ones started, then throws mpi_error. NCCL's failures throw nccl_error.
void exchange(const std::vector<Message>& receives, const std::vector<Message>& sends,
              const Communicator& comm, StreamRef stream);

}  // namespace smartarray::dist::detail
