/**
 * @file distributed/detail/mpi_check.hpp
 * @brief Private: every MPI call of the library goes through SMARTARRAY_MPI_CHECK.
 */
#pragma once

#include <smartarray/distributed/communicator.hpp>

namespace smartarray::dist::detail {

/// Throws mpi_error naming `call`, the error class and MPI's string for `code`.
[[noreturn]] void throw_mpi_error(const char* call, int code);

/// Throws logic_error naming `what` when MPI is not initialized, or was finalized.
void require_mpi_running(const char* what);

}  // namespace smartarray::dist::detail

/// @brief Calls `call` (an MPI function call) and throws `mpi_error` naming it when it fails.
#define SMARTARRAY_MPI_CHECK(call)                                                 \
  do {                                                                             \
    const int smartarray_mpi_code_ = (call);                                       \
    if (smartarray_mpi_code_ != MPI_SUCCESS) {                                     \
      ::smartarray::dist::detail::throw_mpi_error(#call, smartarray_mpi_code_);    \
    }                                                                              \
  } while (false)
