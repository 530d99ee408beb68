/**
 * @file distributed/detail/agreement.hpp
 * @brief Private: the agreement that opens every collective call. Each rank checks its own
 *        arguments, then all ranks learn together whether any check failed and whether what
 *        must match (bytes, element type, op, root, periodicity) does. Either every rank goes on,
 *        or every rank throws the same error before anything is acquired, so that no rank is
 *        left waiting inside the library.
 */
#pragma once

#include <smartarray/distributed/communicator.hpp>
#include <smartarray/runtime/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>

namespace smartarray::dist::detail {

/// An element type as a number that every rank computes alike: for arithmetic types its size,
/// whether it is floating-point and whether it is signed; for others its size alone.
template <typename T>
[[nodiscard]] constexpr std::int64_t type_code() noexcept {
  using Value = std::remove_cv_t<T>;
  constexpr bool arithmetic = std::is_arithmetic_v<Value> && !std::is_same_v<Value, bool>;
  return static_cast<std::int64_t>(sizeof(Value)) << 3 | (arithmetic ? 4 : 0) |
         (std::is_floating_point_v<Value> ? 2 : 0) |
         (arithmetic && std::is_signed_v<Value> ? 1 : 0);
}

/// What every rank of one collective call must pass alike; an empty term is not compared.
struct Terms {
  /// The bytes of each rank's array (or part).
  std::optional<std::size_t> bytes = std::nullopt;
  /// The bytes of each halo.
  std::optional<std::size_t> halo_bytes = std::nullopt;
  /// type_code() of the elements.
  std::optional<std::int64_t> type = std::nullopt;
  /// The reduction (a dist::Op).
  std::optional<int> op = std::nullopt;
  /// The root rank.
  std::optional<int> root = std::nullopt;
  /// Whether the halos wrap around.
  std::optional<bool> periodic = std::nullopt;
  /// The communicator's size check (its constructor).
  std::optional<bool> check_sizes = std::nullopt;
};

/**
 * The agreement of the call `what` over `comm` (MPI's communicator, this process's `rank`):
 * `failure` is the exception of this rank's own checks, if any. One MPI_Allreduce learns
 * whether any rank failed or any term differs; when so, one MPI_Allgather of every rank's
 * error and terms follows, and every rank throws the same error: the first failing rank's
 * message, after "what: rank R: ", as an exception of its kind (cuda_error, mpi_error and
 * nccl_error keep their code; another std::exception is a std::runtime_error elsewhere and
 * itself on its rank), else logic_error naming the first term that differs, both ranks and their
 * values.
 * @throws mpi_error when MPI fails.
 */
void agree(const char* what, MPI_Comm comm, int rank, const Terms& terms,
           const std::exception_ptr& failure);

/// The checks that every collective call makes of its communicator and stream, whatever its
/// arguments: (nccl) `stream` is on the communicator's device; (MPI transports) the calling
/// thread is not inside sa::capture, where MPI would move the data at capture time instead of
/// at each replay. Throws logic_error naming `what`.
void check_call(const char* what, const Communicator& comm, StreamRef stream);

/// The communicator's MPI communicator, once MPI is running and `comm` was not moved from (no
/// agreement is possible otherwise). Throws logic_error naming `what`.
[[nodiscard]] MPI_Comm usable(const char* what, const Communicator& comm);

/**
 * Opens a collective call: runs check_call() and `local_checks` (a callable that throws on a bad
 * argument of this rank), then, with the communicator's size check on, agrees with every rank
 * on their outcome and on `terms` (agree()). Without the size check, a failed check throws on
 * its own rank only and nothing is compared. Nothing is acquired or sent before this returns.
 */
template <typename Checks>
void open_collective(const char* what, const Communicator& comm, StreamRef stream,
                     const Terms& terms, Checks&& local_checks) {
  const MPI_Comm native = usable(what, comm);
  std::exception_ptr failure;
  try {
    check_call(what, comm, stream);
    local_checks();
  } catch (...) {
    failure = std::current_exception();
  }
  if (!comm.checks_sizes()) {
    if (failure) std::rethrow_exception(failure);
    return;
  }
  agree(what, native, comm.rank(), terms, failure);
}

}  // namespace smartarray::dist::detail
