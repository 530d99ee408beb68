#!/usr/bin/env bash
# Builds and runs the README demo: `bench_pipelines --demo`, a short run of the headline benchmark
# (SmartArray against naive copies, hand-written explicit copies and, on a GPU, managed and mapped
# memory and Thrust) that prints one table per workload and checks every result. Extra arguments go
# to the demo (--quick: smaller sizes; Google Benchmark flags).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
export PATH="/usr/local/cuda/bin:${PATH}"
# A build folder of its own: the options below would otherwise stay in the cache of the test build.
build="${BUILD_DIR:-build-demo}"
cmake -S . -B "${build}" -DCMAKE_BUILD_TYPE=Release -DSMARTARRAY_BUILD_TESTS=OFF \
  -DSMARTARRAY_BUILD_EXAMPLES=OFF -DSMARTARRAY_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "${build}" -j "${JOBS:-$(nproc)}" --target bench_pipelines
"${build}/benchmarks/bench_pipelines" --demo "$@"
