"""smartarray.dist under mpirun: the communicator, the halo exchange and the collectives, with
exact values and counts (scripts/python_test.sh runs this file with 2 and 4 ranks)."""
import numpy as np
import pytest

import smartarray as sa
from dist_support import (HOST_BACKEND, TRANSPORTS, host_only, make_array, message_delta,
                          messages, rank_data, skip_unless_mpirun)

skip_unless_mpirun()


@pytest.fixture(scope="module", params=TRANSPORTS)
def comm(request):
    from mpi4py import MPI
    return sa.dist.Communicator(MPI.COMM_WORLD, transport=request.param)


def test_communicator_matches_mpi4py():
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    comm = sa.dist.Communicator(world)
    assert (comm.rank, comm.size) == (world.Get_rank(), world.Get_size())
    if HOST_BACKEND:
        assert comm.transport == "mpi_host"  # the host backend's default
    assert comm.mpi_comm is world
    if not HOST_BACKEND:
        return
    sub = world.Split(world.Get_rank() % 2, world.Get_rank())
    half = sa.dist.Communicator(sub, transport="mpi_device")
    assert (half.rank, half.size, half.transport) == (sub.Get_rank(), sub.Get_size(),
                                                      "mpi_device")


def test_a_communicator_needs_an_mpi4py_communicator():
    with pytest.raises(TypeError, match="mpi4py communicator.*builtins.int"):
        sa.dist.Communicator(42)
    from mpi4py import MPI
    a = sa.SmartArray(np.ones(8))
    with pytest.raises(TypeError, match="smartarray.dist.Communicator.*mpi4py.MPI.Intracomm"):
        sa.dist.exchange_halos(a, width=1, comm=MPI.COMM_WORLD)


@pytest.mark.parametrize("periodic", [False, True])
@pytest.mark.parametrize("device_valid", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_halo_exchange_values_and_counts(comm, periodic, device_valid, dtype):
    rank, size, w = comm.rank, comm.size, 3
    n = 2 * w + 17
    before = rank_data(rank, n, dtype, seed=1)
    a = make_array(before, device_valid)
    left = rank - 1 if rank > 0 else (size - 1 if periodic else -1)
    right = rank + 1 if rank < size - 1 else (0 if periodic else -1)
    neighbours = (left >= 0) + (right >= 0)
    halo = w * np.dtype(dtype).itemsize
    host = comm.transport == "mpi_host"
    # mpi_host copies the boundaries of device-valid data down; mpi_device those of host-valid
    # data up; nothing else moves.
    down = neighbours if device_valid and host else 0
    up = neighbours if not device_valid and not host else 0
    start = messages(a)
    with sa.expect_transfers(h2d=up, h2d_bytes=up * halo, d2h=down, d2h_bytes=down * halo,
                             array=a):
        sa.dist.exchange_halos(a, width=w, periodic=periodic, comm=comm, stream=0)
    assert message_delta(start, messages(a)) == {
        "sent_count": neighbours, "sent_bytes": neighbours * halo,
        "received_count": neighbours, "received_bytes": neighbours * halo}
    expected = before.copy()
    if left >= 0:
        expected[:w] = rank_data(left, n, dtype, seed=1)[n - 2 * w:n - w]
    if right >= 0:
        expected[n - w:] = rank_data(right, n, dtype, seed=1)[w:2 * w]
    np.testing.assert_array_equal(np.asarray(a), expected)


@host_only
def test_halo_exchange_of_device_valid_data_over_mpi_device_copies_nothing():
    from mpi4py import MPI
    comm = sa.dist.Communicator(MPI.COMM_WORLD, transport="mpi_device")
    a = make_array(rank_data(comm.rank, 64, np.float32), device_valid=True)
    with sa.expect_transfers(array=a):
        sa.dist.exchange_halos(a, width=4, periodic=True, comm=comm)
    assert not a.is_valid("host")


OPS = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint32,
                                   np.uint64, np.int8, np.uint16])
def test_all_reduce_each_op(comm, op, dtype):
    n = 37
    every = [rank_data(r, n, dtype, seed=2) for r in range(comm.size)]
    if op == "prod" or np.dtype(dtype).itemsize <= 2:  # small values: no overflow
        every = [(e % 3 + 1).astype(dtype) for e in every]
    a = sa.SmartArray(every[comm.rank])
    start = messages(a)
    sa.dist.all_reduce(a, op=op, comm=comm, stream=0)
    expected = OPS[op](np.stack(every), axis=0).astype(dtype)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(np.asarray(a), expected, rtol=1e-6)
    else:
        np.testing.assert_array_equal(np.asarray(a), expected)
    nbytes = a.nbytes
    assert message_delta(start, messages(a)) == {"sent_count": 1, "sent_bytes": nbytes,
                                                 "received_count": 1, "received_bytes": nbytes}


@host_only
def test_all_reduce_in_device_memory_copies_nothing_between_host_and_device():
    from mpi4py import MPI
    comm = sa.dist.Communicator(MPI.COMM_WORLD, transport="mpi_device")
    values = rank_data(comm.rank, 100, np.int64)
    a = make_array(values, device_valid=True)
    with sa.expect_transfers(array=a):
        sa.dist.all_reduce(a, comm=comm)
    with sa.expect_transfers(d2h=1, d2h_bytes=a.nbytes, array=a):
        got = np.asarray(a).copy()
    every = [rank_data(r, 100, np.int64) for r in range(comm.size)]
    np.testing.assert_array_equal(got, np.sum(every, axis=0))


@pytest.mark.parametrize("dtype", [np.float64, np.complex64, np.bool_])
def test_broadcast_from_the_last_rank(comm, dtype):
    root = comm.size - 1
    values = rank_data(root, 29, np.float64, seed=3).astype(dtype)
    a = sa.SmartArray(values if comm.rank == root else np.zeros(29, dtype))
    start = messages(a)
    sa.dist.broadcast(a, root=root, comm=comm)
    np.testing.assert_array_equal(np.asarray(a), values)
    assert message_delta(start, messages(a)) == {"sent_count": 1, "sent_bytes": a.nbytes,
                                                 "received_count": 1, "received_bytes": a.nbytes}


def test_all_gather_in_rank_order(comm):
    n = 11
    a = sa.SmartArray(rank_data(comm.rank, n, np.int32, seed=4))
    out = sa.SmartArray(np.full(n * comm.size, -7, np.int32))
    start_in, start_out = messages(a), messages(out)
    sa.dist.all_gather(a, out, comm=comm)
    expected = np.concatenate([rank_data(r, n, np.int32, seed=4) for r in range(comm.size)])
    np.testing.assert_array_equal(np.asarray(out), expected)
    assert message_delta(start_in, messages(a))["sent_bytes"] == a.nbytes
    assert message_delta(start_out, messages(out))["received_bytes"] == out.nbytes


@pytest.mark.parametrize("op", list(OPS))
def test_reduce_scatter_leaves_each_rank_its_block(comm, op):
    block = 5
    every = [rank_data(r, block * comm.size, np.int64, seed=5) % 4 + 1 for r in range(comm.size)]
    a = sa.SmartArray(every[comm.rank])
    out = sa.SmartArray(np.full(block, -1, np.int64))
    start = messages(out)
    sa.dist.reduce_scatter(a, out, op=op, comm=comm)
    mine = slice(comm.rank * block, (comm.rank + 1) * block)
    np.testing.assert_array_equal(np.asarray(out), OPS[op](np.stack(every), axis=0)[mine])
    assert message_delta(start, messages(out))["received_bytes"] == out.nbytes
