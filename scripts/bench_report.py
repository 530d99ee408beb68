#!/usr/bin/env python3
"""Turns Google Benchmark JSON files into docs/benchmarks.md and PNG plots.

    python3 scripts/bench_report.py RESULTS_DIR [--docs docs]

RESULTS_DIR holds bench_*.json (written by scripts/gpu_check.sh). The pipelines benchmark gets one
table per workload with each contender's time and its ratio against explicit and naive; the
bandwidth workload gets GB/s; the interleaved repetitions of scripts/bench_targets.sh
(targets_*.json) get the ratio targets; every other benchmark binary gets a table of its runs and
counters.
Plots need matplotlib (pip install matplotlib); without it the tables are still written.
"""
import argparse
import collections
import json
import pathlib
import re
import sys
from statistics import median

CONTENDERS = ["naive", "explicit", "smartarray", "managed_prefetch", "managed", "mapped", "thrust"]


def load(path):
    with open(path) as f:
        data = json.load(f)
    runs = [b for b in data.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]
    return data.get("context", {}), runs


def us(run):
    unit = run.get("time_unit", "ns")
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[unit]
    return run["real_time"] * scale


def pipelines_section(runs, img_dir, plots):
    # BM_<workload>/<contender>/<n>/manual_time
    table = collections.defaultdict(dict)  # (workload, n) -> contender -> us
    bandwidth = collections.defaultdict(dict)  # bytes -> contender -> GB/s
    errors = []
    for r in runs:
        m = re.match(r"BM_(\w+)/(\w+)/(\d+)", r["name"])
        if not m:
            continue
        workload, who, n = m.group(1), m.group(2), int(m.group(3))
        if r.get("error_occurred"):
            errors.append(f"{r['name']}: {r.get('error_message')}")
            continue
        if workload == "bandwidth":
            bandwidth[n][who] = r.get("bytes_per_second", 0) / 1e9
        else:
            table[(workload, n)][who] = us(r)
    out = ["## Pipelines (`benchmarks/bench_pipelines`)", "",
           "Each cell is the mean time of one call in microseconds (CUDA events on an idle "
           "stream, synchronized per call). Ratios: smartarray / explicit and naive / smartarray.", ""]
    workloads = sorted({w for w, _ in table}, key=lambda w: ["add", "gaussian", "polar", "chain10",
                                                            "iterative"].index(w)
                       if w in ["add", "gaussian", "polar", "chain10", "iterative"] else 99)
    for w in workloads:
        sizes = sorted(n for ww, n in table if ww == w)
        present = [c for c in CONTENDERS if any(c in table[(w, n)] for n in sizes)]
        out.append(f"### {w}")
        out.append("")
        out.append("| n | " + " | ".join(present) + " | smartarray/explicit | naive/smartarray |")
        out.append("|---:|" + "---:|" * (len(present) + 2))
        for n in sizes:
            row = table[(w, n)]
            cells = [f"{row[c]:.1f}" if c in row else "-" for c in present]
            ratio_e = row["smartarray"] / row["explicit"] if "smartarray" in row and "explicit" in row else None
            ratio_n = row["naive"] / row["smartarray"] if "smartarray" in row and "naive" in row else None
            out.append(f"| {n:,} | " + " | ".join(cells) + " | "
                       + (f"{ratio_e:.3f}x" if ratio_e else "-") + " | "
                       + (f"{ratio_n:.1f}x" if ratio_n else "-") + " |")
        out.append("")
        if plots and len(sizes) > 1:
            fig, ax = plots.subplots(figsize=(6, 4))
            for c in present:
                xs = [n for n in sizes if c in table[(w, n)]]
                ax.plot(xs, [table[(w, n)][c] for n in xs], marker="o", label=c)
            ax.set_xscale("log"); ax.set_yscale("log")
            ax.set_xlabel("elements"); ax.set_ylabel("time per call (us)"); ax.set_title(w)
            ax.legend(fontsize=7); fig.tight_layout()
            name = f"pipelines_{w}.png"
            fig.savefig(img_dir / name, dpi=110); plots.close(fig)
            out.append(f"![{w}](img/{name})")
            out.append("")
    if bandwidth:
        who_all = sorted({c for row in bandwidth.values() for c in row})
        out.append("### bandwidth: a host-written array read once on the device (GB/s)")
        out.append("")
        out.append("| bytes | " + " | ".join(who_all) + " | smartarray / pinned_memcpy |")
        out.append("|---:|" + "---:|" * (len(who_all) + 1))
        for b in sorted(bandwidth):
            row = bandwidth[b]
            ratio = row.get("smartarray", 0) / row["pinned_memcpy"] if row.get("pinned_memcpy") else None
            out.append(f"| {b:,} | " + " | ".join(f"{row.get(c, 0):.2f}" for c in who_all) + " | "
                       + (f"{100 * ratio:.1f}%" if ratio else "-") + " |")
        out.append("")
        if plots:
            fig, ax = plots.subplots(figsize=(6, 4))
            for c in who_all:
                xs = sorted(b for b in bandwidth if c in bandwidth[b])
                ax.plot(xs, [bandwidth[b][c] for b in xs], marker="o", label=c)
            ax.set_xscale("log"); ax.set_xlabel("bytes"); ax.set_ylabel("GB/s")
            ax.set_title("host-to-device migration bandwidth"); ax.legend(fontsize=7)
            fig.tight_layout(); fig.savefig(img_dir / "bandwidth.png", dpi=110); plots.close(fig)
            out.append("![bandwidth](img/bandwidth.png)")
            out.append("")
    if errors:
        out.append("Skipped or failed runs: " + "; ".join(errors))
        out.append("")
    return out


