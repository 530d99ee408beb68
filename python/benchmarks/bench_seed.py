#!/usr/bin/env python3
"""The seed notebook's timings, in one process on a GPU machine: smartarray next to Numba (and
CuPy when installed). Writes JSON (--out) and prints the ratio table of docs/python.md.

    SMARTARRAY_BACKEND=cuda $PYTHON python/benchmarks/bench_seed.py --out gpu-out/python_bench.json

($PYTHON: an interpreter with the package, Numba and optionally CuPy; scripts/gpu_check.sh python
runs it.) Cases (each the median of --reps calls, 4x as many for the resident ones, every call
ending in a synchronize; the contenders of a case run interleaved):
  host_add      the seed add (@vectorize target='cuda'), fresh host data each call: SmartArrays
                (data written into the host copies, host_changed(), the ufunc called on the
                SmartArrays themselves with out=, out.host()) against Numba on NumPy host arrays
                (goal: SmartArray >= 5x faster); host_add_floor is what no library avoids:
                writing the fresh data plus Numba's own ufunc on device arrays
  jit_add, vectorize_add
                the same add with the data resident, the SmartArrays passed themselves (inputs and
                out) to a cuda.jit kernel and to the ufunc, against the same call on Numba's own
                device arrays (goal: <= 1.10x), on the default stream and on a stream of Numba's
                (_stream rows: arrays made with stream=s, launched on s); each checks that its
                calls copy nothing; with CuPy, the same call on CuPy arrays runs interleaved too
                (_vs_cupy rows: the baseline once numba-cuda has removed its own arrays)
The header names the CUDA target in use (numba.cuda.implementation: "Built-in", Numba's own, or
"NVIDIA", numba-cuda, which takes over numba.cuda through a .pth file once installed in the
interpreter's own site-packages) and its version.
  chain         a 10-kernel chain on SmartArrays passed themselves, against hand-written
                to_device/copy_to_host (goal: <= 1.10x)
  export_us     the per-call cost of __cuda_array_interface__, gpu(readonly=True) and __dlpack__
                on a resident array, in microseconds (CuPy's and Numba's own CAI for reference)
"""
import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np

SIZES = [100_000, 1_000_000, 16_000_000]


def paired_medians(fns, reps, sync):
    """The median seconds per call of each of `fns`, run interleaved (f0, f1, ..., f0, f1, ...) so
    that clock and load drift hit every contender alike; each call ends in a synchronize."""
    for fn in fns:
        fn()
    sync()
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, samples in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            sync()
            samples.append(time.perf_counter() - t0)
    return [statistics.median(samples) for samples in times]


