"""scripts/bench_report.py's sections of docs/benchmarks.md: the tables (and plots) of each
benchmark binary's JSON (bench_<name>.json) and of the interleaved repetitions of the targets
phase (targets_<set>.json)."""
import collections
from statistics import median

from bench_report_format import cell, not_run_lines, ratio_cell, short_n, table
from bench_report_results import skip_message, to_unit

PIPELINE_CONTENDERS = ["naive", "explicit", "smartarray", "managed_prefetch", "managed", "mapped",
                       "thrust"]
PIPELINE_WORKLOADS = ["add", "gaussian", "polar", "chain10", "iterative"]
MODE_CONTENDERS = ["explicit", "pinned_memcpy", "pageable", "pageable_memcpy", "managed_prefetch",
                   "managed_on_demand", "mapped"]
MODE_PAIRS = [("explicit", "pinned_memcpy"), ("pageable_memcpy", "pageable"),
              ("managed_on_demand", "managed_prefetch")]
PARTIAL_WORKLOADS = ["scalar_read", "boundary_update", "slice_read", "range_for", "out_of_core"]


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
