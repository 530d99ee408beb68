#!/usr/bin/env python3
"""Generates docs/benchmarks.md (and its PNG plots) from the benchmark results and their targets.

    python3 scripts/bench_report.py [RESULTS_DIR] [--template FILE] [--output FILE]
                                    [--img-dir DIR] [--no-plots] [--provenance] [--targets]

RESULTS_DIR (default benchmarks/results) holds what `scripts/gpu_check.sh bench targets` writes
into its --results folder: one Google Benchmark JSON per binary (bench_<name>.json) and the
interleaved repetitions of its targets phase (targets_<set>.json). benchmarks/targets.json
lists the targets: what each compares, its goal and why. The template (docs/benchmarks.md.in) is
the prose; each line `@@key@@` in it is replaced by generated text: `provenance` (each JSON's
machine and software), `targets` (every target with its latest figure), `targets_interleaved`,
`bench_<name>` (that binary's tables) and `other` (the binaries the template does not name).
--provenance prints each JSON's provenance (with its git commit), --targets that and the targets
table; neither writes anything. Plots (docs/img/*.png) need matplotlib; without it they are
skipped. Reads the JSON of Google Benchmark 1.6 to 1.9 (a failed run as `error_occurred` up to 1.7,
a skipped one as `skipped` from 1.8).
"""
import argparse
import collections
import json
import operator
import os
import pathlib
import re
import sys
from statistics import median

ROOT = pathlib.Path(__file__).resolve().parent.parent
PIPELINE_CONTENDERS = ["naive", "explicit", "smartarray", "managed_prefetch", "managed", "mapped",
                       "thrust"]
PIPELINE_WORKLOADS = ["add", "gaussian", "polar", "chain10", "iterative"]
MODE_CONTENDERS = ["explicit", "pinned_memcpy", "pageable", "pageable_memcpy", "managed_prefetch",
                   "managed_on_demand", "mapped"]
MODE_PAIRS = [("explicit", "pinned_memcpy"), ("pageable_memcpy", "pageable"),
              ("managed_on_demand", "managed_prefetch")]
PARTIAL_WORKLOADS = ["scalar_read", "boundary_update", "slice_read", "range_for", "out_of_core"]
# The provenance that benchmarks/bench_main.cpp records and the docs print; its git_commit only
# the console shows.
PROVENANCE_KEYS = ["smartarray_version", "build_type", "backend", "gpu_name", "gpu_compute_capability",
                   "gpu_driver", "cuda_driver", "cuda_runtime", "cuda_toolkit", "cuda_architectures",
                   "cccl_version", "google_benchmark", "num_cpus"]
FIELDS = {"us": lambda r: to_unit(r, "us"), "ns": lambda r: to_unit(r, "ns"),
          "GBps": lambda r: r.get("bytes_per_second", 0) / 1e9}
OPS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, "==": operator.eq}


# --- reading -------------------------------------------------------------------------------------

def to_unit(run, unit):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    return run["real_time"] * scale[run.get("time_unit", "ns")] / scale[unit]


def skip_message(run):
    """Why a run did not measure (error or skip, any Google Benchmark version), or None."""
    if run.get("error_occurred"):
        return run.get("error_message", "error")
    return run.get("skip_message", "skipped") if run.get("skipped") else None


class Result:
    """One JSON file: its context and its runs."""

    def __init__(self, path):
        self.path = path
        data = json.loads(path.read_text())
        self.context = data.get("context", {})
        self.all_runs = data.get("benchmarks", [])
        self.runs = [r for r in self.all_runs if r.get("run_type", "iteration") == "iteration"]

    def matches(self, pattern, aggregate=None):
        """(match, run) of each measured run whose name matches `pattern` up to a `/` or its end;
        `aggregate` takes the runs of that aggregate instead of the iterations."""
        for r in ([r for r in self.all_runs if r.get("aggregate_name") == aggregate] if aggregate
                  else self.runs):
            m = re.match(pattern + r"(?:/|$)", r["name"])
            if m and not skip_message(r):
                yield m, r

    def values(self, pattern, field="us", aggregate=None):
        """{groups: [value of each repetition]} of the runs that `matches`, groups of digits as
        ints; `field` is us, ns, GBps or a counter."""
        found = collections.defaultdict(list)
        for m, r in self.matches(pattern, aggregate):
            if field in FIELDS or field in r:
                key = tuple(int(g) if g.isdigit() else g for g in m.groups())
                found[key].append(FIELDS[field](r) if field in FIELDS else r[field])
        return found

    def medians(self, pattern, field="us", aggregate=None):
        return {k: median(v) for k, v in self.values(pattern, field, aggregate).items()}


