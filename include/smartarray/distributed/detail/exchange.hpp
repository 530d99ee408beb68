/**
 * @file distributed/detail/exchange.hpp
 * @brief Private: the non-blocking messages of one exchange (a halo exchange), started together
 *        and waited for together, so that no order of the ranks' calls can deadlock.
 */
#pragma once

#include <smartarray/distributed/communicator.hpp>

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

/// Starts every receive, then every send, and waits for all of them (MPI_Irecv, MPI_Isend,
/// MPI_Waitall). On a failure it still waits for the ones started, then throws mpi_error.
void exchange(const std::vector<Message>& receives, const std::vector<Message>& sends,
              const Communicator& comm);

/// Every rank's `values` (the same count on each), gathered in rank order (MPI_Allgather): the
/// handshake that checks sizes across ranks before an exchange or a collective.
[[nodiscard]] std::vector<long long> gather_sizes(const std::vector<long long>& values,
                                                  const Communicator& comm);

}  // namespace smartarray::dist::detail
