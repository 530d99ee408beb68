#!/usr/bin/env bash
# Builds and runs the README demo (examples/pipeline): SmartArray against hand-written explicit
# copies and naive copies, with transfer counts and times. Extra arguments go to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
export PATH="/usr/local/cuda/bin:${PATH}"
build="${BUILD_DIR:-build}"
cmake -S . -B "${build}" -DCMAKE_BUILD_TYPE=Release -DSMARTARRAY_BUILD_TESTS=OFF \
  -DSMARTARRAY_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "${build}" -j "${JOBS:-$(nproc)}" --target pipeline
"${build}/examples/pipeline" "$@"
