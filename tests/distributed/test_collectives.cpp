// dist::all_reduce, broadcast, all_gather and reduce_scatter: results against values computed
// from every rank's known inputs, one counted message each way per call, the side each
// transport acquires, and sizes that differ between ranks.
#include "support/test_support.hpp"
#include "distributed_support.hpp"

#include <smartarray/distributed.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace sa = smartarray;
namespace dist = smartarray::dist;
using sa::Access;
using sa::Side;
using sa::SmartArray;

namespace {
using sa::test::shared_salt;
/// Element i of rank `rank`'s input: small integers, so that sums and products are exact.
std::int64_t value(int rank, std::size_t i, std::uint32_t salt) {
  return static_cast<std::int64_t>((salt + 7 * static_cast<std::uint32_t>(rank) +
                                    13 * static_cast<std::uint32_t>(i)) % 9) - 4;
}
std::vector<std::int64_t> input(int rank, std::size_t n, std::uint32_t salt) {
  std::vector<std::int64_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = value(rank, i, salt);
  return out;
}
std::int64_t reduced(dist::Op op, int ranks, std::size_t i, std::uint32_t salt) {
  std::int64_t result = value(0, i, salt);
  for (int r = 1; r < ranks; ++r) {
    const std::int64_t x = value(r, i, salt);
    switch (op) {
      case dist::Op::sum: result += x; break;
      case dist::Op::prod: result *= x; break;
      case dist::Op::min: result = std::min(result, x); break;
      case dist::Op::max: result = std::max(result, x); break;
    }
  }
  return result;
}
std::vector<std::int64_t> host_copy(const SmartArray<std::int64_t>& a) {
  return {a.begin(), a.end()};
}
}  // namespace

TEST(Collectives, AllReduceOfEachOpInPlaceOnTheTransportsSide) {
  for (const dist::Transport transport : sa::test::test_transports()) {
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
    for (const dist::Op op : {dist::Op::sum, dist::Op::prod, dist::Op::min, dist::Op::max}) {
      const std::uint32_t salt = shared_salt();
      const std::size_t n = 777;
      SmartArray<std::int64_t> a(input(comm.rank(), n, salt));  // valid on the host
      const bool host = transport == dist::Transport::mpi_host;
      {
        sa::ExpectTransfers exact(
            a.counters(), {.h2d = host ? 0U : 1U, .sent = 1, .received = 1,
                           .sent_bytes = n * sizeof(std::int64_t),
                           .received_bytes = n * sizeof(std::int64_t)});
        dist::all_reduce(a, op, comm);
      }
      EXPECT_EQ(a.is_valid(Side::host), host);
      EXPECT_EQ(a.is_valid(Side::device), !host);
      const std::vector<std::int64_t> got = host_copy(a);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i], reduced(op, comm.size(), i, salt))
            << "element " << i << ", op " << static_cast<int>(op) << ", " << to_string(transport);
      }
    }
  }
}

TEST(Collectives, BroadcastReadsTheRootAndOverwritesTheOthers) {
  for (const dist::Transport transport : sa::test::test_transports()) {
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
    const std::uint32_t salt = shared_salt();
    const int root = comm.size() - 1;
    const std::size_t n = 300;
    SmartArray<std::int64_t> a(input(comm.rank(), n, salt));
    (void)a.device_view(Access::read_write);  // valid on the device only
    const bool host = transport == dist::Transport::mpi_host;
    {
      // The root's device-valid data comes down over host MPI; the others' is discarded.
      const bool copies = host && comm.rank() == root;
      sa::ExpectTransfers exact(a.counters(), {.d2h = copies ? 1U : 0U, .sent = 1, .received = 1});
      dist::broadcast(a, root, comm);
    }
    EXPECT_EQ(host_copy(a), input(root, n, salt)) << to_string(transport);
  }
}