def repetitions(path, pattern, value):
    """(key..., contender) -> the per-repetition values of the runs in a targets JSON."""
    _, runs = load(path)
    found = collections.defaultdict(list)
    for r in runs:
        m = re.match(pattern, r["name"])
        if m and not r.get("error_occurred"):
            found[m.groups()].append(value(r))
    return found


def targets_section(results):
    """The ratio targets from scripts/bench_targets.sh: medians of interleaved repetitions."""
    pipelines, modes = results / "targets_pipelines.json", results / "targets_modes.json"
    if not pipelines.exists() and not modes.exists():
        return []
    out = ["## Targets, as interleaved repetitions (`scripts/bench_targets.sh`)", "",
           "The contenders of each target again, as repetitions run in random interleaved order, so "
           "that the machine's drift falls on both sides of a ratio. Times are the median of the "
           "repetitions in microseconds per call; a ratio is the ratio of the medians, and the "
           "range in brackets is the ratio of the fastest and of the slowest repetitions.", ""]

    def ratio_cell(top, bottom):
        if not top or not bottom:
            return "-"
        return (f"{median(top) / median(bottom):.3f}x "
                f"[{min(top) / min(bottom):.3f}-{max(top) / max(bottom):.3f}]")

    if pipelines.exists():
        times = repetitions(pipelines, r"BM_(\w+)/(\w+)/(\d+)", us)
        order = ["add", "gaussian", "polar", "chain10", "iterative"]
        rows = sorted({(w, int(n)) for w, _, n in times if w in order},
                      key=lambda k: (order.index(k[0]), k[1]))
        out += ["### SmartArray against explicit (target: <= 1.05x at >= 1e6, <= explicit + 5 us at 1e5)", "",
                "| workload | n | explicit | smartarray | smartarray/explicit | repetitions |",
                "|---|---:|---:|---:|---:|---:|"]
        for w, n in rows:
            e, sm = times.get((w, "explicit", str(n)), []), times.get((w, "smartarray", str(n)), [])
            if not e or not sm:
                continue
            out.append(f"| {w} | {n:,} | {median(e):.1f} | {median(sm):.1f} | {ratio_cell(sm, e)} | "
                       f"{min(len(e), len(sm))} |")
        out.append("")
        rates = repetitions(pipelines, r"BM_(bandwidth)/(\w+)/(\d+)",
                            lambda r: r.get("bytes_per_second", 0) / 1e9)
        sizes = sorted({int(n) for _, _, n in rates})
        if sizes:
            out += ["### Migration bandwidth against pinned cudaMemcpy (target: >= 95% at >= 16 MiB)", "",
                    "| bytes | pinned_memcpy GB/s | smartarray GB/s | smartarray / pinned_memcpy |",
                    "|---:|---:|---:|---:|"]
            for n in sizes:
                p = rates.get(("bandwidth", "pinned_memcpy", str(n)), [])
                sm = rates.get(("bandwidth", "smartarray", str(n)), [])
                if p and sm:
                    out.append(f"| {n:,} | {median(p):.2f} | {median(sm):.2f} | "
                               f"{100 * median(sm) / median(p):.1f}% |")
            out.append("")
    if modes.exists():
        times = repetitions(modes, r"BM_modes_(\w+)/(\w+)/(\d+)", us)
        pairs = [("explicit", "pinned_memcpy", "explicit / pinned_memcpy (target <= 1.05x)"),
                 ("pageable_memcpy", "pageable", "pageable_memcpy / pageable (target >= 2x at 1.6e7)"),
                 ("managed_on_demand", "managed_prefetch",
                  "managed_on_demand / managed_prefetch (target >= 2x)")]
        rows = sorted({(w, int(n)) for w, _, n in times})
        out += ["### Memory modes", "",
                "| workload | n | " + " | ".join(label for _, _, label in pairs) + " |",
                "|---|---:|" + "---:|" * len(pairs)]
        for w, n in rows:
            cells = []
            for top, bottom, _ in pairs:
                t, b = times.get((w, top, str(n)), []), times.get((w, bottom, str(n)), [])
                cells.append(f"{ratio_cell(t, b)} ({median(t):.0f} / {median(b):.0f} us)" if t and b else "-")
            out.append(f"| {w} | {n:,} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def generic_section(name, runs):
    out = [f"## {name}", "", "| benchmark | time | counters |", "|---|---:|---|"]
    for r in runs:
        if r.get("error_occurred"):
            out.append(f"| {r['name']} | error | {r.get('error_message')} |")
            continue
        skip = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
                "repetitions", "repetition_index", "threads", "iterations", "real_time", "cpu_time",
                "time_unit", "aggregate_name", "aggregate_unit", "label"}
        counters = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                             for k, v in r.items() if k not in skip)
        out.append(f"| {r['name']} | {r['real_time']:.3f} {r.get('time_unit', 'ns')} | {counters} |")
    out.append("")
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("results")
    parser.add_argument("--docs", default="docs")
    args = parser.parse_args()
    results = pathlib.Path(args.results)
    docs = pathlib.Path(args.docs)
    img_dir = docs / "img"
    img_dir.mkdir(parents=True, exist_ok=True)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plots
    except ImportError:
        plots = None
        print("matplotlib not found: tables only (pip install matplotlib for plots)", file=sys.stderr)

    files = sorted(results.glob("bench_*.json"))
    if not files:
        sys.exit(f"no bench_*.json in {results}")
    context, _ = load(files[0])
    lines = ["# Benchmarks", "",
             "The sections below are generated by `scripts/bench_report.py` from the JSON that `scripts/gpu_check.sh` writes. "
             "Every comparison runs its baseline in the same binary run.", ""]
    gpu = (results / "gpu.txt").read_text().strip() if (results / "gpu.txt").exists() else "unknown GPU"
    lines += [f"Machine: {gpu}; host: {context.get('num_cpus', '?')} CPUs; run {context.get('date', '?')}.", ""]
    for f in files:
        _, runs = load(f)
        if f.stem == "bench_pipelines":
            lines += pipelines_section(runs, img_dir, plots)
    lines += targets_section(results)
    for f in files:
        if f.stem != "bench_pipelines":
            _, runs = load(f)
            lines += generic_section(f"`benchmarks/{f.stem}`", runs)
    # Only the generated part is replaced; hand-written sections around it stay.
    begin, end = "<!-- generated by scripts/bench_report.py: begin -->", "<!-- generated: end -->"
    target = docs / "benchmarks.md"
    generated = begin + "\n" + "\n".join(lines[2:]) + "\n" + end
    text = target.read_text() if target.exists() else "# Benchmarks\n"
    if begin in text and end in text:
        text = text[:text.index(begin)] + generated + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + generated + "\n"
    target.write_text(text)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
