#!/usr/bin/env bash
# The README's test command: installs what the build needs, then configures, builds and tests with
# the `default` preset (CMakePresets.json, in build/): every test on the host backend, and the
# cuda.* tests on the GPUs present (reported as skipped on a machine without one).
#   JOBS=N CTEST_ARGS="-R host" bash scripts/test.sh [extra configure arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
export PATH="/usr/local/cuda/bin:${PATH}"
jobs="${JOBS:-$(nproc)}"
cmake --preset default "$@"
cmake --build --preset default -j "${jobs}"
ctest --preset default -j "${jobs}" ${CTEST_ARGS:-}
