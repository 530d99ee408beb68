#!/usr/bin/env bash
# Shows that the latency tests catch a missing wait: removes the host's wait on the
# device-to-host copy (explicit mode, src/core/storage.cpp) in a scratch copy of the tree, builds test_residency on
# the host backend with SMARTARRAY_HOST_LATENCY_US, and expects failures. Exit 0 = the tests caught it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
scratch=$(mktemp -d)
trap 'rm -rf "${scratch}"' EXIT
git ls-files -z -co --exclude-standard | xargs -0 -I{} cp --parents {} "${scratch}"
# The wait is the line after this comment.
marker="The host waits for this array's copy only"
grep -A1 "${marker}" "${scratch}/src/core/storage.cpp" | grep -q '^    host_wait_stream(stream);$'
sed -i "/${marker}/{n;d}" "${scratch}/src/core/storage.cpp"
if grep -A1 "${marker}" "${scratch}/src/core/storage.cpp" | grep -q 'host_wait_stream'; then
  echo "the mutation was not applied" >&2
  exit 1
fi
cmake -S "${scratch}" -B "${scratch}/build" -DSMARTARRAY_BUILD_BENCHMARKS=OFF \
  -DSMARTARRAY_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "${scratch}/build" -j "$(nproc)" --target test_residency >/dev/null
if SMARTARRAY_BACKEND=host SMARTARRAY_HOST_LATENCY_US=300 "${scratch}/build/tests/test_residency" \
    > "${scratch}/log" 2>&1; then
  echo "mutation survived: the tests did not notice the missing wait" >&2
  exit 1
fi
grep -E '^\[  (PASSED|FAILED)  \] [0-9]+ tests?' "${scratch}/log"
echo "mutation caught: removing the host wait makes the latency run fail"
