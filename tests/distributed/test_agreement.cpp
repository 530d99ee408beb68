// Every rank agrees or every rank throws: a bad argument on one rank only, or arguments that
// differ between ranks (sizes, element types, ops, roots, halo widths and periodicity, the size
// check itself), make every rank throw the same error before anything is acquired: no rank is
// left inside the library (CTest's timeout fails a hang), the arrays keep their contents,
// validity and counts, and the next valid call works on every rank.
#include "distributed_support.hpp"
#include "support/test_support.hpp"

#include <smartarray/distributed.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>
#include <smartarray/graph.hpp>

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sa = smartarray;
namespace dist = smartarray::dist;
using sa::Access;
using sa::Side;
using sa::SmartArray;

namespace {

int world_rank() {
  int rank = 0;
  SMARTARRAY_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  return rank;
}

/// Runs `call`, which must throw `Error` on this rank; checks that every rank threw a message
/// of the same text, and returns it.
template <typename Error = sa::logic_error, typename Call>
std::string every_rank_throws(Call&& call) {
  std::string message;
  bool threw = false;
  try {
    call();
  } catch (const Error& error) {
    threw = true;
    message = error.what();
  }
  EXPECT_TRUE(threw) << "rank " << world_rank() << " did not throw";
  const auto hash = static_cast<long long>(std::hash<std::string>{}(message) >> 2);
  const long long mine[2] = {hash, -hash};
  long long all[2] = {0, 0};
  SMARTARRAY_MPI_CHECK(MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD));
  EXPECT_EQ(all[0], -all[1]) << "the ranks' messages differ; this rank's: " << message;
  return message;
}

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "expected \"" << part << "\" in: " << message;
}

/// A valid all_reduce after a failed call: every rank is still in step.
void expect_a_valid_call_works(const dist::Communicator& comm) {
  SmartArray<std::int64_t> a(3, std::int64_t{comm.rank() + 1});
  dist::all_reduce(a, dist::Op::sum, comm);
  const std::int64_t expected = std::int64_t{comm.size()} * (comm.size() + 1) / 2;
  EXPECT_EQ(std::vector<std::int64_t>(a.begin(), a.end()), std::vector<std::int64_t>(3, expected));
}

/// An array of random values that is valid on the device only, so that any acquire on either
/// side shows up as a copy or a change of validity.
template <typename T>
struct DeviceValid {
  std::vector<T> values;
  SmartArray<T> array;
  sa::TransferStats before;
  explicit DeviceValid(std::size_t n) : values(sa::test::random_values<T>(n)), array(values) {
    (void)array.device_view(Access::read_write);
    before = array.transfer_stats();
  }
  /// No copy, message or change of validity since construction, and the same contents.
  void expect_unchanged() {
    const sa::TransferStats now = array.transfer_stats();
    EXPECT_EQ(now.h2d_count, before.h2d_count);
    EXPECT_EQ(now.d2h_count, before.d2h_count);
    EXPECT_EQ(now.d2d_count, before.d2d_count);
    EXPECT_EQ(now.sent_count, before.sent_count);
    EXPECT_EQ(now.received_count, before.received_count);
    EXPECT_FALSE(array.is_valid(Side::host));
    EXPECT_TRUE(array.is_valid(Side::device));
    EXPECT_EQ(std::vector<T>(std::as_const(array).begin(), std::as_const(array).end()), values);
  }
};

}  // namespace

TEST(Agreement, AllGatherWithAShortOutputOnOneRankThrowsOnEveryRank) {
  for (const dist::Transport transport : sa::test::test_transports()) {
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
    const std::size_t block = 2;
    const auto ranks = static_cast<std::size_t>(comm.size());
    DeviceValid<float> in(block);
    DeviceValid<float> out(comm.rank() == 0 ? 3 : block * ranks);
    {
      const std::string message =
          every_rank_throws([&] { dist::all_gather(in.array, out.array, comm); });
      expect_contains(message, "all_gather: rank 0: out has 3 elements, but " +
                                   std::to_string(ranks) + " ranks of 2 need " +
                                   std::to_string(2 * ranks));
    }
    in.expect_unchanged();
    out.expect_unchanged();
    expect_a_valid_call_works(comm);
  }
}

TEST(Agreement, AllGatherOfAnArrayIntoItselfOnOneRankThrowsOnEveryRank) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  const auto ranks = static_cast<std::size_t>(comm.size());
  DeviceValid<std::int32_t> in(4);
  DeviceValid<std::int32_t> out(4 * ranks);
  const std::string message = every_rank_throws(
      [&] { dist::all_gather(in.array, comm.rank() == 0 ? in.array : out.array, comm); });
  expect_contains(message, "all_gather: rank 0: in and out are the same array");
  in.expect_unchanged();
  out.expect_unchanged();
  expect_a_valid_call_works(comm);
}

