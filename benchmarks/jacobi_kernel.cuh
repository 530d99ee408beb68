// The Jacobi sweep that every solver of bench_distributed runs, its launch shape and the grid's
// initial values. Included by bench_distributed's solvers only (unnamed namespace).
#pragma once

#include "distributed_support.cuh"

#include <cub/block/block_reduce.cuh>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <vector>

namespace {

constexpr int block_x = 32;
constexpr int block_y = 8;
/// The rows each thread sweeps. With one point per thread, the kernel made one atomicAdd on the
/// norm per 256 points and was bound by those atomics on one address: on an H200 a sweep of
/// 16384 x 16384 took 2.01 to 2.24 ms depending on the norm's address alone, so the solvers' times
/// told where their norms had been allocated. With 16 rows per thread it takes 0.75 ms wherever
/// the norm is.
constexpr int rows_per_thread = 16;

/// One Jacobi sweep of `rows` rows of nx columns: `a_new` points at the first row swept, `a` at the
/// row above it (so that a[i + nx] is the old value of a_new[i]). Each interior point becomes the
/// mean of its four neighbours, and the squared change of every point is added to *norm.
__global__ void jacobi_kernel(const float* a, float* a_new, float* norm, int nx, int rows) {
  using Reduce = cub::BlockReduce<float, block_x, cub::BLOCK_REDUCE_WARP_REDUCTIONS, block_y>;
  __shared__ typename Reduce::TempStorage scratch;
  const int first = static_cast<int>(blockIdx.y * blockDim.y * rows_per_thread + threadIdx.y);
  const int col = 1 + static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  float change = 0.0F;
  if (col < nx - 1) {
    for (int row = first; row < rows && row < first + block_y * rows_per_thread; row += block_y) {
      const std::size_t i = static_cast<std::size_t>(row) * nx + col;
      const float old = a[i + nx];
      const float value = 0.25F * (a[i + nx - 1] + a[i + nx + 1] + a[i] + a[i + 2 * nx]);
      a_new[i] = value;
      change += (value - old) * (value - old);
    }
  }
  const float sum = Reduce(scratch).Sum(change);
  if (threadIdx.x == 0 && threadIdx.y == 0) atomicAdd(norm, sum);
}

dim3 grid_of(std::size_t nx, int rows) {
  constexpr int rows_per_block = block_y * rows_per_thread;
  return {static_cast<unsigned>((nx - 2 + block_x - 1) / block_x),
          static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block), 1};
}
const dim3 block_shape(block_x, block_y);

/// Sweeps rows [first, first + count) of a block (halo rows 0 and rows + 1) on `stream`.
void sweep(const float* a, float* a_new, float* norm, std::size_t nx, int first, int count,
           cudaStream_t stream) {
  const std::size_t row = static_cast<std::size_t>(first);
  jacobi_kernel<<<grid_of(nx, count), block_shape, 0, stream>>>(
      a + (row - 1) * nx, a_new + row * nx, norm, static_cast<int>(nx), count);
  CHECK(cudaGetLastError());
}

/// The rank's block of the grid with its halo rows: the left and right columns hold the fixed
/// boundary sin(2 pi y / (ny + 1)), the rest zero.
std::vector<float> initial_block(const Block& block) {
  const std::size_t nx = block.nx;
  const auto rows = static_cast<std::size_t>(block.rows);
  std::vector<float> values(block.size(), 0.0F);
  const std::size_t row0 = static_cast<std::size_t>(block.rank) * rows;
  for (std::size_t r = 0; r < rows + 2; ++r) {
    const float y = static_cast<float>(row0 + r) / static_cast<float>(block.ny + 1);
    values[r * nx] = values[r * nx + nx - 1] = std::sin(2.0F * 3.14159265F * y);
  }
  return values;
}

}  // namespace
