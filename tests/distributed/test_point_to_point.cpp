// dist::send and dist::recv between ranks: values that depend on the sending rank and position,
// exact counts of copies and messages on each side for host- and device-valid data, tags, and bad
// input that throws before any MPI call or drops a message of the wrong size.
#include "support/test_support.hpp"
#include "distributed_support.hpp"

#include <smartarray/distributed.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>

#include <gtest/gtest.h>
#include <mpi.h>

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
/// Element `i` of rank `rank`'s array.
std::int32_t value(int rank, std::size_t i, std::uint32_t salt) {
  return static_cast<std::int32_t>(salt + static_cast<std::uint32_t>(rank + 1) * 2654435761U +
                                   static_cast<std::uint32_t>(i) * 40503U);
}
std::vector<std::int32_t> values_of(int rank, std::size_t n, std::uint32_t salt) {
  std::vector<std::int32_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = value(rank, i, salt);
  return out;
}
/// A host-valid array of `n` poisoned elements.
SmartArray<std::int32_t> poisoned(std::size_t n) {
  std::vector<std::int32_t> data(n);
  sa::test::poison(data.data(), n);
  return SmartArray<std::int32_t>(data);
}

constexpr std::size_t array_size = 1037;
constexpr std::size_t send_first = 100;  // the sent slice: [100, 600)
constexpr std::size_t count = 500;
constexpr std::size_t recv_first = 321;  // the received slice: [321, 821)
constexpr std::uint64_t slice_bytes = count * sizeof(std::int32_t);

/// Each rank sends its slice to the next rank and receives the previous rank's (a ring; even ranks
/// send first, odd ranks receive first), checking the counts of each array.
void ring(const dist::Communicator& comm, SmartArray<std::int32_t>& mine,
          SmartArray<std::int32_t>& into, sa::Transfers sent, sa::Transfers received) {
  const int next = (comm.rank() + 1) % comm.size();
  const int previous = (comm.rank() + comm.size() - 1) % comm.size();
  sa::ExpectTransfers on_mine(mine.counters(), sent);
  sa::ExpectTransfers on_into(into.counters(), received);
  const auto do_send = [&] { dist::send(mine.slice(send_first, count), next, comm); };
  const auto do_recv = [&] { dist::recv(into.slice(recv_first, count), previous, comm); };
  if (comm.rank() % 2 == 0) {
    do_send();
    do_recv();
  } else {
    do_recv();
    do_send();
  }
}

/// `into` holds the previous rank's sent slice at recv_first and its poison elsewhere.
void expect_received(const dist::Communicator& comm, const SmartArray<std::int32_t>& into,
                     std::uint32_t salt) {
  const int previous = (comm.rank() + comm.size() - 1) % comm.size();
  std::vector<std::int32_t> poison(array_size);
  sa::test::poison(poison.data(), array_size);
  const std::span<const std::int32_t> host = into.host_view();
  for (std::size_t i = 0; i < array_size; ++i) {
    const bool received = i >= recv_first && i < recv_first + count;
    const std::int32_t expected =
        received ? value(previous, send_first + (i - recv_first), salt) : poison[i];
    ASSERT_EQ(host[i], expected) << "element " << i << " on rank " << comm.rank();
  }
}
/// Rank 0's 128 values to send, or rank 1's poisoned array to receive them.
SmartArray<std::int32_t> pair_data(const dist::Communicator& comm, std::uint32_t salt) {
  return comm.rank() == 0 ? SmartArray<std::int32_t>(values_of(0, 128, salt)) : poisoned(128);
}
/// The message of the logic_error that `call` throws, or "no error".
template <typename Call>
std::string message_of(const Call& call) {
  try {
    call();
  } catch (const sa::logic_error& error) {
    return error.what();
  }
  return "no error";
}
}  // namespace

TEST(PointToPoint, HostValidSlicesOverHostMpiMoveNoCopy) {
  const dist::Communicator comm(MPI_COMM_WORLD, {.transport = dist::Transport::mpi_host});
  const std::uint32_t salt = shared_salt();
  SmartArray<std::int32_t> mine(values_of(comm.rank(), array_size, salt));
  SmartArray<std::int32_t> into = poisoned(array_size);
  ring(comm, mine, into, {.sent = 1, .sent_bytes = slice_bytes},
       {.received = 1, .received_bytes = slice_bytes});
  EXPECT_TRUE(into.is_valid(Side::host));
  expect_received(comm, into, salt);
}

