// What the distributed tests share: the transports they run over in this process, and random
// values that every rank knows.
#pragma once

#include <smartarray/distributed/communicator.hpp>

#include <cstdint>
#include <vector>

namespace smartarray::test {

/// A random value drawn by rank 0 and shared with every rank (MPI_Bcast over MPI_COMM_WORLD), so
/// that each rank knows what the others send.
[[nodiscard]] std::uint32_t shared_salt();

/// `mpi_host`, then `mpi_device` where it runs (the host backend emulates it; on the cuda backend
/// it needs a CUDA-aware MPI), then `nccl` where it runs (the cuda backend, a build with NCCL, and
/// no more processes on this node than devices). Collective over MPI_COMM_WORLD.
[[nodiscard]] std::vector<dist::Transport> test_transports();

/// test_transports() without `mpi_host`: the transports that read and write device memory.
[[nodiscard]] std::vector<dist::Transport> device_transports();

}  // namespace smartarray::test
