// Entry point of the distributed test binaries, which run under mpirun: each rank runs every test
// (in the environment of support/backend_environment.hpp), and the binary fails on every rank when
// a test failed on any (an MPI reduction of the results), so that mpirun reports it whichever rank
// failed.
#include "support/backend_environment.hpp"

#include <smartarray/distributed/detail/mpi_check.hpp>

#include <gtest/gtest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  SMARTARRAY_MPI_CHECK(MPI_Init(&argc, &argv));
  ::testing::InitGoogleTest(&argc, argv);
  // gtest takes ownership
  ::testing::AddGlobalTestEnvironment(new smartarray::test::BackendEnvironment);
  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  SMARTARRAY_MPI_CHECK(MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  SMARTARRAY_MPI_CHECK(MPI_Finalize());
  return any_failed;
}
