// A communicator used after MPI_Finalize throws logic_error naming it, on every rank, instead of
// calling into a finalized MPI; its destructor then frees nothing. Its own binary: MPI can be
// finalized only once per process. Exit status 0 when every check held.
#include <smartarray/distributed.hpp>

#include <mpi.h>

#include <cstdio>
#include <string>

namespace dist = smartarray::dist;

int main(int argc, char** argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
  int failures = 0;
  {
    dist::Communicator comm(MPI_COMM_WORLD);
    smartarray::SmartArray<int> a(16, comm.rank() + 1);
    MPI_Finalize();
    const auto expect_error = [&](const char* what, const auto& call) {
      try {
        call();
        std::printf("rank %d: %s after MPI_Finalize did not throw\n", comm.rank(), what);
        ++failures;
      } catch (const smartarray::logic_error& error) {
        if (std::string(error.what()).find("MPI was finalized") == std::string::npos) {
          std::printf("rank %d: %s: unexpected message: %s\n", comm.rank(), what, error.what());
          ++failures;
        }
      }
    };
    expect_error("native()", [&] { (void)comm.native(); });
    expect_error("send", [&] { dist::send(a, (comm.rank() + 1) % comm.size(), comm); });
    expect_error("all_reduce", [&] { dist::all_reduce(a, dist::Op::sum, comm); });
    expect_error("exchange_halos", [&] { dist::exchange_halos(a, dist::Halo{.width = 2}, comm); });
    expect_error("Communicator", [&] { dist::Communicator again(MPI_COMM_WORLD); });
  }
  std::printf("after MPI_Finalize: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
