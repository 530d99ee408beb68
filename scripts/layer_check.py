#!/usr/bin/env python3
"""Checks that no file of a lower layer includes a file of a higher one (docs/design.md, "Layers").

Each header under include/smartarray/ and each file under src/ belongs to one layer; an include
of a smartarray header or of a src/ file from a higher layer is an error. Exit 1 on any, naming
the file, the include and both layers.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAYERS = ["base", "diagnostics", "runtime", "memory", "views", "core", "adapters", "umbrella"]

# Files by layer, as paths relative to include/smartarray/ or to the repository root (src/...). A
# folder (ending in "/") holds every file below it; the longest match wins. The headers that stay
# at the top of include/smartarray/ besides config.hpp, error.hpp and smartarray.hpp only forward
# to their new place (kept so that existing includes keep working): they count as the umbrella.
MEMBERS = {
    "base": ["config.hpp", "error.hpp", "detail/", "src/environment.cpp"],
    "diagnostics": ["diagnostics/", "src/observability.cpp",
                    "src/view_registry.cpp", "src/host_guard.cpp"],
    "runtime": ["runtime/", "src/runtime.cpp", "src/cuda/", "src/host/", "src/host_memory.hpp",
                "src/host_registration.cpp"],
    "memory": ["memory/", "src/memory/"],
    "views": ["views/"],
    "core": ["core/", "src/core/", "src/parallel_copy.hpp", "src/parallel_copy.cpp"],
    "adapters": ["adapters/", "src/adapters/"],
    "umbrella": ["smartarray.hpp", "*.hpp"],
}


def layer_of(name):
    """The layer index of a file named relative to include/smartarray/ or to the root."""
    best = None
    for index, layer in enumerate(LAYERS):
        for member in MEMBERS[layer]:
            top_level = member == "*.hpp" and "/" not in name
            if name == member or top_level or (member.endswith("/") and name.startswith(member)):
                if best is None or len(member) > best[1]:
                    best = (index, len(member))
    return None if best is None else best[0]


def files():
    include = ROOT / "include" / "smartarray"
    for path in sorted(include.rglob("*.hpp")):
        yield path, str(path.relative_to(include))
    for path in sorted((ROOT / "src").rglob("*")):
        if path.suffix in (".hpp", ".cpp", ".cu"):
            yield path, str(path.relative_to(ROOT))


def main():
    errors = []
    for path, name in files():
        own = layer_of(name)
        if own is None:
            errors.append(f"{name}: belongs to no layer (scripts/layer_check.py)")
            continue
        for line in path.read_text().splitlines():
            match = re.match(r'\s*#\s*include\s+([<"])([^>"]+)[>"]', line)
            if not match:
                continue
            target = match.group(2)
            if match.group(1) == "<":
                if not target.startswith("smartarray/"):
                    continue
                included = target[len("smartarray/"):]
            else:
                resolved = (path.parent / target).resolve()
                try:
                    included = str(resolved.relative_to(ROOT))
                except ValueError:
                    continue
            other = layer_of(included)
            if other is None:
                errors.append(f"{name}: includes {target}, which belongs to no layer")
            elif other > own:
                errors.append(f"{name} ({LAYERS[own]}) includes {target} ({LAYERS[other]})")
    for error in errors:
        print(f"layer_check: {error}", file=sys.stderr)
    if errors:
        return 1
    print(f"layer_check: no upward include in {sum(1 for _ in files())} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