def per_call_us(fn, n=20000):
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="python_bench.json")
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()

    import smartarray as sa
    from numba import cuda, vectorize
    from smartarray import _numba
    if sa.backend() != "cuda":
        sys.exit("bench_seed.py needs the cuda backend (a GPU)")
    try:
        import cupy as cp
    except ImportError:
        cp = None

    sync = cuda.synchronize

    @vectorize(["float32(float32, float32)"], target="cuda")
    def add_ufunc(x, y):
        return x + y

    @cuda.jit
    def add_kernel(x, y, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = x[i] + y[i]

    @cuda.jit
    def axpy(alpha, x, y, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = alpha * x[i] + y[i]

    package, version = _numba.target_version(cuda)
    implementation = getattr(cuda, "implementation", "Built-in")
    print(f"CUDA target: numba.cuda.implementation = {implementation!r} ({package} {version}), "
          f"fast path {'installed' if _numba.hooks_installed() else 'not installed'}")
    rng = np.random.default_rng(0)
    results = {"env": {"python": platform.python_version(), "device": sa.device_name(),
                       "gpus": len(sa.gpus), "numpy": np.__version__,
                       "numba": __import__("numba").__version__,
                       "numba_cuda_implementation": implementation,
                       "numba_cuda_target": f"{package} {version}",
                       "numba_fast_path": _numba.hooks_installed(),
                       "cupy": cp.__version__ if cp else None, "reps": args.reps},
               "cases": []}

    def record(case, n, ours, theirs, goal, note=""):
        results["cases"].append({"case": case, "n": n, "smartarray_s": ours, "baseline_s": theirs,
                                 "ratio": ours / theirs, "goal": goal, "note": note})

    for n in SIZES:
        threads = 256
        blocks = (n + threads - 1) // threads
        fresh = [(rng.random(n).astype(np.float32), rng.random(n).astype(np.float32))
                 for _ in range(2)]

        # --- host_add: fresh host data each call ---
        ha, hb = np.empty(n, np.float32), np.empty(n, np.float32)
        k = [0]

        def numba_host():
            x, y = fresh[k[0] % 2]
            k[0] += 1
            np.copyto(ha, x)
            np.copyto(hb, y)
            return add_ufunc(ha, hb)

        a, b = sa.SmartArray(shape=n, dtype=np.float32), sa.SmartArray(shape=n, dtype=np.float32)
        out = sa.device_array(n, np.float32)

        def smart_host():
            x, y = fresh[k[0] % 2]
            k[0] += 1
            np.copyto(a.host(), x)
            a.host_changed()
            np.copyto(b.host(), y)
            b.host_changed()
            return add_ufunc(a, b, out=out).host()

        np.testing.assert_allclose(smart_host(), np.add(*fresh[(k[0] - 1) % 2]))

        # What no library can avoid: writing the fresh data (in both contenders) and Numba's own
        # ufunc dispatch on device arrays.
        dx, dy, dz = cuda.to_device(fresh[0][0]), cuda.to_device(fresh[0][1]), \
            cuda.device_array(n, np.float32)

        def write_only():
            x, y = fresh[k[0] % 2]
            k[0] += 1
            np.copyto(ha, x)
            np.copyto(hb, y)

        t_numba, t_smart, t_write, t_ufunc = paired_medians(
            [numba_host, smart_host, write_only, lambda: add_ufunc(dx, dy, out=dz)],
            args.reps, sync)
        record("host_add", n, t_smart, t_numba, "numba/smartarray >= 5",
               f"speedup {t_numba / t_smart:.2f}x")
        record("host_add_floor", n, t_write + t_ufunc, t_numba, "(reference)",
               f"writing the data ({t_write * 1e3:.3f} ms) + Numba's device-array ufunc "
               f"({t_ufunc * 1e3:.3f} ms), no transfer: at most "
               f"{t_numba / (t_write + t_ufunc):.2f}x faster than Numba")

        # --- resident: the SmartArrays themselves, to the kernel and to the ufunc ---
        for suffix, stream in (("", 0), ("_stream", cuda.stream())):
            x, y = fresh[0]
            da, db = cuda.to_device(x, stream=stream), cuda.to_device(y, stream=stream)
            dout = cuda.device_array(n, np.float32, stream=stream)
            sa_a, sa_b = sa.to_device(x, stream=stream), sa.to_device(y, stream=stream)
            sa_out = sa.device_array(n, np.float32, stream=stream)
            stream_sync = stream.synchronize if stream else sync
            if cp is not None:
                ca, cb, cout = cp.asarray(x), cp.asarray(y), cp.empty(n, cp.float32)
                cp.cuda.Device().synchronize()
            contenders = {
                "jit_add": (lambda: add_kernel[blocks, threads, stream](da, db, dout),
                            lambda: add_kernel[blocks, threads, stream](sa_a, sa_b, sa_out),
                            lambda: add_kernel[blocks, threads, stream](ca, cb, cout)),
                "vectorize_add": (lambda: add_ufunc(da, db, out=dout, stream=stream),
                                  lambda: add_ufunc(sa_a, sa_b, out=sa_out, stream=stream),
                                  lambda: add_ufunc(ca, cb, out=cout, stream=stream)),
            }
            where = ", on a stream of Numba's" if stream else ", default stream"
            for case, (numba_call, smart_call, cupy_call) in contenders.items():
                sa_out.copy_to_device(np.full(n, np.nan, np.float32), stream=stream)  # poison
                smart_call()
                np.testing.assert_allclose(sa_out.copy_to_host(), x + y)
                with sa.expect_transfers():  # resident: the calls copy nothing
                    smart_call()
                    smart_call()
                calls = [numba_call, smart_call] + ([cupy_call] if cp is not None else [])
                times = paired_medians(calls, 4 * args.reps, stream_sync)
                record(case + suffix, n, times[1], times[0], "smartarray/numba <= 1.10",
                       "SmartArrays passed themselves" + where)
                if cp is not None:
                    record(case + suffix + "_vs_cupy", n, times[1], times[2],
                           "smartarray/cupy <= 1.00",
                           f"the same call on CuPy arrays: {times[2] / times[0]:.2f}x Numba's"
                           + where)
        if cp is not None:
            ca, cb = cp.asarray(dx), cp.asarray(dy)
            cout = cp.empty(n, cp.float32)
            t_numba, t_cupy = paired_medians(
                [lambda: add_kernel[blocks, threads](dx, dy, dz),
                 lambda: cp.add(ca, cb, out=cout)], args.reps, sync)
            record("jit_add_cupy_reference", n, t_numba, t_cupy, "(reference)",
                   "Numba's cuda.jit add on its own device arrays against cupy.add(out=)")

        # --- chain: 10 kernels ---
        x, y = fresh[1]

        def numba_chain():
            dx, dy = cuda.to_device(x), cuda.to_device(y)
            t1, t2 = cuda.device_array(n, np.float32), cuda.device_array(n, np.float32)
            axpy[blocks, threads](np.float32(1), dx, dy, t1)
            for i in range(9):
                s, d = (t1, t2) if i % 2 == 0 else (t2, t1)
                axpy[blocks, threads](np.float32(0.5), s, dx, d)
            return t2.copy_to_host()  # the 10th kernel (i = 8) wrote t2

        def smart_chain():
            sx, sy = sa.SmartArray(x), sa.SmartArray(y)
            t1, t2 = sa.device_array(n, np.float32), sa.device_array(n, np.float32)
            axpy[blocks, threads](np.float32(1), sx, sy, t1)
            for i in range(9):
                s, d = (t1, t2) if i % 2 == 0 else (t2, t1)
                axpy[blocks, threads](np.float32(0.5), s, sx, d)
            return t2.host()

        start = sa.transfer_stats()
        r = smart_chain()
        moved = {k: sa.transfer_stats()[k] - start[k] for k in ("h2d_count", "d2h_count")}
        assert moved == {"h2d_count": 2, "d2h_count": 1}, moved
        np.testing.assert_allclose(r, numba_chain(), rtol=1e-6)
        t_numba, t_smart = paired_medians([numba_chain, smart_chain], args.reps, sync)
        record("chain", n, t_smart, t_numba, "smartarray/numba <= 1.10", f"transfers {moved}")

    n = 1_000_000
    a = sa.to_device(np.ones(n, np.float32))
    export = {
        "SmartArray.__cuda_array_interface__": per_call_us(lambda: a.__cuda_array_interface__),
        "SmartArray.gpu(readonly=True)": per_call_us(lambda: a.gpu(readonly=True)),
        "SmartArray.__dlpack__(stream=1) (versioned)":
            per_call_us(lambda: a.__dlpack__(stream=1, max_version=(1, 0))),
        "SmartArray.__dlpack__() host (versioned)":
            per_call_us(lambda: a.__dlpack__(max_version=(1, 0))),
    }
    d = cuda.to_device(np.ones(n, np.float32))
    export["numba DeviceNDArray.__cuda_array_interface__"] = per_call_us(
        lambda: d.__cuda_array_interface__)
    if cp is not None:
        c = cp.ones(n, cp.float32)
        export["cupy ndarray.__cuda_array_interface__"] = per_call_us(
            lambda: c.__cuda_array_interface__)
        export["cupy ndarray.__dlpack__(stream=1)"] = per_call_us(lambda: c.__dlpack__(stream=1))
    results["export_us"] = export

    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)
    print(f"\nCUDA target: numba.cuda.implementation = {implementation!r} "
          f"({package} {version})\n{results['env']}\n")
    print(f"{'case':34} {'n':>10} {'smartarray ms':>14} {'baseline ms':>12} {'ratio':>7}  goal")
    for c in results["cases"]:
        print(f"{c['case']:34} {c['n']:>10} {c['smartarray_s'] * 1e3:>14.3f} "
              f"{c['baseline_s'] * 1e3:>12.3f} {c['ratio']:>7.3f}  {c['goal']} {c['note']}")
    print("\nper-call export cost (us):")
    for k, v in results["export_us"].items():
        print(f"  {k:60} {v:8.2f}")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