TEST(Agreement, ReduceScatterWithAShortOutputOnOneRankThrowsOnEveryRank) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  const auto ranks = static_cast<std::size_t>(comm.size());
  const int last = comm.size() - 1;
  DeviceValid<double> in(5 * ranks);
  DeviceValid<double> out(comm.rank() == last ? 4 : 5);
  const std::string message =
      every_rank_throws([&] { dist::reduce_scatter(in.array, out.array, dist::Op::sum, comm); });
  expect_contains(message, "reduce_scatter: rank " + std::to_string(last) + ": in has " +
                               std::to_string(5 * ranks) + " elements, but " +
                               std::to_string(ranks) + " ranks of 4 need " +
                               std::to_string(4 * ranks));
  in.expect_unchanged();
  out.expect_unchanged();
  expect_a_valid_call_works(comm);
}

TEST(Agreement, ABadRootOnOneRankThrowsOnEveryRank) {
  for (const dist::Transport transport : sa::test::test_transports()) {
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
    DeviceValid<std::uint16_t> a(100);
    const std::string message =
        every_rank_throws([&] { dist::broadcast(a.array, comm.rank() == 0 ? 5 : 0, comm); });
    expect_contains(message, "broadcast: rank 0: root 5 is not a rank");
    a.expect_unchanged();
    expect_a_valid_call_works(comm);
  }
}

TEST(Agreement, EachRankNamingItselfTheRootThrowsOnEveryRank) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  DeviceValid<std::int64_t> a(64);
  const std::string message =
      every_rank_throws([&] { dist::broadcast(a.array, comm.rank(), comm); });
  expect_contains(message, "broadcast: rank 0 named root 0, rank 1 root 1");
  a.expect_unchanged();
  expect_a_valid_call_works(comm);
}

TEST(Agreement, DifferentOpsThrowOnEveryRankNamingBoth) {
  for (const dist::Transport transport : sa::test::test_transports()) {
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
    DeviceValid<std::int32_t> a(33);
    const dist::Op op = comm.rank() == 0 ? dist::Op::sum : dist::Op::max;
    const std::string message = every_rank_throws([&] { dist::all_reduce(a.array, op, comm); });
    expect_contains(message, "all_reduce: rank 0 passed sum, rank 1 max");
    a.expect_unchanged();
    expect_a_valid_call_works(comm);
  }
}

TEST(Agreement, DifferentElementTypesOfTheSameBytesThrowOnEveryRank) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  // float[2] against int[2]: 8 bytes each.
  DeviceValid<float> floats(2);
  DeviceValid<std::int32_t> ints(2);
  std::string message = every_rank_throws([&] {
    if (comm.rank() == 0) {
      dist::all_reduce(floats.array, dist::Op::sum, comm);
    } else {
      dist::all_reduce(ints.array, dist::Op::sum, comm);
    }
  });
  expect_contains(message, "all_reduce: the element types differ between ranks: rank 0 passed "
                           "float32 elements, rank 1 int32 elements");
  // double[2] against int[4]: 16 bytes each.
  DeviceValid<double> doubles(2);
  DeviceValid<std::int32_t> four(4);
  message = every_rank_throws([&] {
    if (comm.rank() == 0) {
      dist::broadcast(doubles.array, 0, comm);
    } else {
      dist::broadcast(four.array, 0, comm);
    }
  });
  expect_contains(message, "rank 0 passed float64 elements, rank 1 int32 elements");
  floats.expect_unchanged();
  ints.expect_unchanged();
  doubles.expect_unchanged();
  four.expect_unchanged();
  expect_a_valid_call_works(comm);
}

TEST(Agreement, DifferentCollectivesThrowOnEveryRankNamingBoth) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  DeviceValid<std::int64_t> a(8);
  const std::string message = every_rank_throws([&] {
    if (comm.rank() == 0) {
      dist::all_reduce(a.array, dist::Op::sum, comm);
    } else {
      dist::broadcast(a.array, 0, comm);
    }
  });
  expect_contains(message, "rank 0 called all_reduce, rank 1 broadcast");
  a.expect_unchanged();
  expect_a_valid_call_works(comm);
}

TEST(Agreement, AnUnevenBlockTooShortForItsHalosThrowsOnEveryRank) {
  for (const dist::Transport transport : sa::test::test_transports()) {
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
    const int last = comm.size() - 1;
    DeviceValid<float> a(comm.rank() == last ? 10 : 40);
    const std::string message = every_rank_throws(
        [&] { dist::exchange_halos(a.array, dist::Halo{.width = 4, .periodic = true}, comm); });
    expect_contains(message, "exchange_halos: rank " + std::to_string(last) +
                                 ": halos of 4 elements at both ends of an array of 10 elements");
    a.expect_unchanged();
    expect_a_valid_call_works(comm);
  }
}