TEST(Collectives, AllGatherAndReduceScatterPutEachRanksBlockInPlace) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  const std::uint32_t salt = shared_salt();
  const std::size_t block = 64;
  const auto ranks = static_cast<std::size_t>(comm.size());
  const SmartArray<std::int64_t> mine(input(comm.rank(), block, salt));
  SmartArray<std::int64_t> gathered(ranks * block, std::int64_t{99});
  {
    // Host-valid: a device transport uploads this rank's block first.
    const bool host = comm.transport() == dist::Transport::mpi_host;
    sa::ExpectTransfers on_in(mine.counters(), {.h2d = host ? 0U : 1U,
                                                .h2d_bytes = host ? 0U : block * 8,
                                                .sent = 1,
                                                .sent_bytes = block * 8});
    sa::ExpectTransfers on_out(gathered.counters(),
                               {.received = 1, .received_bytes = ranks * block * 8});
    dist::all_gather(mine, gathered, comm);
  }
  for (std::size_t r = 0; r < ranks; ++r) {
    const auto first = gathered.begin() + static_cast<std::ptrdiff_t>(r * block);
    EXPECT_EQ(std::vector<std::int64_t>(first, first + static_cast<std::ptrdiff_t>(block)),
              input(static_cast<int>(r), block, salt));
  }
  const SmartArray<std::int64_t> whole(input(comm.rank(), ranks * block, salt));
  SmartArray<std::int64_t> part(block, std::int64_t{99});
  dist::reduce_scatter(whole, part, dist::Op::sum, comm);
  const std::vector<std::int64_t> got = host_copy(part);
  for (std::size_t i = 0; i < block; ++i) {
    ASSERT_EQ(got[i], reduced(dist::Op::sum, comm.size(),
                              static_cast<std::size_t>(comm.rank()) * block + i, salt));
  }
}

TEST(Collectives, SizesThatDifferBetweenRanksThrowOnEveryRank) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  const std::size_t n = comm.rank() == 1 ? 11 : 10;
  const std::vector<std::int64_t> before = sa::test::random_values<std::int64_t>(n);
  SmartArray<std::int64_t> a(before);
  sa::ExpectTransfers nothing(a.counters(), {});
  try {
    dist::all_reduce(a, dist::Op::sum, comm);
    FAIL() << "rank 1 has 11 elements, the others 10";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("rank 0's is 80 bytes, rank 1's 88 bytes"), std::string::npos)
        << message;
  }
  EXPECT_EQ(host_copy(a), before);
}

TEST(Collectives, ABadRootThrowsBeforeAnyMpiCall) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  SmartArray<std::int64_t> a(sa::test::random_values<std::int64_t>(8));
  try {
    dist::broadcast(a, comm.size(), comm);
    FAIL() << "root " << comm.size();
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("root " + std::to_string(comm.size())),
              std::string::npos)
        << error.what();
  }
}

TEST(Collectives, DeviceValidAllReduceOverTheDeviceTransportsCopiesNothing) {
  for (const dist::Transport transport : sa::test::device_transports()) {
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
    const std::uint32_t salt = shared_salt();
    const std::size_t n = 4099;
    SmartArray<std::int64_t> a(input(comm.rank(), n, salt));
    (void)a.device_view(Access::read_write);  // valid on the device only
    const std::uint64_t waits = sa::global_transfer_stats().wait_count;
    {
      sa::ExpectTransfers exact(a.counters(), {.sent = 1, .received = 1,
                                               .sent_bytes = n * sizeof(std::int64_t),
                                               .received_bytes = n * sizeof(std::int64_t)});
      dist::all_reduce(a, dist::Op::sum, comm);
    }
    if (transport == dist::Transport::nccl) {  // enqueued on the stream: no host wait
      EXPECT_EQ(sa::global_transfer_stats().wait_count, waits);
    }
    EXPECT_FALSE(a.is_valid(Side::host));
    const std::vector<std::int64_t> got = host_copy(a);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i], reduced(dist::Op::sum, comm.size(), i, salt)) << to_string(transport);
    }
  }
}

TEST(Collectives, NcclRefusesSixteenBitIntegersBeforeAnyTransfer) {
  if (!dist::transport_available(dist::Transport::nccl)) GTEST_SKIP() << "no nccl transport here";
  const std::vector<dist::Transport> transports = sa::test::test_transports();
  if (transports.back() != dist::Transport::nccl) GTEST_SKIP() << "ranks share a device";
  const dist::Communicator comm(MPI_COMM_WORLD, {.transport = dist::Transport::nccl});
  const std::vector<std::int16_t> before = sa::test::random_values<std::int16_t>(32);
  SmartArray<std::int16_t> a(before);
  sa::ExpectTransfers nothing(a.counters(), {});
  try {
    dist::all_reduce(a, dist::Op::max, comm);
    FAIL() << "NCCL has no 16-bit integers";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("16-bit integers"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(std::vector<std::int16_t>(a.begin(), a.end()), before);
}
