#!/usr/bin/env python3
"""The seed notebook's timings, in one process on the GPU machine: smartarray next to Numba (and
CuPy when installed). Writes JSON (--out) and prints the ratio table of docs/python.md.

    SMARTARRAY_BACKEND=cuda /opt/torch/.venv/bin/python python/benchmarks/bench_seed.py \
        --out gpu-out/python_bench.json

Cases (each the median of --reps calls, 4x as many for resident_add, every call ending in a device
synchronize; the contenders of a case run interleaved):
  host_add      the seed add (@vectorize target='cuda'), fresh host data each call: SmartArray
                (data written into its host copy, host_changed(), add on gpu() views into
                out.device_view('discard'), out.host())
                against Numba on NumPy host arrays (goal: SmartArray >= 5x faster); host_add_floor
                is what no library avoids: writing the fresh data plus Numba's own ufunc on
                device arrays
  resident_add  the same add through one cuda.jit kernel, data resident: SmartArrays against
                Numba device arrays with out= (goal: <= 1.10x); also with
                NUMBA_CUDA_ARRAY_INTERFACE_SYNC=0 (a child process) to show the CAI stream sync
  chain         a 10-kernel chain: SmartArrays against hand-written to_device/copy_to_host
                (goal: <= 1.10x)
  export_us     the per-call cost of __cuda_array_interface__, gpu(readonly=True) and __dlpack__
                on a resident array, in microseconds (CuPy's and Numba's own CAI for reference)
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

SIZES = [100_000, 1_000_000, 16_000_000]


def median_time(fn, reps, sync):
    return paired_medians([fn], reps, sync)[0]


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
    ap.add_argument("--only-resident", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    import smartarray as sa
    from numba import cuda, vectorize
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

    rng = np.random.default_rng(0)
    results = {"env": {"python": platform.python_version(), "device": sa.device_name(),
                       "numpy": np.__version__,
                       "numba": __import__("numba").__version__,
                       "cupy": cp.__version__ if cp else None,
                       "cai_sync": os.environ.get("NUMBA_CUDA_ARRAY_INTERFACE_SYNC", "1"),
                       "reps": args.reps},
               "cases": []}

    def record(case, n, ours, theirs, goal, note=""):
        ratio = ours / theirs
        results["cases"].append({"case": case, "n": n, "smartarray_s": ours, "baseline_s": theirs,
                                 "ratio": ratio, "goal": goal, "note": note})

    for n in SIZES:
        threads = 256
        blocks = (n + threads - 1) // threads
        fresh = [(rng.random(n).astype(np.float32), rng.random(n).astype(np.float32))
                 for _ in range(2)]

        if not args.only_resident:
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
                add_ufunc(a.gpu(readonly=True), b.gpu(readonly=True),
                          out=out.device_view("discard"))
                return out.host()

            np.testing.assert_allclose(smart_host(), np.add(*fresh[(k[0] - 1) % 2]))

            # What no library can avoid: writing the fresh data (in both contenders) and Numba's
            # own ufunc dispatch on device arrays.
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

        # --- resident_add: one cuda.jit kernel ---
        da, db = cuda.to_device(fresh[0][0]), cuda.to_device(fresh[0][1])
        dout = cuda.device_array(n, np.float32)
        sa_a, sa_b = sa.to_device(fresh[0][0]), sa.to_device(fresh[0][1])
        sa_out = sa.device_array(n, np.float32)

        def numba_resident():
            add_kernel[blocks, threads](da, db, dout)

        def smart_resident():
            add_kernel[blocks, threads](sa_a.gpu(readonly=True), sa_b.gpu(readonly=True),
                                        sa_out.device_view("discard"))

        def smart_resident_cai():  # the SmartArray itself: Numba reads its CAI at each launch
            add_kernel[blocks, threads](sa_a.gpu(readonly=True), sa_b.gpu(readonly=True), sa_out)

        smart_resident()
        np.testing.assert_allclose(sa_out.host(), fresh[0][0] + fresh[0][1])
        t_numba, t_smart = paired_medians([numba_resident, smart_resident], 4 * args.reps, sync)
        record("resident_add", n, t_smart, t_numba, "smartarray/numba <= 1.10",
               "gpu()/device_view() views")
        t_cai = median_time(smart_resident_cai, args.reps, sync)
        record("resident_add_out_by_cai", n, t_cai, t_numba, "(reference)",
               "out passed as the SmartArray (CAI), sync " + results["env"]["cai_sync"])
        if cp is not None:
            ca, cb = cp.asarray(da), cp.asarray(db)
            cout = cp.empty(n, cp.float32)
            t_cupy = median_time(lambda: cp.add(ca, cb, out=cout), args.reps,
                                 cp.cuda.Device().synchronize)
            record("resident_add_cupy_reference", n, t_smart, t_cupy, "(reference)",
                   "smartarray+cuda.jit against cupy.add(out=)")

        if args.only_resident:
            continue
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
            gx, gy = sx.gpu(readonly=True), sy.gpu(readonly=True)
            axpy[blocks, threads](np.float32(1), gx, gy, t1.device_view("discard"))
            for i in range(9):
                s, d = (t1, t2) if i % 2 == 0 else (t2, t1)
                axpy[blocks, threads](np.float32(0.5), s.device_view("read"), gx,
                                      d.device_view("discard"))
            return t2.host()

        start = sa.transfer_stats()
        r = smart_chain()
        moved = {k: sa.transfer_stats()[k] - start[k] for k in ("h2d_count", "d2h_count")}
        assert moved == {"h2d_count": 2, "d2h_count": 1}, moved
        np.testing.assert_allclose(r, numba_chain(), rtol=1e-6)
        t_numba, t_smart = paired_medians([numba_chain, smart_chain], args.reps, sync)
        record("chain", n, t_smart, t_numba, "smartarray/numba <= 1.10", f"transfers {moved}")

    if not args.only_resident:
        n = 1_000_000
        a = sa.to_device(np.ones(n, np.float32))
        export = {
            "SmartArray.__cuda_array_interface__": per_call_us(lambda: a.__cuda_array_interface__),
            "SmartArray.gpu(readonly=True)": per_call_us(lambda: a.gpu(readonly=True)),
            "SmartArray.gpu(readonly=True).__cuda_array_interface__":
                per_call_us(lambda: a.gpu(readonly=True).__cuda_array_interface__),
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

        # The resident case without the CAI stream sync, in a child process (Numba reads the
        # setting at import).
        env = dict(os.environ, NUMBA_CUDA_ARRAY_INTERFACE_SYNC="0")
        child_out = args.out + ".nosync.json"
        subprocess.run([sys.executable, __file__, "--only-resident", "--reps", str(args.reps),
                        "--out", child_out], env=env, check=True)
        with open(child_out) as f:
            child = json.load(f)
        for c in child["cases"]:
            c["case"] += "_cai_sync_off"
            results["cases"].append(c)
        os.remove(child_out)

    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)
    if args.only_resident:
        return
    print(f"\n{results['env']}\n")
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
