"""A 2-D Jacobi solver (the heat equation's steady state) over MPI ranks with Numba kernels: the
Python counterpart of examples/distributed_jacobi.cu. The nx x ny grid is decomposed by rows, one
block and one GPU per rank, each block with a halo row above and below. Every iteration sweeps the
block on the device, then exchanges the halo rows (smartarray.dist.exchange_halos: over NCCL,
device to device with no host copy and no host wait); every `check` iterations the squared
change is summed on the device and all-reduced. The blocks are gathered at the end and checked
against the same iterations on one process (NumPy).

    mpirun -np 4 python examples/python/distributed_jacobi.py [--quick] [--nx N] [--ny N]
        [--iterations N] [--check N] [--graph K] [--time]

Over NCCL, runs of K iterations between residuals (--graph K, K even, 10 by default) are captured
once (sa.capture, on a stream of smartarray's) and replayed: a small grid's iteration is bound by
the cost of a Numba launch, and a replay launches K iterations at once. --graph 0, and every
transport over MPI (a transfer runs on the host when it is called and cannot be captured), run
the iterations one by one on the default stream, on which smartarray hands Numba its own device
arrays (another stream's arrays make Numba wait on the host for it at every launch). On the host
backend (no GPU) it reports skipped: Numba kernels need a GPU.
"""
import argparse
import math
import time

import numpy as np

import smartarray as sa
from _common import require_gpu

THREADS = (32, 8)  # a block of 32 columns by 8 rows
BLOCK = THREADS[0] * THREADS[1]  # a plain int: Numba takes it as the shared array's size


def make_kernels(cuda):
    quarter = np.float32(0.25)

    @cuda.jit
    def sweep(a, a_new, nx, rows):
        """a_new's interior points, rows 1 to rows of the block, become the mean of their four
        neighbours in a."""
        x, r = cuda.grid(2)
        if 1 <= x < nx - 1 and 1 <= r <= rows:
            i = r * nx + x
            a_new[i] = quarter * (a[i - 1] + a[i + 1] + a[i - nx] + a[i + nx])

    @cuda.jit
    def sweep_with_change(a, a_new, nx, rows, total):
        """sweep(), adding the squared change of the block's points to total[0] (one atomic add
        per block of threads)."""
        partial = cuda.shared.array(BLOCK, np.float32)
        x, r = cuda.grid(2)
        t = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
        change = np.float32(0.0)
        if 1 <= x < nx - 1 and 1 <= r <= rows:
            i = r * nx + x
            value = quarter * (a[i - 1] + a[i + 1] + a[i - nx] + a[i + nx])
            a_new[i] = value
            change = (value - a[i]) * (value - a[i])
        partial[t] = change
        cuda.syncthreads()
        step = BLOCK // 2
        while step > 0:
            if t < step:
                partial[t] += partial[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            cuda.atomic.add(total, 0, partial[0])

    return sweep, sweep_with_change


def boundary(y, ny):
    """The left and right columns' fixed values: sin(2 pi y / (ny - 1))."""
    return np.sin(np.float32(2.0 * math.pi) * np.float32(y) / np.float32(ny - 1)).astype(np.float32)


def initial(row0, rows, nx, ny):
    """Grid rows row0 - 1 to row0 + rows (the block and its halo rows), the boundary columns set."""
    block = np.zeros((rows + 2, nx), np.float32)
    y = np.arange(row0 - 1, row0 + rows + 1)
    inside = y < ny
    block[inside, 0] = block[inside, nx - 1] = boundary(y[inside], ny)
    return block.ravel()


def one_process(nx, ny, iterations):
    """The same iterations on the whole grid, with NumPy: rows 1 to ny - 2."""
    u = initial(1, ny - 2, nx, ny).reshape(ny, nx)
    v = u.copy()
    for _ in range(iterations):
        v[1:-1, 1:-1] = np.float32(0.25) * (u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1])
        u, v = v, u
    return u[1:-1].ravel()


