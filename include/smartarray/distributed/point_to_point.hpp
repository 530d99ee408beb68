/**
 * @file distributed/point_to_point.hpp
 * @brief `dist::send` and `dist::recv` of whole arrays and slices between two processes.
 *
 * A send acquires `read` of exactly its range on the side the transport reads: the host copy for
 * `mpi_host` (after one counted D2H of the bytes the host lacks), device memory for `mpi_device`
 * (after one counted H2D of the bytes the device lacks). A receive acquires `discard` of exactly
 * its range on the side the transport writes, which marks that range stale on the other side;
 * nothing else of the array moves. Each call is one message, counted once on each side
 * (`TransferStats::sent_count`, `received_count`) and traced ("SEND 4096 B to rank 1 (send)").
 *
 * Both calls return when the message has left or arrived: a send of device memory first waits
 * for the work queued on `stream` before it (the array's pending writers are ordered there), and
 * a receive into device memory waits for the work before it on `stream` (the range's pending
 * readers), so that MPI never overtakes the stream. The sizes must match: a receive probes the
 * message first, and one of another size is received into scratch memory and reported, so that
 * neither process waits forever and the array keeps its contents.
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
/// Throws logic_error, before any MPI call, when `peer` is not another rank of `comm` or `tag`
/// is not a valid MPI tag: `what` names the call, and the message the rank, tag and size.
void check_peer(const char* what, int peer, int tag, const Communicator& comm);
/// Throws logic_error when a message of `bytes` bytes does not fit MPI's int count.
void check_message_bytes(const char* what, std::size_t bytes);
/// MPI_Send of `bytes` bytes at `data` (host memory, or device memory for `mpi_device`).
void send_bytes(const void* data, std::size_t bytes, int dest, int tag, const Communicator& comm);
/// The size in bytes of the next message from `source` with `tag` (MPI_Probe).
[[nodiscard]] std::size_t probe_bytes(int source, int tag, const Communicator& comm);
/// Receives the probed message of `bytes` bytes into scratch memory, then throws logic_error
/// naming it and the `expected` bytes of the receiving range (`elements` of `element_bytes`).
[[noreturn]] void reject_message(std::size_t bytes, int source, int tag, std::size_t elements,
                                 std::size_t element_bytes, const Communicator& comm);
/// MPI_Recv of `bytes` bytes into `data`.
void recv_bytes(void* data, std::size_t bytes, int source, int tag, const Communicator& comm);
/// Makes the host wait for the work queued on `stream` so far (counted as a wait).
void wait_for_stream(StreamRef stream);
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
 *         the tag is out of range or the message is larger than MPI's int count of bytes;
 *         nothing is acquired or sent.
 * @throws mpi_error when MPI fails.
 */
template <typename T>
void send(const Slice<T>& s, int dest, int tag, const Communicator& comm, StreamRef stream = {},
          smartarray::source_location where = smartarray::source_location::current()) {
  using Value = std::remove_const_t<T>;
  const Slice<const Value> range(s);
  const std::size_t bytes = range.size() * sizeof(Value);
  detail::check_peer("send", dest, tag, comm);
  detail::check_message_bytes("send", bytes);
  const void* data = nullptr;
  if (comm.transport() == Transport::mpi_host) {
    data = range.host_view(stream, where).data();
  } else {
    data = range.device_view(stream, where).data();
    detail::wait_for_stream(stream);
  }
  detail::send_bytes(data, bytes, dest, tag, comm);
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
 *         from the slice's (the message is received and dropped; the array keeps its contents).
 * @throws mpi_error when MPI fails.
 */
template <typename T>
void recv(const Slice<T>& s, int source, int tag, const Communicator& comm, StreamRef stream = {},
          smartarray::source_location where = smartarray::source_location::current()) {
  static_assert(!std::is_const_v<T>,
                "dist::recv: a Slice<const T> cannot be written: receive into a Slice<T> "
                "(a.slice(...) of a non-const array)");
  if constexpr (!std::is_const_v<T>) {
    const std::size_t bytes = s.size() * sizeof(T);
    detail::check_peer("recv", source, tag, comm);
    detail::check_message_bytes("recv", bytes);
    const std::size_t incoming = detail::probe_bytes(source, tag, comm);
    if (incoming != bytes) {
      detail::reject_message(incoming, source, tag, s.size(), sizeof(T), comm);
    }
    void* data = nullptr;
    if (comm.transport() == Transport::mpi_host) {
      data = s.host_view(Access::discard, stream, where).data();
    } else {
      data = s.device_view(Access::discard, stream, where).data();
      detail::wait_for_stream(stream);
    }
    detail::recv_bytes(data, bytes, source, tag, comm);
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
