"""A 10-kernel chain on SmartArrays: each input moves to the device once and the result comes
back once, as counted. The intermediates never touch the host."""
import numpy as np

import smartarray as sa
from _common import counts_since, rand, require_gpu


def make_kernels(cuda):
    @cuda.jit
    def axpy(alpha, x, y, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = alpha * x[i] + y[i]
    return axpy


def chain(axpy, x, y, tmp, out, n):
    threads = 256
    blocks = (n + threads - 1) // threads
    xd, yd = x.gpu(readonly=True), y.gpu(readonly=True)
    axpy[blocks, threads](np.float32(1.0), xd, yd, tmp)  # 1
    for k in range(9):  # 2..10, ping-pong between tmp and out
        src, dst = (tmp, out) if k % 2 == 0 else (out, tmp)
        axpy[blocks, threads](np.float32(0.5), src, xd, dst)
    return out  # the 10th kernel (k = 8) wrote out


def reference(x, y):
    r = x + y
    for _ in range(9):
        r = np.float32(0.5) * r + x
    return r


def test_kernel_chain(n=1 << 20):
    cuda = require_gpu()
    axpy = make_kernels(cuda)
    x, y = sa.SmartArray(rand(n, seed=1)), sa.SmartArray(rand(n, seed=2))
    tmp, out = sa.device_array(n, np.float32), sa.device_array(n, np.float32)
    start = sa.transfer_stats()
    result = chain(axpy, x, y, tmp, out, n).host()
    assert counts_since(start) == {"h2d_count": 2, "d2h_count": 1, "d2d_count": 0}
    np.testing.assert_allclose(result, reference(x.host(), y.host()), rtol=1e-5)


if __name__ == "__main__":
    test_kernel_chain()
    print("kernel_chain: ok")
