// A 2-D Jacobi solver (the heat equation's steady state) on an nx x ny grid decomposed by rows
// over MPI ranks, one GPU each: a halo exchange of one row every iteration, and the residual's
// all_reduce every `check` iterations. Each iteration computes the interior rows on one stream
// and, beside them on a second, high-priority stream, the block's two boundary rows and their
// exchange: each sweep reads and writes slices of the two arrays, and the library orders each use
// after the conflicting uses of the same rows only, so the exchange waits for the boundary rows
// and not for the interior, with no event in this file. With NCCL, nothing waits on the host but
// the residual's read. The residual is one pass of transform_reduce into a one-element array
// that the loop reuses. The result is gathered and checked against the same iterations on one
// process.
//
//   mpirun -np 4 distributed_jacobi [--quick] [--nx N] [--ny N] [--iterations N] [--check N]
//                                   [--time]
//
// The grid is 1026 x 1026 (--quick: 258 x 130), 500 iterations (--quick: 200), and the residual
// every 50 (--check) and after the last. --time prints the time per iteration of the slowest
// rank, from the end of the first iteration (which uploads the blocks) to the end of the last, as
// examples/python/distributed_jacobi.py --time does.
#include "example_support.hpp"

#include <smartarray/distributed.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <utility>
#include <vector>

namespace sa = smartarray;
namespace dist = smartarray::dist;

namespace {
/// One Jacobi sweep of `count` rows of nx floats: each interior point of `a_new` (the rows swept)
/// becomes the mean of its four neighbours in `a` (the same rows, with one more above and below).
struct Sweep {
  sa::DeviceView<const float> a;
  sa::DeviceView<float> a_new;
  std::size_t nx;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t i = k / (nx - 2) * nx + 1 + k % (nx - 2);
    a_new[i] = 0.25F * (a[i + nx - 1] + a[i + nx + 1] + a[i] + a[i + 2 * nx]);
  }
};
/// Sweeps rows [first, first + count) of a block into `a_new` on `stream`. It reads rows first - 1
/// to first + count of `a` and writes rows first to first + count - 1 of `a_new` (read_write, as
/// the boundary columns stay), as slices: the library orders it after the uses of those rows only.
void sweep(const sa::SmartArray<float>& a, sa::SmartArray<float>& a_new, std::size_t first,
           std::size_t count, std::size_t nx, sa::StreamRef stream) {
  sa::for_each_index(
      count * (nx - 2),
      Sweep{a.slice((first - 1) * nx, (count + 2) * nx).device_view(stream),
            a_new.slice(first * nx, count * nx).device_view(sa::Access::read_write, stream), nx},
      stream);
}
struct SquaredChange {
  SMARTARRAY_HOST_DEVICE float operator()(float x, float y) const { return (x - y) * (x - y); }
};
struct Plus {
  SMARTARRAY_HOST_DEVICE float operator()(float x, float y) const { return x + y; }
};
/// The sum of the squared changes from `a` to `a_new`, into `norm`'s device copy on `stream`.
void squared_change(const sa::SmartArray<float>& a_new, const sa::SmartArray<float>& a,
                    sa::SmartArray<float>& norm, sa::StreamRef stream) {
  sa::transform_reduce(a_new, a, 0.0F, Plus{}, SquaredChange{}, norm, stream);
}

