"""scripts/bench_report.py's provenance: where each JSON's figures come from (the machine and
the software that benchmarks/bench_main.cpp records), one line per file or per group."""
import collections

# The provenance that benchmarks/bench_main.cpp records and the docs print; its git_commit only
# the console shows.
PROVENANCE_KEYS = ["smartarray_version", "build_type", "backend", "gpu_name", "gpu_compute_capability",
                   "gpu_driver", "cuda_driver", "cuda_runtime", "cuda_toolkit", "cuda_architectures",
                   "cccl_version", "google_benchmark", "num_cpus"]


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
