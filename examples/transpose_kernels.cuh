// Matrix transpose kernels over ShapedViews in C or F order, shared by the transpose example, the
// adapter tests and the benchmarks.
//
// Both kernels speak of a matrix's "fast" index (the contiguous one: the column in C order, the row
// in F order) and its "slow" index, so that one body serves both layouts and threadIdx.x always
// walks contiguous memory on the reading side.
#pragma once

#include <smartarray/smartarray.hpp>

#include <cstddef>
#include <type_traits>

namespace transpose {

namespace sa = smartarray;

/// Tile edge; a block of tile x block_rows threads moves one tile, block_rows rows at a time.
inline constexpr unsigned tile = 32;
inline constexpr unsigned block_rows = 8;

/// The element of `m` at (fast, slow).
template <typename M>
SMARTARRAY_HOST_DEVICE typename M::reference at(const M& m, std::size_t fast, std::size_t slow) {
  if constexpr (std::is_same_v<typename M::layout_type, sa::CLayout>) {
    return m(slow, fast);
  } else {
    return m(fast, slow);
  }
}

/// The extent of the contiguous index of `m`.
template <typename M>
SMARTARRAY_HOST_DEVICE std::size_t fast_extent(const M& m) {
  return std::is_same_v<typename M::layout_type, sa::CLayout> ? m.extent(1) : m.extent(0);
}

/// The extent of the strided index of `m`.
template <typename M>
SMARTARRAY_HOST_DEVICE std::size_t slow_extent(const M& m) {
  return std::is_same_v<typename M::layout_type, sa::CLayout> ? m.extent(0) : m.extent(1);
}

/// out(j, i) = in(i, j), one element per thread and step: reads are coalesced, writes are strided
/// (each thread of a warp writes to a different row of `out`).
template <typename Layout>
__global__ void transpose_naive(sa::ShapedView<const float, 2, Layout> in,
                                sa::ShapedView<float, 2, Layout> out) {
  const std::size_t fast = static_cast<std::size_t>(blockIdx.x) * tile + threadIdx.x;
  for (unsigned j = 0; j < tile; j += block_rows) {
    const std::size_t slow = static_cast<std::size_t>(blockIdx.y) * tile + threadIdx.y + j;
    if (fast < fast_extent(in) && slow < slow_extent(in)) at(out, slow, fast) = at(in, fast, slow);
  }
}

/// out(j, i) = in(i, j) through a shared-memory tile: both the reads and the writes are coalesced.
/// The tile has one padding column so that reading a tile column touches 32 different banks.
template <typename Layout>
__global__ void transpose_tiled(sa::ShapedView<const float, 2, Layout> in,
                                sa::ShapedView<float, 2, Layout> out) {
  __shared__ float block[tile][tile + 1];
  std::size_t fast = static_cast<std::size_t>(blockIdx.x) * tile + threadIdx.x;
  for (unsigned j = 0; j < tile; j += block_rows) {
    const std::size_t slow = static_cast<std::size_t>(blockIdx.y) * tile + threadIdx.y + j;
    if (fast < fast_extent(in) && slow < slow_extent(in)) {
      block[threadIdx.y + j][threadIdx.x] = at(in, fast, slow);
    }
  }
  __syncthreads();
  // The output tile sits at the mirrored block position; its fast index is the input's slow one.
  fast = static_cast<std::size_t>(blockIdx.y) * tile + threadIdx.x;
  for (unsigned j = 0; j < tile; j += block_rows) {
    const std::size_t slow = static_cast<std::size_t>(blockIdx.x) * tile + threadIdx.y + j;
    if (fast < fast_extent(out) && slow < slow_extent(out)) {
      at(out, fast, slow) = block[threadIdx.x][threadIdx.y + j];
    }
  }
}

/// The grid that covers a rows x cols input in `Layout` with one block per tile.
template <typename Layout>
dim3 grid_for(std::size_t rows, std::size_t cols) {
  const std::size_t fast = std::is_same_v<Layout, sa::CLayout> ? cols : rows;
  const std::size_t slow = std::is_same_v<Layout, sa::CLayout> ? rows : cols;
  return dim3(static_cast<unsigned>((fast + tile - 1) / tile),
              static_cast<unsigned>((slow + tile - 1) / tile));
}

/// The block shape of both kernels.
inline dim3 block_shape() { return dim3(tile, block_rows); }

/// Queues `kernel` on `stream`: `out` (cols x rows) becomes the transpose of `in` (rows x cols),
/// both in `Layout` order. `in` is read, `out` is overwritten (nothing is copied into it).
template <typename Layout>
void run(void (*kernel)(sa::ShapedView<const float, 2, Layout>, sa::ShapedView<float, 2, Layout>),
         const sa::SmartArray<float>& in, sa::SmartArray<float>& out, std::size_t rows,
         std::size_t cols, sa::StreamRef stream) {
  sa::launch(kernel, grid_for<Layout>(rows, cols), block_shape(), stream,
             sa::shaped(in, Layout{}, rows, cols), sa::shaped(sa::out(out), Layout{}, cols, rows));
}

}  // namespace transpose
