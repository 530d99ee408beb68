// dist::Communicator: ranks, node-local ranks and devices, the transport every rank agrees on,
// and errors that every rank sees (no rank is left waiting).
#include "support/test_support.hpp"
#include "distributed_support.hpp"

#include <smartarray/distributed.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>

#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

namespace sa = smartarray;
namespace dist = smartarray::dist;

namespace {
int world_rank() {
  int rank = 0;
  SMARTARRAY_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  return rank;
}
int world_size() {
  int size = 0;
  SMARTARRAY_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  return size;
}
}  // namespace

TEST(Communicator, HasTheRanksOfItsCommunicatorAndANodeLocalDevice) {
  ASSERT_GE(world_size(), 2) << "run under mpirun with 2 or more ranks";
  const dist::Communicator comm(MPI_COMM_WORLD);
  EXPECT_EQ(comm.rank(), world_rank());
  EXPECT_EQ(comm.size(), world_size());
  // One host: every rank is on this node.
  EXPECT_EQ(comm.local_size(), world_size());
  EXPECT_EQ(comm.local_rank(), world_rank());
  EXPECT_EQ(comm.device().ordinal, comm.local_rank() % sa::device_count());
  EXPECT_EQ(sa::current_device(), comm.device());
  if (sa::backend() == sa::BackendKind::host) {
    EXPECT_EQ(comm.transport(), dist::Transport::mpi_host);
  }
  EXPECT_STREQ(dist::to_string(comm.transport()),
               comm.transport() == dist::Transport::mpi_host     ? "mpi_host"
               : comm.transport() == dist::Transport::mpi_device ? "mpi_device"
                                                                 : "nccl");
}

TEST(Communicator, ItsMessagesNeverMatchTheApplicationsOnTheSameCommunicator) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  // Rank 0 sends a random value on the application's communicator, then that value plus one on
  // the library's duplicate, same tag; rank 1 receives from the duplicate first and must get the
  // second message.
  const int on_world = smartarray::test::random_value<int>() / 2;
  const int on_library = on_world + 1;
  if (comm.rank() == 0) {
    SMARTARRAY_MPI_CHECK(MPI_Send(&on_world, 1, MPI_INT, 1, 7, MPI_COMM_WORLD));
    SMARTARRAY_MPI_CHECK(MPI_Send(&on_library, 1, MPI_INT, 1, 7, comm.native()));
  } else if (comm.rank() == 1) {
    int first = -1;
    int second = -1;
    SMARTARRAY_MPI_CHECK(MPI_Recv(&first, 1, MPI_INT, 0, 7, comm.native(), MPI_STATUS_IGNORE));
    SMARTARRAY_MPI_CHECK(MPI_Recv(&second, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    EXPECT_EQ(first, second + 1);
  }
}

TEST(Communicator, TheHostBackendEmulatesTheDeviceTransport) {
  if (sa::backend() != sa::BackendKind::host) GTEST_SKIP() << "host backend only";
  const dist::Communicator comm(MPI_COMM_WORLD, {.transport = dist::Transport::mpi_device});
  EXPECT_EQ(comm.transport(), dist::Transport::mpi_device);
}

TEST(Communicator, ATransportThatCannotRunThrowsOnEveryRank) {
  // nccl where it is not built in or the backend is host; else mpi_device without CUDA-aware MPI.
  dist::Transport asked = dist::Transport::nccl;
  if (dist::transport_available(asked)) asked = dist::Transport::mpi_device;
  if (dist::transport_available(asked)) GTEST_SKIP() << "every transport runs here";
  try {
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = asked});
    FAIL() << dist::to_string(asked) << " cannot run here";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find(dist::to_string(asked)), std::string::npos)
        << error.what();
    // Every rank throws rank 0's error, the first that failed.
    EXPECT_NE(std::string(error.what()).find("Communicator: rank 0: "), std::string::npos)
        << error.what();
  }
}

TEST(Communicator, NcclNeedsADeviceOfItsOwnForEachProcessOfANode) {
  if (!dist::transport_available(dist::Transport::nccl)) GTEST_SKIP() << "no nccl here";
  // Every rank on device 0: the default falls back to MPI, and asking for nccl throws.
  {
    const dist::Communicator comm(MPI_COMM_WORLD, {.device = sa::Device{0}});
    EXPECT_NE(comm.transport(), dist::Transport::nccl);
  }
  try {
    const dist::Communicator comm(MPI_COMM_WORLD,
                                  {.device = sa::Device{0}, .transport = dist::Transport::nccl});
    FAIL() << "two ranks on device 0";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("a device of its own"), std::string::npos)
        << error.what();
  }
}

TEST(Communicator, NcclTakesItsCommunicatorFromMpiAndOnlyNcclHasOne) {
  const dist::Communicator host(MPI_COMM_WORLD, {.transport = dist::Transport::mpi_host});
  EXPECT_THROW((void)host.nccl(), sa::logic_error);
  const std::vector<dist::Transport> transports = sa::test::test_transports();
  if (transports.back() != dist::Transport::nccl) GTEST_SKIP() << "no nccl transport here";
  const dist::Communicator comm(MPI_COMM_WORLD);
  EXPECT_EQ(comm.transport(), dist::Transport::nccl);  // the default where it runs
  ASSERT_NE(comm.nccl(), nullptr);
}

TEST(Communicator, RanksAskingForDifferentTransportsAllThrowNamingBoth) {
  if (sa::backend() != sa::BackendKind::host) GTEST_SKIP() << "needs mpi_device, emulated on host";
  const dist::Transport asked =
      world_rank() == 0 ? dist::Transport::mpi_host : dist::Transport::mpi_device;
  try {
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = asked});
    FAIL() << "the ranks disagree";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("mpi_device"), std::string::npos) << message;
    EXPECT_NE(message.find("mpi_host"), std::string::npos) << message;
  }
}

TEST(Communicator, ADeviceThatIsNotThisProcesssThrowsOnEveryRank) {
  // Only the last rank asks for a device that does not exist; every rank throws.
  const bool bad = world_rank() == world_size() - 1;
  const sa::Device device{bad ? sa::device_count() + 3 : 0};
  try {
    const dist::Communicator comm(MPI_COMM_WORLD, {.device = device});
    FAIL() << "rank " << world_size() - 1 << " asked for device " << device.ordinal;
  } catch (const sa::logic_error& error) {
    // Every rank throws the bad rank's error, naming it and its device.
    const std::string message = error.what();
    EXPECT_NE(message.find("Communicator: rank " + std::to_string(world_size() - 1)),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("device " + std::to_string(sa::device_count() + 3)), std::string::npos)
        << message;
  }
  sa::set_current_device(sa::Device{0});
}

TEST(Communicator, AMovedFromCommunicatorSaysSo) {
  dist::Communicator comm(MPI_COMM_WORLD);
  const dist::Communicator moved = std::move(comm);
  EXPECT_EQ(moved.size(), world_size());
  EXPECT_NE(moved.native(), MPI_COMM_NULL);
  EXPECT_THROW((void)comm.native(), sa::logic_error);  // NOLINT(bugprone-use-after-move)
}
