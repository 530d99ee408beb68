#!/usr/bin/env python3
"""Checks that no file of a lower layer includes a file of a higher one (docs/design.md, "Layers").

Each header under include/smartarray/ and each file under src/ belongs to the layer that its
folder names (src/ mirrors include/smartarray/); an include of a smartarray header or of a src/
file from a higher layer is an error. Exit 1 on any, naming the file, the include and both
layers.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAYERS = ["base", "diagnostics", "runtime", "memory", "views", "core", "adapters", "graph",
          "interop", "umbrella", "distributed"]


def layer_of(name):
    """The layer index of a file named relative to include/smartarray/ or to the root (src/...):
    its first folder names it; files at the top (config.hpp, error.hpp) and
    the private detail/ folders (include/smartarray/detail/, src/detail/) are the base, the graph layer's umbrella graph.hpp is the graph
    layer's, smartarray.hpp is the umbrella, and the distributed layer, with its umbrella
    distributed.hpp, sits above it."""
    parts = name.split("/")
    if parts[0] == "src":
        parts = parts[1:]
    if len(parts) > 1 and parts[0] in LAYERS:
        return LAYERS.index(parts[0])
    if parts == ["graph.hpp"]:
        return LAYERS.index("graph")
    if parts == ["smartarray.hpp"]:
        return LAYERS.index("umbrella")
    if parts == ["distributed.hpp"]:
        return LAYERS.index("distributed")
    if len(parts) == 1 or parts[0] == "detail":
        return LAYERS.index("base")
    return None


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
                # Next to the file, else from src/ (the library's private include folder).
                resolved = (path.parent / target).resolve()
                if not resolved.exists():
                    resolved = (ROOT / "src" / target).resolve()
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
