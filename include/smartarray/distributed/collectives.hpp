/**
 * @file distributed/collectives.hpp
 * @brief Collectives over SmartArrays: `all_reduce`, `broadcast`, `all_gather`, `reduce_scatter`.
 *
 * Each acquires its arrays on the side the transport uses (the host for `mpi_host`, device
 * memory otherwise): what it reads for `read`, what it overwrites for `discard`, an in-place
 * result for `read_write`. Each call counts one logical message sent and one received on each
 * rank, of the bytes of the arrays involved, whatever algorithm MPI or NCCL uses. With `nccl`, a
 * call is enqueued on `stream` and returns without waiting; with MPI, it returns when its data
 * arrived (`mpi_device` first waits for `stream`).
 *
 * Every call first checks its own arguments. With the communicator's size check on (the default,
 * and always in debug builds), one small reduction over every rank follows, before anything is
 * acquired: when any rank's check failed, or the ranks passed different bytes, element types,
 * ops or roots, every rank throws the same error, naming the rank and what it had. Without the
 * size check, a failed check throws on its own rank only, and a difference between ranks is
 * undefined (MPI or NCCL may truncate, read past a buffer, mix types or wait forever).
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/core/detail/array_messages.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/distributed/communicator.hpp>
#include <smartarray/distributed/detail/agreement.hpp>
#include <smartarray/distributed/point_to_point.hpp>
#include <smartarray/runtime/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace smartarray::dist {

/// @brief The reduction of `all_reduce` and `reduce_scatter`.
enum class Op { sum, prod, min, max };

/// @brief "sum", "prod", "min" or "max" ("unknown" for a value that is none of them).
[[nodiscard]] const char* to_string(Op op) noexcept;

namespace detail {
/// The element types the reductions take: floating-point and integer arithmetic types.
template <typename T>
inline constexpr bool is_reducible_v =
    std::is_arithmetic_v<T> && !std::is_same_v<T, bool> && sizeof(T) <= 8;
/// An element type, as the transports' reductions name it.
struct ElementType {
  bool floating;
  bool is_signed;
  std::size_t bytes;
};
template <typename T>
[[nodiscard]] constexpr ElementType element_type_of() noexcept {
  return {std::is_floating_point_v<T>, std::is_signed_v<T>, sizeof(T)};
}
// The local checks of the collectives, run inside open_collective() (agreement.hpp): each throws
// logic_error naming `what` and this rank.
/// The transport cannot reduce `type` (NCCL has no 16-bit integers).
void check_element_type(const char* what, ElementType type, const Communicator& comm);
/// `op` is none of dist::Op's values.
void check_op(const char* what, Op op, const Communicator& comm);
/// `root` is not a rank of `comm`.
void check_root(const char* what, int root, const Communicator& comm);
/// `in` and `out` are one array, or `whole` does not hold `comm.size()` blocks of `part`'s size.
void check_blocks(const char* what, const void* in, const void* out, std::size_t whole,
                  std::size_t part, const char* whole_name, const Communicator& comm);

/// The pointer to the elements of `range` for `access` on the transport's side.
template <typename A>
[[nodiscard]] auto transport_data(A& range, Access access, const Communicator& comm,
                                  StreamRef stream, const smartarray::source_location& where) {
  const bool host = comm.transport() == Transport::mpi_host;
  if constexpr (std::is_const_v<typename A::element_type>) {
    return host ? range.host_view(stream, where).data() : range.device_view(stream, where).data();
  } else {
    return host ? range.host_view(access, stream, where).data()
                : range.device_view(access, stream, where).data();
  }
}
// The transfers, on the transport's side: NCCL enqueues them on `stream`; MPI from device memory
// first makes the host wait for `stream`, so that MPI never overtakes the work queued before.
void all_reduce_in_place(void* data, std::size_t count, ElementType type, Op op,
                         const Communicator& comm, StreamRef stream);
void broadcast_bytes(void* data, std::size_t bytes, int root, const Communicator& comm,
                     StreamRef stream);
void all_gather_bytes(const void* in, void* out, std::size_t bytes, const Communicator& comm,
                      StreamRef stream);
void reduce_scatter_block(const void* in, void* out, std::size_t count, ElementType type, Op op,
                          const Communicator& comm, StreamRef stream);
}  // namespace detail

/**
 * @brief Reduces `a` element by element over every rank, in place: afterwards each rank's `a`
 *        holds the `op` of all ranks' arrays.
 * @param a the array, the same size on every rank; acquired `read_write` on the transport's side.
 * @throws logic_error when `op` is not an Op, the transport cannot reduce `T`, or (with the size
 *         check on, on every rank) any rank's check failed or the ranks' sizes, types or ops
 *         differ; nothing is acquired.
 * @throws mpi_error when MPI fails.
 * @throws nccl_error when NCCL fails.
 */
template <typename T>
void all_reduce(SmartArray<T>& a, Op op, const Communicator& comm, StreamRef stream = {},
                smartarray::source_location where = smartarray::source_location::current()) {
  static_assert(detail::is_reducible_v<T>,
                "dist::all_reduce: the elements must be floating-point or integers");
  const std::size_t bytes = a.size() * sizeof(T);
  detail::open_collective(
      "all_reduce", comm, stream,
      {.bytes = bytes, .type = detail::type_code<T>(), .op = static_cast<int>(op)}, [&] {
        detail::check_op("all_reduce", op, comm);
        detail::check_element_type("all_reduce", detail::element_type_of<T>(), comm);
        detail::check_count("all_reduce", a.size(), "elements", comm);
      });
  if (a.empty()) return;
  auto range = a.slice(0, a.size());
  T* data = detail::transport_data(range, Access::read_write, comm, stream, where);
  detail::all_reduce_in_place(data, a.size(), detail::element_type_of<T>(), op, comm, stream);
  smartarray::detail::ArrayMessages::sent(a, bytes, -1, "all_reduce", where);
  smartarray::detail::ArrayMessages::received(a, bytes, -1, "all_reduce", where);
}

