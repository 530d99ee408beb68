// bench_distributed's checks of the hand-written code's CUDA, NCCL and MPI calls, and the block of
// the grid that one rank owns. Included by bench_distributed.cu and its Jacobi solvers only: like
// the rest of that binary, it defines its names in an unnamed namespace.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstddef>
#include <cstdio>

namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", call, cudaGetErrorString(status));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
void check(ncclResult_t status, const char* call) {
  if (status != ncclSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", call, ncclGetErrorString(status));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
void check(int status, const char* call) {
  if (status != MPI_SUCCESS) {
    std::fprintf(stderr, "%s failed: MPI error %d\n", call, status);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
#define CHECK(call) check((call), #call)

/// The block of an nx x ny grid that one rank owns: `rows` rows of nx columns, stored with a halo
/// row above and below ((rows + 2) * nx floats).
struct Block {
  std::size_t nx;
  std::size_t ny;
  int rows;
  int rank;
  int ranks;

  /// The rank that owns the rows above (-1 for none).
  [[nodiscard]] int up() const { return rank > 0 ? rank - 1 : -1; }
  /// The rank that owns the rows below (-1 for none).
  [[nodiscard]] int down() const { return rank < ranks - 1 ? rank + 1 : -1; }
  /// The floats of the block with its halos.
  [[nodiscard]] std::size_t size() const { return (static_cast<std::size_t>(rows) + 2) * nx; }
};

}  // namespace
