// The distributed layer against hand-written MPI + NCCL code, under mpirun:
//   mpirun -np 4 bench_distributed [--nx N] [--ny N] [--steps N] [--reps N]
//                                  [--transport nccl|mpi_host] [google benchmark flags]
// The transport: NCCL where every rank has a GPU of its own, else (more ranks than GPUs: NCCL runs
// one rank per GPU) MPI from host memory; --transport picks one.
// - jacobi: a 2-D Jacobi solver on an nx x ny grid decomposed by rows, with a halo exchange and
//   the residual's all-reduce (read by the host) every step, as in NVIDIA's multi-GPU programming
//   models. Four contenders run the same kernel (jacobi_hand.cuh, jacobi_smart.cuh): hand-written
//   with overlap (nccl_overlap; over MPI, mpi_overlap with host copies), hand-written on one stream,
//   smartarray with overlap (the interior queued first; the boundary rows and their exchange on a
//   high-priority stream beside it), smartarray on one stream. Rank 0 prints each one's median
//   time per step, smartarray's time with overlap against the hand-written one's, and each one's
//   gain from overlap (its one-stream time over its overlap time, less 1) with their ratio. The
//   default grid is 16384 x 16384 over NCCL; over MPI it is 65536 x 1024, wide rows and few of
//   them per rank, so that the halo's trip through host memory is a noticeable share of a step.
// - all_reduce (NCCL, 2 ranks or more): dist::all_reduce of a device-valid array against a bare
//   ncclAllReduce, at 4 MiB, 64 MiB and 1 GiB; bus_GBps is NCCL's bus bandwidth,
//   2 (n - 1) / n bytes per second.
// - halo (NCCL, 2 ranks or more): dist::exchange_halos of one row against grouped
//   ncclSend/ncclRecv of the same rows, with the communicator's size check (the default) and
//   without it.
// - agreement: the agreement that opens every collective call with the size check on (one
//   MPI_Allreduce of the checks' outcome and the terms that must match) against the size
//   handshake it replaced (an MPI_Allgather of one size), per call; it runs over any transport.
// Every contender runs the same fixed iterations on every rank, so that the ranks stay in step;
// repetitions alternate the contenders (ABAB), and rank 0 prints the medians at the end. Only
// rank 0 reports.
#include "bench_main.hpp"
#include "distributed_report.cuh"
#include "distributed_support.cuh"
#include "jacobi_hand.cuh"
#include "jacobi_smart.cuh"

#include <smartarray/distributed.hpp>
#include <smartarray/smartarray.hpp>

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Options {
  std::size_t nx = 0;  // 0: the transport's default
  std::size_t ny = 0;
  int steps = 0;  // Jacobi steps per benchmark iteration; 0: the transport's default
  int reps = 5;   // repetitions of each contender, alternated
  std::optional<dist::Transport> transport;
};
Options options;
int rank = 0;
int ranks = 1;

/// The NCCL communicator of the hand-written contenders: its own, made as NCCL's examples do, at
/// their first call.
ncclComm_t hand_nccl = nullptr;
ncclComm_t hand_comm() {
  if (hand_nccl == nullptr) {
    ncclUniqueId id{};
    if (rank == 0) CHECK(ncclGetUniqueId(&id));
    CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
    CHECK(ncclCommInitRank(&hand_nccl, ranks, id, rank));
  }
  return hand_nccl;
}

// --- jacobi -------------------------------------------------------------------------------------

/// This rank's block of the grid.
Block jacobi_block() {
  return {options.nx, options.ny, static_cast<int>(options.ny / static_cast<std::size_t>(ranks)),
          rank, ranks};
}

template <typename Solver, typename... Args>
void run_jacobi(benchmark::State& state, Args&&... args) {
  Solver solver(std::forward<Args>(args)..., jacobi_block());
  float residual = solver.step();  // warm: connections, the pools
  for (auto _ : state) {
    for (int s = 0; s < options.steps; ++s) residual = solver.step();
  }
  state.SetItemsProcessed(state.iterations() * options.steps *
                          static_cast<std::int64_t>(options.nx * options.ny));
  state.counters["residual"] = residual;
  state.counters["ranks"] = ranks;
}

// --- all_reduce and halo ------------------------------------------------------------------------

constexpr int collective_ops = 10;  // collective calls per benchmark iteration

