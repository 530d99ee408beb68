"""Shared by the Python examples: Numba's CUDA target when this machine can run it."""
import numpy as np

import smartarray as sa

SKIP_MESSAGE = ("needs a GPU and Numba's CUDA target (numba-cuda): smartarray runs on the host "
                "backend here, whose emulated device Numba kernels cannot use")


def numba_cuda():
    """numba.cuda when kernels can run on smartarray's device, else None."""
    if sa.backend() != "cuda":
        return None
    try:
        from numba import cuda
    except ImportError:
        return None
    return cuda if cuda.is_available() else None


def require_gpu():
    """numba.cuda, or a pytest skip (under pytest) / SystemExit(0) with the reason."""
    cuda = numba_cuda()
    if cuda is None:
        try:
            import pytest
        except ImportError:
            pytest = None
        if pytest is not None and "PYTEST_CURRENT_TEST" in __import__("os").environ:
            pytest.skip(SKIP_MESSAGE)
        print(f"skipped: {SKIP_MESSAGE}")
        raise SystemExit(0)
    return cuda


def rand(n, dtype=np.float32, seed=0, low=0.5, high=1.5):
    rng = np.random.default_rng(seed)
    return (rng.random(n) * (high - low) + low).astype(dtype)


def counts_since(start):
    now = sa.transfer_stats()
    return {k: now[k] - start[k] for k in ("h2d_count", "d2h_count", "d2d_count")}