# --- provenance ----------------------------------------------------------------------------------

def provenance_text(context, commit=True):
    """One JSON's provenance as one line; the docs leave the git commit and the date out."""
    c = collections.defaultdict(lambda: "?", context)
    when = f"; run {c['date']}" if commit else ""
    if "git_commit" not in context:
        return f"provenance not recorded; host of {c['num_cpus']} CPUs{when}"
    parts = [f"commit {c['git_commit']}"] if commit else []
    parts += [f"smartarray {c['smartarray_version']} ({c['build_type']})", f"backend {c['backend']}"]
    if c["backend"] == "cuda":
        parts += [f"{c['gpu_name']} (compute capability {c['gpu_compute_capability']})",
                  f"driver {c['gpu_driver']} (CUDA {c['cuda_driver']})"]
    else:
        parts.append("no GPU (host backend)")
    parts += [f"CUDA runtime {c['cuda_runtime']}, toolkit {c['cuda_toolkit']}",
              f"CCCL {c['cccl_version']}", f"CUDA architectures {c['cuda_architectures']}",
              f"Google Benchmark {c['google_benchmark']}", f"host of {c['num_cpus']} CPUs"]
    return "; ".join(parts) + when


def provenance_section(results):
    """The files of equal provenance (commit aside) on one line each, with the days they ran."""
    groups = collections.OrderedDict()
    for r in results.values():
        key = tuple(r.context.get(k) for k in PROVENANCE_KEYS) + ("git_commit" in r.context,)
        groups.setdefault(key, []).append(r)
    out = []
    for members in groups.values():
        days = sorted({m.context.get("date", "?")[:10] for m in members})
        when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
        names = ", ".join(f"`{m.path.name}`" for m in members)
        out.append(f"- {names}: {provenance_text(members[0].context, commit=False)}; {when}")
    return out + [""]


# --- formatting ----------------------------------------------------------------------------------

def short_n(n):
    """1000000 as 1e6, 16000000 as 1.6e7."""
    mantissa, exponent = f"{n:.1e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    return out + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows] + [""]


def cell(value, spec="{:.1f}"):
    return "-" if value is None else spec.format(value)


def not_run_lines(runs):
    reasons = collections.defaultdict(list)
    for r in runs:
        if skip_message(r):
            reasons[skip_message(r)].append(f"`{r['name']}`")
    return [f"Not measured ({why}): " + ", ".join(names[:6])
            + (f" and {len(names) - 6} more" if len(names) > 6 else "") + "." for why, names in
            reasons.items()] + ([""] if reasons else [])


def ratio_cell(top, bottom):
    """The ratio of the medians, then of the fastest and of the slowest repetitions."""
    if not top or not bottom:
        return "-"
    return (f"{median(top) / median(bottom):.3f}x "
            f"[{min(top) / min(bottom):.3f}-{max(top) / max(bottom):.3f}]")


