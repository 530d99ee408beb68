// The messages of an exchange: one NCCL group, or MPI non-blocking messages
// (distributed/detail/exchange.hpp).
#include <smartarray/distributed/detail/exchange.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>

#include "distributed/transport.hpp"

#include <vector>

namespace smartarray::dist::detail {

void exchange(const std::vector<Message>& receives, const std::vector<Message>& sends,
              const Communicator& comm, StreamRef stream) {
  if (enqueued(comm, stream)) {
#if SMARTARRAY_DIST_NCCL
    nccl_exchange(receives, sends, comm, stream);
#endif
    return;
  }
  const MPI_Comm native = comm.native();
  std::vector<MPI_Request> requests;
  requests.reserve(receives.size() + sends.size());
  int failed = MPI_SUCCESS;
  const char* failed_call = nullptr;
  for (const Message& message : receives) {
    MPI_Request request = MPI_REQUEST_NULL;
    const int code = MPI_Irecv(message.data, static_cast<int>(message.bytes), MPI_BYTE,
                               message.peer, message.tag, native, &request);
    if (code != MPI_SUCCESS) {
      failed = code;
      failed_call = "MPI_Irecv";
      break;
    }
    requests.push_back(request);
  }
  if (failed == MPI_SUCCESS) {
    for (const Message& message : sends) {
      MPI_Request request = MPI_REQUEST_NULL;
      const int code = MPI_Isend(message.data, static_cast<int>(message.bytes), MPI_BYTE,
                                 message.peer, message.tag, native, &request);
      if (code != MPI_SUCCESS) {
        failed = code;
        failed_call = "MPI_Isend";
        break;
      }
      requests.push_back(request);
    }
  }
  // The messages started are always waited for: MPI must not write a buffer after this returns.
  const int waited = MPI_Waitall(static_cast<int>(requests.size()), requests.data(),
                                 MPI_STATUSES_IGNORE);
  if (failed != MPI_SUCCESS) throw_mpi_error(failed_call, failed);
  if (waited != MPI_SUCCESS) throw_mpi_error("MPI_Waitall", waited);
}

}  // namespace smartarray::dist::detail
