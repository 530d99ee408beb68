#!/usr/bin/env python3
"""Generates docs/benchmarks.md (and its PNG plots) from the canonical benchmark results.

    python3 scripts/bench_report.py [RESULTS_DIR] [--template FILE] [--output FILE]
                                    [--img-dir DIR] [--no-plots]

RESULTS_DIR (default benchmarks/results) holds what `scripts/gpu_check.sh --results DIR` writes:
one Google Benchmark JSON per binary (bench_<name>.json) and the interleaved repetitions of
scripts/bench_targets.sh (targets_pipelines.json, targets_modes.json, targets_partial.json). The
template (default
docs/benchmarks.md.in) is the document's prose; each line `@@key@@` in it is replaced by
generated tables: `targets` (every target with its latest figure), `bench_<name>` (that binary's
tables), `targets_interleaved` and `other` (binaries the template does not name). Above each table
set goes the provenance that the binary recorded in its JSON context (bench_main.hpp); a JSON
written before provenance was recorded reads "provenance: not recorded (older run)".
--provenance prints each JSON's provenance, --targets that and the targets table; neither writes.

Plots (docs/img/*.png) need matplotlib; without it the tables are written, the plots skipped.
Reads JSON from Google Benchmark 1.6 to 1.9 (failed or skipped runs as `error_occurred` /
`error_message` up to 1.7, `skipped` / `skip_message` for a skip with a message from 1.8).
"""
import argparse
import collections
import json
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
# bench_partial's workloads and their targets: smartarray / explicit at most this.
PARTIAL_TARGETS = {"scalar_read": 1.2, "boundary_update": 1.2, "slice_read": 1.2, "range_for": 1.05,
                   "out_of_core": 1.10}
# out_of_core's bandwidth against one pinned host-to-device copy of an array: at least this.
OUT_OF_CORE_BANDWIDTH = 0.85
# bench_multi_gpu: SmartArray's read on a second GPU at least this fraction of a hand-written peer copy.
MULTI_GPU_BANDWIDTH = 0.90
# The provenance keys written by benchmarks/bench_main.cpp.
PROVENANCE_KEYS = ["git_commit", "smartarray_version", "build_type", "backend", "gpu_name",
                   "gpu_compute_capability", "gpu_driver", "cuda_driver", "cuda_runtime",
                   "cuda_toolkit", "cuda_architectures", "cccl_version", "google_benchmark"]


# --- reading -------------------------------------------------------------------------------------

class Result:
    """One JSON file: its context and its runs."""

    def __init__(self, path):
        self.path = path
        with open(path) as f:
            data = json.load(f)
        self.context = data.get("context", {})
        self.all_runs = data.get("benchmarks", [])
        self.runs = [r for r in self.all_runs if r.get("run_type", "iteration") == "iteration"]

    def medians(self):
        """The median aggregates (repetitions reported as aggregates only)."""
        return [r for r in self.all_runs if r.get("aggregate_name") == "median"]


def skip_message(run):
    """Why a run did not measure (error or skip, any Google Benchmark version), or None."""
    if run.get("error_occurred"):
        return run.get("error_message", "error")
    if run.get("skipped"):
        return run.get("skip_message", "skipped")
    return None


def to_unit(run, unit):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    return run["real_time"] * scale[run.get("time_unit", "ns")] / scale[unit]


def us(run):
    return to_unit(run, "us")


# --- provenance ----------------------------------------------------------------------------------

def has_provenance(context):
    return "git_commit" in context


def provenance_text(context):
    """The provenance of one JSON as one line of text."""
    when = f"run {context.get('date', '?')} on a host with {context.get('num_cpus', '?')} CPUs"
    if not has_provenance(context):
        return f"provenance: not recorded (older run); {when}"
    c = collections.defaultdict(lambda: "?", context)
    commit = c["git_commit"]
    if re.fullmatch(r"[0-9a-f]{40}(-dirty)?", commit):
        commit = commit[:12] + commit[40:]
    parts = [f"commit `{commit}`", f"smartarray {c['smartarray_version']} ({c['build_type']})",
             f"backend {c['backend']}"]
    if c["backend"] == "cuda":
        parts.append(f"{c['gpu_name']} (compute capability {c['gpu_compute_capability']})")
        parts.append(f"driver {c['gpu_driver']} (CUDA {c['cuda_driver']})")
    else:
        parts.append("no GPU (host backend)")
    parts += [f"CUDA runtime {c['cuda_runtime']}, toolkit {c['cuda_toolkit']}",
              f"CCCL {c['cccl_version']}", f"CUDA architectures {c['cuda_architectures']}",
              f"Google Benchmark {c['google_benchmark']}", when]
    return "provenance: " + "; ".join(parts)


def provenance_block(results):
    """Markdown quoting the provenance of `results`, files of equal provenance on one line."""
    groups = collections.OrderedDict()
    for r in results:
        c = r.context
        key = tuple(c.get(k) for k in PROVENANCE_KEYS) if has_provenance(c) else ("older",)
        groups.setdefault(key, []).append(r)
    out = []
    for members in groups.values():
        names = ", ".join(f"`{m.path.name}`" for m in members)
        text = provenance_text(members[0].context)
        if len(members) > 1:  # the dates differ; name the first
            text = text.replace("; run ", "; first run ", 1)
        out.append(f"> {names}: {text}")
    return out + [""]


# --- helpers -------------------------------------------------------------------------------------

def fmt_n(n):
    return f"{n:,}"


def short_n(n):
    """1000000 as 1e6, 16000000 as 1.6e7."""
    mantissa, exponent = f"{n:.1e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def sized_cells(cells):
    """[(n, text), ...] as "text / text (n / n)", the sizes written short."""
    return " / ".join(c for _, c in cells) + " (" + " / ".join(short_n(n) for n, _ in cells) + ")"