TEST(PointToPoint, DeviceValidSlicesOverHostMpiCopyExactlyTheSliceDown) {
  const dist::Communicator comm(MPI_COMM_WORLD, {.transport = dist::Transport::mpi_host});
  const std::uint32_t salt = shared_salt();
  SmartArray<std::int32_t> mine(values_of(comm.rank(), array_size, salt));
  SmartArray<std::int32_t> into = poisoned(array_size);
  (void)mine.device_view(Access::read_write);  // valid on the device only
  (void)into.device_view(Access::read_write);
  ring(comm, mine, into, {.d2h = 1, .d2h_bytes = slice_bytes, .sent = 1, .sent_bytes = slice_bytes},
       {.received = 1, .received_bytes = slice_bytes});
  // The received range is valid on the host only; the rest of `into` on the device only.
  EXPECT_FALSE(into.is_valid(Side::device));
  EXPECT_FALSE(into.is_valid(Side::host));
  {
    sa::ExpectTransfers none(into.counters(), {});
    const std::span<const std::int32_t> range =
        std::as_const(into).slice(recv_first, count).host_view();
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(range[i], value((comm.rank() + comm.size() - 1) % comm.size(), send_first + i,
                                salt));
    }
  }
  sa::ExpectTransfers rest(into.counters(),
                           {.d2h = 2, .d2h_bytes = (array_size - count) * sizeof(std::int32_t)});
  expect_received(comm, into, salt);
}

TEST(PointToPoint, TheDeviceTransportsReadAndWriteDeviceMemory) {
  for (const dist::Transport transport : sa::test::device_transports()) {
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
    const std::uint32_t salt = shared_salt();
    SmartArray<std::int32_t> mine(values_of(comm.rank(), array_size, salt));
    SmartArray<std::int32_t> into = poisoned(array_size);
    (void)into.device_view(Access::read_write);
    const std::uint64_t waits = sa::global_transfer_stats().wait_count;
    // Host-valid data goes up once, exactly the slice; the receiver's device copy takes the
    // message.
    ring(comm, mine, into,
         {.h2d = 1, .h2d_bytes = slice_bytes, .sent = 1, .sent_bytes = slice_bytes},
         {.received = 1, .received_bytes = slice_bytes});
    if (transport == dist::Transport::nccl) {  // enqueued on the stream: no host wait
      EXPECT_EQ(sa::global_transfer_stats().wait_count, waits);
    }
    EXPECT_TRUE(into.is_valid(Side::device));
    sa::ExpectTransfers down(into.counters(),
                             {.d2h = 1, .d2h_bytes = array_size * sizeof(std::int32_t)});
    expect_received(comm, into, salt);
  }
}

TEST(PointToPoint, OverMpiTagsMatchMessagesOutOfOrder) {
  const dist::Communicator comm(MPI_COMM_WORLD, {.transport = dist::Transport::mpi_host});
  const std::uint32_t salt = shared_salt();
  if (comm.rank() > 1) return;
  SmartArray<std::int32_t> data = pair_data(comm, salt);
  if (comm.rank() == 0) {
    dist::send(data.slice(0, 64), 1, 5, comm);
    dist::send(data.slice(64, 64), 1, 9, comm);
  } else {
    dist::recv(data.slice(64, 64), 0, 9, comm);
    dist::recv(data.slice(0, 64), 0, 5, comm);
    EXPECT_EQ(std::vector<std::int32_t>(data.begin(), data.end()), values_of(0, 128, salt));
  }
}

