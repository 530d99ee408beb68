import numpy as np
import pytest

import smartarray as sa

ALL_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]

ON_GPU = sa.backend() == "cuda"
host_only = pytest.mark.skipif(ON_GPU, reason="host backend semantics (emulated device)")
gpu_only = pytest.mark.skipif(not ON_GPU, reason="needs a GPU (the host backend has none)")


def random_array(shape, dtype, seed=0, order="C"):
    """Random non-zero data of `dtype`."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        a = rng.integers(0, 2, size=shape).astype(bool)
        a.flat[0] = True
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        a = rng.integers(1, min(info.max, 1000), size=shape, dtype=dt)
    elif dt.kind == "f":
        a = (rng.random(shape) + 0.5).astype(dt)
    else:
        a = (rng.random(shape) + 0.5 + 1j * (rng.random(shape) + 0.5)).astype(dt)
    return np.asarray(a, order=order)


def delta(before, after):
    return {k: after[k] - before[k] for k in ("h2d_count", "d2h_count", "d2d_count")}


@pytest.fixture
def counts():
    """counts() -> the h2d/d2h/d2d counts since the test started."""
    start = sa.transfer_stats()
    return lambda: delta(start, sa.transfer_stats())


def pytest_report_header():
    """Which of Numba's CUDA targets the interop tests use, and whether SmartArrays passed to its
    kernels and ufuncs take the fast path."""
    import importlib.util
    if not ON_GPU or importlib.util.find_spec("numba") is None:
        return None
    from numba import cuda

    from smartarray import _numba
    package, version = _numba.target_version(cuda)
    sa.SmartArray(np.ones(1))  # installs the fast path where supported
    return (f"Numba CUDA target: {package} {version}; SmartArrays passed to kernels and ufuncs: "
            f"{'fast path' if _numba.hooks_installed() else 'interface path'}")
