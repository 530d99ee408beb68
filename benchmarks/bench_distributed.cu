// The distributed layer against hand-written MPI + NCCL code, one rank per GPU, under mpirun:
//   mpirun -np 4 bench_distributed [--nx N] [--ny N] [--steps N] [--reps N] [google benchmark flags]
// - jacobi: a 2-D Jacobi solver on an nx x ny grid decomposed by rows, with a halo exchange and
//   the residual's all-reduce (read by the host) every step, as in NVIDIA's multi-GPU programming
//   models (nccl_overlap). The hand-written one computes its boundary rows and exchanges them on
//   one stream while the interior computes on another; the smartarray one runs on one stream (two
//   writers of one array on two streams are ordered one after the other). Both run the same
//   kernel. Two more contenders tell the costs apart: the hand-written one on one stream, and the
//   smartarray one without the size check. items_per_second is lattice updates per second.
// - all_reduce: dist::all_reduce of a device-valid array against a bare ncclAllReduce, at 4 MiB,
//   64 MiB and 1 GiB; bus_GBps is NCCL's bus bandwidth, 2 (n - 1) / n bytes per second.
// - halo: dist::exchange_halos of one row against grouped ncclSend/ncclRecv of the same rows, with
//   the communicator's size check (the default) and without it.
// - agreement: the agreement that opens every collective call with the size check on (one
//   MPI_Allreduce of the checks' outcome and the terms that must match) against the size
//   handshake it replaced (an MPI_Allgather of one size), per call; it runs over any transport.
// Every contender runs the same fixed iterations on every rank, so that the ranks stay in step;
// repetitions alternate the contenders (ABAB), and rank 0 prints each pair's median ratio at the
// end. Only rank 0 reports.
#include "bench_main.hpp"

#include <smartarray/distributed.hpp>
#include <smartarray/smartarray.hpp>

#include <benchmark/benchmark.h>
#include <cub/block/block_reduce.cuh>
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
namespace dist = smartarray::dist;

namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", call, cudaGetErrorString(status));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
void check(ncclResult_t status, const char* call) {
  if (status != ncclSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", call, ncclGetErrorString(status));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
void check(int status, const char* call) {
  if (status != MPI_SUCCESS) {
    std::fprintf(stderr, "%s failed: MPI error %d\n", call, status);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
#define CHECK(call) check((call), #call)

struct Options {
  std::size_t nx = 16384;
  std::size_t ny = 16384;
  int steps = 100;  // Jacobi steps per benchmark iteration
  int reps = 5;     // repetitions of each contender, alternated
};
Options options;
int rank = 0;
int ranks = 1;

constexpr int block_x = 32;
constexpr int block_y = 8;

/// One Jacobi sweep of rows [first, end) of a block of nx columns, adding the squared change of
/// every point to *norm.
__global__ void jacobi_kernel(const float* a, float* a_new, float* norm, int nx, int first,
                              int end) {
  using Reduce = cub::BlockReduce<float, block_x, cub::BLOCK_REDUCE_WARP_REDUCTIONS, block_y>;
  __shared__ typename Reduce::TempStorage scratch;
  const int row = first + static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int col = 1 + static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  float change = 0.0F;
  if (row < end && col < nx - 1) {
    const std::size_t i = static_cast<std::size_t>(row) * nx + col;
    const float value = 0.25F * (a[i - 1] + a[i + 1] + a[i - nx] + a[i + nx]);
    a_new[i] = value;
    change = (value - a[i]) * (value - a[i]);
  }
  const float sum = Reduce(scratch).Sum(change);
  if (threadIdx.x == 0 && threadIdx.y == 0) atomicAdd(norm, sum);
}

dim3 grid_of(std::size_t nx, int rows) {
  return {static_cast<unsigned>((nx - 2 + block_x - 1) / block_x),
          static_cast<unsigned>((rows + block_y - 1) / block_y), 1};
}

/// This rank's rows of the grid, with a halo row above and below: the left and right columns hold
/// the fixed boundary sin(2 pi y / (ny + 1)), the rest zero.
std::vector<float> initial_block(std::size_t nx, std::size_t rows) {
  std::vector<float> block((rows + 2) * nx, 0.0F);
  const std::size_t row0 = static_cast<std::size_t>(rank) * rows;
  for (std::size_t r = 0; r < rows + 2; ++r) {
    const float y = static_cast<float>(row0 + r) / static_cast<float>(options.ny + 1);
    block[r * nx] = block[r * nx + nx - 1] = std::sin(2.0F * 3.14159265F * y);
  }
  return block;
}

int up() { return rank > 0 ? rank - 1 : -1; }
int down() { return rank < ranks - 1 ? rank + 1 : -1; }

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

/// The smartarray solver: its arrays stay on the device; the residual is read by the host.
struct SmartJacobi {
  const dist::Communicator& comm;
  std::size_t nx;
  int rows;
  sa::SmartArray<float> a, a_new;
  sa::SmartArray<float> norm = sa::SmartArray<float>(1);
  sa::Stream stream;

  SmartJacobi(const dist::Communicator& c, std::size_t columns, int block_rows)
      : comm(c), nx(columns), rows(block_rows),
        a(initial_block(columns, static_cast<std::size_t>(block_rows))), a_new(a) {}

  float step() {
    CHECK(cudaMemsetAsync(norm.device_view(sa::Access::discard, stream).data(), 0, sizeof(float),
                          sa::StreamRef(stream).cuda_stream()));
    sa::launch(jacobi_kernel, grid_of(nx, rows), dim3(block_x, block_y), stream, a, a_new, norm,
               static_cast<int>(nx), 1, rows + 1);
    dist::exchange_halos(a_new, dist::Halo{.width = nx}, comm, stream);
    dist::all_reduce(norm, dist::Op::sum, comm, stream);
    std::swap(a, a_new);
    return std::sqrt(std::as_const(norm)[0]);
  }
};

/// The hand-written solver, in the style of NVIDIA's nccl_overlap: the boundary rows and their
/// exchange on one stream, the interior on another, the norm on the host every step. Without
/// `overlap`, everything runs on one stream, as the smartarray solver does.
struct HandJacobi {
  bool overlap;
  std::size_t nx;
  int rows;
  float* a = nullptr;
  float* a_new = nullptr;
  float* norm = nullptr;
  float* norm_host = nullptr;
  cudaStream_t compute = nullptr, push = nullptr;
  cudaEvent_t reset_done = nullptr, push_done = nullptr;

  HandJacobi(bool overlapped, std::size_t columns, int block_rows)
      : overlap(overlapped), nx(columns), rows(block_rows) {
    const std::vector<float> start = initial_block(nx, static_cast<std::size_t>(rows));
    const std::size_t bytes = start.size() * sizeof(float);
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&a_new, bytes));
    CHECK(cudaMalloc(&norm, sizeof(float)));
    CHECK(cudaMallocHost(&norm_host, sizeof(float)));
    CHECK(cudaMemcpy(a, start.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(a_new, start.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    if (overlap) {
      CHECK(cudaStreamCreateWithFlags(&push, cudaStreamNonBlocking));
    } else {
      push = compute;
    }
    CHECK(cudaEventCreateWithFlags(&reset_done, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&push_done, cudaEventDisableTiming));
  }
  ~HandJacobi() {
    cudaEventDestroy(reset_done);
    cudaEventDestroy(push_done);
    if (push != compute) cudaStreamDestroy(push);
    cudaStreamDestroy(compute);
    cudaFreeHost(norm_host);
    cudaFree(norm);
    cudaFree(a_new);
    cudaFree(a);
  }
  HandJacobi(const HandJacobi&) = delete;
  HandJacobi& operator=(const HandJacobi&) = delete;

  float step() {
    const ncclComm_t comm = hand_comm();
    const int n = static_cast<int>(nx);
    CHECK(cudaMemsetAsync(norm, 0, sizeof(float), compute));
    CHECK(cudaEventRecord(reset_done, compute));
    if (rows > 2) {
      jacobi_kernel<<<grid_of(nx, rows - 2), dim3(block_x, block_y), 0, compute>>>(a, a_new, norm,
                                                                                   n, 2, rows);
    }
    CHECK(cudaStreamWaitEvent(push, reset_done));
    jacobi_kernel<<<grid_of(nx, 1), dim3(block_x, block_y), 0, push>>>(a, a_new, norm, n, 1, 2);
    jacobi_kernel<<<grid_of(nx, 1), dim3(block_x, block_y), 0, push>>>(a, a_new, norm, n, rows,
                                                                       rows + 1);
    CHECK(cudaGetLastError());
    CHECK(ncclGroupStart());
    if (up() >= 0) {
      CHECK(ncclRecv(a_new, nx, ncclFloat, up(), comm, push));
      CHECK(ncclSend(a_new + nx, nx, ncclFloat, up(), comm, push));
    }
    if (down() >= 0) {
      CHECK(ncclRecv(a_new + (rows + 1) * nx, nx, ncclFloat, down(), comm, push));
      CHECK(ncclSend(a_new + rows * nx, nx, ncclFloat, down(), comm, push));
    }
    CHECK(ncclGroupEnd());
    CHECK(cudaEventRecord(push_done, push));
    CHECK(cudaStreamWaitEvent(compute, push_done));
    CHECK(ncclAllReduce(norm, norm, 1, ncclFloat, ncclSum, comm, compute));
    CHECK(cudaMemcpyAsync(norm_host, norm, sizeof(float), cudaMemcpyDeviceToHost, compute));
    CHECK(cudaStreamSynchronize(compute));
    std::swap(a, a_new);
    return std::sqrt(*norm_host);
  }
};

int block_rows() { return static_cast<int>(options.ny / static_cast<std::size_t>(ranks)); }

template <typename Solver, typename... Args>
void run_jacobi(benchmark::State& state, Args&&... args) {
  Solver solver(std::forward<Args>(args)..., options.nx, block_rows());
  float residual = solver.step();  // warm: connections, the pools
  for (auto _ : state) {
    for (int s = 0; s < options.steps; ++s) residual = solver.step();
  }
  state.SetItemsProcessed(state.iterations() * options.steps *
                          static_cast<std::int64_t>(options.nx * options.ny));
  state.counters["residual"] = residual;
  state.counters["gpus"] = ranks;
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

void smart_halo(benchmark::State& state, const dist::Communicator& comm) {
  const std::size_t nx = options.nx;
  sa::SmartArray<float> a(initial_block(nx, 8));
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
  const std::size_t nx = options.nx;
  const int rows = 8;
  float* a = nullptr;
  cudaStream_t stream = nullptr;
  CHECK(cudaMalloc(&a, (rows + 2) * nx * sizeof(float)));
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<float> start = initial_block(nx, rows);
  CHECK(cudaMemcpy(a, start.data(), start.size() * sizeof(float), cudaMemcpyHostToDevice));
  for (auto _ : state) {
    for (int i = 0; i < halo_exchanges; ++i) {
      CHECK(ncclGroupStart());
      if (up() >= 0) {
        CHECK(ncclRecv(a, nx, ncclFloat, up(), hand_comm(), stream));
        CHECK(ncclSend(a + nx, nx, ncclFloat, up(), hand_comm(), stream));
      }
      if (down() >= 0) {
        CHECK(ncclRecv(a + (rows + 1) * nx, nx, ncclFloat, down(), hand_comm(), stream));
        CHECK(ncclSend(a + rows * nx, nx, ncclFloat, down(), hand_comm(), stream));
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

/// Registers each pair's contenders alternately, `options.reps` times each, with fixed
/// iterations: every rank runs the same calls in the same order.
void register_benchmarks(const dist::Communicator& comm, const dist::Communicator& unchecked) {
  const auto add = [](const std::string& name, auto fn, int iterations) {
    benchmark::RegisterBenchmark(name.c_str(), fn)
        ->Iterations(iterations)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  };
  const std::string gpus = "/gpus:" + std::to_string(ranks);
  for (int rep = 0; rep < options.reps; ++rep) {
    add("jacobi/smartarray" + gpus, [&comm](benchmark::State& s) {
      run_jacobi<SmartJacobi>(s, comm);
    }, 1);
    add("jacobi/nccl" + gpus, [](benchmark::State& s) { run_jacobi<HandJacobi>(s, true); }, 1);
    add("jacobi/nccl_one_stream" + gpus,
        [](benchmark::State& s) { run_jacobi<HandJacobi>(s, false); }, 1);
    add("jacobi/smartarray_unchecked" + gpus, [&unchecked](benchmark::State& s) {
      run_jacobi<SmartJacobi>(s, unchecked);
    }, 1);
  }
  if (ranks < 2) return;
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

/// The console reporter of rank 0, which also keeps every run's seconds per iteration and its
/// bus bandwidth, for the ratios printed at the end.
class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || sa::bench::skipped(run)) continue;
      seconds_[run.benchmark_name()].push_back(run.real_accumulated_time /
                                               static_cast<double>(run.iterations));
      const auto bus = run.counters.find("bus_GBps");
      if (bus != run.counters.end()) bus_[run.benchmark_name()].push_back(bus->second.value);
      const auto rate = run.counters.find("items_per_second");
      if (rate != run.counters.end()) rate_[run.benchmark_name()].push_back(rate->second.value);
      const auto residual = run.counters.find("residual");
      if (residual != run.counters.end()) residual_[run.benchmark_name()] = residual->second.value;
    }
  }
  /// Each contender against the baseline of its pair: hand-written NCCL code ("<pair>/nccl/..."),
  /// or for the agreement the all-gather handshake it replaced ("agreement/allgather/...").
  void print_ratios() const {
    std::printf("\nMedians of %d alternated repetitions, each contender against its baseline:\n",
                options.reps);
    for (const auto& [name, values] : seconds_) {
      const std::size_t at = name.find('/');
      const std::size_t end = name.find('/', at + 1);
      const std::string baseline = name.compare(0, at, "agreement") == 0 ? "/allgather" : "/nccl";
      if (name.compare(at, end - at, baseline) == 0) continue;
      const std::string other = name.substr(0, at) + baseline + name.substr(end);
      const auto hand = seconds_.find(other);
      if (hand == seconds_.end()) continue;
      std::printf("  %-44s time ratio %.3f", name.c_str(), median(values) / median(hand->second));
      const auto bus = bus_.find(name);
      const auto hand_bus = bus_.find(other);
      if (bus != bus_.end() && hand_bus != bus_.end()) {
        std::printf("  bus bandwidth %.1f / %.1f GB/s = %.1f%%", median(bus->second),
                    median(hand_bus->second), 100.0 * median(bus->second) / median(hand_bus->second));
      }
      const auto rate = rate_.find(name);
      const auto hand_rate = rate_.find(other);
      if (rate != rate_.end() && hand_rate != rate_.end()) {
        std::printf("  lattice updates %.3e / %.3e per s", median(rate->second),
                    median(hand_rate->second));
      }
      const auto residual = residual_.find(name);
      const auto hand_residual = residual_.find(other);
      if (residual != residual_.end() && hand_residual != residual_.end()) {
        std::printf("  residual %.6e / %.6e", residual->second, hand_residual->second);
      }
      std::printf("\n");
    }
  }

 private:
  static double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  }
  std::map<std::string, std::vector<double>> seconds_;
  std::map<std::string, std::vector<double>> bus_;
  std::map<std::string, std::vector<double>> rate_;
  std::map<std::string, double> residual_;
};

/// The reporter of the other ranks: they run every benchmark and report nothing.
class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

/// Takes --nx, --ny, --steps and --reps out of `args`.
void parse_options(std::vector<char*>& args) {
  std::vector<char*> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto value = [&](const char* flag) {
      return std::strcmp(args[i], flag) == 0 && i + 1 < args.size();
    };
    if (value("--nx")) options.nx = std::strtoull(args[++i], nullptr, 10);
    else if (value("--ny")) options.ny = std::strtoull(args[++i], nullptr, 10);
    else if (value("--steps")) options.steps = std::atoi(args[++i]);
    else if (value("--reps")) options.reps = std::atoi(args[++i]);
    else rest.push_back(args[i]);
  }
  args = rest;
}

}  // namespace

int main(int argc, char** argv) {
  CHECK(MPI_Init(&argc, &argv));
  CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK(MPI_Comm_size(MPI_COMM_WORLD, &ranks));
  std::vector<char*> args(argv, argv + argc);
  parse_options(args);
  if (rank != 0) {  // only rank 0 writes --benchmark_out
    std::erase_if(args, [](const char* arg) { return std::strncmp(arg, "--benchmark_out", 15) == 0; });
  }
  int status = 0;
  {
    const dist::Communicator comm(MPI_COMM_WORLD);
    const bool nccl = comm.transport() == dist::Transport::nccl;
    if (!nccl && rank == 0) {
      std::printf("bench_distributed: the transport is %s, not nccl (which needs a GPU for each "
                  "rank and NCCL built in): only the agreement runs\n",
                  dist::to_string(comm.transport()));
    }
    if (options.ny % static_cast<std::size_t>(ranks) != 0) {
      if (rank == 0) std::printf("bench_distributed: --ny must divide among the ranks\n");
      status = 1;
    } else if (!sa::bench::initialize(args)) {
      status = 1;
    } else {
      // The same processes without the size check (CommunicatorOptions::check_sizes off, which a
      // release build honours), to show what the agreement costs.
      const dist::Communicator unchecked(MPI_COMM_WORLD, {.check_sizes = false});
      register_agreement(comm);
      if (nccl) register_benchmarks(comm, unchecked);
      sa::bench::add_provenance();
      benchmark::AddCustomContext("ranks", std::to_string(ranks));
      benchmark::AddCustomContext("transport", dist::to_string(comm.transport()));
      if (rank == 0) {
        Collector collector;
        benchmark::RunSpecifiedBenchmarks(&collector);
        collector.print_ratios();
      } else {
        Silent silent;
        benchmark::RunSpecifiedBenchmarks(&silent);
      }
      benchmark::Shutdown();
    }
    if (hand_nccl != nullptr) CHECK(ncclCommDestroy(hand_nccl));
  }
  CHECK(MPI_Finalize());
  return status;
}