def table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out + [""]


def not_run_lines(runs):
    reasons = collections.defaultdict(list)
    for r in runs:
        why = skip_message(r)
        if why:
            reasons[why].append(r["name"])
    out = []
    for why, names in reasons.items():
        shown = ", ".join(f"`{n}`" for n in names[:6]) + (f" and {len(names) - 6} more"
                                                          if len(names) > 6 else "")
        out.append(f"Not measured ({why}): {shown}.")
    return out + ([""] if out else [])


def counter_by_name(runs, pattern, counter):
    """(match groups) -> counter value of the measured runs whose name matches `pattern`."""
    found = {}
    for r in runs:
        m = re.match(pattern, r["name"])
        if m and not skip_message(r) and counter in r:
            found[m.groups()] = r[counter]
    return found


class Plots:
    """matplotlib, or nothing: plots are optional."""

    def __init__(self, img_dir, enabled):
        self.img_dir = img_dir
        self.plt = None
        if not enabled:
            return
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            self.plt = plt
        except ImportError:
            print("matplotlib not found: plots skipped (pip install matplotlib, or "
                  "apt-get install python3-matplotlib)", file=sys.stderr)

    def save(self, fig, name):
        self.img_dir.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(self.img_dir / name, dpi=110, metadata={"Software": None})
        self.plt.close(fig)


# --- sections ------------------------------------------------------------------------------------

def pipelines_section(result, plots, img_link):
    table_ = collections.defaultdict(dict)  # (workload, n) -> contender -> us
    bandwidth = collections.defaultdict(dict)  # bytes -> contender -> GB/s
    for r in result.runs:
        m = re.match(r"BM_(\w+)/(\w+)/(\d+)", r["name"])
        if not m or skip_message(r):
            continue
        workload, who, n = m.group(1), m.group(2), int(m.group(3))
        if workload == "bandwidth":
            bandwidth[n][who] = r.get("bytes_per_second", 0) / 1e9
        else:
            table_[(workload, n)][who] = us(r)
    out = provenance_block([result])
    order = {w: i for i, w in enumerate(PIPELINE_WORKLOADS)}
    for w in sorted({w for w, _ in table_}, key=lambda w: (order.get(w, 99), w)):
        sizes = sorted(n for ww, n in table_ if ww == w)
        present = [c for c in PIPELINE_CONTENDERS if any(c in table_[(w, n)] for n in sizes)]
        rows = []
        for n in sizes:
            row = table_[(w, n)]
            ratio_e = row["smartarray"] / row["explicit"] if {"smartarray", "explicit"} <= row.keys() else None
            ratio_n = row["naive"] / row["smartarray"] if {"smartarray", "naive"} <= row.keys() else None
            rows.append([fmt_n(n)] + [f"{row[c]:.1f}" if c in row else "-" for c in present]
                        + [f"{ratio_e:.3f}x" if ratio_e else "-", f"{ratio_n:.1f}x" if ratio_n else "-"])
        out += [f"### {w}", ""]
        out += table(["n"] + present + ["smartarray/explicit", "naive/smartarray"], rows)
        if plots.plt and len(sizes) > 1:
            fig, ax = plots.plt.subplots(figsize=(6, 4))
            for c in present:
                xs = [n for n in sizes if c in table_[(w, n)]]
                ax.plot(xs, [table_[(w, n)][c] for n in xs], marker="o", label=c)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("elements")
            ax.set_ylabel("time per call (us)")
            ax.set_title(w)
            ax.legend(fontsize=7)
            plots.save(fig, f"pipelines_{w}.png")
            out += [f"![{w}]({img_link}/pipelines_{w}.png)", ""]
    if bandwidth:
        who_all = sorted({c for row in bandwidth.values() for c in row})
        rows = []
        for b in sorted(bandwidth):
            row = bandwidth[b]
            ratio = row.get("smartarray", 0) / row["pinned_memcpy"] if row.get("pinned_memcpy") else None
            rows.append([fmt_n(b)] + [f"{row.get(c, 0):.2f}" for c in who_all]
                        + [f"{100 * ratio:.1f}%" if ratio else "-"])
        out += ["### bandwidth: a host-written array read once on the device (GB/s)", ""]
        out += table(["bytes"] + who_all + ["smartarray / pinned_memcpy"], rows)
        if plots.plt:
            fig, ax = plots.plt.subplots(figsize=(6, 4))
            for c in who_all:
                xs = sorted(b for b in bandwidth if c in bandwidth[b])
                ax.plot(xs, [bandwidth[b][c] for b in xs], marker="o", label=c)
            ax.set_xscale("log")
            ax.set_xlabel("bytes")
            ax.set_ylabel("GB/s")
            ax.set_title("host-to-device migration bandwidth")
            ax.legend(fontsize=7)
            plots.save(fig, "bandwidth.png")
            out += [f"![bandwidth]({img_link}/bandwidth.png)", ""]
    return out + not_run_lines(result.runs)


def repetitions(result, pattern, value):
    """(match groups) -> the per-repetition values of the measured runs."""
    found = collections.defaultdict(list)
    for r in result.runs:
        m = re.match(pattern, r["name"])
        if m and not skip_message(r):
            found[m.groups()].append(value(r))
    return found


def ratio_cell(top, bottom):
    if not top or not bottom:
        return "-"
    return (f"{median(top) / median(bottom):.3f}x "
            f"[{min(top) / min(bottom):.3f}-{max(top) / max(bottom):.3f}]")


MODE_PAIRS = [("explicit", "pinned_memcpy", "explicit / pinned_memcpy (target <= 1.05x)"),
              ("pageable_memcpy", "pageable", "pageable_memcpy / pageable (target >= 2x at 1.6e7)"),
              ("managed_on_demand", "managed_prefetch",
               "managed_on_demand / managed_prefetch (target >= 2x)")]


