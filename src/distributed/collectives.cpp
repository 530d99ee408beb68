// The collectives' checks and their MPI or NCCL calls (distributed/collectives.hpp).
#include <smartarray/distributed/collectives.hpp>
#include <smartarray/distributed/detail/exchange.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>
#include <smartarray/error.hpp>

#include "distributed/transport.hpp"

#include <vector>

namespace smartarray::dist::detail {

namespace {

MPI_Datatype mpi_type(ElementType type) {
  if (type.floating) return type.bytes == sizeof(float) ? MPI_FLOAT : MPI_DOUBLE;
  switch (type.bytes) {
    case 1: return type.is_signed ? MPI_INT8_T : MPI_UINT8_T;
    case 2: return type.is_signed ? MPI_INT16_T : MPI_UINT16_T;
    case 4: return type.is_signed ? MPI_INT32_T : MPI_UINT32_T;
    default: return type.is_signed ? MPI_INT64_T : MPI_UINT64_T;
  }
}

MPI_Op mpi_op(Op op) {
  switch (op) {
    case Op::sum: return MPI_SUM;
    case Op::prod: return MPI_PROD;
    case Op::min: return MPI_MIN;
    case Op::max: return MPI_MAX;
  }
  throw logic_error(smartarray::detail::concat("dist::Op ", static_cast<int>(op),
                                               " is not an operation"));
}

}  // namespace

void check_element_type(const char* what, ElementType type, const Communicator& comm) {
  SMARTARRAY_EXPECTS(comm.transport() != Transport::nccl || type.floating || type.bytes != 2,
                     logic_error, what, ": rank ", comm.rank(),
                     ": NCCL reduces no 16-bit integers; use 1-, 4- or 8-byte integers, or an "
                     "MPI transport");
}

void check_same_bytes(const char* what, std::size_t bytes, const Communicator& comm,
                      StreamRef stream) {
  require_mpi_running(what);
  check_stream(what, comm, stream);
  if (!comm.checks_sizes()) return;
  const std::vector<long long> all = gather_sizes({static_cast<long long>(bytes)}, comm);
  for (int rank = 1; rank < comm.size(); ++rank) {
    SMARTARRAY_EXPECTS(all[static_cast<std::size_t>(rank)] == all[0], logic_error, what, ": rank ",
                       comm.rank(), ": the arrays differ between ranks: rank 0's is ", all[0],
                       " bytes, rank ", rank, "'s ", all[static_cast<std::size_t>(rank)], " bytes");
  }
}

void check_root(const char* what, int root, const Communicator& comm) {
  require_mpi_running(what);
  SMARTARRAY_EXPECTS(root >= 0 && root < comm.size(), logic_error, what, ": rank ", comm.rank(),
                     " named root ", root, ", which is not a rank of a communicator of ",
                     comm.size(), " processes");
}

void all_reduce_in_place(void* data, std::size_t count, ElementType type, Op op,
                         const Communicator& comm, StreamRef stream) {
  if (enqueued(comm, stream)) {
#if SMARTARRAY_DIST_NCCL
    nccl_all_reduce(data, count, type, op, comm, stream);
#endif
    return;
  }
  SMARTARRAY_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), mpi_type(type),
                                     mpi_op(op), comm.native()));
}

void broadcast_bytes(void* data, std::size_t bytes, int root, const Communicator& comm,
                     StreamRef stream) {
  if (enqueued(comm, stream)) {
#if SMARTARRAY_DIST_NCCL
    nccl_broadcast(data, bytes, root, comm, stream);
#endif
    return;
  }
  SMARTARRAY_MPI_CHECK(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm.native()));
}

void all_gather_bytes(const void* in, void* out, std::size_t bytes, const Communicator& comm,
                      StreamRef stream) {
  if (enqueued(comm, stream)) {
#if SMARTARRAY_DIST_NCCL
    nccl_all_gather(in, out, bytes, comm, stream);
#endif
    return;
  }
  SMARTARRAY_MPI_CHECK(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out,
                                     static_cast<int>(bytes), MPI_BYTE, comm.native()));
}

void reduce_scatter_block(const void* in, void* out, std::size_t count, ElementType type, Op op,
                          const Communicator& comm, StreamRef stream) {
  if (enqueued(comm, stream)) {
#if SMARTARRAY_DIST_NCCL
    nccl_reduce_scatter(in, out, count, type, op, comm, stream);
#endif
    return;
  }
  SMARTARRAY_MPI_CHECK(MPI_Reduce_scatter_block(in, out, static_cast<int>(count), mpi_type(type),
                                                mpi_op(op), comm.native()));
}

}  // namespace smartarray::dist::detail
