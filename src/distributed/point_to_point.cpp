// dist::send and dist::recv (distributed/point_to_point.hpp): the checks before any MPI or NCCL
// call, the handshake of NCCL messages, and the transfers themselves.
#include <smartarray/distributed/point_to_point.hpp>
#include <smartarray/distributed/detail/agreement.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>
#include <smartarray/error.hpp>

#include "distributed/transport.hpp"

#include <climits>
#include <memory>

namespace smartarray::dist::detail {

namespace {
/// The tag of the size handshake of nccl's point-to-point messages: with nccl, the handshakes are
/// the only point-to-point MPI messages on the communicator's duplicate, and they match in order.
constexpr int handshake_tag = 0;
}  // namespace

void check_peer(const char* what, int peer, int tag, const Communicator& comm,
                StreamRef stream) {
  (void)usable(what, comm);
  SMARTARRAY_EXPECTS(peer >= 0 && peer < comm.size(), logic_error, what, ": rank ", comm.rank(),
                     " named rank ", peer, ", which is not a rank of a communicator of ",
                     comm.size(), " processes");
  SMARTARRAY_EXPECTS(peer != comm.rank(), logic_error, what, ": rank ", comm.rank(),
                     " named itself as the other process");
  SMARTARRAY_EXPECTS(tag >= 0 && tag <= comm.max_tag(), logic_error, what, ": rank ", comm.rank(),
                     " used tag ", tag, ", outside MPI's tags 0 to ", comm.max_tag());
  check_call(what, comm, stream);
}

void check_count(const char* what, std::size_t count, const char* unit,
                 const Communicator& comm) {
  if (comm.transport() == Transport::nccl) return;  // NCCL counts in size_t
  SMARTARRAY_EXPECTS(count <= static_cast<std::size_t>(INT_MAX), logic_error, what, ": ", count,
                     " ", unit, " are more than MPI's int count (", INT_MAX,
                     "); split it into several transfers of slices");
}

void announce_send(std::size_t bytes, int dest, int tag, const Communicator& comm) {
  if (comm.transport() != Transport::nccl || !comm.checks_sizes()) return;
  const long long mine[2] = {static_cast<long long>(bytes), tag};
  long long theirs[2] = {0, 0};
  SMARTARRAY_MPI_CHECK(MPI_Send(mine, 2, MPI_LONG_LONG, dest, handshake_tag, comm.native()));
  SMARTARRAY_MPI_CHECK(MPI_Recv(theirs, 2, MPI_LONG_LONG, dest, handshake_tag, comm.native(),
                                MPI_STATUS_IGNORE));
  SMARTARRAY_EXPECTS(theirs[0] == mine[0] && theirs[1] == mine[1], logic_error, "send: rank ",
                     comm.rank(), "'s message of ", bytes, " bytes (tag ", tag, ") to rank ", dest,
                     " was refused: its receive expects ", theirs[0], " bytes (tag ", theirs[1],
                     "); over NCCL a rank receives another's messages in the order they were "
                     "sent; nothing was sent");
}

void expect_message(std::size_t elements, std::size_t element_bytes, int source, int tag,
                    const Communicator& comm) {
  const std::size_t bytes = elements * element_bytes;
  if (comm.transport() == Transport::nccl) {
    if (!comm.checks_sizes()) return;
    const long long mine[2] = {static_cast<long long>(bytes), tag};
    long long theirs[2] = {0, 0};
    SMARTARRAY_MPI_CHECK(MPI_Recv(theirs, 2, MPI_LONG_LONG, source, handshake_tag, comm.native(),
                                  MPI_STATUS_IGNORE));
    SMARTARRAY_MPI_CHECK(MPI_Send(mine, 2, MPI_LONG_LONG, source, handshake_tag, comm.native()));
    SMARTARRAY_EXPECTS(theirs[0] == mine[0] && theirs[1] == mine[1], logic_error, "recv: rank ",
                       comm.rank(), " refused rank ", source, "'s next message, of ", theirs[0],
                       " bytes (tag ", theirs[1], "): it receives ", elements, " elements (",
                       bytes, " bytes) with tag ", tag,
                       "; over NCCL a rank receives another's messages in the order they were "
                       "sent; nothing was received");
    return;
  }
  MPI_Status status{};
  SMARTARRAY_MPI_CHECK(MPI_Probe(source, tag, comm.native(), &status));
  int count = 0;
  SMARTARRAY_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &count));
  const auto incoming = static_cast<std::size_t>(count);
  if (incoming == bytes) return;
  const auto scratch = std::make_unique<std::byte[]>(incoming == 0 ? 1 : incoming);
  recv_bytes(scratch.get(), incoming, source, tag, comm, StreamRef{});
  throw logic_error(smartarray::detail::concat(
      "recv: rank ", comm.rank(), " received a message of ", incoming, " bytes from rank ",
      source, " (tag ", tag, ") into a slice of ", elements, " elements (", bytes,
      " bytes): the sizes must be equal; the message was dropped"));
}

void send_bytes(const void* data, std::size_t bytes, int dest, int tag, const Communicator& comm,
                StreamRef stream) {
  if (enqueued(comm, stream)) {
#if SMARTARRAY_DIST_NCCL
    nccl_send(data, bytes, dest, comm, stream);
#endif
    return;
  }
  SMARTARRAY_MPI_CHECK(
      MPI_Send(data, static_cast<int>(bytes), MPI_BYTE, dest, tag, comm.native()));
}

void recv_bytes(void* data, std::size_t bytes, int source, int tag, const Communicator& comm,
                StreamRef stream) {
  if (enqueued(comm, stream)) {
#if SMARTARRAY_DIST_NCCL
    nccl_recv(data, bytes, source, comm, stream);
#endif
    return;
  }
  SMARTARRAY_MPI_CHECK(MPI_Recv(data, static_cast<int>(bytes), MPI_BYTE, source, tag,
                                comm.native(), MPI_STATUS_IGNORE));
}

}  // namespace smartarray::dist::detail
