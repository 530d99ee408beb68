"""The seed notebook's shared-memory tiled transpose of a 2-D SmartArray."""
import numpy as np

import smartarray as sa
from _common import counts_since, require_gpu

TILE = 32
TILE_PADDED = 33  # a literal: Numba needs a constant shape for shared arrays


def test_transpose(rows=1000, cols=1500):
    cuda = require_gpu()
    from numba import float32

    @cuda.jit
    def transpose(a, out):
        tile = cuda.shared.array((TILE, TILE_PADDED), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        x = cuda.blockIdx.x * TILE + tx
        y = cuda.blockIdx.y * TILE + ty
        if y < a.shape[0] and x < a.shape[1]:
            tile[ty, tx] = a[y, x]
        cuda.syncthreads()
        x = cuda.blockIdx.y * TILE + tx
        y = cuda.blockIdx.x * TILE + ty
        if y < out.shape[0] and x < out.shape[1]:
            out[y, x] = tile[tx, ty]

    src = np.random.default_rng(7).random((rows, cols)).astype(np.float32) + 0.5
    a = sa.SmartArray(src)
    out = sa.device_array((cols, rows), np.float32)
    start = sa.transfer_stats()
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    transpose[grid, (TILE, TILE)](a.gpu(readonly=True), out)
    got = out.host()
    assert counts_since(start) == {"h2d_count": 1, "d2h_count": 1, "d2d_count": 0}
    np.testing.assert_array_equal(got, src.T)


if __name__ == "__main__":
    test_transpose()
    print("transpose: ok")