def interleaved_section(results):
    pipelines, modes = results.get("targets_pipelines"), results.get("targets_modes")
    partial = results.get("targets_partial")
    present = [r for r in (pipelines, modes, partial) if r]
    if not present:
        return ["_No interleaved repetitions in the results (targets_pipelines.json, "
                "targets_modes.json, targets_partial.json)._", ""]
    out = provenance_block(present)
    if pipelines:
        times = repetitions(pipelines, r"BM_(\w+)/(\w+)/(\d+)", us)
        order = {w: i for i, w in enumerate(PIPELINE_WORKLOADS)}
        keys = sorted({(w, int(n)) for w, _, n in times if w in order},
                      key=lambda k: (order[k[0]], k[1]))
        rows = []
        for w, n in keys:
            e, sm = times.get((w, "explicit", str(n)), []), times.get((w, "smartarray", str(n)), [])
            if e and sm:
                rows.append([w, fmt_n(n), f"{median(e):.1f}", f"{median(sm):.1f}", ratio_cell(sm, e),
                             min(len(e), len(sm))])
        out += ["### SmartArray against explicit (target: <= 1.05x at >= 1e6, <= explicit + 5 us "
                "at 1e5)", ""]
        out += table(["workload", "n", "explicit", "smartarray", "smartarray/explicit",
                      "repetitions"], rows, ["---", "---:", "---:", "---:", "---:", "---:"])
        rates = repetitions(pipelines, r"BM_(bandwidth)/(\w+)/(\d+)",
                            lambda r: r.get("bytes_per_second", 0) / 1e9)
        rows = []
        for n in sorted({int(n) for _, _, n in rates}):
            p = rates.get(("bandwidth", "pinned_memcpy", str(n)), [])
            sm = rates.get(("bandwidth", "smartarray", str(n)), [])
            if p and sm:
                rows.append([fmt_n(n), f"{median(p):.2f}", f"{median(sm):.2f}",
                             f"{100 * median(sm) / median(p):.1f}%"])
        if rows:
            out += ["### Migration bandwidth against pinned cudaMemcpy (target: >= 95% at >= 16 MiB)", ""]
            out += table(["bytes", "pinned_memcpy GB/s", "smartarray GB/s",
                          "smartarray / pinned_memcpy"], rows)
        out += not_run_lines(pipelines.runs)
    if modes:
        times = repetitions(modes, r"BM_modes_(\w+)/(\w+)/(\d+)", us)
        rows = []
        for w, n in sorted({(w, int(n)) for w, _, n in times}):
            cells = []
            for top, bottom, _ in MODE_PAIRS:
                t, b = times.get((w, top, str(n)), []), times.get((w, bottom, str(n)), [])
                cells.append(f"{ratio_cell(t, b)} ({median(t):.0f} / {median(b):.0f} us)"
                             if t and b else "-")
            rows.append([w, fmt_n(n)] + cells)
        out += ["### Memory modes", ""]
        out += table(["workload", "n"] + [label for _, _, label in MODE_PAIRS], rows,
                     ["---", "---:"] + ["---:"] * len(MODE_PAIRS))
        out += not_run_lines(modes.runs)
    if partial:
        times = partial_repetitions(partial)
        rows = []
        for w, n in partial_keys(times):
            e, sm = times.get((w, "explicit", str(n)), []), times.get((w, "smartarray", str(n)), [])
            if e and sm:
                rows.append([w, fmt_n(n), f"{median(e):.1f}", f"{median(sm):.1f}", ratio_cell(sm, e),
                             f"<= {PARTIAL_TARGETS[w]}x", min(len(e), len(sm))])
        out += ["### Partial residency: SmartArray against explicit (`bench_partial`)", ""]
        out += table(["workload", "n", "explicit", "smartarray", "smartarray/explicit", "target",
                      "repetitions"], rows, ["---", "---:", "---:", "---:", "---:", "---:", "---:"])
        out += not_run_lines(partial.runs)
    return out


def partial_repetitions(result):
    """(workload, contender, n) -> the per-repetition times (us) of bench_partial's contenders."""
    return repetitions(result, r"BM_(\w+)/(explicit|smartarray)/(\d+)", us)


def partial_keys(runs_by_key):
    """The (workload, n) of bench_partial's target workloads in `runs_by_key`, in table order."""
    order = {w: i for i, w in enumerate(PARTIAL_TARGETS)}
    return sorted({(w, int(n)) for w, _, n in runs_by_key if w in order},
                  key=lambda k: (order[k[0]], k[1]))


def copies_cell(run):
    """The copies per call of a bench_partial run, as "H2D 2 (102,400 B)" and "D2H ..."."""
    parts = []
    for label, side in (("H2D", "h2d"), ("D2H", "d2h")):
        count, size = run.get(f"{side}_per_call", 0), run.get(f"{side}_bytes_per_call", 0)
        if count:
            parts.append(f"{label} {count:.0f} ({size:,.0f} B)")
    return ", ".join(parts) or "none"