class Plots:
    """matplotlib, or nothing: plots are optional."""

    def __init__(self, img_dir, img_link, enabled):
        self.img_dir, self.img_link, self.plt = img_dir, img_link, None
        if not enabled:
            return
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            self.plt = plt
        except ImportError:
            print("matplotlib not found: plots skipped (pip install matplotlib, or apt-get "
                  "install python3-matplotlib)", file=sys.stderr)

    def line_plot(self, name, series, xlabel, ylabel, title, logy):
        """Plots series {label: {x: y}} on a log x axis into img_dir/name; returns the Markdown
        that shows it, nothing when plots are off."""
        if not self.plt:
            return []
        fig, ax = self.plt.subplots(figsize=(6, 4))
        for label, points in series.items():
            ax.plot(sorted(points), [points[x] for x in sorted(points)], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log" if logy else "linear")
        ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
        ax.legend(fontsize=7)
        self.img_dir.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(self.img_dir / name, dpi=110, metadata={"Software": None})
        self.plt.close(fig)
        return [f"![{title}]({self.img_link}/{name})", ""]


# --- sections ------------------------------------------------------------------------------------

def pipelines_section(result, plots):
    times = result.medians(r"BM_(\w+)/(\w+)/(\d+)")  # (workload, contender, n) -> us
    out = []
    others = sorted({w for w, _, _ in times} - set(PIPELINE_WORKLOADS) - {"bandwidth"})
    for w in PIPELINE_WORKLOADS + others:
        sizes = sorted({n for ww, _, n in times if ww == w})
        present = [c for c in PIPELINE_CONTENDERS if any((w, c, n) in times for n in sizes)]
        rows = []
        for n in sizes:
            t = {c: times.get((w, c, n)) for c in present}
            se = t["smartarray"] / t["explicit"] if t.get("smartarray") and t.get("explicit") else None
            ns = t["naive"] / t["smartarray"] if t.get("smartarray") and t.get("naive") else None
            rows.append([f"{n:,}"] + [cell(t[c]) for c in present]
                        + [cell(se, "{:.3f}x"), cell(ns, "{:.1f}x")])
        if not rows:
            continue
        out += [f"### {w}", ""] + table(["n"] + present + ["smartarray/explicit", "naive/smartarray"],
                                       rows)
        series = {c: {n: times[(w, c, n)] for n in sizes if (w, c, n) in times} for c in present}
        if len(sizes) > 1:
            out += plots.line_plot(f"pipelines_{w}.png", series, "elements", "time per call (us)",
                                   w, True)
    out += bandwidth_table(result, "### bandwidth: a host-written array read once on the device")
    rates = result.medians(r"BM_bandwidth/(\w+)/(\d+)", "GBps")
    series = {c: {b: v for (cc, b), v in rates.items() if cc == c}
              for c in sorted({c for c, _ in rates})}
    if rates:
        out += plots.line_plot("bandwidth.png", series, "bytes", "GB/s",
                               "host-to-device migration bandwidth", False)
    return out + not_run_lines(result.runs)


def bandwidth_table(result, title):
    """GB/s of each contender of `BM_bandwidth` (medians of the repetitions), and SmartArray's
    against pinned `cudaMemcpy`."""
    rates = result.medians(r"BM_bandwidth/(\w+)/(\d+)", "GBps")  # (contender, bytes) -> GB/s
    if not rates:
        return []
    who = sorted({c for c, _ in rates})
    rows = []
    for b in sorted({b for _, b in rates}):
        sm, p = rates.get(("smartarray", b), 0), rates.get(("pinned_memcpy", b))
        rows.append([f"{b:,}"] + [f"{rates.get((c, b), 0):.2f}" for c in who]
                    + [cell(100 * sm / p if p else None, "{:.1f}%")])
    return [f"{title} (GB/s)", ""] + table(["bytes"] + who + ["smartarray / pinned_memcpy"], rows)


def pair_rows(times, workloads, top="smartarray", bottom="explicit"):
    """[workload, n, bottom us, top us, ratio, repetitions] of each (workload, n) measured by both."""
    rows = []
    for w in workloads:
        for n in sorted({n for ww, _, n in times if ww == w}):
            b, t = times.get((w, bottom, n)), times.get((w, top, n))
            if b and t:
                rows.append([w, f"{n:,}", f"{median(b):.1f}", f"{median(t):.1f}", ratio_cell(t, b),
                             min(len(b), len(t))])
    return rows


def interleaved_section(results):
    pipelines, modes = results.get("targets_pipelines"), results.get("targets_modes")
    partial = results.get("targets_partial")
    if not (pipelines or modes or partial):
        return ["_No interleaved repetitions in the results (targets_*.json)._", ""]
    header = ["workload", "n", "explicit", "smartarray", "smartarray/explicit", "repetitions"]
    out = []
    if pipelines:
        rows = pair_rows(pipelines.values(r"BM_(\w+)/(\w+)/(\d+)"), PIPELINE_WORKLOADS)
        out += ["### `bench_pipelines`: SmartArray against explicit", ""] + table(header, rows)
        out += bandwidth_table(pipelines, "### `bench_pipelines`: migration bandwidth against pinned `cudaMemcpy`")
        out += not_run_lines(pipelines.runs)
    if modes:
        times = modes.values(r"BM_modes_(\w+)/(\w+)/(\d+)")
        rows = []
        for w, n in sorted({(w, n) for w, _, n in times}):
            cells = []
            for top, bottom in MODE_PAIRS:
                t, b = times.get((w, top, n)), times.get((w, bottom, n))
                cells.append(f"{ratio_cell(t, b)} ({median(t):.0f} / {median(b):.0f} us)"
                             if t and b else "-")
            rows.append([w, f"{n:,}"] + cells)
        out += ["### `bench_modes`: the memory modes against hand-written code", ""]
        out += table(["workload", "n"] + [f"{t} / {b}" for t, b in MODE_PAIRS], rows)
        out += not_run_lines(modes.runs)
    if partial:
        rows = pair_rows(partial.values(r"BM_(\w+)/(\w+)/(\d+)"), PARTIAL_WORKLOADS)
        out += ["### `bench_partial`: SmartArray against explicit", ""] + table(header, rows)
        out += not_run_lines(partial.runs)
    return out


def copies_cell(run):
    """The copies per call of a bench_partial run, as "H2D 2 (256 B)" and "D2H ..."."""
    parts = [f"{label} {run.get(f'{side}_per_call', 0):.0f} "
             f"({run.get(f'{side}_bytes_per_call', 0):,.0f} B)"
             for label, side in (("H2D", "h2d"), ("D2H", "d2h")) if run.get(f"{side}_per_call")]
    return ", ".join(parts) or "none"


def partial_section(result):
    runs = {(m.group(1), m.group(2), int(m.group(3))): r
            for m, r in result.matches(r"BM_(\w+)/(explicit|smartarray)/(\d+)")}
    rows = []
    for w in PARTIAL_WORKLOADS:
        for n in sorted({n for ww, _, n in runs if ww == w}):
            e, sm = runs.get((w, "explicit", n)), runs.get((w, "smartarray", n))
            time = lambda r: to_unit(r, "us") if r else None
            rows.append([w, f"{n:,}", cell(time(e)), cell(time(sm)),
                         cell(time(sm) / time(e) if e and sm else None, "{:.3f}x"),
                         copies_cell(e) if e else "-", copies_cell(sm) if sm else "-"])
    out = []
    if rows:
        out += ["**SmartArray against explicit copies** (wall time per call in us; copies per call "
                "each way, with their bytes)", ""]
        out += table(["workload", "n", "explicit", "smartarray", "smartarray/explicit",
                      "explicit copies", "smartarray copies"], rows,
                     ["---", "---:", "---:", "---:", "---:", "---", "---"])
    latency = {int(m.group(1)): r for m, r in result.matches(r"BM_copy_latency/(\d+)")}
    if latency:
        smallest = to_unit(latency[min(latency)], "us")
        rows = [[f"{b:,}", f"{to_unit(r, 'us'):.2f}", f"{r.get('bytes_per_second', 0) / 1e9:.3g}",
                 f"{to_unit(r, 'us') / smallest:.2f}x"] for b, r in sorted(latency.items())]
        out += [f"**copy_latency**: one D2H copy into pinned memory and a synchronize (time per "
                f"copy against the {min(latency):,}-byte copy's)", ""]
        out += table(["bytes", "us per copy", "GB/s", "time / smallest copy"], rows)
    return out + not_run_lines(result.runs)


def modes_section(result):
    times = result.medians(r"BM_modes_(\w+)/(\w+)/(\d+)")  # (workload, contender, n) -> us
    present = [c for c in MODE_CONTENDERS if any(c == cc for _, cc, _ in times)]
    present += sorted({c for _, c, _ in times} - set(present))
    rows = [[w, f"{n:,}"] + [cell(times.get((w, c, n))) for c in present]
            for w, n in sorted({(w, n) for w, _, n in times})]
    return table(["workload", "n"] + present, rows) + not_run_lines(result.runs)


def counter_table(result, title, pattern, columns, sort_key=int):
    """One table of the runs matching `pattern`: the first column is the match's group, the
    others (header, field, format) read the run's counters."""
    rows = [(sort_key(m.group(1)), [f(m.group(1)) if callable(f) else spec.format(r.get(f, 0))
                                    for _, f, spec in columns]) for m, r in result.matches(pattern)]
    if not rows:
        return []
    return [title, ""] + table([h for h, _, _ in columns], [row for _, row in sorted(rows)])


def adapters_section(result):
    size = lambda n: short_n(int(n))
    return (counter_table(result, "**Host overhead of `launch`** (empty kernel, device-resident "
                          "arrays)", r"BM_LaunchOverhead/arrays:(\d+)",
                          [("SmartArray arguments", str, ""), ("bare `<<<>>>` (ns)", "bare_ns", "{:.0f}"),
                           ("`launch` (ns)", "launch_ns", "{:.0f}"),
                           ("overhead (ns)", "overhead_ns", "{:.0f}"),
                           ("per array (ns)", "overhead_per_array_ns", "{:.0f}")])
            + counter_table(result, "**`transform` against a hand-written kernel** (device time "
                            "per call)", r"BM_TransformVsKernel/(\d+)",
                            [("elements", size, ""), ("kernel (us)", "kernel_us", "{:.3f}"),
                             ("`transform` (us)", "transform_us", "{:.3f}"),
                             ("ratio", "ratio", "{:.3f}"),
                             ("ratio from an idle GPU", "ratio_submit", "{:.3f}")])
            + counter_table(result, "**`map` against `transform` into an existing output** (wall "
                            "time per call, host and device)", r"BM_MapVsTransform/(\d+)",
                            [("elements", size, ""), ("`transform` (us)", "transform_us", "{:.1f}"),
                             ("`map` (us)", "map_us", "{:.1f}"), ("ratio", "ratio", "{:.3f}")])
            + counter_table(result, "**Transpose, 4096 x 4096 floats**", r"BM_Transpose/(\w+)",
                            [("order", str, ""), ("naive (us)", "naive_us", "{:.1f}"),
                             ("tiled (us)", "tiled_us", "{:.2f}"), ("speedup", "speedup", "{:.2f}"),
                             ("naive GB/s", "naive_GBps", "{:.0f}"),
                             ("tiled GB/s", "tiled_GBps", "{:.0f}")], sort_key=str)
            + not_run_lines(result.runs))


STREAM_OPS = ["copy", "scale", "add", "triad", "nstream"]


def stream_section(result):
    """bench_stream: each contender's GB/s and the ratios the targets judge, one row per run."""
    def rows(pattern, columns, key):
        found = sorted(((key(m), m, r) for m, r in result.matches(pattern)), key=lambda x: x[0])
        return [[f(m) if callable(f) else spec.format(r.get(f, 0)) for _, f, spec in columns]
                for _, m, r in found]

    size = lambda group: lambda m: short_n(int(m.group(group)))
    gb = lambda name: (f"{name} GB/s", f"{name}_GBps", "{:.0f}")
    out = []
    stream = rows(r"BM_stream/(\w+)/(\w+)/(\d+)",
                  [("kernel", lambda m: m.group(1), ""), ("type", lambda m: m.group(2), ""),
                   ("n", size(3), ""), gb("smartarray"), gb("kernel"), gb("kernel_vec"),
                   gb("memcpy"), ("vs best", "vs_best", "{:.3f}x"),
                   ("vec / kernel", "vec_vs_kernel", "{:.3f}x"), ("of roof", "of_roof", "{:.1%}")],
                  lambda m: (STREAM_OPS.index(m.group(1)) if m.group(1) in STREAM_OPS else 9,
                             m.group(2), int(m.group(3))))
    stream = [row for row in stream if row[0] != "dot"]
    if stream:
        out += ["**STREAM kernels** (device time of back-to-back calls; `transform` against "
                "hand-written kernels of one element and of one 16-byte vector per thread, and "
                "`cudaMemcpyAsync` as the roof)", ""] + table(
            ["kernel", "type", "n", "`transform` GB/s", "kernel GB/s", "kernel_vec GB/s",
             "memcpy GB/s", "vs best", "vec / kernel", "of roof"], stream,
            ["---", "---"] + ["---:"] * 8)
    dot = rows(r"BM_stream/dot/(\w+)/(\d+)",
               [("type", lambda m: m.group(1), ""), ("n", size(2), ""), gb("smartarray"),
                gb("one_pass"), gb("cub"), ("vs one_pass", "vs_one_pass", "{:.3f}x"),
                ("vs cub", "vs_cub", "{:.3f}x")], lambda m: (m.group(1), int(m.group(2))))
    if dot:
        out += ["**dot** (host clock per call, the value returned to the host by all three)", ""]
        out += table(["type", "n", "`transform_reduce` GB/s", "one_pass GB/s", "cub GB/s",
                      "vs one_pass", "vs cub"], dot, ["---"] + ["---:"] * 6)
    device = rows(r"BM_reduce/device/float/(\d+)",
                  [("n", size(1), ""), gb("smartarray"), gb("cub"), ("vs cub", "vs_cub", "{:.3f}x")],
                  lambda m: int(m.group(1)))
    if device:
        out += ["**reduce**, device time (`reduce_async` against CUB `DeviceReduce::Sum`)", ""]
        out += table(["n", "`reduce_async` GB/s", "CUB GB/s", "vs cub"], device)
    round_trip = rows(r"BM_reduce/round_trip/float/(\d+)",
                      [("n", size(1), ""), ("`reduce` (us)", "smartarray_us", "{:.1f}"),
                       ("CUB + copy + sync (us)", "cub_us", "{:.1f}"),
                       ("ratio", "ratio", "{:.3f}x")], lambda m: int(m.group(1)))
    if round_trip:
        out += ["**reduce**, the value returned to the host (host clock per call)", ""]
        out += table(["n", "`reduce` (us)", "CUB + copy + sync (us)", "ratio"], round_trip)
    copy = rows(r"BM_copy_d2d/(\d+)",
                [("bytes", lambda m: f"{int(m.group(1)):,}", ""), gb("smartarray"), gb("memcpy"),
                 gb("kernel"), ("vs best", "vs_best", "{:.3f}x"),
                 ("kernel / memcpy", "kernel_vs_memcpy", "{:.3f}x")], lambda m: int(m.group(1)))
    if copy:
        out += ["**copy device to device** (device time of back-to-back calls)", ""]
        out += table(["bytes", "`copy` GB/s", "cudaMemcpyAsync GB/s", "copy kernel GB/s",
                      "vs best", "kernel / memcpy"], copy)
    return out + not_run_lines(result.runs)


def pool_section(result):
    out = []
    pairs = result.medians(r"BM_(\w+)Pair/(\d+)", "ns", "median")  # (allocator, bytes) -> ns
    if pairs:
        sizes = sorted({b for _, b in pairs})
        families = list(dict.fromkeys(f for f, _ in pairs))
        rows = [[f"`{f}`"] + [cell(pairs.get((f, b)), "{:,.0f}") for b in sizes] for f in families]
        out += ["**Allocate + free pair**, median ns of 5 repetitions", ""]
        out += table(["allocator"] + [f"{b // 1024:,} KiB" for b in sizes], rows)
    by_shape = collections.defaultdict(dict)  # (allocations, max MiB) -> allocator -> run
    for m, r in result.matches(r"BM_RandomAllocations(Pool|CudaMallocAsync)/(\d+)/(\d+)"):
        by_shape[int(m.group(2)), int(m.group(3))][m.group(1)] = r
    rows = [[f"{n:,}", mib, f"{to_unit(p['Pool'], 'ms'):.3f}",
             f"{to_unit(p['CudaMallocAsync'], 'ms'):.3f}",
             f"{p['Pool'].get('speedup_vs_cudaMallocAsync', 0):.2f}x"]
            for (n, mib), p in by_shape.items() if len(p) == 2]
    if rows:
        out += ["**random_allocations**", ""]
        out += table(["allocations", "max MiB", "pool (ms)", "cudaMallocAsync (ms)", "speedup"], rows)
    rows = [[f"`{r['name'].replace('/manual_time', '')}`", f"{to_unit(r, 'us'):.1f}",
             cell(r.get("speedup_vs_cudaMallocAsync"), "{:.2f}x")]
            for _, r in result.matches(r"BM_StreamTemporaries\w*")]
    if rows:
        out += ["**Stream temporaries**: 4 streams x 4 kernels, a temporary buffer each", ""]
        out += table(["benchmark", "us per round", "speedup vs cudaMallocAsync"], rows)
    return out + not_run_lines(result.all_runs)


def vector_section(result):
    rows = [[f"`{m.group(1)}`", short_n(int(m.group(2))), f"{r.get('std_ns', 0):.4g}",
             f"{r.get('smart_ns', 0):.4g}", f"{r.get('ratio', 0):.3f}x"]
            for m, r in result.matches(r"BM_(\w+)/(\d+)")]
    return (table(["benchmark", "n", "std::vector ns", "SmartArray ns", "ratio"], rows)
            + not_run_lines(result.runs))


def generic_section(result):
    skip = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
            "repetitions", "repetition_index", "threads", "iterations", "real_time", "cpu_time",
            "time_unit", "aggregate_name", "aggregate_unit", "label", "error_occurred",
            "error_message", "skipped", "skip_message"}
    rows = [[r["name"], f"{r['real_time']:.3f} {r.get('time_unit', 'ns')}",
             ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in r.items() if k not in skip)]
            for r in result.all_runs if not skip_message(r)]
    return (table(["benchmark", "time", "counters"], rows, ["---", "---:", "---"])
            + not_run_lines(result.all_runs))


