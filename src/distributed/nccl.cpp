// The nccl transport (src/distributed/nccl.hpp): the NCCL communicator, and each transfer as NCCL
// calls on the caller's stream.
// The CUDA runtime first: StreamRef has its cudaStream_t conversion only after it (stream.hpp).
#include <cuda_runtime.h>

#include "distributed/nccl.hpp"

#include <smartarray/distributed/detail/mpi_check.hpp>
#include <smartarray/error.hpp>
#include <smartarray/runtime/stream.hpp>

#include <nccl.h>

#include <string>

namespace smartarray::dist::detail {

namespace {

[[noreturn]] void throw_nccl_error(const char* call, ncclResult_t code, ncclComm_t comm) {
  const char* last = ncclGetLastError(comm);
  throw nccl_error(smartarray::detail::concat(call, " failed: ", ncclGetErrorString(code),
                                              last != nullptr && *last != '\0' ? ": " : "",
                                              last != nullptr ? last : ""),
                   static_cast<int>(code));
}

/// Calls `call` (an NCCL call on `comm`, which may be null) and throws nccl_error when it fails.
#define SMARTARRAY_NCCL_CHECK(call, comm)                                  \
  do {                                                                     \
    const ncclResult_t smartarray_nccl_code_ = (call);                     \
    if (smartarray_nccl_code_ != ncclSuccess) {                            \
      throw_nccl_error(#call, smartarray_nccl_code_, (comm));              \
    }                                                                      \
  } while (false)

/// The communicator's NCCL handle and the CUDA stream (check_stream() has checked its device).
struct Queue {
  ncclComm_t comm;
  cudaStream_t stream;
};
Queue queue_of(const Communicator& comm, StreamRef stream) {
  return {comm.nccl(), stream.cuda_stream()};
}

/// NCCL's type for an element (check_element_type() refused 16-bit integers, which NCCL lacks).
ncclDataType_t nccl_type(ElementType type) {
  if (type.floating) return type.bytes == sizeof(float) ? ncclFloat32 : ncclFloat64;
  switch (type.bytes) {
    case 1: return type.is_signed ? ncclInt8 : ncclUint8;
    case 4: return type.is_signed ? ncclInt32 : ncclUint32;
    default: return type.is_signed ? ncclInt64 : ncclUint64;
  }
}

ncclRedOp_t nccl_op(Op op) {
  switch (op) {
    case Op::sum: return ncclSum;
    case Op::prod: return ncclProd;
    case Op::min: return ncclMin;
    case Op::max: return ncclMax;
  }
  throw logic_error(smartarray::detail::concat("dist::Op ", static_cast<int>(op),
                                               " is not an operation"));
}

}  // namespace

ncclComm* nccl_create(MPI_Comm comm, int rank, int size) {
  ncclUniqueId id{};
  int id_made = 1;
  ncclResult_t made = ncclSuccess;
  if (rank == 0) {
    made = ncclGetUniqueId(&id);
    id_made = made == ncclSuccess ? 1 : 0;
  }
  SMARTARRAY_MPI_CHECK(MPI_Bcast(&id_made, 1, MPI_INT, 0, comm));
  if (id_made == 0) {
    throw nccl_error(smartarray::detail::concat(
                         "ncclGetUniqueId failed on rank 0",
                         rank == 0 ? smartarray::detail::concat(": ", ncclGetErrorString(made))
                                   : std::string()),
                     static_cast<int>(made));
  }
  SMARTARRAY_MPI_CHECK(MPI_Bcast(&id, static_cast<int>(sizeof(id)), MPI_BYTE, 0, comm));
  ncclComm_t nccl = nullptr;
  const ncclResult_t joined = ncclCommInitRank(&nccl, size, id, rank);
  // Every process learns whether all joined, so that all throw together.
  int failed = joined == ncclSuccess ? 0 : 1;
  int any_failed = 0;
  SMARTARRAY_MPI_CHECK(MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, comm));
  if (joined != ncclSuccess) throw_nccl_error("ncclCommInitRank", joined, nullptr);
  if (any_failed != 0) {
    nccl_destroy(nccl);
    throw nccl_error(smartarray::detail::concat("ncclCommInitRank: rank ", rank,
                                                ": another rank could not join (its own error "
                                                "names why)"),
                     static_cast<int>(ncclInternalError));
  }
  return nccl;
}

void nccl_destroy(ncclComm* comm) noexcept {
  if (comm != nullptr) static_cast<void>(ncclCommDestroy(comm));
}

void nccl_send(const void* data, std::size_t bytes, int peer, const Communicator& comm,
               StreamRef stream) {
  const Queue queue = queue_of(comm, stream);
  SMARTARRAY_NCCL_CHECK(ncclSend(data, bytes, ncclInt8, peer, queue.comm, queue.stream),
                        queue.comm);
}

void nccl_recv(void* data, std::size_t bytes, int peer, const Communicator& comm,
               StreamRef stream) {
  const Queue queue = queue_of(comm, stream);
  SMARTARRAY_NCCL_CHECK(ncclRecv(data, bytes, ncclInt8, peer, queue.comm, queue.stream),
                        queue.comm);
}

void nccl_exchange(const std::vector<Message>& receives, const std::vector<Message>& sends,
                   const Communicator& comm, StreamRef stream) {
  const Queue queue = queue_of(comm, stream);
  SMARTARRAY_NCCL_CHECK(ncclGroupStart(), queue.comm);
  ncclResult_t failed = ncclSuccess;
  const char* failed_call = nullptr;
  for (const Message& message : receives) {
    failed = ncclRecv(message.data, message.bytes, ncclInt8, message.peer, queue.comm,
                      queue.stream);
    if (failed != ncclSuccess) {
      failed_call = "ncclRecv";
      break;
    }
  }
  for (const Message& message : sends) {
    if (failed != ncclSuccess) break;
    failed = ncclSend(message.data, message.bytes, ncclInt8, message.peer, queue.comm,
                      queue.stream);
    if (failed != ncclSuccess) failed_call = "ncclSend";
  }
  // The group is always closed, so that NCCL is left usable.
  const ncclResult_t ended = ncclGroupEnd();
  if (failed != ncclSuccess) throw_nccl_error(failed_call, failed, queue.comm);
  if (ended != ncclSuccess) throw_nccl_error("ncclGroupEnd", ended, queue.comm);
}

void nccl_all_reduce(void* data, std::size_t count, ElementType type, Op op,
                     const Communicator& comm, StreamRef stream) {
  const ncclDataType_t nccl_data = nccl_type(type);
  const Queue queue = queue_of(comm, stream);
  SMARTARRAY_NCCL_CHECK(ncclAllReduce(data, data, count, nccl_data, nccl_op(op), queue.comm,
                                      queue.stream),
                        queue.comm);
}

void nccl_broadcast(void* data, std::size_t bytes, int root, const Communicator& comm,
                    StreamRef stream) {
  const Queue queue = queue_of(comm, stream);
  SMARTARRAY_NCCL_CHECK(
      ncclBroadcast(data, data, bytes, ncclInt8, root, queue.comm, queue.stream), queue.comm);
}

void nccl_all_gather(const void* in, void* out, std::size_t bytes, const Communicator& comm,
                     StreamRef stream) {
  const Queue queue = queue_of(comm, stream);
  SMARTARRAY_NCCL_CHECK(ncclAllGather(in, out, bytes, ncclInt8, queue.comm, queue.stream),
                        queue.comm);
}

void nccl_reduce_scatter(const void* in, void* out, std::size_t count, ElementType type, Op op,
                         const Communicator& comm, StreamRef stream) {
  const ncclDataType_t nccl_data = nccl_type(type);
  const Queue queue = queue_of(comm, stream);
  SMARTARRAY_NCCL_CHECK(ncclReduceScatter(in, out, count, nccl_data, nccl_op(op), queue.comm,
                                          queue.stream),
                        queue.comm);
}

}  // namespace smartarray::dist::detail
