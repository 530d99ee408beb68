// A Communicator whose backend cannot start on one rank only (CTest runs rank 1 with
// SMARTARRAY_BACKEND=cuda and no CUDA device visible): every rank throws from the constructor,
// the others the failing rank's kind (cuda_error) and message, and none is left waiting in it (a
// barrier after it completes). Its own binary: the failing rank's backend stays unusable.
#include <smartarray/distributed.hpp>

#include <mpi.h>

#include <cstdio>
#include <string>

namespace dist = smartarray::dist;

int main(int argc, char** argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int failures = 0;
  try {
    const dist::Communicator comm(MPI_COMM_WORLD);
    std::printf("rank %d: the constructor did not throw\n", rank);
    ++failures;
  } catch (const smartarray::cuda_error& error) {
    const std::string message = error.what();
    if (message.find("SMARTARRAY_BACKEND=cuda") == std::string::npos ||
        (rank != 1 && message.find("Communicator: rank 1: ") == std::string::npos)) {
      std::printf("rank %d: unexpected message: %s\n", rank, error.what());
      ++failures;
    }
  } catch (const std::exception& error) {
    std::printf("rank %d: not a cuda_error: %s\n", rank, error.what());
    ++failures;
  }
  if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) ++failures;
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("a backend that fails on one rank: %d failures\n", total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