# --- targets -------------------------------------------------------------------------------------

def series_values(result, spec):
    """{size: value} of one series of a target (see benchmarks/targets.json)."""
    field, aggregate = spec.get("field", "us"), spec.get("aggregate")
    top = result.medians(spec["top"], field, aggregate)
    bottom = result.medians(spec["bottom"], field, aggregate) if "bottom" in spec else None
    values = {}
    for key, t in top.items():
        if key[0] < spec.get("min_n", 0):
            continue
        if bottom is None:
            values[key] = t
        elif bottom.get(key):
            values[key] = t - bottom[key] if spec.get("combine") == "difference" else t / bottom[key]
    return values


def measure(target, results):
    """[(label, spec, {size: value})] of a target from the first of its sources that measures it,
    and that source's name; ([], None) when none does."""
    for name in target["source"]:
        if name not in results:
            continue
        measured = []
        for series in target["series"]:
            spec = {**target, **series}
            for label in spec.get("labels", [spec.get("label", "")]):
                pattern, shown = label if isinstance(label, list) else (label, label)
                sub = {k: spec[k].replace("{label}", pattern) for k in ("top", "bottom") if k in spec}
                values = series_values(results[name], {**spec, **sub})
                if values:
                    measured.append((shown, spec, values))
        if measured:
            return measured, name
    return [], None


