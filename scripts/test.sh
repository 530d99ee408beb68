#!/usr/bin/env bash
# The README's test command: installs what the build needs, then configures, builds and tests with
# the `default` preset (CMakePresets.json, in build/): every test on the host backend, and the
# cuda.* tests on the GPUs present (reported as skipped on a machine without one).
# --preset NAME takes another preset of CMakePresets.json: CI runs the suite with `asan`, the whole
# suite under AddressSanitizer and UndefinedBehaviorSanitizer.
#   JOBS=N CTEST_ARGS="-R host" bash scripts/test.sh [--preset NAME] [extra configure arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=default
if [ "${1:-}" = "--preset" ]; then
  preset="$2"
  shift 2
fi
bash scripts/install_deps.sh
export PATH="/usr/local/cuda/bin:${PATH}"
jobs="${JOBS:-$(nproc)}"
cmake --preset "${preset}" "$@"
cmake --build --preset "${preset}" -j "${jobs}"
ctest --preset "${preset}" -j "${jobs}" ${CTEST_ARGS:-}