void bus_bandwidth(benchmark::State& state, std::size_t bytes, int ops) {
  const double factor = ranks > 1 ? 2.0 * (ranks - 1) / ranks : 1.0;
  state.counters["bus_GBps"] = benchmark::Counter(
      factor * static_cast<double>(bytes) * ops * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}

void smart_all_reduce(benchmark::State& state, const dist::Communicator& comm, std::size_t bytes) {
  sa::SmartArray<float> a(bytes / sizeof(float), 1.0F);
  sa::Stream stream;
  (void)a.device_view(sa::Access::read_write, stream);  // device-valid
  stream.synchronize();
  const sa::TransferStats before = sa::global_transfer_stats();
  for (auto _ : state) {
    for (int i = 0; i < collective_ops; ++i) dist::all_reduce(a, dist::Op::max, comm, stream);
    stream.synchronize();
  }
  const sa::TransferStats after = sa::global_transfer_stats();
  state.counters["host_copies"] = static_cast<double>(after.h2d_count + after.d2h_count -
                                                      before.h2d_count - before.d2h_count);
  bus_bandwidth(state, bytes, collective_ops);
}

void hand_all_reduce(benchmark::State& state, std::size_t bytes) {
  float* data = nullptr;
  cudaStream_t stream = nullptr;
  CHECK(cudaMalloc(&data, bytes));
  CHECK(cudaMemset(data, 0, bytes));
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (auto _ : state) {
    for (int i = 0; i < collective_ops; ++i) {
      CHECK(ncclAllReduce(data, data, bytes / sizeof(float), ncclFloat, ncclMax, hand_comm(),
                          stream));
    }
    CHECK(cudaStreamSynchronize(stream));
  }
  bus_bandwidth(state, bytes, collective_ops);
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(data));
}

constexpr int halo_exchanges = 100;  // exchanges per benchmark iteration

/// A block of 8 rows of nx columns on each rank.
Block halo_block() {
  constexpr int rows = 8;
  return {options.nx, static_cast<std::size_t>(rows * ranks), rows, rank, ranks};
}

void smart_halo(benchmark::State& state, const dist::Communicator& comm) {
  const std::size_t nx = options.nx;
  sa::SmartArray<float> a(initial_block(halo_block()));
  sa::Stream stream;
  (void)a.device_view(sa::Access::read_write, stream);
  stream.synchronize();
  const sa::TransferStats before = sa::global_transfer_stats();
  for (auto _ : state) {
    for (int i = 0; i < halo_exchanges; ++i) {
      dist::exchange_halos(a, dist::Halo{.width = nx}, comm, stream);
    }
    stream.synchronize();
  }
  const sa::TransferStats after = sa::global_transfer_stats();
  state.counters["host_copies"] = static_cast<double>(after.h2d_count + after.d2h_count -
                                                      before.h2d_count - before.d2h_count);
}

void hand_halo(benchmark::State& state) {
  const Block block = halo_block();
  const std::size_t nx = block.nx;
  const int rows = block.rows;
  const int up = block.up();
  const int down = block.down();
  float* a = nullptr;
  cudaStream_t stream = nullptr;
  CHECK(cudaMalloc(&a, block.size() * sizeof(float)));
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<float> start = initial_block(block);
  CHECK(cudaMemcpy(a, start.data(), start.size() * sizeof(float), cudaMemcpyHostToDevice));
  // Made before the first group: a communicator initialised inside ncclGroupStart is not ready
  // until ncclGroupEnd, so NCCL may reject the group's sends and receives on it.
  const ncclComm_t comm = hand_comm();
  for (auto _ : state) {
    for (int i = 0; i < halo_exchanges; ++i) {
      CHECK(ncclGroupStart());
      if (up >= 0) {
        CHECK(ncclRecv(a, nx, ncclFloat, up, comm, stream));
        CHECK(ncclSend(a + nx, nx, ncclFloat, up, comm, stream));
      }
      if (down >= 0) {
        CHECK(ncclRecv(a + (rows + 1) * nx, nx, ncclFloat, down, comm, stream));
        CHECK(ncclSend(a + rows * nx, nx, ncclFloat, down, comm, stream));
      }
      CHECK(ncclGroupEnd());
    }
    CHECK(cudaStreamSynchronize(stream));
  }
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(a));
}

// --- the agreement: what each collective call pays before it moves anything ---------------------

constexpr int agreements = 1000;  // agreements per benchmark iteration

