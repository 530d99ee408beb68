"""scripts/bench_report.py's targets: the figure of each target of benchmarks/targets.json from
the results, whether it meets its goal, and the targets table."""
import collections
import operator

from bench_report_format import short_n, table

OPS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, "==": operator.eq}


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
