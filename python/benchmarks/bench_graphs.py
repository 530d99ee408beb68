#!/usr/bin/env python3
"""Graph replay timings, in one process on a GPU machine: a chain of 10 Numba kernels over
SmartArrays, launched eagerly and replayed from ``sa.capture``, next to the same kernels on CuPy
arrays captured by hand with CuPy's stream capture. Writes JSON (--out) and prints each ratio
against its target.

    SMARTARRAY_BACKEND=cuda $PYTHON python/benchmarks/bench_graphs.py \\
        --out gpu-out/python_bench_graphs.json

($PYTHON: an interpreter with the package, Numba and CuPy (without CuPy, the cupy_graph
contender and its ratio are left out); scripts/gpu_check.sh python runs it.)
The chain: 10 launches of one element-wise kernel, ``out[i] = alpha * x[i] + 1``, ping-ponging
between two arrays after reading an input, on one stream. Contenders (interleaved, each call
ending in a synchronize of the device; the median of --reps calls):
  eager        the 10 launches on a stream of Numba's, the SmartArrays passed themselves
  replay       sa.capture of the same 10 launches, then Graph.launch() per call
  cupy_graph   the same kernel on CuPy arrays (wrapped once as Numba device arrays, so no launch
               converts them), captured with cupy.cuda.Stream.begin_capture/end_capture, then
               cupy's Graph.launch() per call
Targets: eager / replay >= 5 (the graph removes the per-launch host cost), and
replay / cupy_graph <= 1.10 (what smartarray adds to a replay: its residency check of 3 arrays).
Every contender's result is checked against NumPy, and the replays against exact transfer counts
(none at all once resident).
"""
import argparse
import json
import os
import platform
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_seed import paired_medians  # noqa: E402  (the same interleaved timing)

N = 100_000
KERNELS = 10
THREADS = 256
ALPHA = np.float32(0.5)
TARGETS = {"eager_over_replay": (">=", 5.0), "replay_over_cupy_graph": ("<=", 1.10)}


def reference(x):
    """The chain's result in NumPy, in float32 as the kernels compute it."""
    src = x.astype(np.float32)
    for _ in range(KERNELS):
        src = (ALPHA * src + np.float32(1.0)).astype(np.float32)
    return src


def chain(step, blocks, x, a, b, stream):
    """The 10 launches: a = f(x), then b = f(a), a = f(b), ... on `stream`; returns the last."""
    src, dst, other = x, a, b
    for _ in range(KERNELS):
        step[blocks, THREADS, stream](dst, src, ALPHA)
        src, dst, other = dst, other, dst
    return src


def cupy_graph(cp, cuda, step, blocks, data):
    """The chain on CuPy arrays (wrapped once as Numba device arrays), captured by hand on a CuPy
    stream: the contender's call (one replay) and the array its result lands in."""
    cstream = cp.cuda.Stream(non_blocking=True)
    cx = cp.asarray(data)
    ca, cb = cp.empty(N, cp.float32), cp.empty(N, cp.float32)
    nx, na, nb = (cuda.as_cuda_array(c) for c in (cx, ca, cb))
    nstream = cuda.external_stream(cstream.ptr)
    chain(step, blocks, nx, na, nb, nstream)  # the kernel for these argument types, loaded
    cstream.synchronize()
    with cstream:
        cstream.begin_capture()
        clast = chain(step, blocks, nx, na, nb, nstream)
        graph = cstream.end_capture()
    return (lambda: graph.launch(stream=cstream)), clast


def met(name, value):
    op, target = TARGETS[name]
    return value >= target if op == ">=" else value <= target


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="python_bench_graphs.json")
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()

    import smartarray as sa
    from numba import cuda
    from smartarray import _numba
    if sa.backend() != "cuda":
        sys.exit("bench_graphs.py needs the cuda backend (a GPU)")
    try:
        import cupy as cp
    except ImportError:
        cp = None

    @cuda.jit
    def step(out, x, alpha):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = alpha * x[i] + 1.0

    blocks = (N + THREADS - 1) // THREADS
    data = np.random.default_rng(0).uniform(1.0, 2.0, N).astype(np.float32)
    expect = reference(data)

    # SmartArrays on a stream of Numba's. The eager chain runs first: it compiles and loads the
    # kernel (so that the capture records launches only) and makes the device copies that the
    # graph binds.
    stream = cuda.stream()
    x = sa.SmartArray(data)
    a, b = sa.device_array(N, np.float32), sa.device_array(N, np.float32)
    last = chain(step, blocks, x, a, b, stream)
    graph = sa.capture(stream, lambda s: chain(step, blocks, x, a, b, s))
    graph.launch()
    with sa.expect_transfers():  # resident: a replay copies nothing
        for _ in range(10):
            graph.launch()

    def eager():
        chain(step, blocks, x, a, b, stream)

    def replay():
        graph.launch()

    contenders = {"eager": eager, "replay": replay}
    if cp is not None:
        contenders["cupy_graph"], clast = cupy_graph(cp, cuda, step, blocks, data)
    seconds = dict(zip(contenders, paired_medians(list(contenders.values()), args.reps,
                                                  cuda.synchronize)))
    np.testing.assert_allclose(last.copy_to_host(), expect, rtol=1e-5)
    ratios = {"eager_over_replay": seconds["eager"] / seconds["replay"]}
    if cp is not None:
        np.testing.assert_allclose(clast.copy_to_host(), expect, rtol=1e-5)
        ratios["replay_over_cupy_graph"] = seconds["replay"] / seconds["cupy_graph"]

    package, version = _numba.target_version(cuda)
    results = {
        "env": {"python": platform.python_version(), "device": sa.device_name(),
                "numpy": np.__version__, "numba_cuda_target": f"{package} {version}",
                "numba_fast_path": _numba.hooks_installed(),
                "cupy": cp.__version__ if cp is not None else None,
                "reps": args.reps, "n": N, "kernels": KERNELS},
        "seconds": seconds,
        "ratios": {name: {"value": value, "target": " ".join(map(str, TARGETS[name])),
                          "met": met(name, value)} for name, value in ratios.items()},
    }
    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)
    print(f"chain of {KERNELS} Numba kernels at n = {N} ({package} {version}), median of "
          f"{args.reps}, interleaved")
    for name, median in seconds.items():
        print(f"  {name:12} {median * 1e6:9.1f} us")
    for name, entry in results["ratios"].items():
        print(f"  {name:24} {entry['value']:7.3f}  target {entry['target']:8} "
              f"{'met' if entry['met'] else 'MISSED'}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
