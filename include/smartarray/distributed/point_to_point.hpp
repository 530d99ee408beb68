/**
 * @file distributed/point_to_point.hpp
 * @brief `dist::send` and `dist::recv` of whole arrays and slices between two processes.
 *
 * A send acquires `read` of exactly its range on the side the transport reads: the host copy for
 * `mpi_host` (after one counted D2H of the bytes the host lacks), device memory for `nccl` and
 * `mpi_device` (after one counted H2D of the bytes the device lacks). A receive acquires `discard` of exactly
 * its range on the side the transport writes, which marks that range stale on the other side;
 * nothing else of the array moves. Each call is one message, counted once on each side
 * (`TransferStats::sent_count`, `received_count`) and traced ("SEND 4096 B to rank 1 (send)").
 *
 * Ordering. With `nccl`, both calls are enqueued on `stream` behind the work queued there before
 * them (the array's pending writers and readers are ordered there, as for a kernel) and return
 * without waiting; the message completes in stream order, and what follows on `stream` sees it.
 * With MPI, both return when the message has left or arrived: from or into device memory
 * (`mpi_device`), they first make the host wait for the work queued on `stream`, so that MPI never
 * overtakes the stream. Pair sends and receives as for blocking `MPI_Send` and `MPI_Recv`: a send
 * may wait until its receive is posted.
 *
 * Sizes and tags. With MPI, a receive probes the message first; one of another size is received
 * into scratch memory and reported, so that neither process waits forever and the array keeps
 * its contents. NCCL has no tags and no probe: between two ranks its messages are received in the
 * order they were sent. With the communicator's size check on, a send over `nccl` first announces
 * its bytes and tag to the receiver over MPI and waits for its answer (one round trip), and both
 * processes throw when the receive's bytes or tag differ, before anything is acquired or sent.
 * Without the check, a receive of another size, or one that expects another message, is
 * undefined: NCCL may truncate or wait forever.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/core/detail/array_messages.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/core/slice.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/distributed/communicator.hpp>
#include <smartarray/runtime/stream.hpp>

#include <cstddef>
#include <type_traits>

namespace smartarray::dist {
namespace detail {
/// The tag of a call that names none.
inline constexpr int default_tag = 0;
/// Throws logic_error, before any MPI call, when MPI is not running, `comm` was moved from, `peer`
/// is not another rank of `comm`, `tag` is not a valid MPI tag, (nccl) `stream` is not on the
/// communicator's device, or (MPI transports) the calling thread is inside sa::capture: `what`
/// names the call, and the message the rank, tag, size or devices.
void check_peer(const char* what, int peer, int tag, const Communicator& comm, StreamRef stream);
/// Throws logic_error when `count` (of `unit`: "bytes", "elements") does not fit MPI's int count
/// (MPI transports only; NCCL counts in size_t).
void check_count(const char* what, std::size_t count, const char* unit, const Communicator& comm);
/// Before a send is acquired. With `nccl` and the size check on, the sender announces the bytes
/// and tag to `dest` (MPI) and waits for its answer; both throw logic_error when they differ
/// from the receive's. MPI transports have nothing to do: their receiver probes.
void announce_send(std::size_t bytes, int dest, int tag, const Communicator& comm);
/// Before a receive is acquired: the next message from `source` with `tag` has the `elements` of
/// `element_bytes` of the receiving range, else it is dropped (MPI: received into scratch memory)
/// or refused (nccl with the size check: the sender throws too), and this throws logic_error.
void expect_message(std::size_t elements, std::size_t element_bytes, int source, int tag,
                    const Communicator& comm);
/// The message itself, from host memory (`mpi_host`) or device memory: NCCL enqueues it on
/// `stream`; MPI from device memory first waits for `stream`, so that MPI reads the data that the
/// work queued before wrote, and writes nothing that work still reads.
void send_bytes(const void* data, std::size_t bytes, int dest, int tag, const Communicator& comm,
                StreamRef stream);
void recv_bytes(void* data, std::size_t bytes, int source, int tag, const Communicator& comm,
                StreamRef stream);
}  // namespace detail

/**
 * @brief Sends the elements of `s` to process `dest` (a message with tag `tag`).
 * @param s a slice (`Slice<T>` or `Slice<const T>`); read on the side the transport reads.
 * @param dest the receiving rank; not this process's own.
 * @param tag the message's tag, 0 to MPI_TAG_UB.
 * @param comm the processes.
 * @param stream the stream that orders the device side (default: the default stream).
 * @param where the caller's source location, for the trace.
 * @throws logic_error naming the rank, tag or bytes when `dest` is not another rank of `comm`,
 *         the tag is out of range or the message is larger than MPI's int count of bytes, or
 *         (nccl, size check on) when the receive expects other bytes or another tag; nothing is
 *         acquired or sent.
 * @throws mpi_error when MPI fails.
 * @throws nccl_error when NCCL fails.
 */
