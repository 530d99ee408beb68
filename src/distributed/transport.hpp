// Private: how a transfer meets its transport. CMake defines SMARTARRAY_DIST_NCCL (1 with
// SMARTARRAY_WITH_NCCL); a compile without it (the header checks) is a build without NCCL. With it,
// the nccl transport's functions (nccl.hpp).
#pragma once

#include <smartarray/distributed/communicator.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/runtime/stream.hpp>

#ifndef SMARTARRAY_DIST_NCCL
#define SMARTARRAY_DIST_NCCL 0
#endif

#if SMARTARRAY_DIST_NCCL
#include "distributed/nccl.hpp"
#endif

namespace smartarray::dist::detail {

/// Before a transfer: true for nccl, whose call the caller enqueues on `stream`. For MPI, false,
/// after making the host wait for `stream` when MPI reads or writes device memory (mpi_device),
/// so that MPI never overtakes the work queued there before.
inline bool enqueued(const Communicator& comm, StreamRef stream) {
  if (comm.transport() == Transport::nccl) return true;
  if (comm.transport() == Transport::mpi_device) smartarray::detail::host_wait_stream(stream);
  return false;
}

}  // namespace smartarray::dist::detail