/// The grid's fixed boundary: the left and right columns hold sin(2 pi y / (ny - 1)).
float boundary(std::size_t y, std::size_t ny) {
  return std::sin(2.0F * std::numbers::pi_v<float> * static_cast<float>(y) /
                  static_cast<float>(ny - 1));
}
/// Rows [row0, row0 + rows) of the grid with a halo row on each side: the boundary columns set.
std::vector<float> initial(std::size_t row0, std::size_t rows, std::size_t nx, std::size_t ny) {
  std::vector<float> block((rows + 2) * nx, 0.0F);
  for (std::size_t r = 0; r < rows + 2; ++r) {
    const std::size_t y = row0 + r - 1;
    if (row0 + r == 0 || y >= ny) continue;
    block[r * nx] = block[r * nx + nx - 1] = boundary(y, ny);
  }
  return block;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (example::cuda_missing()) {
    MPI_Finalize();
    return example::skipped;
  }
  int status = 0;
  {
    const dist::Communicator comm(MPI_COMM_WORLD);
    const bool quick = example::quick(argc, argv);
    const auto nx =
        static_cast<std::size_t>(example::option(argc, argv, "--nx", quick ? 258 : 1026));
    const auto ny =
        static_cast<std::size_t>(example::option(argc, argv, "--ny", quick ? 130 : 1026));
    const auto iterations =
        static_cast<int>(example::option(argc, argv, "--iterations", quick ? 200 : 500));
    const auto check = static_cast<int>(std::max(1L, example::option(argc, argv, "--check", 50)));
    // Rows 1 .. ny - 2 change; rank r owns a contiguous block of them.
    const auto ranks = static_cast<std::size_t>(comm.size());
    const std::size_t rows = (ny - 2) / ranks,
                      row0 = 1 + rows * static_cast<std::size_t>(comm.rank());
    if ((ny - 2) % ranks != 0 || rows < 3) {
      std::printf("distributed_jacobi: %zu rows do not divide among %zu ranks, 3 or more each\n",
                  ny - 2, ranks);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    sa::SmartArray<float> a(initial(row0, rows, nx, ny)), a_new(a);
    sa::Stream stream;
    const sa::Stream halo_stream(sa::current_device(), sa::StreamPriority::high);
    // The residual's squared change, summed in one pass into one element (no temporary array).
    // Computed and summed over the ranks once before the loop: CUDA loads a kernel's module at
    // its first launch, and NCCL connects the ranks for a collective at its first call (0.2 s on
    // 2 H200), which would otherwise fall inside the timed iterations.
    sa::SmartArray<float> norm(1);
    squared_change(a_new, a, norm, stream);
    dist::all_reduce(norm, dist::Op::sum, comm, stream);
    (void)std::as_const(norm)[0];
    float residual = 0.0F;
    auto start = std::chrono::steady_clock::now();
    for (int it = 1; it <= iterations; ++it) {
      if (it == 2) {  // the time per iteration leaves out the first, which uploads the blocks
        stream.synchronize();
        halo_stream.synchronize();
        start = std::chrono::steady_clock::now();
      }
      // The interior on `stream`, queued first so that the GPU starts it at once (and, over MPI,
      // before the exchange holds the host); the boundary rows and their exchange on
      // `halo_stream` beside it. The exchange waits for the boundary sweeps only.
      sweep(a, a_new, 2, rows - 2, nx, stream);
      sweep(a, a_new, 1, 1, nx, halo_stream);
      sweep(a, a_new, rows, 1, nx, halo_stream);
      dist::exchange_halos(a_new, dist::Halo{.width = nx}, comm, halo_stream);
      if (it % check == 0 || it == iterations) {
        squared_change(a_new, a, norm, stream);
        dist::all_reduce(norm, dist::Op::sum, comm, stream);
        residual = std::sqrt(norm[0]);
        if (comm.rank() == 0)
          std::printf("iteration %4d: residual %.6e\n", it, static_cast<double>(residual));
      }
      std::swap(a, a_new);
    }
    stream.synchronize();
    halo_stream.synchronize();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        std::max(1, iterations - 1);
    if (MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) !=
        MPI_SUCCESS) {
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (example::flag(argc, argv, "--time") && comm.rank() == 0)
      std::printf("time per iteration: %.4f ms (the slowest rank)\n", seconds * 1e3);
    // Gather the rows and check them against the same iterations on one process.
    sa::SmartArray<float> mine(rows * nx), all(rows * nx * ranks);
    sa::copy(mine.slice(0, rows * nx), std::as_const(a).slice(nx, rows * nx));
    dist::all_gather(mine, all, comm, stream);
    if (comm.rank() == 0) {
      std::vector<float> u = initial(1, ny - 2, nx, ny), v = u;
      for (int it = 0; it < iterations; ++it) {
        for (std::size_t r = 1; r <= ny - 2; ++r) {
          for (std::size_t x = 1; x + 1 < nx; ++x) {
            const std::size_t i = r * nx + x;
            v[i] = 0.25F * (u[i - 1] + u[i + 1] + u[i - nx] + u[i + nx]);
          }
        }
        std::swap(u, v);
      }
      float worst = 0.0F;
      for (std::size_t i = 0; i < (ny - 2) * nx; ++i)
        worst = std::fmax(worst, std::fabs(all[i] - u[nx + i]));
      std::printf(
          "%zu ranks, %zu x %zu grid, %d iterations: largest difference from one process %.3e\n",
          ranks, nx, ny, iterations, static_cast<double>(worst));
      std::printf("halo exchanges and residuals: %s\n",
                  sa::global_transfer_stats().to_string().c_str());
      status = worst <= 1e-5F ? 0 : 1;
      std::printf("%s\n", status == 0 ? "OK" : "FAILED");
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return status;
}