def partial_section(result):
    runs = {}  # (workload, contender, n) -> run
    latency = {}  # bytes -> run
    for r in result.runs:
        if skip_message(r):
            continue
        m = re.match(r"BM_(\w+)/(explicit|smartarray)/(\d+)", r["name"])
        if m:
            runs[m.groups()] = r
        m = re.match(r"BM_copy_latency/(\d+)", r["name"])
        if m:
            latency[int(m.group(1))] = r
    out = provenance_block([result])
    rows = []
    for w, n in partial_keys(runs):
        e, sm = runs.get((w, "explicit", str(n))), runs.get((w, "smartarray", str(n)))
        ratio = us(sm) / us(e) if e and sm else None
        rows.append([w, fmt_n(n), f"{us(e):.1f}" if e else "-", f"{us(sm):.1f}" if sm else "-",
                     (f"{ratio:.3f}x" if ratio <= PARTIAL_TARGETS[w] else f"**{ratio:.3f}x**")
                     if ratio else "-", f"<= {PARTIAL_TARGETS[w]}x",
                     copies_cell(e) if e else "-", copies_cell(sm) if sm else "-"])
    if rows:
        out += ["**SmartArray against explicit copies** (wall time per call in us; copies per call "
                "each way, with their bytes)", ""]
        out += table(["workload", "n", "explicit", "smartarray", "smartarray/explicit", "target",
                      "explicit copies", "smartarray copies"], rows,
                     ["---", "---:", "---:", "---:", "---:", "---:", "---", "---"])
    if latency:
        smallest = us(latency[min(latency)])
        rows = [[fmt_n(b), f"{us(r):.2f}", f"{r.get('bytes_per_second', 0) / 1e9:.3g}",
                 f"{us(r) / smallest:.2f}x"] for b, r in sorted(latency.items())]
        out += [f"**copy_latency**: one D2H copy into pinned memory and a synchronize (time per "
                f"copy against the {fmt_n(min(latency))}-byte copy's)", ""]
        out += table(["bytes", "us per copy", "GB/s", "time / smallest copy"], rows)
    return out + not_run_lines(result.runs)


def modes_section(result):
    times = collections.defaultdict(dict)  # (workload, n) -> contender -> us
    for r in result.runs:
        m = re.match(r"BM_modes_(\w+)/(\w+)/(\d+)", r["name"])
        if m and not skip_message(r):
            times[(m.group(1), int(m.group(3)))][m.group(2)] = us(r)
    present = [c for c in MODE_CONTENDERS if any(c in row for row in times.values())]
    present += sorted({c for row in times.values() for c in row} - set(present))
    rows = [[w, fmt_n(n)] + [f"{times[(w, n)][c]:.1f}" if c in times[(w, n)] else "-"
                             for c in present]
            for w, n in sorted(times)]
    return (provenance_block([result])
            + table(["workload", "n"] + present, rows, ["---", "---:"] + ["---:"] * len(present))
            + not_run_lines(result.runs))


def adapters_section(result):
    out = provenance_block([result])
    rows = []
    for (k,), c in sorted(counter_by_name(result.runs, r"BM_LaunchOverhead/arrays:(\d+)",
                                          "overhead_ns").items(), key=lambda kv: int(kv[0][0])):
        r = next(x for x in result.runs if x["name"].startswith(f"BM_LaunchOverhead/arrays:{k}/"))
        rows.append([k, f"{r.get('bare_ns', 0):.0f}", f"{r.get('launch_ns', 0):.0f}", f"{c:.0f}",
                     f"{r.get('overhead_per_array_ns', 0):.0f}"])
    if rows:
        out += ["**Host overhead of `launch`** (target: under 1000 ns, under 300 ns per array)", ""]
        out += table(["SmartArray arguments", "bare `<<<>>>` (ns)", "`launch` (ns)",
                      "overhead (ns)", "per array (ns)"], rows)
    rows = []
    for r in result.runs:
        m = re.match(r"BM_TransformVsKernel/(\d+)", r["name"])
        if m and not skip_message(r):
            rows.append((int(m.group(1)), [short_n(int(m.group(1))), f"{r.get('kernel_us', 0):.3f}",
                                           f"{r.get('transform_us', 0):.3f}",
                                           f"{r.get('ratio', 0):.3f}",
                                           f"{r.get('ratio_submit', 0):.3f}"]))
    if rows:
        out += ["**`transform` against a hand-written kernel** (device time per call; target: "
                "ratio within 1.05)", ""]
        out += table(["elements", "kernel (us)", "`transform` (us)", "ratio",
                      "ratio from an idle GPU"], [row for _, row in sorted(rows)])
    rows = []
    for r in result.runs:
        m = re.match(r"BM_MapVsTransform/(\d+)", r["name"])
        if m and not skip_message(r):
            rows.append((int(m.group(1)), [short_n(int(m.group(1))),
                                           f"{r.get('transform_us', 0):.1f}",
                                           f"{r.get('map_us', 0):.1f}",
                                           f"{r.get('ratio', 0):.3f}"]))
    if rows:
        out += ["**`map` against `transform` into an existing output** (wall time per call, host "
                "and device; target: ratio within 1.10 from 1e6 on)", ""]
        out += table(["elements", "`transform` (us)", "`map` (us)", "ratio"],
                     [row for _, row in sorted(rows)])
    rows = []
    for r in result.runs:
        m = re.match(r"BM_Transpose/(\w+)", r["name"])
        if m and not skip_message(r):
            rows.append([m.group(1), f"{r.get('naive_us', 0):.1f}", f"{r.get('tiled_us', 0):.2f}",
                         f"{r.get('speedup', 0):.2f}", f"{r.get('naive_GBps', 0):.0f}",
                         f"{r.get('tiled_GBps', 0):.0f}"])
    if rows:
        out += ["**Transpose, 4096 x 4096 floats**", ""]
        out += table(["order", "naive (us)", "tiled (us)", "speedup", "naive GB/s", "tiled GB/s"],
                     rows)
    return out + not_run_lines(result.runs)


