"""smartarray.dist under mpirun: send and recv of arrays and slices in a ring, and bad input on
one rank raising on every rank with the arrays unchanged (scripts/python_test.sh runs this file
with 2 and 4 ranks)."""
import numpy as np
import pytest

import smartarray as sa
from dist_support import (TRANSPORTS, make_array, message_delta, messages, rank_data,
                          skip_unless_mpirun)

skip_unless_mpirun()


@pytest.fixture(scope="module", params=TRANSPORTS)
def comm(request):
    from mpi4py import MPI
    return sa.dist.Communicator(MPI.COMM_WORLD, transport=request.param)


def ring(comm, send, recv):
    """Each rank sends to the next and receives from the previous: rank 0 sends first, every
    other rank receives first, so that blocking sends never wait on each other."""
    if comm.rank == 0:
        send((comm.rank + 1) % comm.size)
        recv((comm.rank - 1) % comm.size)
    else:
        recv((comm.rank - 1) % comm.size)
        send((comm.rank + 1) % comm.size)


@pytest.mark.parametrize("device_valid", [False, True])
def test_send_and_recv_of_whole_arrays_in_a_ring(comm, device_valid):
    n = 41
    a = make_array(rank_data(comm.rank, n, np.float64, seed=6), device_valid)
    b = sa.SmartArray(np.full(n, np.nan))
    start_a, start_b = messages(a), messages(b)
    ring(comm, lambda dest: sa.dist.send(a, dest, comm=comm, stream=0),
         lambda source: sa.dist.recv(b, source, comm=comm, stream=0))
    previous = (comm.rank - 1) % comm.size
    np.testing.assert_array_equal(np.asarray(b), rank_data(previous, n, np.float64, seed=6))
    assert message_delta(start_a, messages(a)) == {"sent_count": 1, "sent_bytes": a.nbytes,
                                                   "received_count": 0, "received_bytes": 0}
    assert message_delta(start_b, messages(b)) == {"sent_count": 0, "sent_bytes": 0,
                                                   "received_count": 1, "received_bytes": b.nbytes}


def test_slices_move_only_their_elements(comm):
    n, first, count, at = 64, 10, 7, 30
    a = make_array(rank_data(comm.rank, n, np.int32, seed=7), device_valid=True)
    poison = np.full(n, -99, np.int32)
    b = sa.SmartArray(poison)
    host = comm.transport == "mpi_host"
    # The sent slice comes down (mpi_host) or is read where it is (mpi_device); the received one
    # is written on the transport's side: only its 28 bytes move.
    with sa.expect_transfers(d2h=1 if host else 0, d2h_bytes=28 if host else 0, array=a):
        ring(comm, lambda dest: sa.dist.send(a.slice(first, count), dest, tag=5, comm=comm),
             lambda source: sa.dist.recv(b.slice(at, count), source, tag=5, comm=comm))
    previous = rank_data((comm.rank - 1) % comm.size, n, np.int32, seed=7)
    expected = poison.copy()
    expected[at:at + count] = previous[first:first + count]
    with sa.expect_transfers(h2d=0 if host else 0, d2h=0 if host else 1,
                             d2h_bytes=0 if host else 28, array=b):
        np.testing.assert_array_equal(np.asarray(b), expected)
    assert messages(b)["received_bytes"] == count * 4


def test_a_slice_outside_the_array_is_an_index_error():
    a = sa.SmartArray(np.ones(10))
    with pytest.raises(IndexError, match=r"slice\(8, 3\).*\[8, 11\).*10 elements"):
        a.slice(8, 3)
    with pytest.raises(TypeError, match="first must be an int"):
        a.slice(1.5, 2)


def test_a_receive_of_another_size_raises_and_keeps_the_array(comm):
    a = sa.SmartArray(rank_data(comm.rank, 12, np.float32))
    b = sa.SmartArray(np.full(10, 3.0, np.float32))
    if comm.rank == 0:
        sa.dist.send(a, 1, comm=comm)
    elif comm.rank == 1:
        with pytest.raises(ValueError, match="48"):
            sa.dist.recv(b, 0, comm=comm)
        np.testing.assert_array_equal(np.asarray(b), np.full(10, 3.0, np.float32))


def expect_everywhere(error, match, call, *arrays):
    """`call` raises `error` matching `match` on this rank (on every rank, since each runs it),
    and leaves `arrays` unchanged, with no transfer and no message."""
    before = [np.asarray(x).copy() for x in arrays]
    starts = [messages(x) for x in arrays]
    with sa.expect_transfers():
        with pytest.raises(error, match=match):
            call()
    for x, values, start in zip(arrays, before, starts):
        np.testing.assert_array_equal(np.asarray(x), values)
        assert all(v == 0 for v in message_delta(start, messages(x)).values())


def last(comm):
    return comm.rank == comm.size - 1