def compile_kernels(kernels, dtype):
    """Numba compiles a kernel at its first launch: both kernels are launched once here, with
    arguments of the solver's types, so that no iteration pays for it."""
    sweep, sweep_with_change = kernels
    a, a_new, total = (sa.SmartArray(np.zeros(n, dtype)) for n in (9, 9, 1))
    sweep[1, THREADS](a.gpu(stream=0, readonly=True), a_new, 3, 1)
    sweep_with_change[1, THREADS](a.gpu(stream=0, readonly=True), a_new, 3, 1, total)
    sa.synchronize()


def capture_run(k, a, a_new, sweep, grid, comm, nx, rows, stream):
    """K iterations (K even) of the sweep from a into a_new, the exchange and back, captured on
    `stream`: a graph whose replay leaves `a` as K iterations one by one would."""
    from numba import cuda

    def iterations(s):
        # Numba's launch takes Numba's streams only: smartarray's, in Numba's terms.
        launch = sweep[grid, THREADS, cuda.external_stream(s.handle)]
        source, target = a, a_new
        for _ in range(k):
            launch(source.gpu(stream=s, readonly=True), target, nx, rows)
            sa.dist.exchange_halos(target, width=nx, comm=comm, stream=s)
            source, target = target, source
    return sa.capture(stream, iterations)


