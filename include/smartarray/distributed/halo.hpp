/**
 * @file distributed/halo.hpp
 * @brief `dist::exchange_halos`: the halo exchange of a block-decomposed array.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/core/detail/array_messages.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/core/slice.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/distributed/communicator.hpp>
#include <smartarray/distributed/detail/agreement.hpp>
#include <smartarray/distributed/detail/exchange.hpp>
#include <smartarray/distributed/point_to_point.hpp>
#include <smartarray/error.hpp>
#include <smartarray/runtime/stream.hpp>

#include <cstddef>
#include <utility>
#include <vector>

namespace smartarray::dist {

/// @brief The halos of a block-decomposed array: `width` elements at each end.
struct Halo {
  std::size_t width;      ///< the elements of each halo (halo rows times the row length in 2-D)
  bool periodic = false;  ///< rank 0 and the last rank are neighbours
};

namespace detail {
/// The tags of a halo exchange: a message to the right neighbour fills its left halo.
inline constexpr int to_right_tag = 1;
inline constexpr int to_left_tag = 2;
/// Throws logic_error naming this rank when the halos are wider than the interior of an array of
/// `size` elements, or (MPI) a halo's bytes exceed MPI's int count.
void check_halo(std::size_t size, std::size_t element_bytes, const Halo& halo,
                const Communicator& comm);
/// The neighbour ranks of this process (-1 for none).
struct Neighbours {
  int left;
  int right;
};
[[nodiscard]] Neighbours halo_neighbours(const Halo& halo, const Communicator& comm);

/// What exchange_halos does once its checks passed and this rank has a neighbour, for an array
/// of any element type (the Python binding's arrays are bytes): `w` elements of `a` are `bytes`
/// bytes. Over MPI from host memory, both ranges sent start down to the host (prefetch_to_host)
/// before the first is waited for, so that the host waits once for both, as hand-written code
/// does.
template <typename U>
void exchange_halo_rows(SmartArray<U>& a, std::size_t w, std::size_t bytes,
                        const Neighbours& neighbours, const Communicator& comm, StreamRef stream,
                        const smartarray::source_location& where) {
  const std::size_t n = a.size();
  const bool device = comm.transport() != Transport::mpi_host;
  if (!device) {
    if (neighbours.right >= 0) {
      (void)std::as_const(a).slice(n - 2 * w, w).prefetch_to_host(stream, where);
    }
    if (neighbours.left >= 0) (void)std::as_const(a).slice(w, w).prefetch_to_host(stream, where);
  }
  // What is sent is read first; the halos, which do not overlap it, are then discarded.
  const auto read = [&](std::size_t first) -> void* {
    const Slice<const U> range = std::as_const(a).slice(first, w);
    return const_cast<U*>(device ? range.device_view(stream, where).data()
                                 : range.host_view(stream, where).data());
  };
  const auto discard = [&](std::size_t first) -> void* {
    const Slice<U> range = a.slice(first, w);
    return device ? range.device_view(Access::discard, stream, where).data()
                  : range.host_view(Access::discard, stream, where).data();
  };
  // Sends go right, then left, and receives come from the left, then the right: NCCL matches the
  // messages between two ranks in that order (with two periodic ranks, or one, both neighbours
  // are the same rank), MPI by their tags.
  std::vector<Message> sends;
  std::vector<Message> receives;
  if (neighbours.right >= 0) {
    sends.push_back({read(n - 2 * w), bytes, neighbours.right, to_right_tag});
  }
  if (neighbours.left >= 0) sends.push_back({read(w), bytes, neighbours.left, to_left_tag});
  if (neighbours.left >= 0) receives.push_back({discard(0), bytes, neighbours.left, to_right_tag});
  if (neighbours.right >= 0) {
    receives.push_back({discard(n - w), bytes, neighbours.right, to_left_tag});
  }
  exchange(receives, sends, comm, stream);
  for (const Message& message : sends) {
    smartarray::detail::ArrayMessages::sent(a, bytes, message.peer, "halo", where);
  }
  for (const Message& message : receives) {
    smartarray::detail::ArrayMessages::received(a, bytes, message.peer, "halo", where);
  }
}
}  // namespace detail

/**
 * @brief Exchanges the halos of `a`, laid out as `[width halo | interior | width halo]` on each
 *        rank: each rank sends its first and last `width` interior elements to ranks rank - 1 and
 *        rank + 1, and receives theirs into its halos.
 *
 * The interior ranges sent are acquired for `read` and the halos for `discard`, on the side the
 * transport uses: with `nccl` or `mpi_device`, device-valid data moves no byte between host and
 * device; with `mpi_host`, it costs one D2H of each sent range (both queued before the host waits
 * for the first) and the device one H2D of each halo when it next reads them; nothing else of the
 * array moves. With `nccl`, the messages are one NCCL group enqueued on `stream`, and the call
 * returns without waiting; with MPI, they are non-blocking messages waited for together (after
 * the host waited for `stream` with `mpi_device`). Each message counts once (one per neighbour and
 * direction). Without `periodic`, the outer halos of the first and last ranks are left as they
 * are; with it, rank 0 and the last rank are neighbours (with 2 ranks, each sends the other two
 * messages).
 *
 * @param a the array: at least `3 * width` elements.
 * @param halo the width of each halo, and whether the ends wrap around.
 * @param comm the processes, in the order of the blocks.
 * @param stream the stream that orders the device side.
 * @param where the caller's source location, for the trace.
 * @throws logic_error when the halo is wider than the interior, or, with the communicator's size
 *         check on, on every rank when any rank's halo is wider than its interior or the ranks'
 *         halo bytes, element types or periodicity differ (naming the ranks and what each had);
 *         nothing is acquired.
 * @throws mpi_error when MPI fails.
 * @throws nccl_error when NCCL fails.
 */
template <typename T>
void exchange_halos(SmartArray<T>& a, const Halo& halo, const Communicator& comm,
                    StreamRef stream = {},
                    smartarray::source_location where = smartarray::source_location::current()) {
  const std::size_t n = a.size();
  const std::size_t w = halo.width;
  detail::open_collective(
      "exchange_halos", comm, stream,
      {.halo_bytes = w * sizeof(T), .type = detail::type_code<T>(), .periodic = halo.periodic},
      [&] { detail::check_halo(n, sizeof(T), halo, comm); });
  const detail::Neighbours neighbours = detail::halo_neighbours(halo, comm);
  if (w == 0 || (neighbours.left < 0 && neighbours.right < 0)) return;
  detail::exchange_halo_rows(a, w, w * sizeof(T), neighbours, comm, stream, where);
}

}  // namespace smartarray::dist
