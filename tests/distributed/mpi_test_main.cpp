// Entry point of the distributed test binaries, which run under mpirun: each rank runs every test,
// and the binary fails on every rank when a test failed on any (an MPI reduction of the results),
// so that mpirun reports it whichever rank failed. The backend comes from SMARTARRAY_BACKEND; a
// cuda run on a machine without a device skips every test and prints the marker that CTest turns
// into "skipped".
#include "support/test_support.hpp"

#include <smartarray/distributed/detail/mpi_check.hpp>

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <iostream>

namespace {
class BackendEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* wanted = std::getenv("SMARTARRAY_BACKEND");
    if (wanted != nullptr && std::strcmp(wanted, "cuda") == 0 &&
        !smartarray::cuda_device_available()) {
      std::cout << "SMARTARRAY_NO_CUDA_DEVICE: no CUDA device, the cuda run is skipped\n";
      GTEST_SKIP() << "no CUDA device";
    }
    smartarray::set_expect_transfers_handler(
        [](const std::string& message) { ADD_FAILURE() << message; });
  }
};
}  // namespace

int main(int argc, char** argv) {
  SMARTARRAY_MPI_CHECK(MPI_Init(&argc, &argv));
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new BackendEnvironment);  // gtest takes ownership
  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  SMARTARRAY_MPI_CHECK(MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  SMARTARRAY_MPI_CHECK(MPI_Finalize());
  return any_failed;
}