def sizes_text(spec, keys):
    if spec.get("summary") == "range":
        return ""
    scale, unit = spec.get("size_scale"), spec.get("size_unit")
    text = " / ".join(str(k[0] // scale) if scale else str(k[0]) if unit else short_n(k[0])
                      for k in keys)
    return f" ({text}{' ' + unit if unit else ''})"


def judge(target, results):
    """(latest text, status, source) of a target; status is met, missed, reference or None."""
    measured, source = measure(target, results)
    if not measured:
        return None, None, None
    reference, met, parts = target.get("status") == "reference", True, []
    sizes = {sizes_text(spec, sorted(values)) for _, spec, values in measured}
    for label, spec, values in measured:
        fmt, unit = spec.get("format", "{:.3f}"), spec.get("unit", "" if "format" in spec else "x")
        judged = spec.get("judge", True)
        ok = {k: OPS[spec["op"]](v, spec["goal"]) for k, v in values.items()}
        met = met and (not judged or all(ok.values()))
        bold = lambda text, good: text if good or not judged or reference else f"**{text}**"
        if spec.get("summary") == "range":
            low, high = fmt.format(min(values.values())), fmt.format(max(values.values()))
            text = bold((low if low == high else f"{low}-{high}") + unit, all(ok.values()))
            text += f" over {len(values)} {spec['over']}" if spec.get("over") else ""
        else:
            text = " / ".join(bold(fmt.format(values[k]), ok[k]) for k in sorted(values)) + unit
        parts.append((f"{label} " if label else "") + text
                     + (sizes_text(spec, sorted(values)) if len(sizes) > 1 else ""))
    text = "; ".join(parts) + (sizes.pop() if len(sizes) == 1 else "")
    return text, "reference" if reference else "met" if met else "missed", source


def targets_section(targets, results, where):
    rows, notes, used, counts = [], [], [], collections.Counter()
    for t in targets:
        text, status, source = judge(t, results)
        counts[status or "not measured"] += 1
        if source and results[source] not in used:
            used.append(results[source])
        rows.append([f"`{t['id']}`", t["target"], text or "-",
                     {"missed": "**missed**", None: "not measured"}.get(status, status),
                     f"`{source}.json`" if source else "-"])
        if status in ("missed", "reference"):
            notes.append(f"- `{t['id']}` ({status}): {t['reason']} {t.get('note', '')}".rstrip())
    out = [f"Each figure is the latest in `{where}/`: the medians of the interleaved repetitions "
           "(`targets_*.json`) where they exist, else one run (`bench_*.json`). Figures over the "
           "line are in bold. A reference is shown against its goal and is never a miss; why each "
           "target exists is in `benchmarks/targets.json`.", ""]
    if any(r.context.get("backend") == "host" for r in used):
        out += ["**Host backend**: these figures are CPU times of the emulated device, not GPU "
                "times; the targets are meant for a GPU.", ""]
    out += table(["id", "target", "latest", "status", "from"], rows, ["---"] * 5)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    if notes:
        notes = ["What limits the figures that miss, and why the references are not targets:",
                 ""] + notes + [""]
    return out, notes, summary


# --- main ----------------------------------------------------------------------------------------

SECTIONS = {"bench_modes": modes_section, "bench_adapters": adapters_section,
            "bench_pool": pool_section, "bench_vector": vector_section,
            "bench_partial": partial_section, "bench_multi_gpu": generic_section,
            "bench_graphs": generic_section, "bench_nvtx": generic_section,
            "bench_interop": generic_section, "bench_rmm": generic_section,
            "bench_stream": stream_section}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="?", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--template", default=str(ROOT / "docs" / "benchmarks.md.in"))
    parser.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    parser.add_argument("--img-dir", default=None, help="default: img/ beside the output")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--provenance", action="store_true",
                        help="only print each JSON's provenance; write nothing")
    parser.add_argument("--targets", action="store_true",
                        help="print each JSON's provenance and the targets table; write nothing")
    args = parser.parse_args()
    results_dir, output = pathlib.Path(args.results), pathlib.Path(args.output)
    img_dir = pathlib.Path(args.img_dir) if args.img_dir else output.parent / "img"
    img_link = pathlib.Path(os.path.relpath(img_dir, output.parent)).as_posix()

    files = sorted(results_dir.glob("bench_*.json")) + sorted(results_dir.glob("targets_*.json"))
    if not files:
        sys.exit(f"no bench_*.json or targets_*.json in {results_dir}")
    results = {f.stem: Result(f) for f in files}
    for r in results.values():
        print(f"{r.path.name}: {provenance_text(r.context)}")
    try:
        where = results_dir.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        where = str(results_dir)
    targets = json.loads((ROOT / "benchmarks" / "targets.json").read_text())["targets"]
    table_lines, notes, summary = targets_section(targets, results, where)
    if args.targets:
        print("\n".join(table_lines) + f"targets: {summary}")
    if args.provenance or args.targets:
        return

    plots = Plots(img_dir, img_link, not args.no_plots)
    generated = {"provenance": provenance_section(results), "targets": table_lines + notes,
                 "targets_interleaved": interleaved_section(results)}
    for name, section in {"bench_pipelines": lambda r: pipelines_section(r, plots),
                          **SECTIONS}.items():
        generated[name] = (section(results[name]) if name in results
                           else [f"_No results in `{where}/{name}.json`._", ""])
    generated["other"] = [line for name, r in results.items()
                          if name.startswith("bench_") and name not in generated
                          for line in [f"## `{name}`", ""] + generic_section(r)]

    lines = []
    for line in pathlib.Path(args.template).read_text().splitlines():
        m = re.fullmatch(r"@@(\w+)@@", line.strip())
        if m and m.group(1) not in generated:
            sys.exit(f"{args.template}: unknown placeholder {line.strip()}")
        lines += generated[m.group(1)] if m else [line]
    header = ("<!-- Generated by scripts/bench_report.py from docs/benchmarks.md.in, "
              "benchmarks/targets.json and benchmarks/results/*.json; edit those, not this file. -->")
    text = re.sub(r"\n{3,}", "\n\n", header + "\n" + "\n".join(lines).rstrip("\n") + "\n")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