def pool_section(result):
    out = provenance_block([result])
    pairs = collections.defaultdict(dict)  # family -> bytes -> median ns
    for r in result.medians():
        m = re.match(r"BM_(\w+)Pair/(\d+)/", r["name"])
        if m:
            pairs[m.group(1)][int(m.group(2))] = to_unit(r, "ns")
    if pairs:
        sizes = sorted({b for row in pairs.values() for b in row})
        rows = [[f"`{fam}`"] + [f"{row[b]:,.0f}" if b in row else "-" for b in sizes]
                for fam, row in pairs.items()]
        out += ["**Allocate + free pair**, median ns of 5 repetitions (target for the pools and "
                "default resources: <= 300 ns)", ""]
        out += table(["allocator"] + [f"{b // 1024:,} KiB" for b in sizes], rows)
    rows = []
    pools = {}  # (count, max MiB) -> the pool's run
    for r in result.runs:
        m = re.match(r"BM_RandomAllocationsPool/(\d+)/(\d+)", r["name"])
        if m and not skip_message(r):
            pools[m.groups()] = r
    for r in result.runs:
        m = re.match(r"BM_RandomAllocationsCudaMallocAsync/(\d+)/(\d+)", r["name"])
        if not m or skip_message(r):
            continue
        pool = pools.get(m.groups())
        if pool:
            rows.append([fmt_n(int(m.group(1))), m.group(2), f"{to_unit(pool, 'ms'):.3f}",
                         f"{to_unit(r, 'ms'):.3f}", f"{pool.get('speedup_vs_cudaMallocAsync', 0):.2f}x"])
    if rows:
        out += ["**random_allocations** (target: pool >= 3x cudaMallocAsync)", ""]
        out += table(["allocations", "max MiB", "pool (ms)", "cudaMallocAsync (ms)", "speedup"], rows)
    rows = []
    for r in result.runs:
        if r["name"].startswith("BM_StreamTemporaries") and not skip_message(r):
            extra = f"{r['speedup_vs_cudaMallocAsync']:.2f}x" if "speedup_vs_cudaMallocAsync" in r else "-"
            rows.append([f"`{r['name'].replace('/manual_time', '')}`", f"{us(r):.1f}", extra])
    if rows:
        out += ["**Stream temporaries**: 4 streams x 4 kernels, a temporary buffer each", ""]
        out += table(["benchmark", "us per round", "speedup vs cudaMallocAsync"], rows)
    return out + not_run_lines(result.all_runs)


def vector_section(result):
    rows = []
    for r in result.runs:
        m = re.match(r"BM_(\w+)/(\d+)", r["name"])
        if m and not skip_message(r):
            rows.append([f"`{m.group(1)}`", short_n(int(m.group(2))), f"{r.get('std_ns', 0):.4g}",
                         f"{r.get('smart_ns', 0):.4g}", f"{r.get('ratio', 0):.3f}x"])
    return (provenance_block([result])
            + table(["benchmark", "n", "std::vector ns", "SmartArray ns", "ratio"], rows)
            + not_run_lines(result.runs))


def generic_section(result):
    skip = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
            "repetitions", "repetition_index", "threads", "iterations", "real_time", "cpu_time",
            "time_unit", "aggregate_name", "aggregate_unit", "label", "error_occurred",
            "error_message", "skipped", "skip_message"}
    rows = []
    for r in result.all_runs:
        if skip_message(r):
            continue
        counters = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                             for k, v in r.items() if k not in skip)
        rows.append([r["name"], f"{r['real_time']:.3f} {r.get('time_unit', 'ns')}", counters])
    return (provenance_block([result]) + table(["benchmark", "time", "counters"], rows,
                                               ["---", "---:", "---"])
            + not_run_lines(result.all_runs))


# --- targets -------------------------------------------------------------------------------------

class Target:
    def __init__(self, issue, text, measure):
        self.issue, self.text, self.measure = issue, text, measure


def span(values, spec):
    """"min-max" of `values`, or the one value when they are equal once formatted."""
    low, high = spec.format(min(values)), spec.format(max(values))
    return low if low == high else f"{low}-{high}"


def join_ratios(values, spec="{:.3f}"):
    return " / ".join(spec.format(v) for v in values)


def pool_pairs(res):
    pool = res.get("bench_pool")
    if not pool:
        return None
    found = collections.defaultdict(list)
    for r in pool.medians():
        m = re.match(r"BM_(DevicePool|DefaultDeviceResource|PinnedPool|DefaultPinnedResource)Pair/",
                     r["name"])
        if m:
            found[m.group(1)].append(to_unit(r, "ns"))
    if not found:
        return None
    names = {"DevicePool": "device pool", "DefaultDeviceResource": "default device resource",
             "PinnedPool": "pinned pool", "DefaultPinnedResource": "default pinned resource"}
    text = ", ".join(f"{names[k]} {span(v, '{:.0f}')} ns" for k, v in found.items())
    return text, max(max(v) for v in found.values()) <= 300, "bench_pool.json (medians of 5)"


def pool_random(res):
    pool = res.get("bench_pool")
    if not pool:
        return None
    values = list(counter_by_name(pool.runs, r"BM_RandomAllocationsPool/(\d+)/(\d+)",
                                  "speedup_vs_cudaMallocAsync").values())
    if not values:
        return None
    return (f"{span(values, '{:.1f}x')} over {len(values)} shapes", min(values) >= 3,
            "bench_pool.json")


def vector_ratios(res, families, limit, extra=None):
    vec = res.get("bench_vector")
    if not vec:
        return None
    parts, misses, sizes = [], [], set()
    for family, label in families:
        found = counter_by_name(vec.runs, rf"BM_{family}/(\d+)/", "ratio")
        if not found:
            continue
        keys = sorted(found, key=lambda k: int(k[0]))
        sizes.update(int(k[0]) for k in keys)
        parts.append(f"{label} " + " / ".join(f"{found[k]:.2f}" if found[k] <= limit
                                              else f"**{found[k]:.2f}**" for k in keys) + "x")
        misses += [f"{label} at {short_n(int(k[0]))}" for k in keys if found[k] > limit]
    if not parts:
        return None
    text = "; ".join(parts) + f" ({' / '.join(short_n(n) for n in sorted(sizes))})"
    if extra:
        found = counter_by_name(vec.runs, rf"BM_{extra[0]}/(\d+)/", "ratio")
        if found:
            keys = sorted(found, key=lambda k: int(k[0]))
            text += f"; {extra[1]} " + join_ratios([found[k] for k in keys], "{:.2f}") + "x"
    met = not misses
    return text + ("" if met else "; over: " + ", ".join(misses)), met, "bench_vector.json (one run)"


