// dist::send and dist::recv (distributed/point_to_point.hpp): the checks before any MPI call, and
// the MPI calls themselves.
#include <smartarray/distributed/point_to_point.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>
#include <smartarray/error.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include <climits>
#include <memory>

namespace smartarray::dist::detail {

namespace {
/// The largest tag MPI allows here (MPI_TAG_UB, at least 32767).
int tag_upper_bound(const Communicator& comm) {
  void* value = nullptr;
  int found = 0;
  SMARTARRAY_MPI_CHECK(MPI_Comm_get_attr(comm.native(), MPI_TAG_UB, &value, &found));
  return found != 0 && value != nullptr ? *static_cast<int*>(value) : 32767;
}
}  // namespace

void check_peer(const char* what, int peer, int tag, const Communicator& comm) {
  require_mpi_running(what);
  SMARTARRAY_EXPECTS(peer >= 0 && peer < comm.size(), logic_error, what, ": rank ", comm.rank(),
                     " named rank ", peer, ", which is not a rank of a communicator of ",
                     comm.size(), " processes");
  SMARTARRAY_EXPECTS(peer != comm.rank(), logic_error, what, ": rank ", comm.rank(),
                     " named itself as the other process");
  const int upper = tag_upper_bound(comm);
  SMARTARRAY_EXPECTS(tag >= 0 && tag <= upper, logic_error, what, ": rank ", comm.rank(),
                     " used tag ", tag, ", outside MPI's tags 0 to ", upper);
}

void check_message_bytes(const char* what, std::size_t bytes) {
  SMARTARRAY_EXPECTS(bytes <= static_cast<std::size_t>(INT_MAX), logic_error, what,
                     ": a message of ", bytes, " bytes is larger than MPI's int count (",
                     INT_MAX, " bytes); send it as several slices");
}

void send_bytes(const void* data, std::size_t bytes, int dest, int tag, const Communicator& comm) {
  SMARTARRAY_MPI_CHECK(
      MPI_Send(data, static_cast<int>(bytes), MPI_BYTE, dest, tag, comm.native()));
}

std::size_t probe_bytes(int source, int tag, const Communicator& comm) {
  MPI_Status status{};
  SMARTARRAY_MPI_CHECK(MPI_Probe(source, tag, comm.native(), &status));
  int count = 0;
  SMARTARRAY_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &count));
  return static_cast<std::size_t>(count);
}

void reject_message(std::size_t bytes, int source, int tag, std::size_t elements,
                    std::size_t element_bytes, const Communicator& comm) {
  const auto scratch = std::make_unique<std::byte[]>(bytes == 0 ? 1 : bytes);
  recv_bytes(scratch.get(), bytes, source, tag, comm);
  throw logic_error(smartarray::detail::concat(
      "recv: rank ", comm.rank(), " received a message of ", bytes, " bytes from rank ", source,
      " (tag ", tag, ") into a slice of ", elements, " elements (", elements * element_bytes,
      " bytes): the sizes must be equal; the message was dropped"));
}

void recv_bytes(void* data, std::size_t bytes, int source, int tag, const Communicator& comm) {
  SMARTARRAY_MPI_CHECK(MPI_Recv(data, static_cast<int>(bytes), MPI_BYTE, source, tag,
                                comm.native(), MPI_STATUS_IGNORE));
}

void wait_for_stream(StreamRef stream) { smartarray::detail::host_wait_stream(stream); }

}  // namespace smartarray::dist::detail
