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

The work is in the modules beside this script: bench_report_results.py (reading the JSON),
bench_report_provenance.py, bench_report_format.py (tables and plots),
bench_report_sections.py (each binary's tables) and bench_report_targets.py.
"""
import argparse
import json
import os
import pathlib
import re
import sys

from bench_report_format import Plots
from bench_report_provenance import provenance_section, provenance_text
from bench_report_results import Result
from bench_report_sections import (adapters_section, generic_section, interleaved_section,
                                   modes_section, partial_section, pipelines_section,
                                   pool_section, stream_section, vector_section)
from bench_report_targets import targets_section

ROOT = pathlib.Path(__file__).resolve().parent.parent


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
