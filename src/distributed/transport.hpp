// Private: how a transfer meets its transport. CMake defines SMARTARRAY_DIST_NCCL (1 with
// SMARTARRAY_WITH_NCCL); a compile without it (the header checks) is a build without NCCL. With it,
// the nccl transport's functions (nccl.hpp).
#pragma once

#include <smartarray/distributed/communicator.hpp>
#include <smartarray/error.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/runtime/stream.hpp>

#ifndef SMARTARRAY_DIST_NCCL
#define SMARTARRAY_DIST_NCCL 0
#endif

#if SMARTARRAY_DIST_NCCL
#include "distributed/nccl.hpp"
#endif

namespace smartarray::dist::detail {

/// Throws logic_error, before anything is acquired or sent, when the transport is nccl and
/// `stream` is not on the communicator's device (NCCL would fail on it, or wait forever).
inline void check_stream(const char* what, const Communicator& comm, StreamRef stream) {
  if (comm.transport() != Transport::nccl) return;
  const Device device = stream_device(stream);
  SMARTARRAY_EXPECTS(device == comm.device(), logic_error, what, ": rank ", comm.rank(),
                     ": the stream is on device ", device.ordinal,
                     " but the communicator's NCCL works on device ", comm.device().ordinal);
}

/// Before a transfer: true for nccl, whose call the caller enqueues on `stream`. For MPI, false,
/// after making the host wait for `stream` when MPI reads or writes device memory (mpi_device),
/// so that MPI never overtakes the work queued there before.
inline bool enqueued(const Communicator& comm, StreamRef stream) {
  if (comm.transport() == Transport::nccl) return true;
  if (comm.transport() == Transport::mpi_device) smartarray::detail::host_wait_stream(stream);
  return false;
}

}  // namespace smartarray::dist::detail