/// The agreement that opens an all_reduce with the size check on: one MPI_Allreduce of the
/// outcome of every rank's checks and the terms that must match.
void smart_agreement(benchmark::State& state, const dist::Communicator& comm) {
  const dist::detail::Terms terms{
      .bytes = 4096, .type = dist::detail::type_code<float>(), .op = static_cast<int>(dist::Op::sum)};
  const MPI_Comm native = comm.native();
  for (auto _ : state) {
    for (int i = 0; i < agreements; ++i) dist::detail::agree("all_reduce", native, rank, terms, {});
  }
  state.counters["per_call"] = benchmark::Counter(
      agreements, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// The size handshake that the agreement replaced: one all-gather of each rank's bytes, which
/// compared sizes only and left a rank whose own check failed out of it.
void allgather_handshake(benchmark::State& state, const dist::Communicator& comm) {
  const MPI_Comm native = comm.native();
  const long long bytes = 4096;
  std::vector<long long> all(static_cast<std::size_t>(ranks));
  for (auto _ : state) {
    for (int i = 0; i < agreements; ++i) {
      CHECK(MPI_Allgather(&bytes, 1, MPI_LONG_LONG, all.data(), 1, MPI_LONG_LONG, native));
    }
  }
  state.counters["per_call"] = benchmark::Counter(
      agreements, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// The agreement's pair, alternated: it runs over any transport (MPI carries it).
void register_agreement(const dist::Communicator& comm) {
  const std::string gpus = "/ranks:" + std::to_string(ranks);
  for (int rep = 0; rep < options.reps; ++rep) {
    benchmark::RegisterBenchmark(("agreement/smartarray" + gpus).c_str(),
                                 [&comm](benchmark::State& s) { smart_agreement(s, comm); })
        ->Iterations(20)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("agreement/allgather" + gpus).c_str(),
                                 [&comm](benchmark::State& s) { allgather_handshake(s, comm); })
        ->Iterations(20)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

// --- registration, reporting and main -----------------------------------------------------------

/// The Jacobi contenders, alternated, `options.reps` times each: named
/// jacobi/<contender>/ranks:<ranks>/<transport>.
void register_jacobi(const dist::Communicator& comm) {
  const std::string config = "/ranks:" + std::to_string(ranks) + "/" +
                             dist::to_string(comm.transport());
  const bool nccl = comm.transport() == dist::Transport::nccl;
  const auto add = [&config](const char* contender, auto fn) {
    benchmark::RegisterBenchmark(("jacobi/" + std::string(contender) + config).c_str(), fn)
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  };
  const auto hand = [nccl](bool overlap) {
    return [nccl, overlap](benchmark::State& s) {
      if (nccl) {
        run_jacobi<HandNcclJacobi>(s, overlap, hand_comm());
      } else {
        run_jacobi<HandMpiJacobi>(s, overlap);
      }
    };
  };
  const auto smart = [&comm](bool overlap) {
    return [&comm, overlap](benchmark::State& s) { run_jacobi<SmartJacobi>(s, overlap, comm); };
  };
  for (int rep = 0; rep < options.reps; ++rep) {
    add("hand_overlap", hand(true));
    add("hand_one_stream", hand(false));
    add("smartarray_overlap", smart(true));
    add("smartarray_one_stream", smart(false));
  }
}

/// The NCCL pairs (2 ranks or more), alternated, `options.reps` times each, with fixed
/// iterations: every rank runs the same calls in the same order.
void register_nccl_pairs(const dist::Communicator& comm, const dist::Communicator& unchecked) {
  const auto add = [](const std::string& name, auto fn, int iterations) {
    benchmark::RegisterBenchmark(name.c_str(), fn)
        ->Iterations(iterations)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  };
  const std::string gpus = "/gpus:" + std::to_string(ranks);
  for (const std::size_t mib : {4, 64, 1024}) {
    const std::size_t bytes = mib << 20;
    const int iterations = mib >= 1024 ? 5 : 10;
    const std::string size = "/MiB:" + std::to_string(mib) + gpus;
    for (int rep = 0; rep < options.reps; ++rep) {
      add("all_reduce/smartarray" + size, [&comm, bytes](benchmark::State& s) {
        smart_all_reduce(s, comm, bytes);
      }, iterations);
      add("all_reduce/nccl" + size, [bytes](benchmark::State& s) { hand_all_reduce(s, bytes); },
          iterations);
    }
  }
  for (int rep = 0; rep < options.reps; ++rep) {
    add("halo/smartarray" + gpus, [&comm](benchmark::State& s) { smart_halo(s, comm); }, 10);
    add("halo/nccl" + gpus, [](benchmark::State& s) { hand_halo(s); }, 10);
    add("halo/smartarray_unchecked" + gpus,
        [&unchecked](benchmark::State& s) { smart_halo(s, unchecked); }, 10);
  }
}

/// Takes --nx, --ny, --steps, --reps and --transport out of `args`; false for a transport that is
/// neither nccl nor mpi_host.
bool parse_options(std::vector<char*>& args) {
  std::vector<char*> rest;
  bool known = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto value = [&](const char* flag) {
      return std::strcmp(args[i], flag) == 0 && i + 1 < args.size();
    };
    if (value("--nx")) {
      options.nx = std::strtoull(args[++i], nullptr, 10);
    } else if (value("--ny")) {
      options.ny = std::strtoull(args[++i], nullptr, 10);
    } else if (value("--steps")) {
      options.steps = std::atoi(args[++i]);
    } else if (value("--reps")) {
      options.reps = std::atoi(args[++i]);
    } else if (value("--transport")) {
      const std::string name = args[++i];
      if (name == "nccl") {
        options.transport = dist::Transport::nccl;
      } else if (name == "mpi_host") {
        options.transport = dist::Transport::mpi_host;
      } else {
        if (rank == 0) std::printf("bench_distributed: --transport %s: nccl or mpi_host\n", name.c_str());
        known = false;
      }
    } else {
      rest.push_back(args[i]);
    }
  }
  args = rest;
  return known;
}

/// NCCL when every rank can run it with a GPU of its own (no more ranks on a node than GPUs),
/// else MPI from host memory.
dist::Transport default_transport() {
  MPI_Comm node = MPI_COMM_NULL;
  CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int local_ranks = 0;
  CHECK(MPI_Comm_size(node, &local_ranks));
  CHECK(MPI_Comm_free(&node));
  const int mine = dist::transport_available(dist::Transport::nccl) &&
                   local_ranks <= sa::device_count();
  int all = 0;
  CHECK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  return all != 0 ? dist::Transport::nccl : dist::Transport::mpi_host;
}

/// The grid and steps that were not given: 16384 x 16384 and 100 steps over NCCL; over MPI from
/// host memory 65536 x 1024 (wide rows, few per rank: the halo's trip through host memory is a
/// noticeable share of a step) and 500 steps.
void default_grid(dist::Transport transport) {
  const bool nccl = transport == dist::Transport::nccl;
  if (options.nx == 0) options.nx = nccl ? 16384 : 65536;
  if (options.ny == 0) options.ny = nccl ? 16384 : 1024;
  if (options.steps == 0) options.steps = nccl ? 100 : 500;
}

/// Registers the benchmarks and runs them, rank 0 reporting.
void run(const dist::Communicator& comm) {
  const bool nccl = comm.transport() == dist::Transport::nccl;
  // The same processes without the size check (CommunicatorOptions::check_sizes off, which a
  // release build honours), to show what the agreement costs.
  const dist::Communicator unchecked(MPI_COMM_WORLD,
                                     {.transport = comm.transport(), .check_sizes = false});
  register_agreement(comm);
  register_jacobi(comm);
  if (nccl && ranks > 1) register_nccl_pairs(comm, unchecked);
  sa::bench::add_provenance();
  benchmark::AddCustomContext("ranks", std::to_string(ranks));
  benchmark::AddCustomContext("transport", dist::to_string(comm.transport()));
  benchmark::AddCustomContext("jacobi_grid",
                              std::to_string(options.nx) + " x " + std::to_string(options.ny));
  if (rank == 0) {
    std::printf("bench_distributed: %d ranks on %d GPUs, transport %s, Jacobi grid %zu x %zu, "
                "%d steps per run\n",
                ranks, sa::device_count(), dist::to_string(comm.transport()), options.nx,
                options.ny, options.steps);
    Collector collector(options.reps, options.nx, options.ny, options.steps);
    benchmark::RunSpecifiedBenchmarks(&collector);
    collector.print_ratios();
    collector.print_jacobi();
  } else {
    Silent silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CHECK(MPI_Init(&argc, &argv));
  CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK(MPI_Comm_size(MPI_COMM_WORLD, &ranks));
  std::vector<char*> args(argv, argv + argc);
  int status = parse_options(args) ? 0 : 1;
  if (rank != 0) {  // only rank 0 writes --benchmark_out
    std::erase_if(args, [](const char* arg) { return std::strncmp(arg, "--benchmark_out", 15) == 0; });
  }
  if (status == 0) {
    const dist::Transport transport = options.transport.value_or(default_transport());
    default_grid(transport);
    const dist::Communicator comm(MPI_COMM_WORLD, {.transport = transport});
    if (options.ny % static_cast<std::size_t>(ranks) != 0 ||
        options.ny / static_cast<std::size_t>(ranks) < 3) {
      if (rank == 0) {
        std::printf("bench_distributed: --ny must divide among the ranks, 3 rows or more each\n");
      }
      status = 1;
    } else if (!sa::bench::initialize(args)) {
      status = 1;
    } else {
      run(comm);
      benchmark::Shutdown();
    }
    if (hand_nccl != nullptr) CHECK(ncclCommDestroy(hand_nccl));
  }
  CHECK(MPI_Finalize());
  return status;
}
