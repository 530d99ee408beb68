// The distributed property test: every rank draws the same random sequence of operations (the seed
// comes from rank 0) and applies it to its own array, while each rank keeps a model of every
// rank's array in plain vectors. Operations: host and device writes of ranges, reads of ranges,
// ring sends of slices, halo exchanges (periodic or not), all_reduce (min, max, sum), broadcasts,
// and misuse: one rank, drawn alike by every rank, passes a bad argument or one that differs from
// the others' (a count, an op, a root, an element type, a halo width or periodicity), and every
// rank must throw and change nothing. After each operation that touches this rank's array, the
// array's host copy must equal the model's. SMARTARRAY_DIST_PROPERTY_OPS and SMARTARRAY_DIST_PROPERTY_SEED set the run.
#include "support/test_support.hpp"
#include "distributed_support.hpp"

#include <smartarray/distributed.hpp>
#include <smartarray/distributed/detail/mpi_check.hpp>

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace sa = smartarray;
namespace dist = smartarray::dist;
using sa::Access;
using sa::SmartArray;
using Model = std::vector<std::vector<std::uint64_t>>;  // every rank's array

namespace {
std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::strtoull(value, nullptr, 10) : fallback;
}

std::uint64_t shared_seed() {
  std::uint64_t seed =
      env_or("SMARTARRAY_DIST_PROPERTY_SEED", sa::test::random_value<std::uint64_t>());
  SMARTARRAY_MPI_CHECK(MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));
  return seed;
}

/// The value a write of operation `op` puts at element `i` of rank `rank`.
std::uint64_t written(std::uint64_t op, int rank, std::size_t i) {
  return (op + 1) * 0x9E3779B97F4A7C15ULL ^ (static_cast<std::uint64_t>(rank) << 40) ^ (i * 977);
}

enum class Kind { host_write, device_write, read, ring, halo, all_reduce, broadcast, misuse };

/// The misuses: what the one rank drawn passes unlike the others.
enum class Misuse { count, op, root, type, width, periodic, bad_root };

