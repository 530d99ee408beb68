#!/usr/bin/env bash
# Builds the suite with the asan preset (AddressSanitizer + UndefinedBehaviorSanitizer) and the tsan
# preset (ThreadSanitizer), and runs it under each on the host backend (cuda.* report as skipped
# without a GPU): once as registered, then the host.* tests again with every queued operation
# delayed (SMARTARRAY_HOST_LATENCY_US), so that work is still pending when other threads look. Exits
# non-zero when a build fails, a test fails or a sanitizer reports anything, even in a test whose
# exit status it did not change.
# The sanitizers' options are the presets' test environment: reports halt at the first finding
# (UBSan is also built with -fno-sanitize-recover); the out-of-memory tests need a huge nothrow new
# to return null (allocator_may_return_null); the process-wide runtime and pools are never
# destroyed but stay reachable through static pointers, so LeakSanitizer does not count them.
#   bash scripts/sanitizers.sh [asan] [tsan]        (default: both; builds in build-asan, build-tsan)
#   JOBS=N  LATENCY_US=100                          (scripts/install_deps.sh first)
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
jobs="${JOBS:-$(nproc)}"
latency="${LATENCY_US:-100}"
kinds=("$@")
[ ${#kinds[@]} -eq 0 ] && kinds=(asan tsan)
report_pattern='ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer|runtime error:'
summary=()
status=0

run_suite() {  # preset, label, extra ctest args...
  local preset="$1" label="$2"
  shift 2
  local build="build-${preset}"
  local log="${build}/sanitizers-${label// /_}.log"
  local start=${SECONDS}
  ctest --preset "${preset}" -j "${jobs}" "$@" > "${log}" 2>&1
  local rc=$?
  local reports
  reports=$(grep -cE "${report_pattern}" "${build}/Testing/Temporary/LastTest.log" || true)
  local line
  line=$(grep -E 'tests passed' "${log}" || echo "no test summary")
  summary+=("${label}: ${line}; sanitizer reports: ${reports}; $((SECONDS - start)) s")
  if [ "${rc}" -ne 0 ] || [ "${reports}" -ne 0 ]; then
    status=1
    tail -n 60 "${log}"
    grep -E -m 5 -A 20 "${report_pattern}" "${build}/Testing/Temporary/LastTest.log" || true
  fi
}

for kind in "${kinds[@]}"; do
  case "${kind}" in
    asan) label="asan+ubsan" ;;
    tsan) label="tsan" ;;
    *) echo "unknown sanitizer '${kind}': expected asan or tsan" >&2; exit 2 ;;
  esac
  build="build-${kind}"
  start=${SECONDS}
  mkdir -p "${build}"
  if ! cmake --preset "${kind}" > "${build}/sanitizers-configure.log" 2>&1 ||
     ! cmake --build --preset "${kind}" -j "${jobs}" > "${build}/sanitizers-build.log" 2>&1; then
    tail -n 60 "${build}/sanitizers-configure.log" "${build}/sanitizers-build.log" 2>/dev/null
    summary+=("${label}: build failed (${build}/sanitizers-build.log)")
    status=1
    continue
  fi
  summary+=("${label}: built in $((SECONDS - start)) s")
  run_suite "${kind}" "${label}"
  SMARTARRAY_HOST_LATENCY_US="${latency}" run_suite "${kind}" "${label} latency ${latency}us" \
    -R '^host\.'
done

echo "==== sanitizers ===="
printf '%s\n' "${summary[@]}"
exit ${status}