def launch_overhead(res):
    a = res.get("bench_adapters")
    if not a:
        return None
    total = counter_by_name(a.runs, r"BM_LaunchOverhead/arrays:(\d+)", "overhead_ns")
    per = counter_by_name(a.runs, r"BM_LaunchOverhead/arrays:(\d+)", "overhead_per_array_ns")
    if not total:
        return None
    keys = sorted(total, key=lambda k: int(k[0]))
    text = (" / ".join(f"{total[k]:.0f}" for k in keys) + " ns for "
            + " / ".join(k[0] for k in keys) + " arrays (per array "
            + " / ".join(f"{per.get(k, 0):.0f}" for k in keys) + " ns)")
    met = max(total.values()) < 1000 and max(per.values() or [0]) < 300
    return text, met, "bench_adapters.json"


def adapters_ratio(res, pattern, limit):
    """The `ratio` counter of the bench_adapters runs matching `pattern` (one size each), judged
    against `limit`."""
    a = res.get("bench_adapters")
    if not a:
        return None
    found = counter_by_name(a.runs, pattern, "ratio")
    if not found:
        return None
    keys = sorted(found, key=lambda k: int(k[0]))
    text = (join_ratios([found[k] for k in keys]) + "x ("
            + " / ".join(short_n(int(k[0])) for k in keys) + ")")
    return text, max(found.values()) <= limit, "bench_adapters.json"


def transform_ratio(res):
    return adapters_ratio(res, r"BM_TransformVsKernel/(\d+)", 1.05)


def map_ratio(res):
    return adapters_ratio(res, r"BM_MapVsTransform/(\d+)", 1.10)


def mode_times(res):
    """(workload, contender, n) -> per-repetition times, and where they come from."""
    if res.get("targets_modes"):
        return (repetitions(res["targets_modes"], r"BM_modes_(\w+)/(\w+)/(\d+)", us),
                "targets_modes.json (interleaved medians)")
    if res.get("bench_modes"):
        return (repetitions(res["bench_modes"], r"BM_modes_(\w+)/(\w+)/(\d+)", us),
                "bench_modes.json (one run)")
    return None, None


def mode_ratio(res, top, bottom, check, only_n=None):
    times, source = mode_times(res)
    if not times:
        return None
    parts, ok = [], True
    for w in ("once", "reuse10"):
        sizes = sorted({int(n) for ww, c, n in times if ww == w and c == top})
        cells = []
        for n in sizes:
            if only_n and n != only_n:
                continue
            t, b = times.get((w, top, str(n)), []), times.get((w, bottom, str(n)), [])
            if t and b:
                ratio = median(t) / median(b)
                ok = ok and check(ratio)
                cells.append((n, ratio))
        if cells:
            parts.append(f"{w} " + " / ".join(f"{r:.3f}x" if check(r) else f"**{r:.3f}x**"
                                              for _, r in cells)
                         + " (" + " / ".join(short_n(n) for n, _ in cells) + ")")
    if not parts:
        return None
    return "; ".join(parts), ok, source


def pipeline_times(res):
    if res.get("targets_pipelines"):
        return (repetitions(res["targets_pipelines"], r"BM_(\w+)/(\w+)/(\d+)", us),
                "targets_pipelines.json (interleaved medians)")
    if res.get("bench_pipelines"):
        return (repetitions(res["bench_pipelines"], r"BM_(\w+)/(\w+)/(\d+)", us),
                "bench_pipelines.json (one run)")
    return None, None


def headline_ratio(res):
    times, source = pipeline_times(res)
    if not times:
        return None
    cells, ok = [], True
    order = {w: i for i, w in enumerate(PIPELINE_WORKLOADS)}
    for w, n in sorted({(w, int(n)) for w, c, n in times if c == "smartarray" and w in order},
                       key=lambda k: (order[k[0]], k[1])):
        if n < 1_000_000:
            continue
        e, sm = times.get((w, "explicit", str(n)), []), times.get((w, "smartarray", str(n)), [])
        if e and sm:
            ratio = median(sm) / median(e)
            ok = ok and ratio <= 1.05
            cells.append(f"{w} {short_n(n)} " + (f"{ratio:.3f}x" if ratio <= 1.05 else f"**{ratio:.3f}x**"))
    if not cells:
        return None
    return ", ".join(cells), ok, source


def headline_small(res):
    times, source = pipeline_times(res)
    if not times:
        return None
    e, sm = times.get(("add", "explicit", "100000"), []), times.get(("add", "smartarray", "100000"), [])
    if not e or not sm:
        return None
    return (f"add at 1e5: smartarray {median(sm):.1f} us, explicit {median(e):.1f} us",
            median(sm) <= median(e) + 5, source)


def headline_naive(res):
    p = res.get("bench_pipelines")
    if not p:
        return None
    times = repetitions(p, r"BM_(\w+)/(\w+)/(\d+)", us)
    naive, sm = times.get(("add", "naive", "100000")), times.get(("add", "smartarray", "100000"))
    e = times.get(("add", "explicit", "100000"))
    if not naive or not sm:
        return None
    ratio = median(naive) / median(sm)
    text = f"{ratio:.1f}x (naive {median(naive):.1f} us, smartarray {median(sm):.1f} us"
    if e:
        text += f"; explicit {median(e):.1f} us, itself {median(naive) / median(e):.1f}x"
    return text + ")", ratio >= 50, "bench_pipelines.json (one run)"