/**
 * @brief Copies `root`'s `a` into every other rank's `a`.
 * @param a the array, the same size on every rank: read on `root`, overwritten (`discard`)
 *        elsewhere.
 * @param root the rank whose array is copied.
 * @throws logic_error when `root` is not a rank, or (with the size check on, on every rank) any
 *         rank's check failed or the ranks' sizes, types or roots differ; nothing is acquired.
 * @throws mpi_error when MPI fails.
 * @throws nccl_error when NCCL fails.
 */
template <typename T>
void broadcast(SmartArray<T>& a, int root, const Communicator& comm, StreamRef stream = {},
               smartarray::source_location where = smartarray::source_location::current()) {
  const std::size_t bytes = a.size() * sizeof(T);
  detail::open_collective("broadcast", comm, stream,
                          {.bytes = bytes, .type = detail::type_code<T>(), .root = root}, [&] {
                            detail::check_root("broadcast", root, comm);
                            detail::check_count("broadcast", bytes, "bytes", comm);
                          });
  if (a.empty()) return;
  void* data = nullptr;
  if (comm.rank() == root) {
    const auto range = std::as_const(a).slice(0, a.size());
    data = const_cast<T*>(detail::transport_data(range, Access::read, comm, stream, where));
  } else {
    auto range = a.slice(0, a.size());
    data = detail::transport_data(range, Access::discard, comm, stream, where);
  }
  detail::broadcast_bytes(data, bytes, root, comm, stream);
  smartarray::detail::ArrayMessages::sent(a, bytes, root, "broadcast", where);
  smartarray::detail::ArrayMessages::received(a, bytes, root, "broadcast", where);
}

/**
 * @brief Gathers every rank's `in` into every rank's `out`, in rank order.
 * @param in this rank's part, the same size on every rank; read.
 * @param out `in.size() * comm.size()` elements, another array; overwritten (`discard`).
 * @throws logic_error when `out` has another size or is `in`'s array, or (with the size check on,
 *         on every rank) any rank's check failed or the ranks' sizes or types differ; nothing is
 *         acquired.
 * @throws mpi_error when MPI fails.
 * @throws nccl_error when NCCL fails.
 */
template <typename T>
void all_gather(const SmartArray<T>& in, SmartArray<T>& out, const Communicator& comm,
                StreamRef stream = {},
                smartarray::source_location where = smartarray::source_location::current()) {
  const std::size_t bytes = in.size() * sizeof(T);
  detail::open_collective(
      "all_gather", comm, stream, {.bytes = bytes, .type = detail::type_code<T>()}, [&] {
        detail::check_blocks("all_gather", &in, &out, out.size(), in.size(), "out", comm);
        detail::check_count("all_gather", out.size() * sizeof(T), "bytes", comm);
      });
  if (in.empty()) return;
  const auto from = in.slice(0, in.size());
  auto to = out.slice(0, out.size());
  const T* source = detail::transport_data(from, Access::read, comm, stream, where);
  T* target = detail::transport_data(to, Access::discard, comm, stream, where);
  detail::all_gather_bytes(source, target, bytes, comm, stream);
  smartarray::detail::ArrayMessages::sent(in, bytes, -1, "all_gather", where);
  smartarray::detail::ArrayMessages::received(out, out.size() * sizeof(T), -1, "all_gather", where);
}

/**
 * @brief Reduces `in` element by element over every rank and leaves block `rank` of the result
 *        in this rank's `out`.
 * @param in `out.size() * comm.size()` elements, the same size on every rank; read.
 * @param out this rank's block, another array; overwritten (`discard`).
 * @throws logic_error when the sizes do not fit, `out` is `in`'s array or `op` is not an Op, or
 *         (with the size check on, on every rank) any rank's check failed or the ranks' sizes,
 *         types or ops differ; nothing is acquired.
 * @throws mpi_error when MPI fails.
 * @throws nccl_error when NCCL fails.
 */
template <typename T>
void reduce_scatter(const SmartArray<T>& in, SmartArray<T>& out, Op op, const Communicator& comm,
                    StreamRef stream = {},
                    smartarray::source_location where = smartarray::source_location::current()) {
  static_assert(detail::is_reducible_v<T>,
                "dist::reduce_scatter: the elements must be floating-point or integers");
  detail::open_collective(
      "reduce_scatter", comm, stream,
      {.bytes = in.size() * sizeof(T), .type = detail::type_code<T>(), .op = static_cast<int>(op)},
      [&] {
        detail::check_blocks("reduce_scatter", &in, &out, in.size(), out.size(), "in", comm);
        detail::check_op("reduce_scatter", op, comm);
        detail::check_element_type("reduce_scatter", detail::element_type_of<T>(), comm);
        detail::check_count("reduce_scatter", in.size(), "elements", comm);
      });
  if (out.empty()) return;
  const auto from = in.slice(0, in.size());
  auto to = out.slice(0, out.size());
  const T* source = detail::transport_data(from, Access::read, comm, stream, where);
  T* target = detail::transport_data(to, Access::discard, comm, stream, where);
  detail::reduce_scatter_block(source, target, out.size(), detail::element_type_of<T>(), op, comm,
                               stream);
  smartarray::detail::ArrayMessages::sent(in, in.size() * sizeof(T), -1, "reduce_scatter", where);
  smartarray::detail::ArrayMessages::received(out, out.size() * sizeof(T), -1, "reduce_scatter",
                                              where);
}

}  // namespace smartarray::dist
