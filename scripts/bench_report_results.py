"""scripts/bench_report.py's reading of the results: one Google Benchmark JSON (`Result`), its
runs by name pattern and their values in a unit or counter. Reads the JSON of Google Benchmark
1.6 to 1.9 (a failed run as `error_occurred` up to 1.7, a skipped one as `skipped` from 1.8)."""
import collections
import json
import re
from statistics import median

FIELDS = {"us": lambda r: to_unit(r, "us"), "ns": lambda r: to_unit(r, "ns"),
          "GBps": lambda r: r.get("bytes_per_second", 0) / 1e9}


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
