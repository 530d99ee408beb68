// Private: the nccl transport (src/distributed/nccl.cpp, built with SMARTARRAY_WITH_NCCL). Every
// call is enqueued on the caller's stream, which must be on the communicator's device; none makes
// the host wait.
#pragma once

#include <smartarray/distributed/collectives.hpp>
#include <smartarray/distributed/communicator.hpp>
#include <smartarray/distributed/detail/exchange.hpp>
#include <smartarray/runtime/stream.hpp>

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace smartarray::dist::detail {

/// The NCCL communicator of the processes of `comm` (collective over them): rank 0's unique id is
/// broadcast over MPI, and every process throws nccl_error when any could not join.
[[nodiscard]] ncclComm* nccl_create(MPI_Comm comm, int rank, int size);
/// Destroys it (ncclCommDestroy, after the work queued on it).
void nccl_destroy(ncclComm* comm) noexcept;

void nccl_send(const void* data, std::size_t bytes, int peer, const Communicator& comm,
               StreamRef stream);
void nccl_recv(void* data, std::size_t bytes, int peer, const Communicator& comm,
               StreamRef stream);
/// Every receive and send of an exchange in one NCCL group. Between two ranks, NCCL matches
/// messages in the order they were posted, not by tag.
void nccl_exchange(const std::vector<Message>& receives, const std::vector<Message>& sends,
                   const Communicator& comm, StreamRef stream);
void nccl_all_reduce(void* data, std::size_t count, ElementType type, Op op,
                     const Communicator& comm, StreamRef stream);
void nccl_broadcast(void* data, std::size_t bytes, int root, const Communicator& comm,
                    StreamRef stream);
void nccl_all_gather(const void* in, void* out, std::size_t bytes, const Communicator& comm,
                     StreamRef stream);
void nccl_reduce_scatter(const void* in, void* out, std::size_t count, ElementType type, Op op,
                         const Communicator& comm, StreamRef stream);

}  // namespace smartarray::dist::detail
