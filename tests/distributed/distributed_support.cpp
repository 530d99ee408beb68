// What the distributed tests share (distributed_support.hpp).
#include "distributed_support.hpp"

#include "support/test_support.hpp"

#include <smartarray/distributed/detail/mpi_check.hpp>
#include <smartarray/runtime/device.hpp>

#include <mpi.h>

namespace smartarray::test {

std::uint32_t shared_salt() {
  std::uint32_t salt = random_value<std::uint32_t>();
  SMARTARRAY_MPI_CHECK(MPI_Bcast(&salt, 1, MPI_UINT32_T, 0, MPI_COMM_WORLD));
  return salt;
}

std::vector<dist::Transport> test_transports() {
  MPI_Comm node = MPI_COMM_NULL;
  SMARTARRAY_MPI_CHECK(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int local_size = 0;
  SMARTARRAY_MPI_CHECK(MPI_Comm_size(node, &local_size));
  SMARTARRAY_MPI_CHECK(MPI_Comm_free(&node));
  std::vector<dist::Transport> transports{dist::Transport::mpi_host};
  if (dist::transport_available(dist::Transport::mpi_device)) {
    transports.push_back(dist::Transport::mpi_device);
  }
  if (dist::transport_available(dist::Transport::nccl) && local_size <= device_count()) {
    transports.push_back(dist::Transport::nccl);
  }
  return transports;
}

std::vector<dist::Transport> device_transports() {
  std::vector<dist::Transport> transports = test_transports();
  transports.erase(transports.begin());
  return transports;
}

}  // namespace smartarray::test
