"""scripts/bench_report.py's formatting: Markdown tables and cells, the runs that did not
measure, and the optional PNG plots (matplotlib)."""
import collections
import sys
from statistics import median

from bench_report_results import skip_message


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