def headline_bandwidth(res):
    source_name = "targets_pipelines" if res.get("targets_pipelines") else "bench_pipelines"
    if not res.get(source_name):
        return None
    rates = repetitions(res[source_name], r"BM_bandwidth/(\w+)/(\d+)",
                        lambda r: r.get("bytes_per_second", 0) / 1e9)
    cells, ok = [], True
    for n in sorted({int(n) for _, n in rates}):
        if n < 16 << 20:
            continue
        p, sm = rates.get(("pinned_memcpy", str(n))), rates.get(("smartarray", str(n)))
        if p and sm:
            pct = 100 * median(sm) / median(p)
            ok = ok and pct >= 95
            cells.append(f"{pct:.1f}% at {n >> 20} MiB")
    if not cells:
        return None
    kind = "interleaved medians" if source_name == "targets_pipelines" else "one run"
    return ", ".join(cells), ok, f"{source_name}.json ({kind})"


def partial_times(res):
    if res.get("targets_partial"):
        return partial_repetitions(res["targets_partial"]), "targets_partial.json (interleaved medians)"
    if res.get("bench_partial"):
        return partial_repetitions(res["bench_partial"]), "bench_partial.json (one run)"
    return None, None


def partial_ratio(res, workload):
    """smartarray / explicit of bench_partial's `workload` at each size, against its target."""
    times, source = partial_times(res)
    if not times:
        return None
    limit, cells, ok = PARTIAL_TARGETS[workload], [], True
    for w, n in partial_keys(times):
        e, sm = times.get((w, "explicit", str(n))), times.get((w, "smartarray", str(n)))
        if w != workload or not e or not sm:
            continue
        ratio = median(sm) / median(e)
        ok = ok and ratio <= limit
        cells.append((n, f"{ratio:.3f}x" if ratio <= limit else f"**{ratio:.3f}x**"))
    if not cells:
        return None
    return sized_cells(cells), ok, source


def out_of_core_bandwidth(res):
    """out_of_core's bandwidth against pinned_h2d's at the same size. The copies run both ways at
    once (full duplex), so the bound is the larger of the bytes in and out, equal here: the
    fraction is the pinned copy's time over the out-of-core call's."""
    source = "targets_partial" if res.get("targets_partial") else "bench_partial"
    result = res.get(source)
    if not result:
        return None
    pinned = repetitions(result, r"BM_pinned_h2d/(\d+)", us)
    duplex = repetitions(result, r"BM_pinned_duplex/(\d+)", us)
    chunked = repetitions(result, r"BM_out_of_core/smartarray/(\d+)", us)
    cells, ok = [], True
    for key, times in sorted(pinned.items()):
        if key not in chunked:
            continue
        fraction = median(times) / median(chunked[key])
        ok = ok and fraction >= OUT_OF_CORE_BANDWIDTH
        cell = f"{fraction:.1%}"
        if key in duplex:
            # What the copy engines reach both ways at once, against the same one-way copy.
            cell += f" (both ways at once: {median(times) / median(duplex[key]):.1%})"
        cells.append((int(key[0]), cell if fraction >= OUT_OF_CORE_BANDWIDTH else f"**{cell}**"))
    if not cells:
        return None
    return sized_cells(cells), ok, f"{source}.json"


def multi_gpu_ratio(res):
    """bench_multi_gpu: SmartArray's read on a second GPU as a fraction of the hand-written peer
    copy's bandwidth at each size, and its host copies per call (every run checks 0)."""
    source = "targets_multi_gpu" if res.get("targets_multi_gpu") else "bench_multi_gpu"
    result = res.get(source)
    if not result:
        return None
    explicit = repetitions(result, r"BM_peer_read/explicit/(\d+)", us)
    smart = repetitions(result, r"BM_peer_read/smartarray/(\d+)", us)
    host = counter_by_name(result.runs, r"BM_peer_read/smartarray/(\d+)", "host_copies_per_call")
    cells, ok = [], True
    for key in sorted(smart, key=lambda k: int(k[0])):
        if key not in explicit:
            continue
        fraction = median(explicit[key]) / median(smart[key])
        ok = ok and fraction >= MULTI_GPU_BANDWIDTH
        cell = f"{fraction:.1%}"
        cells.append((int(key[0]), cell if fraction >= MULTI_GPU_BANDWIDTH else f"**{cell}**"))
    if not cells:
        return None
    round_trips = sorted(set(host.values()))
    ok = ok and round_trips == [0]
    return (f"{sized_cells(cells)}, host copies per call {round_trips}", ok, f"{source}.json")


def headline_copies(res):
    p = res.get("bench_pipelines")
    if not p:
        return None
    h2d = counter_by_name(p.runs, r"BM_chain10/smartarray/(\d+)", "h2d_per_call")
    d2h = counter_by_name(p.runs, r"BM_chain10/smartarray/(\d+)", "d2h_per_call")
    if not h2d:
        return None
    ok = all(v == 1 for v in h2d.values()) and all(v == 1 for v in d2h.values())
    sizes = " and ".join(short_n(int(k[0])) for k in sorted(h2d, key=lambda k: int(k[0])))
    text = (f"1 H2D and 1 D2H per call at {sizes} (every run checks it)" if ok else
            f"H2D {sorted(h2d.values())}, D2H {sorted(d2h.values())} per call")
    return text, ok, "bench_pipelines.json"