def test_a_different_width_on_one_rank_raises_on_every_rank(comm):
    a = sa.SmartArray(rank_data(comm.rank, 40, np.float64))
    width = 5 if last(comm) else 4
    expect_everywhere(ValueError, "exchange_halos", lambda: sa.dist.exchange_halos(
        a, width=width, periodic=True, comm=comm), a)


def test_a_negative_width_raises_on_every_rank(comm):
    a = sa.SmartArray(rank_data(comm.rank, 40, np.float64))
    width = -2 if last(comm) else 2
    expect_everywhere(ValueError, "width -2 is negative", lambda: sa.dist.exchange_halos(
        a, width=width, comm=comm), a)


def test_a_different_op_on_one_rank_raises_on_every_rank(comm):
    a = sa.SmartArray(rank_data(comm.rank, 16, np.int64))
    op = "max" if last(comm) else "sum"
    expect_everywhere(ValueError, "op", lambda: sa.dist.all_reduce(a, op=op, comm=comm), a)


def test_an_unknown_op_on_one_rank_raises_on_every_rank_naming_it(comm):
    a = sa.SmartArray(rank_data(comm.rank, 16, np.float32))
    out = sa.SmartArray(np.zeros(16 // comm.size if 16 % comm.size == 0 else 1, np.float32))
    op = "avg" if last(comm) else "sum"
    expect_everywhere(ValueError, "unknown op 'avg'",
                      lambda: sa.dist.all_reduce(a, op=op, comm=comm), a)
    expect_everywhere(ValueError, "unknown op 'avg'",
                      lambda: sa.dist.reduce_scatter(a, out, op=op, comm=comm), a, out)


def test_a_dtype_that_differs_between_ranks_raises_on_every_rank(comm):
    dtype = np.int32 if last(comm) else np.float32  # the same size: only the type differs
    a = sa.SmartArray(rank_data(comm.rank, 16, dtype))
    expect_everywhere(ValueError, "type", lambda: sa.dist.all_reduce(a, comm=comm), a)
    expect_everywhere(ValueError, "type", lambda: sa.dist.broadcast(a, root=0, comm=comm), a)
    expect_everywhere(ValueError, "type", lambda: sa.dist.exchange_halos(a, width=2, comm=comm),
                      a)


def test_a_different_size_or_root_on_one_rank_raises_on_every_rank(comm):
    a = sa.SmartArray(rank_data(comm.rank, 17 if last(comm) else 16, np.float64))
    expect_everywhere(ValueError, "bytes", lambda: sa.dist.all_reduce(a, comm=comm), a)
    b = sa.SmartArray(rank_data(comm.rank, 16, np.float64))
    root = 1 if last(comm) else 0
    expect_everywhere(ValueError, "root", lambda: sa.dist.broadcast(b, root=root, comm=comm), b)
    expect_everywhere(ValueError, "root", lambda: sa.dist.broadcast(b, root=comm.size,
                                                                   comm=comm), b)


def test_a_dtype_that_cannot_be_reduced_is_a_type_error_on_every_rank(comm):
    a = sa.SmartArray(np.ones(8, np.complex64))
    expect_everywhere(TypeError, "dtype complex64",
                      lambda: sa.dist.all_reduce(a, comm=comm), a)
    b = sa.SmartArray(np.ones(8, np.float16))
    expect_everywhere(TypeError, "dtype float16",
                      lambda: sa.dist.all_reduce(b, comm=comm), b)


def test_all_gather_into_another_dtype_is_a_type_error_on_every_rank(comm):
    a = sa.SmartArray(rank_data(comm.rank, 4, np.float32))
    out = sa.SmartArray(np.zeros(4 * comm.size, np.int32))
    expect_everywhere(TypeError, "out has dtype int32, in has dtype float32",
                      lambda: sa.dist.all_gather(a, out, comm=comm), a, out)


def test_an_argument_of_the_wrong_type_on_one_rank_raises_on_every_rank(comm):
    a = sa.SmartArray(rank_data(comm.rank, 16, np.float64))
    before = np.asarray(a).copy()
    argument = list(before) if last(comm) else a
    calls = {
        "all_reduce": lambda: sa.dist.all_reduce(argument, comm=comm),
        "broadcast": lambda: sa.dist.broadcast(argument, root=0, comm=comm),
        "exchange_halos": lambda: sa.dist.exchange_halos(argument, width=2, comm=comm),
    }
    for name, call in calls.items():
        if last(comm):
            with pytest.raises(TypeError, match="a must be a smartarray.SmartArray, not list"):
                call()
        else:
            with pytest.raises(ValueError, match=f"{name}: rank {comm.size - 1}: TypeError"):
                call()
        np.testing.assert_array_equal(np.asarray(a), before)
    # A root of the wrong type on one rank, too.
    root = "0" if last(comm) else 0
    if last(comm):
        with pytest.raises(TypeError, match="root must be an int, not str"):
            sa.dist.broadcast(a, root=root, comm=comm)
    else:
        with pytest.raises(ValueError, match="root must be an int"):
            sa.dist.broadcast(a, root=root, comm=comm)
    np.testing.assert_array_equal(np.asarray(a), before)
