"""The seed notebook's grid-stride cuda.jit add, SmartArrays passed straight to the kernel."""
import numpy as np

import smartarray as sa
from _common import counts_since, rand, require_gpu


def test_grid_stride_add(n=1 << 22):
    cuda = require_gpu()

    @cuda.jit
    def add_kernel(x, y, out):
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, x.shape[0], stride):
            out[i] = x[i] + y[i]

    x, y = sa.SmartArray(rand(n, seed=1)), sa.SmartArray(rand(n, seed=2))
    out = sa.SmartArray(np.full(n, -1.0, np.float32))  # poisoned on the host
    out.gpu()  # one H2D of the poison, so that a missed write shows
    start = sa.transfer_stats()
    # x.gpu(readonly=True): a read acquire, the host stays valid. `out` itself: its
    # __cuda_array_interface__ is a read_write acquire (the host copy becomes stale).
    add_kernel[128, 256](x.gpu(readonly=True), y.gpu(readonly=True), out)
    got = out.host()
    assert counts_since(start) == {"h2d_count": 2, "d2h_count": 1, "d2d_count": 0}
    np.testing.assert_allclose(got, x.host() + y.host(), rtol=1e-6)


if __name__ == "__main__":
    test_grid_stride_add()
    print("grid_stride_add: ok")
