"""The seed notebook's polar distance ufunc (a device function called from a vectorize)."""
import math

import numpy as np

import smartarray as sa
from _common import counts_since, rand, require_gpu


def test_polar_distance(n=1_000_000):
    cuda = require_gpu()
    from numba import vectorize

    @cuda.jit(device=True)
    def polar_to_cartesian(rho, theta):
        return rho * math.cos(theta), rho * math.sin(theta)

    @vectorize(["float32(float32, float32, float32, float32)"], target="cuda")
    def polar_distance(rho1, theta1, rho2, theta2):
        x1, y1 = polar_to_cartesian(rho1, theta1)
        x2, y2 = polar_to_cartesian(rho2, theta2)
        return ((x1 - x2) ** 2 + (y1 - y2) ** 2) ** 0.5

    r1, t1 = sa.SmartArray(rand(n, seed=1)), sa.SmartArray(rand(n, seed=2, low=-3, high=3))
    r2, t2 = sa.SmartArray(rand(n, seed=3)), sa.SmartArray(rand(n, seed=4, low=-3, high=3))
    out = sa.device_array(n, np.float32)
    start = sa.transfer_stats()
    polar_distance(*(v.gpu(readonly=True) for v in (r1, t1, r2, t2)), out=out)
    got = out.host()
    assert counts_since(start) == {"h2d_count": 4, "d2h_count": 1, "d2d_count": 0}
    R1, T1, R2, T2 = (v.host().astype(np.float64) for v in (r1, t1, r2, t2))
    expect = np.hypot(R1 * np.cos(T1) - R2 * np.cos(T2), R1 * np.sin(T1) - R2 * np.sin(T2))
    np.testing.assert_allclose(got, expect, rtol=1e-4, atol=1e-5)


if __name__ == "__main__":
    test_polar_distance()
    print("polar_distance: ok")