TEST(Agreement, HalosThatDifferInWidthOrPeriodicityThrowOnEveryRank) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  DeviceValid<double> a(64);
  std::string message = every_rank_throws([&] {
    dist::exchange_halos(a.array, dist::Halo{.width = comm.rank() == 1 ? 3U : 2U}, comm);
  });
  expect_contains(message, "rank 0's are 16 bytes, rank 1's 24 bytes");
  message = every_rank_throws([&] {
    dist::exchange_halos(a.array, dist::Halo{.width = 2, .periodic = comm.rank() != 1}, comm);
  });
  expect_contains(message, "rank 0 passed periodic = true, rank 1 periodic = false");
  a.expect_unchanged();
  expect_a_valid_call_works(comm);
}

TEST(Agreement, AnUnknownOpChangesNothingOnAnyTransport) {
  for (const dist::Transport transport : sa::test::test_transports()) {
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
    DeviceValid<std::int32_t> on_device(1024);
    std::vector<std::int32_t> values = sa::test::random_values<std::int32_t>(1024);
    SmartArray<std::int32_t> on_host(values);  // valid on the host only
    {
      sa::ExpectTransfers nothing_either(on_host.counters(), {});
      const auto bad = static_cast<dist::Op>(42);
      std::string message =
          every_rank_throws([&] { dist::all_reduce(on_device.array, bad, comm); });
      expect_contains(message, "all_reduce: rank 0: dist::Op 42 is not an operation");
      message = every_rank_throws([&] { dist::all_reduce(on_host, bad, comm); });
      expect_contains(message, "dist::Op 42");
    }
    on_device.expect_unchanged();
    EXPECT_TRUE(on_host.is_valid(Side::host));
    EXPECT_FALSE(on_host.is_valid(Side::device));
    EXPECT_EQ(std::vector<std::int32_t>(on_host.begin(), on_host.end()), values);
    expect_a_valid_call_works(comm);
  }
}

TEST(Agreement, AMovedFromCommunicatorIsRefusedBeforeAnythingIsAcquired) {
  for (const bool check : {true, false}) {
    dist::Communicator comm(MPI_COMM_WORLD, {.check_sizes = check});
    const dist::Communicator moved = std::move(comm);
    DeviceValid<float> a(256);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from communicator is the test
    EXPECT_THROW(dist::send(a.array, (moved.rank() + 1) % moved.size(), comm), sa::logic_error);
    EXPECT_THROW(dist::all_reduce(a.array, dist::Op::sum, comm), sa::logic_error);
    EXPECT_THROW(dist::exchange_halos(a.array, dist::Halo{.width = 2}, comm), sa::logic_error);
    // NOLINTEND(bugprone-use-after-move)
    a.expect_unchanged();
    expect_a_valid_call_works(moved);
  }
}

TEST(Agreement, SizeChecksThatDifferBetweenRanksThrowFromTheConstructorOnEveryRank) {
#if SMARTARRAY_DEBUG_CHECKS
  GTEST_SKIP() << "debug builds always check sizes";
#else
  const std::string message = every_rank_throws(
      [&] { const dist::Communicator comm(MPI_COMM_WORLD, {.check_sizes = world_rank() == 0}); });
  expect_contains(message, "Communicator: rank 0 passed check_sizes = true, rank 1 false");
  const dist::Communicator comm(MPI_COMM_WORLD);
  expect_a_valid_call_works(comm);
#endif
}

TEST(Agreement, ARejectedConstructorLeavesTheCurrentDeviceAsItWas) {
  if (sa::backend() != sa::BackendKind::host || sa::device_count() < 2) {
    GTEST_SKIP() << "needs mpi_device (emulated on the host backend) and two devices";
  }
  const sa::Device before{1};
  sa::set_current_device(before);
  // Device 0, and transports that differ between ranks.
  const dist::Transport asked =
      world_rank() == 0 ? dist::Transport::mpi_host : dist::Transport::mpi_device;
  const std::string message = every_rank_throws([&] {
    const dist::Communicator comm(MPI_COMM_WORLD, {.device = sa::Device{0}, .transport = asked});
  });
  expect_contains(message, "different transports");
  EXPECT_EQ(sa::current_device(), before);
  sa::set_current_device(sa::Device{0});
}

TEST(Agreement, AnMpiTransferInsideACaptureIsRefusedOnEveryRankNamingTheCall) {
  for (const dist::Transport transport : sa::test::test_transports()) {
    if (transport == dist::Transport::nccl) continue;  // captured as real work
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
    DeviceValid<double> a(48);
    sa::Stream stream;
    std::string message;
    {
      message = every_rank_throws([&] {
        (void)sa::capture(stream, [&](sa::StreamRef s) {
          dist::exchange_halos(a.array, dist::Halo{.width = 4, .periodic = true}, comm, s);
        });
      });
      expect_contains(message, std::string("dist::exchange_halos over ") +
                                   dist::to_string(transport) + " inside sa::capture (opened at ");
      expect_contains(message, "test_agreement.cpp");
      message = every_rank_throws([&] {
        (void)sa::capture(
            stream, [&](sa::StreamRef s) { dist::all_reduce(a.array, dist::Op::max, comm, s); });
      });
      expect_contains(message, "dist::all_reduce over");
    }
    a.expect_unchanged();
    expect_a_valid_call_works(comm);
  }
}
