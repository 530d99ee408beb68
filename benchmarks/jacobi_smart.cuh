// bench_distributed's smartarray Jacobi solver: the same kernel as the hand-written ones, on slices
// of two SmartArrays, over any transport of the communicator; the residual read by the host every
// step. Included by bench_distributed.cu only (unnamed namespace).
#pragma once

#include "distributed_support.cuh"
#include "jacobi_kernel.cuh"

#include <smartarray/distributed.hpp>
#include <smartarray/smartarray.hpp>

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <utility>

namespace sa = smartarray;
namespace dist = smartarray::dist;

namespace {

/// With overlap, as nccl_overlap: the interior on the compute stream, queued first so that the
/// GPU starts it at once, and the boundary rows and their exchange on a high-priority stream
/// beside it. The library orders the boundary sweeps after the step's zeroing of the norm, the
/// exchange after the boundary sweeps (their slices), and the next step's sweeps after the
/// exchange. The interior and the boundary rows add to two elements of the norm (two slices), so
/// that neither waits for the other; the host reads both. No event is written here. Without
/// overlap: one sweep of every row, then the exchange, on one stream.
struct SmartJacobi {
  const dist::Communicator& comm;
  Block block;
  bool overlap;
  sa::SmartArray<float> a;
  sa::SmartArray<float> a_new;
  sa::SmartArray<float> norm = sa::SmartArray<float>(2);  ///< the interior's, the boundary's
  sa::Stream stream;
  sa::Stream halo_stream{sa::current_device(), sa::StreamPriority::high};

  SmartJacobi(bool overlapped, const dist::Communicator& c, const Block& b)
      : comm(c), block(b), overlap(overlapped), a(initial_block(b)), a_new(a) {}

  float step() {
    const std::size_t nx = block.nx;
    const int rows = block.rows;
    CHECK(cudaMemsetAsync(norm.device_view(sa::Access::discard, stream).data(), 0,
                          2 * sizeof(float), sa::StreamRef(stream).cuda_stream()));
    if (overlap) {
      sweep(2, rows - 2, stream, 0);
      sweep(1, 1, halo_stream, 1);
      sweep(rows, 1, halo_stream, 1);
      dist::exchange_halos(a_new, dist::Halo{.width = nx}, comm, halo_stream);
      if (comm.transport() == dist::Transport::mpi_host) upload_halos();
    } else {
      sweep(1, rows, stream, 0);
      dist::exchange_halos(a_new, dist::Halo{.width = nx}, comm, stream);
    }
    dist::all_reduce(norm, dist::Op::sum, comm, stream);
    std::swap(a, a_new);
    const sa::SmartArray<float>& sums = norm;
    return std::sqrt(sums[0] + sums[1]);
  }

  /// Rows [first, first + count) on `on`: reads those rows of `a` and one more on each side,
  /// writes those of `a_new`, adds to element `part` of the norm.
  void sweep(int first, int count, sa::StreamRef on, std::size_t part) {
    const std::size_t nx = block.nx;
    const auto row = static_cast<std::size_t>(first);
    const auto rows = static_cast<std::size_t>(count);
    sa::launch(jacobi_kernel, grid_of(nx, count), block_shape, on,
               std::as_const(a).slice((row - 1) * nx, (rows + 2) * nx),
               a_new.slice(row * nx, rows * nx), norm.slice(part, 1), static_cast<int>(nx),
               count);
  }

  /// Over mpi_host the halos arrive in host memory, and the next sweep that reads them would copy
  /// them up on its own stream, before the boundary rows: reading them on the halo stream now
  /// copies them up there, beside the interior, as the hand-written solver does.
  void upload_halos() {
    const std::size_t nx = block.nx;
    if (block.up() >= 0) (void)std::as_const(a_new).slice(0, nx).device_view(halo_stream);
    if (block.down() >= 0) {
      (void)std::as_const(a_new).slice(block.size() - nx, nx).device_view(halo_stream);
    }
  }
};

}  // namespace