template <typename T>
void send(const Slice<T>& s, int dest, int tag, const Communicator& comm, StreamRef stream = {},
          smartarray::source_location where = smartarray::source_location::current()) {
  using Value = std::remove_const_t<T>;
  const Slice<const Value> range(s);
  const std::size_t bytes = range.size() * sizeof(Value);
  detail::check_peer("send", dest, tag, comm, stream);
  detail::check_count("send", bytes, "bytes", comm);
  detail::announce_send(bytes, dest, tag, comm);
  const void* data = comm.transport() == Transport::mpi_host
                         ? static_cast<const void*>(range.host_view(stream, where).data())
                         : static_cast<const void*>(range.device_view(stream, where).data());
  detail::send_bytes(data, bytes, dest, tag, comm, stream);
  smartarray::detail::ArrayMessages::sent(range.array(), bytes, dest, "send", where);
}
/// @brief send() with tag 0.
template <typename T>
void send(const Slice<T>& s, int dest, const Communicator& comm, StreamRef stream = {},
          smartarray::source_location where = smartarray::source_location::current()) {
  send(s, dest, detail::default_tag, comm, stream, where);
}
/// @brief send() of every element of `a`.
template <typename T>
void send(const SmartArray<T>& a, int dest, const Communicator& comm, StreamRef stream = {},
          smartarray::source_location where = smartarray::source_location::current()) {
  send(a.slice(0, a.size()), dest, detail::default_tag, comm, stream, where);
}

/**
 * @brief Receives a message from process `source` (with tag `tag`) into the elements of `s`.
 * @param s a `Slice<T>` (a `Slice<const T>` is a compile error); acquired with `discard` on the
 *        side the transport writes.
 * @param source the sending rank; not this process's own.
 * @param tag the message's tag, 0 to MPI_TAG_UB.
 * @param comm the processes.
 * @param stream the stream that orders the device side (default: the default stream).
 * @param where the caller's source location, for the trace.
 * @throws logic_error naming the rank, tag or bytes when `source` is not another rank of `comm`
 *         or the tag is out of range (nothing is received), or when the message's size differs
 *         from the slice's (MPI: the message is received and dropped; nccl with the size check:
 *         it is refused, and its send throws too; the array keeps its contents either way).
 * @throws mpi_error when MPI fails.
 * @throws nccl_error when NCCL fails.
 */
template <typename T>
void recv(const Slice<T>& s, int source, int tag, const Communicator& comm, StreamRef stream = {},
          smartarray::source_location where = smartarray::source_location::current()) {
  static_assert(!std::is_const_v<T>,
                "dist::recv: a Slice<const T> cannot be written: receive into a Slice<T> "
                "(a.slice(...) of a non-const array)");
  if constexpr (!std::is_const_v<T>) {
    const std::size_t bytes = s.size() * sizeof(T);
    detail::check_peer("recv", source, tag, comm, stream);
    detail::check_count("recv", bytes, "bytes", comm);
    detail::expect_message(s.size(), sizeof(T), source, tag, comm);
    void* data = comm.transport() == Transport::mpi_host
                     ? static_cast<void*>(s.host_view(Access::discard, stream, where).data())
                     : static_cast<void*>(s.device_view(Access::discard, stream, where).data());
    detail::recv_bytes(data, bytes, source, tag, comm, stream);
    smartarray::detail::ArrayMessages::received(s.array(), bytes, source, "recv", where);
  }
}
/// @brief recv() with tag 0.
template <typename T>
void recv(const Slice<T>& s, int source, const Communicator& comm, StreamRef stream = {},
          smartarray::source_location where = smartarray::source_location::current()) {
  recv(s, source, detail::default_tag, comm, stream, where);
}
/// @brief recv() into every element of `a`.
template <typename T>
void recv(SmartArray<T>& a, int source, const Communicator& comm, StreamRef stream = {},
          smartarray::source_location where = smartarray::source_location::current()) {
  recv(a.slice(0, a.size()), source, detail::default_tag, comm, stream, where);
}

}  // namespace smartarray::dist