/// Runs `operations` operations over `transport`; returns the number of divergences seen here.
std::uint64_t run(dist::Transport transport, std::uint64_t operations, std::uint64_t seed) {
  const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
  const int ranks = comm.size();
  const int me = comm.rank();
  std::mt19937_64 rng(seed);
  const std::size_t w = 1 + rng() % 8;
  const std::size_t n = 2 * w + w + rng() % 200;
  Model model(static_cast<std::size_t>(ranks), std::vector<std::uint64_t>(n));
  for (int r = 0; r < ranks; ++r) {
    for (std::size_t i = 0; i < n; ++i) model[static_cast<std::size_t>(r)][i] = written(0, r, i);
  }
  SmartArray<std::uint64_t> a(model[static_cast<std::size_t>(me)]);
  sa::Stream stream;
  std::uint64_t divergences = 0;
  const auto range = [&](std::size_t& first, std::size_t& count) {
    first = rng() % n;
    count = 1 + rng() % (n - first);
  };
  for (std::uint64_t op = 1; op <= operations; ++op) {
    const auto kind = static_cast<Kind>(rng() % 8);
    std::size_t first = 0;
    std::size_t count = 0;
    switch (kind) {
      case Kind::host_write: {
        range(first, count);
        const std::span<std::uint64_t> host =
            a.slice(first, count).host_view(Access::discard, stream);
        for (int r = 0; r < ranks; ++r) {
          for (std::size_t i = first; i < first + count; ++i) {
            model[static_cast<std::size_t>(r)][i] = written(op, r, i);
          }
        }
        for (std::size_t i = 0; i < count; ++i) host[i] = written(op, me, first + i);
        break;
      }
      case Kind::device_write: {
        range(first, count);
        sa::fill(a.slice(first, count), written(op, me, 0), stream);
        for (int r = 0; r < ranks; ++r) {
          auto& values = model[static_cast<std::size_t>(r)];
          std::fill(values.begin() + static_cast<std::ptrdiff_t>(first),
                    values.begin() + static_cast<std::ptrdiff_t>(first + count),
                    written(op, r, 0));
        }
        break;
      }
      case Kind::read: {
        range(first, count);
        const std::span<const std::uint64_t> host =
            std::as_const(a).slice(first, count).host_view(stream);
        for (std::size_t i = 0; i < count; ++i) {
          if (host[i] != model[static_cast<std::size_t>(me)][first + i]) ++divergences;
        }
        break;
      }
      case Kind::ring: {
        if (ranks < 2) break;
        // Two ranges of `count` that do not overlap: `from` in the first third, `into` after it.
        count = 1 + rng() % (n / 3);
        const std::size_t from = rng() % (n / 3 - count + 1);
        const std::size_t into = from + count + rng() % (n - from - 2 * count + 1);
        const Model before = model;
        for (int r = 0; r < ranks; ++r) {
          const auto& source = before[static_cast<std::size_t>((r + ranks - 1) % ranks)];
          auto& target = model[static_cast<std::size_t>(r)];
          std::copy_n(source.begin() + static_cast<std::ptrdiff_t>(from), count,
                      target.begin() + static_cast<std::ptrdiff_t>(into));
        }
        const int next = (me + 1) % ranks;
        const int previous = (me + ranks - 1) % ranks;
        if (me % 2 == 0) {
          dist::send(a.slice(from, count), next, comm, stream);
          dist::recv(a.slice(into, count), previous, comm, stream);
        } else {
          // Receive into a copy first: this rank's own slice must leave before it is overwritten.
          SmartArray<std::uint64_t> incoming(count, sa::no_init);
          dist::recv(incoming.slice(0, count), previous, comm, stream);
          dist::send(a.slice(from, count), next, comm, stream);
          sa::copy(a.slice(into, count), incoming.slice(0, count), stream);
        }
        break;
      }
      case Kind::halo: {
        const bool periodic = rng() % 2 == 0;
        const Model before = model;
        for (int r = 0; r < ranks; ++r) {
          auto& values = model[static_cast<std::size_t>(r)];
          const int left = r > 0 ? r - 1 : (periodic ? ranks - 1 : -1);
          const int right = r < ranks - 1 ? r + 1 : (periodic ? 0 : -1);
          for (std::size_t i = 0; i < w; ++i) {
            if (left >= 0) values[i] = before[static_cast<std::size_t>(left)][n - 2 * w + i];
            if (right >= 0) values[n - w + i] = before[static_cast<std::size_t>(right)][w + i];
          }
        }
        dist::exchange_halos(a, dist::Halo{.width = w, .periodic = periodic}, comm, stream);
        break;
      }
      case Kind::all_reduce: {
        const dist::Op reduction = rng() % 3 == 0   ? dist::Op::sum
                                   : rng() % 2 == 0 ? dist::Op::min
                                                    : dist::Op::max;
        std::vector<std::uint64_t> result = model[0];
        for (int r = 1; r < ranks; ++r) {
          for (std::size_t i = 0; i < n; ++i) {
            const std::uint64_t x = model[static_cast<std::size_t>(r)][i];
            result[i] = reduction == dist::Op::sum   ? result[i] + x
                        : reduction == dist::Op::min ? std::min(result[i], x)
                                                     : std::max(result[i], x);
          }
        }
        for (auto& values : model) values = result;
        dist::all_reduce(a, reduction, comm, stream);
        break;
      }
      case Kind::broadcast: {
        const int root = static_cast<int>(rng() % static_cast<std::uint64_t>(ranks));
        const std::vector<std::uint64_t> values = model[static_cast<std::size_t>(root)];
        for (auto& rank_values : model) rank_values = values;
        dist::broadcast(a, root, comm, stream);
        break;
      }
      case Kind::misuse: {
        if (ranks < 2) break;
        const bool odd = static_cast<int>(rng() % static_cast<std::uint64_t>(ranks)) == me;
        const auto misuse = static_cast<Misuse>(rng() % 7);
        const int root = static_cast<int>(rng() % static_cast<std::uint64_t>(ranks));
        bool threw = false;
        try {
          switch (misuse) {
            case Misuse::count: {
              SmartArray<std::uint64_t> longer(n + 1, std::uint64_t{op});
              dist::all_reduce(odd ? longer : a, dist::Op::sum, comm, stream);
              break;
            }
            case Misuse::op:
              dist::all_reduce(a, odd ? dist::Op::max : dist::Op::sum, comm, stream);
              break;
            case Misuse::root:
              dist::broadcast(a, odd ? (root + 1) % ranks : root, comm, stream);
              break;
            case Misuse::type:
              if (odd) {
                SmartArray<double> same_bytes(n, 1.5);
                dist::all_reduce(same_bytes, dist::Op::sum, comm, stream);
              } else {
                dist::all_reduce(a, dist::Op::sum, comm, stream);
              }
              break;
            case Misuse::width:
              dist::exchange_halos(a, dist::Halo{.width = odd ? w + 1 : w}, comm, stream);
              break;
            case Misuse::periodic:
              dist::exchange_halos(a, dist::Halo{.width = w, .periodic = odd}, comm, stream);
              break;
            case Misuse::bad_root:
              dist::broadcast(a, odd ? ranks : root, comm, stream);
              break;
          }
        } catch (const sa::logic_error&) {
          threw = true;
        }
        if (!threw) {
          std::cout << "rank " << me << ": misuse " << static_cast<int>(misuse)
                    << " did not throw at operation " << op << " (seed " << seed << ")\n";
          ++divergences;
        }
        break;
      }
    }
    if (kind != Kind::read && kind != Kind::host_write && kind != Kind::device_write) {
      const std::vector<std::uint64_t> got(std::as_const(a).begin(), std::as_const(a).end());
      if (got != model[static_cast<std::size_t>(me)]) {
        if (divergences == 0) {
          std::cout << "rank " << me << ": divergence at operation " << op << " (kind "
                    << static_cast<int>(kind) << ", seed " << seed << ")\n";
        }
        ++divergences;
        a = SmartArray<std::uint64_t>(model[static_cast<std::size_t>(me)]);
      }
    }
  }
  const std::vector<std::uint64_t> got(std::as_const(a).begin(), std::as_const(a).end());
  if (got != model[static_cast<std::size_t>(me)]) ++divergences;
  return divergences;
}
}  // namespace

TEST(DistributedProperty, RandomSequencesMatchTheModelOnEveryRank) {
  const std::uint64_t operations = env_or("SMARTARRAY_DIST_PROPERTY_OPS", 3000);
  for (const dist::Transport transport : sa::test::test_transports()) {
    const std::uint64_t seed = shared_seed();
    const std::uint64_t mine = run(transport, operations, seed);
    std::uint64_t total = 0;
    SMARTARRAY_MPI_CHECK(
        MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    int rank = 0;
    SMARTARRAY_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    if (rank == 0) {
      std::cout << "distributed property test: " << dist::to_string(transport) << ": "
                << operations << " operations on each rank, " << total
                << " divergences (seed " << seed << ")\n";
    }
    EXPECT_EQ(total, 0U) << "seed " << seed;
  }
}