TEST(PointToPoint, BadRanksAndTagsThrowBeforeAnyMpiCall) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  SmartArray<std::int32_t> data(sa::test::random_values<std::int32_t>(16));
  sa::ExpectTransfers nothing({});
  const std::string size = std::to_string(comm.size());
  const std::string beyond = message_of([&] { dist::send(data, comm.size(), comm); });
  EXPECT_NE(beyond.find("rank " + size), std::string::npos) << beyond;
  EXPECT_NE(beyond.find(size + " processes"), std::string::npos) << beyond;
  const std::string self = message_of([&] { dist::recv(data, comm.rank(), comm); });
  EXPECT_NE(self.find("itself"), std::string::npos) << self;
  const std::string tag =
      message_of([&] { dist::send(data.slice(0, 4), (comm.rank() + 1) % comm.size(), -1, comm); });
  EXPECT_NE(tag.find("tag -1"), std::string::npos) << tag;
  const std::string negative = message_of([&] { dist::recv(data.slice(0, 4), -2, comm); });
  EXPECT_NE(negative.find("rank -2"), std::string::npos) << negative;
}

TEST(PointToPoint, OverNcclMessagesMatchInOrderAndAnotherTagIsRefusedOnBothSides) {
  const std::vector<dist::Transport> transports = sa::test::test_transports();
  if (transports.back() != dist::Transport::nccl) GTEST_SKIP() << "no nccl transport here";
  const dist::Communicator comm(MPI_COMM_WORLD, {.transport = dist::Transport::nccl});
  const std::uint32_t salt = shared_salt();
  if (comm.rank() > 1) return;
  SmartArray<std::int32_t> data = pair_data(comm, salt);
  if (comm.rank() == 0) {
    dist::send(data.slice(0, 64), 1, 5, comm);
    dist::send(data.slice(64, 64), 1, 9, comm);
    const std::string message = message_of([&] { dist::send(data.slice(0, 8), 1, 3, comm); });
    EXPECT_NE(message.find("to rank 1 was refused"), std::string::npos) << message;
    EXPECT_NE(message.find("expects 32 bytes (tag 4)"), std::string::npos) << message;
  } else {
    dist::recv(data.slice(0, 64), 0, 5, comm);
    dist::recv(data.slice(64, 64), 0, 9, comm);
    EXPECT_EQ(std::vector<std::int32_t>(data.begin(), data.end()), values_of(0, 128, salt));
    const std::vector<std::int32_t> before(data.begin(), data.end());
    const std::string message = message_of([&] { dist::recv(data.slice(0, 8), 0, 4, comm); });
    EXPECT_NE(message.find("refused rank 0's next message, of 32 bytes (tag 3)"),
              std::string::npos)
        << message;
    EXPECT_EQ(std::vector<std::int32_t>(data.begin(), data.end()), before);
  }
}

TEST(PointToPoint, AMessageOfAnotherSizeIsRefusedAndTheArrayKeepsItsContents) {
  for (const dist::Transport transport : sa::test::test_transports()) {
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
    const std::uint32_t salt = shared_salt();
    if (comm.rank() > 1) continue;
    const bool nccl = transport == dist::Transport::nccl;
    if (comm.rank() == 0) {
      SmartArray<std::int32_t> data(values_of(0, 100, salt));
      if (!nccl) {  // MPI sends; the receiver drops the message
        dist::send(data, 1, comm);
        continue;
      }
      // NCCL's handshake refuses the message before anything is sent, on both sides.
      sa::ExpectTransfers nothing(data.counters(), {});
      EXPECT_THROW(dist::send(data, 1, comm), sa::logic_error);
      continue;
    }
    const std::vector<std::int32_t> before = values_of(1, 100, salt);
    SmartArray<std::int32_t> data(before);
    (void)data.device_view(Access::read_write);  // valid on the device only
    {
      sa::ExpectTransfers nothing(data.counters(), {});
      try {
        dist::recv(data.slice(0, 99), 0, comm);
        FAIL() << "a message of 400 bytes into 99 elements";
      } catch (const sa::logic_error& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find(nccl ? "of 400 bytes (tag 0)" : "400 bytes from rank 0"),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find("99 elements (396 bytes)"), std::string::npos) << message;
      }
      EXPECT_TRUE(data.is_valid(Side::device));
      EXPECT_FALSE(data.is_valid(Side::host));
    }
    EXPECT_EQ(std::vector<std::int32_t>(data.begin(), data.end()), before) << to_string(transport);
  }
}
