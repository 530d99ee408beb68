// dist::exchange_halos: each rank's halos receive its neighbours' boundary elements (values that
// depend on the rank and position, so that a swapped direction or an off-by-one is caught), with
// exact counts for host- and device-valid data, periodic or not, and bad widths.
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
double value(int rank, std::size_t i, std::uint32_t salt) {
  return static_cast<double>(salt % 100003) + 1000.0 * (rank + 1) + 0.25 * static_cast<double>(i);
}
/// Rank `rank`'s array: its own values in the interior, poison in the halos.
std::vector<double> block(int rank, std::size_t n, std::size_t w, std::uint32_t salt) {
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = value(rank, i, salt);
  sa::test::poison(out.data(), w);
  sa::test::poison(out.data() + n - w, w);
  return out;
}

/// After the exchange: the interior unchanged, each halo holding its neighbour's boundary, the
/// halos without a neighbour still poisoned.
void expect_halos(const std::vector<double>& got, int rank, int size, std::size_t n, std::size_t w,
                  bool periodic, std::uint32_t salt, const char* transport) {
  const std::vector<double> before = block(rank, n, w, salt);
  const int left = rank > 0 ? rank - 1 : (periodic ? size - 1 : -1);
  const int right = rank < size - 1 ? rank + 1 : (periodic ? 0 : -1);
  for (std::size_t i = 0; i < n; ++i) {
    double expected = before[i];
    if (i < w && left >= 0) expected = value(left, n - 2 * w + i, salt);  // its last interior
    if (i >= n - w && right >= 0) expected = value(right, w + (i - (n - w)), salt);  // its first
    ASSERT_EQ(got[i], expected) << "element " << i << " of rank " << rank << ", " << transport;
  }
}

void run(dist::Transport transport, bool periodic, bool device_valid) {
  const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
  const std::uint32_t salt = shared_salt();
  const std::size_t w = 3 * 17;  // three rows of 17
  const std::size_t n = 2 * w + 40 * 17;
  SmartArray<double> a(block(comm.rank(), n, w, salt));
  if (device_valid) (void)a.device_view(Access::read_write);
  const int neighbours = (comm.rank() > 0 || periodic ? 1 : 0) +
                         (comm.rank() < comm.size() - 1 || periodic ? 1 : 0);
  const std::uint64_t halo_bytes = w * sizeof(double);
  sa::Transfers expected{.sent = static_cast<std::uint64_t>(neighbours),
                         .received = static_cast<std::uint64_t>(neighbours),
                         .sent_bytes = neighbours * halo_bytes,
                         .received_bytes = neighbours * halo_bytes};
  const bool host = transport == dist::Transport::mpi_host;
  if (device_valid && host) {  // each boundary range sent comes down once
    expected.d2h = static_cast<std::uint64_t>(neighbours);
    expected.d2h_bytes = neighbours * halo_bytes;
  }
  if (!device_valid && !host) {  // each boundary range sent goes up once
    expected.h2d = static_cast<std::uint64_t>(neighbours);
    expected.h2d_bytes = neighbours * halo_bytes;
  }
  {
    const std::uint64_t waits = sa::global_transfer_stats().wait_count;
    sa::ExpectTransfers exact(a.counters(), expected);
    dist::exchange_halos(a, dist::Halo{.width = w, .periodic = periodic}, comm);
    // NCCL's exchange is enqueued on the stream: the host waits for nothing.
    if (transport == dist::Transport::nccl) {
      EXPECT_EQ(sa::global_transfer_stats().wait_count, waits);
    }
  }
  expect_halos(std::vector<double>(std::as_const(a).begin(), std::as_const(a).end()), comm.rank(),
               comm.size(), n, w, periodic, salt, dist::to_string(transport));
}
}  // namespace

// Each over every transport that runs here: mpi_host copies the boundaries of device-valid data
// down, the device transports (nccl, mpi_device) copy the boundaries of host-valid data up, and
// nothing else moves.
TEST(Halo, HostValid) {
  for (const dist::Transport transport : sa::test::test_transports()) run(transport, false, false);
}
TEST(Halo, HostValidPeriodic) {
  for (const dist::Transport transport : sa::test::test_transports()) run(transport, true, false);
}
TEST(Halo, DeviceValid) {
  for (const dist::Transport transport : sa::test::test_transports()) run(transport, false, true);
}
TEST(Halo, DeviceValidPeriodic) {
  for (const dist::Transport transport : sa::test::test_transports()) run(transport, true, true);
}

TEST(Halo, AHaloWiderThanTheInteriorThrowsBeforeAnyMessage) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  SmartArray<float> a(sa::test::random_values<float>(20));
  const std::vector<float> before(a.begin(), a.end());
  sa::ExpectTransfers nothing(a.counters(), {});
  try {
    dist::exchange_halos(a, dist::Halo{.width = 7}, comm);
    FAIL() << "halos of 7 around an interior of 6";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("halos of 7 elements"), std::string::npos) << message;
    EXPECT_NE(message.find("interior between them (6 elements)"), std::string::npos) << message;
  }
  EXPECT_EQ(std::vector<float>(a.begin(), a.end()), before);
}

TEST(Halo, RanksWithDifferentHalosAllThrowNamingThem) {
  const dist::Communicator comm(MPI_COMM_WORLD);
  const std::size_t w = comm.rank() == comm.size() - 1 ? 5 : 4;
  SmartArray<float> a(sa::test::random_values<float>(60));
  sa::ExpectTransfers nothing(a.counters(), {});
  try {
    dist::exchange_halos(a, dist::Halo{.width = w}, comm);
    FAIL() << "the last rank's halos are wider";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("rank " + std::to_string(comm.size() - 1) + "'s 20 bytes"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("rank 0's are 16 bytes"), std::string::npos) << message;
  }
}
