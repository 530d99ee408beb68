#!/usr/bin/env bash
# Builds the library, tests, examples and benchmarks, then runs every test (host.* always; cuda.*
# run on a machine with a GPU and are reported as skipped elsewhere).
#   BUILD_DIR=build JOBS=N bash scripts/test.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
export PATH="/usr/local/cuda/bin:${PATH}"
build="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"
cmake -S . -B "${build}" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DSMARTARRAY_WARNINGS_AS_ERRORS=ON "$@"
cmake --build "${build}" -j "${jobs}"
ctest --test-dir "${build}" --output-on-failure -j "${jobs}" ${CTEST_ARGS:-}
