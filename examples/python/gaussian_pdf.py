"""The seed notebook's Gaussian pdf ufunc on SmartArrays, checked against NumPy."""
import math

import numpy as np

import smartarray as sa
from _common import counts_since, rand, require_gpu

SQRT_2PI = np.float32(math.sqrt(2 * math.pi))


def test_gaussian_pdf(n=1_000_000):
    require_gpu()
    from numba import vectorize

    @vectorize(["float32(float32, float32, float32)"], target="cuda")
    def gaussian_pdf(x, mean, sigma):
        return math.exp(-0.5 * ((x - mean) / sigma) ** 2) / (sigma * SQRT_2PI)

    x = sa.SmartArray(rand(n, seed=3, low=-3, high=3))
    out = sa.device_array(n, np.float32)
    start = sa.transfer_stats()
    gaussian_pdf(x.gpu(readonly=True), np.float32(0.0), np.float32(1.0), out=out)
    got = out.host()
    assert counts_since(start) == {"h2d_count": 1, "d2h_count": 1, "d2d_count": 0}
    xs = x.host()
    np.testing.assert_allclose(got, np.exp(-0.5 * xs**2) / SQRT_2PI, rtol=1e-5)


if __name__ == "__main__":
    test_gaussian_pdf()
    print("gaussian_pdf: ok")