def solve(comm, nx, ny, iterations, check, kernels, graph=10, report=print):
    """Runs the solver on this rank's block; returns (the block's rows, seconds per iteration)."""
    sweep, sweep_with_change = kernels
    ranks = comm.size
    rows = (ny - 2) // ranks
    if (ny - 2) % ranks != 0 or rows < 3:
        raise ValueError(f"distributed_jacobi: {ny - 2} rows do not divide among {ranks} ranks, "
                         "3 or more each")
    row0 = 1 + rows * comm.rank
    a = sa.SmartArray(initial(row0, rows, nx, ny))
    a_new = sa.SmartArray(np.asarray(a))
    total = sa.SmartArray(np.zeros(1, np.float32))
    grid = ((nx + THREADS[0] - 1) // THREADS[0], (rows + 2 + THREADS[1] - 1) // THREADS[1])
    compile_kernels(kernels, a.dtype)
    # NCCL connects the ranks for a collective at its first call (0.2 s on 2 H200): one sum
    # before the loop keeps that out of the timed iterations.
    sa.dist.all_reduce(total, op="sum", comm=comm, stream=0)
    float(total[0])
    # Each kernel configured once: a launch then only passes its arguments. The arrays written
    # are passed themselves (a read_write acquire on the launch stream, the default one); the one
    # read as a.gpu(readonly=True), so that its host copy stays valid.
    sweep_block = sweep[grid, THREADS]
    sweep_block_with_change = sweep_with_change[grid, THREADS]
    # Graphs of `graph` iterations from each of the two arrays, where the transport can capture.
    graph = graph if comm.transport == "nccl" else 0
    stream = sa.Stream() if graph else None
    graphs = {}
    start = time.perf_counter()
    it = 1
    while it <= iterations:
        if it == 2:  # the time per iteration leaves out the first, which uploads the blocks
            sa.synchronize()
            if graph:
                graphs = {id(x): capture_run(graph, x, y, sweep, grid, comm, nx, rows, stream)
                          for x, y in ((a, a_new), (a_new, a))}
            start = time.perf_counter()
        last = it + graph - 1
        if graphs and last < iterations and (it - 1) // check == last // check:
            graphs[id(a)].launch()  # iterations it to last, none of them a residual's
            it = last + 1
            continue
        checking = it % check == 0 or it == iterations
        if checking:
            total[0] = 0.0
            sweep_block_with_change(a.gpu(stream=0, readonly=True), a_new, nx, rows, total)
        else:
            sweep_block(a.gpu(stream=0, readonly=True), a_new, nx, rows)
        sa.dist.exchange_halos(a_new, width=nx, comm=comm, stream=0)
        if checking:
            sa.dist.all_reduce(total, op="sum", comm=comm, stream=0)
            residual = math.sqrt(float(total[0]))
            if comm.rank == 0:
                report(f"iteration {it:4d}: residual {residual:.6e}")
        a, a_new = a_new, a
        it += 1
    sa.synchronize()
    if stream is not None:
        stream.synchronize()
    seconds = (time.perf_counter() - start) / max(1, iterations - 1)
    return np.asarray(a)[nx:(rows + 1) * nx].copy(), seconds


def run(nx, ny, iterations, check=50, show_time=False, graph=10, report=print):
    """The solver on every rank of MPI.COMM_WORLD, checked on rank 0 against one process; returns
    the largest difference (on every rank)."""
    cuda = require_gpu()
    from mpi4py import MPI
    comm = sa.dist.Communicator(MPI.COMM_WORLD)
    if graph < 0 or graph % 2:
        raise ValueError(f"distributed_jacobi: --graph {graph} is not an even number of iterations "
                         "(0 or more): a graph of an even number leaves the result in the array it "
                         "started from")
    mine, seconds = solve(comm, nx, ny, iterations, check, make_kernels(cuda), graph, report)
    gathered = sa.SmartArray(np.zeros(mine.size * comm.size, np.float32))
    sa.dist.all_gather(sa.SmartArray(mine), gathered, comm=comm)
    worst = np.zeros(1, np.float32)
    if comm.rank == 0:
        worst[0] = np.max(np.abs(np.asarray(gathered) - one_process(nx, ny, iterations)))
        report(f"{comm.size} ranks ({comm.transport}), {nx} x {ny} grid, {iterations} "
               f"iterations: largest difference from one process {worst[0]:.3e}")
    slowest = comm.mpi_comm.allreduce(seconds, op=MPI.MAX)
    if show_time and comm.rank == 0:
        report(f"time per iteration: {slowest * 1e3:.4f} ms (the slowest rank)")
    comm.mpi_comm.Bcast(worst, root=0)
    return float(worst[0])


def test_distributed_jacobi():
    """On 1 to N ranks (under mpirun, every rank runs it): the quick grid, with runs of 10
    iterations replayed as graphs where the transport is NCCL (one by one over MPI)."""
    assert run(258, 130, 200, report=lambda line: None) <= 1e-5


def test_distributed_jacobi_eager():
    """The same with every iteration launched one by one."""
    assert run(258, 130, 200, graph=0, report=lambda line: None) <= 1e-5


def test_distributed_jacobi_graph_short_runs():
    """Runs of 6 iterations and residuals every 20 iterations: runs end short of a residual's
    iteration."""
    assert run(258, 130, 200, check=20, graph=6, report=lambda line: None) <= 1e-5


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 258 x 130 grid, 200 iterations")
    parser.add_argument("--nx", type=int, default=None, help="columns (default 1026)")
    parser.add_argument("--ny", type=int, default=None, help="rows (default 1026)")
    parser.add_argument("--iterations", type=int, default=None, help="default 500")
    parser.add_argument("--check", type=int, default=50, help="iterations between residuals")
    parser.add_argument("--graph", type=int, default=10,
                        help="replay runs of this many iterations (even; 0: none) as graphs over "
                        "NCCL (default 10)")
    parser.add_argument("--time", action="store_true", help="print the time per iteration")
    args = parser.parse_args()
    nx = args.nx or (258 if args.quick else 1026)
    ny = args.ny or (130 if args.quick else 1026)
    iterations = args.iterations or (200 if args.quick else 500)
    ok = run(nx, ny, iterations, args.check, args.time, args.graph) <= 1e-5
    from mpi4py import MPI
    if MPI.COMM_WORLD.Get_rank() == 0:
        print("OK" if ok else "FAILED")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
