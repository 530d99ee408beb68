"""What the distributed tests share: the skip outside mpirun, each rank's data (every rank can
compute every rank's, from the rank and a seed), and the counters of one array."""
import os

import numpy as np
import pytest

import smartarray as sa

UNDER_MPIRUN = any(name in os.environ for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                                   "PMIX_RANK"))


def skip_unless_mpirun():
    """Skips the calling test module in one process: scripts/python_test.sh runs it under mpirun
    with 2 and 4 ranks."""
    if not UNDER_MPIRUN:
        pytest.skip("needs several processes: mpirun -np N python -m pytest python/tests/"
                    "test_dist_*.py (scripts/python_test.sh runs them with 2 and 4 ranks)",
                    allow_module_level=True)

# The transports that run everywhere: the host backend emulates mpi_device; the cuda backend runs
# it only with a CUDA-aware MPI.
HOST_BACKEND = sa.backend() == "host"
TRANSPORTS = ("mpi_host", "mpi_device") if HOST_BACKEND else ("mpi_host",)
host_only = pytest.mark.skipif(not HOST_BACKEND, reason="mpi_device on the host backend")


def rank_data(rank, n, dtype, seed=0):
    """Rank `rank`'s random, non-zero values: they depend on the rank and on the position."""
    rng = np.random.default_rng([seed, rank])
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        return rng.integers(1, 100, size=n).astype(dt)
    return (rng.random(n) + 0.5 + rank).astype(dt)


def messages(a):
    """The sent and received counts and bytes of `a`'s own counters."""
    s = a.transfer_stats()
    return {k: s[k] for k in ("sent_count", "sent_bytes", "received_count", "received_bytes")}


def message_delta(before, after):
    return {k: after[k] - before[k] for k in before}


def make_array(values, device_valid):
    """A SmartArray of `values`, host-valid, or device-valid with a stale host copy."""
    a = sa.SmartArray(values)
    if device_valid:
        a.device_view("read_write")
    return a