TARGETS = [
    Target("pool", "warm device/pinned allocate + free pair <= 0.3 us median", pool_pairs),
    Target("pool", "random_allocations >= 3x cudaMallocAsync", pool_random),
    Target("vector", "range-for, `std::sort`, `push_back` within 1.10x of `std::vector`",
           lambda r: vector_ratios(r, [("range_for_sum", "range-for"), ("sort", "sort"),
                                       ("push_back", "push_back")], 1.10)),
    Target("vector", "`operator[]` sum (float) within 1.5x",
           lambda r: vector_ratios(r, [("index_sum", "float")], 1.5,
                                   extra=("index_sum_int", "int64 (extra, no target)"))),
    Target("adapters", "`launch` host overhead < 1 us, < 0.3 us per array", launch_overhead),
    Target("adapters", "`transform` within 1.05x of a hand-written kernel", transform_ratio),
    Target("adapters", "`map` within 1.10x of `transform` into an existing output at >= 1e6",
           map_ratio),
    Target("modes", "explicit within 1.05x of hand-written pinned code",
           lambda r: mode_ratio(r, "explicit", "pinned_memcpy", lambda x: x <= 1.05)),
    Target("modes", "pageable >= 2x faster than `cudaMemcpy` from pageable at 1.6e7",
           lambda r: mode_ratio(r, "pageable_memcpy", "pageable", lambda x: x >= 2,
                                only_n=16_000_000)),
    Target("modes", "managed with prefetch >= 2x faster than on demand",
           lambda r: mode_ratio(r, "managed_on_demand", "managed_prefetch", lambda x: x >= 2)),
    Target("headline", "SmartArray <= 1.05x explicit at >= 1e6", headline_ratio),
    Target("headline", "SmartArray <= explicit + 5 us at 1e5", headline_small),
    Target("headline", "SmartArray >= 50x faster than naive, add at 1e5", headline_naive),
    Target("headline", "migration bandwidth >= 95% of pinned `cudaMemcpy` at >= 16 MiB",
           headline_bandwidth),
    Target("headline", "chain of 10 kernels: 1 H2D and 1 D2H per array", headline_copies),
    Target("partial", "host read of one element of a device-written array <= 1.2x a 4-byte copy",
           lambda r: partial_ratio(r, "scalar_read")),
    Target("partial", "host write of 32 elements at each end, then a kernel, <= 1.2x two "
           "128-byte copies", lambda r: partial_ratio(r, "boundary_update")),
    Target("partial", "host read of a 1000-element slice <= 1.2x one 4000-byte copy",
           lambda r: partial_ratio(r, "slice_read")),
    Target("partial", "range-for over a device-written array <= 1.05x a full copy and the same "
           "loop", lambda r: partial_ratio(r, "range_for")),
    Target("partial", "out-of-core transform over arrays of 4x the device budget <= 1.10x a "
           "hand-written double-buffered loop", lambda r: partial_ratio(r, "out_of_core")),
    Target("partial", "out-of-core transform >= 85% of the pinned host-to-device bandwidth "
           "(full duplex: the larger of the bytes in and out)", out_of_core_bandwidth),
    Target("multi-GPU", "a device-valid array read on a second GPU >= 90% of a hand-written "
           "`cudaMemcpyPeerAsync`'s bandwidth, with 0 host round trips", multi_gpu_ratio),
]


def targets_section(results, where):
    rows, used = [], []
    for t in TARGETS:
        measured = t.measure(results)
        if measured is None:
            rows.append([t.issue, t.text, "not measured", "-", "-"])
            continue
        text, met, source = measured
        file_name, _, how = source.partition(" ")
        rows.append([t.issue, t.text, text, "yes" if met else "**no**",
                     f"`{file_name}` {how}".strip()])
        name = source.split(".json")[0]
        if name in results and results[name] not in used:
            used.append(results[name])
    out = [f"Each figure is the latest in `{where}/`; a ratio target is judged on the "
           "interleaved repetitions where they exist. Figures over the line are in bold.", ""]
    if any(r.context.get("backend") == "host" for r in used):
        out += ["**Host backend**: these figures are CPU times of the emulated device, not GPU "
                "times; the targets are meant for a GPU.", ""]
    out += provenance_block(used) if used else []
    return out + table(["issue", "target", "latest", "met", "from"], rows,
                       ["---", "---", "---", "---", "---"])


# --- main ----------------------------------------------------------------------------------------

SECTIONS = {"bench_pipelines": None, "bench_modes": modes_section,
            "bench_adapters": adapters_section, "bench_pool": pool_section,
            "bench_vector": vector_section, "bench_partial": partial_section,
            "bench_multi_gpu": generic_section}


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
    for name, r in results.items():
        print(f"{r.path.name}: {provenance_text(r.context)}")
    try:
        where = results_dir.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        where = str(results_dir)
    if args.targets:
        print("\n".join(targets_section(results, where)))
    if args.provenance or args.targets:
        return
    plots = Plots(img_dir, not args.no_plots)

    generated = {"targets": targets_section(results, where),
                 "targets_interleaved": interleaved_section(results)}
    for name, section in SECTIONS.items():
        if name not in results:
            generated[name] = [f"_No results in `{where}/{name}.json`._", ""]
        elif name == "bench_pipelines":
            generated[name] = pipelines_section(results[name], plots, img_link)
        else:
            generated[name] = section(results[name])
    other = []
    for name, r in results.items():
        if name.startswith("bench_") and name not in SECTIONS:
            other += [f"## `{name}`", ""] + generic_section(r)
    generated["other"] = other

    template = pathlib.Path(args.template).read_text()
    lines = []
    for line in template.splitlines():
        m = re.fullmatch(r"@@(\w+)@@", line.strip())
        if not m:
            lines.append(line)
            continue
        if m.group(1) not in generated:
            sys.exit(f"{args.template}: unknown placeholder {line.strip()}")
        lines += generated[m.group(1)]
    header = ("<!-- Generated by scripts/bench_report.py from docs/benchmarks.md.in and "
              "benchmarks/results/*.json; edit those, not this file. -->")
    text = header + "\n" + "\n".join(lines).rstrip("\n") + "\n"
    text = re.sub(r"\n{3,}", "\n\n", text)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
