"""The seed notebook's first cell: an add ufunc (@vectorize(target='cuda')) on SmartArrays, with
the transfers counted. On the host backend (no GPU) it shows the same residency protocol on the
emulated device: the "kernel" is NumPy writing the device copy, then gpu_changed()."""
import numpy as np

import smartarray as sa
from _common import counts_since, numba_cuda, rand, require_gpu


def run_gpu(n=1_000_000):
    cuda = require_gpu()
    from numba import vectorize

    @vectorize(["float32(float32, float32)"], target="cuda")
    def add(x, y):
        return x + y

    a, b = sa.SmartArray(rand(n, seed=1)), sa.SmartArray(rand(n, seed=2))
    out = sa.SmartArray(shape=n, dtype=np.float32, where="gpu")
    start = sa.transfer_stats()
    add(a.gpu(readonly=True), b.gpu(readonly=True), out=out)
    result = out.host()
    counts = counts_since(start)
    np.testing.assert_allclose(result, a.host() + b.host(), rtol=1e-6)
    assert counts == {"h2d_count": 2, "d2h_count": 1, "d2d_count": 0}, counts
    return counts


def run_emulated(n=100_000):
    a, b = sa.SmartArray(rand(n, seed=1)), sa.SmartArray(rand(n, seed=2))
    out = sa.device_array(n, np.float32)
    start = sa.transfer_stats()
    da, db = a.gpu(readonly=True), b.gpu(readonly=True)  # one H2D each
    np.add(da.emulated_ndarray(), db.emulated_ndarray(), out=out.gpu().emulated_ndarray())
    out.gpu_changed()
    result = out.host()  # one D2H
    counts = counts_since(start)
    np.testing.assert_allclose(result, a.host() + b.host(), rtol=1e-6)
    assert counts == {"h2d_count": 2, "d2h_count": 1, "d2d_count": 0}, counts
    return counts


def test_seed_add():
    run_gpu()


def test_seed_add_emulated():
    if sa.backend() != "host":
        import pytest
        pytest.skip("the emulated device is the host backend's")
    run_emulated()


if __name__ == "__main__":
    print(f"smartarray {sa.__version__}, backend {sa.backend()} ({sa.device_name()})")
    if numba_cuda() is not None:
        counts = run_gpu()
        print("add ufunc on the GPU: result matches NumPy")
    else:
        counts = run_emulated()
        print("no GPU: the add ran on the host backend's emulated device; result matches NumPy")
    print(f"transfers: {counts['h2d_count']} H2D (a, b), {counts['d2h_count']} D2H (out), "
          f"{counts['d2d_count']} D2D")
    print("process-wide:", {k: v for k, v in sa.transfer_stats().items() if v})
