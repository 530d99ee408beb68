// The collectives' checks and their MPI or NCCL calls (distributed/collectives.hpp).
#include <smartarray/distributed/collectives.hpp>
#include <smartarray/distributed/detail/exchange.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>
#include <smartarray/error.hpp>

#include "distributed/transport.hpp"

namespace smartarray::dist {

const char* to_string(Op op) noexcept {
  switch (op) {
    case Op::sum: return "sum";
    case Op::prod: return "prod";
    case Op::min: return "min";
    case Op::max: return "max";
  }
  return "unknown";
}

}  // namespace smartarray::dist

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
  throw logic_error(
      smartarray::detail::concat("dist::Op ", static_cast<int>(op), " is not an operation"));
}

}  // namespace

void check_element_type(const char* what, ElementType type, const Communicator& comm) {
  SMARTARRAY_EXPECTS(comm.transport() != Transport::nccl || type.floating || type.bytes != 2,
                     logic_error, what, ": rank ", comm.rank(),
                     ": NCCL reduces no 16-bit integers; use 1-, 4- or 8-byte integers, or an "
                     "MPI transport");
}

void check_op(const char* what, Op op, const Communicator& comm) {
  SMARTARRAY_EXPECTS(op == Op::sum || op == Op::prod || op == Op::min || op == Op::max, logic_error,
                     what, ": rank ", comm.rank(), ": dist::Op ", static_cast<int>(op),
                     " is not an operation (sum, prod, min or max)");
}

void check_root(const char* what, int root, const Communicator& comm) {
  SMARTARRAY_EXPECTS(root >= 0 && root < comm.size(), logic_error, what, ": rank ", comm.rank(),
                     ": root ", root, " is not a rank of a communicator of ", comm.size(),
                     " processes");
}

void check_blocks(const char* what, const void* in, const void* out, std::size_t whole,
                  std::size_t part, const char* whole_name, const Communicator& comm) {
  SMARTARRAY_EXPECTS(in != out, logic_error, what, ": rank ", comm.rank(),
                     ": in and out are the same array");
  const auto ranks = static_cast<std::size_t>(comm.size());
  SMARTARRAY_EXPECTS(whole == part * ranks, logic_error, what, ": rank ", comm.rank(), ": ",
                     whole_name, " has ", whole, " elements, but ", ranks, " ranks of ", part,
                     " need ", part * ranks);
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
