#!/usr/bin/env bash
# Builds the tests with AddressSanitizer + UndefinedBehaviorSanitizer and with ThreadSanitizer, and
# runs the whole suite under each on the host backend (cuda.* report as skipped without a GPU):
# once as registered, then the host.* tests again with every queued operation delayed
# (SMARTARRAY_HOST_LATENCY_US), so that work is still pending when other threads look.
# Exits non-zero when a build fails, a test fails or a sanitizer reports anything.
#   bash scripts/sanitizers.sh [asan] [tsan]        (default: both)
#   JOBS=N  LATENCY_US=100      (the builds: build-asan, build-tsan; scripts/install_deps.sh first)
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
root="$(pwd)"
jobs="${JOBS:-$(nproc)}"
latency="${LATENCY_US:-100}"
kinds=("$@")
[ ${#kinds[@]} -eq 0 ] && kinds=(asan tsan)

# Reports fail the run at the first finding (UBSan is built with -fno-sanitize-recover). The
# library's out-of-memory tests need a huge nothrow new to return null, not to abort. The
# process-wide runtime and pools are never destroyed but stay reachable through static pointers,
# so LeakSanitizer does not count them.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:report_error_type=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1:suppressions=${root}/scripts/tsan_suppressions.txt"

# A report that did not change an exit status (a skipped test, say) still fails the run.
report_pattern='ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer|runtime error:'

summary=()
status=0

run_suite() {  # build dir, label, extra ctest args...
  local build="$1" label="$2"
  shift 2
  local log="${build}/sanitizers-${label// /_}.log"
  local start=${SECONDS}
  # The compile_fail.* tests only run the compiler: a sanitizer adds nothing to them.
  ctest --test-dir "${build}" --output-on-failure -j "${jobs}" --timeout 900 -E '^compile_fail\.' \
    "$@" > "${log}" 2>&1
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
  # The asan and tsan presets: Debug keeps the debug-only misuse checks on; the binaries never run
  # on a GPU here, so nvcc emits PTX only and skips the SASS back end.
  mkdir -p "${build}"
  if ! cmake --preset "${kind}" > "${build}/sanitizers-configure.log" 2>&1 ||
     ! cmake --build --preset "${kind}" -j "${jobs}" > "${build}/sanitizers-build.log" 2>&1; then
    tail -n 60 "${build}/sanitizers-configure.log" "${build}/sanitizers-build.log" 2>/dev/null
    summary+=("${label}: build failed (${build}/sanitizers-build.log)")
    status=1
    continue
  fi
  summary+=("${label}: built in $((SECONDS - start)) s")
  run_suite "${build}" "${label}"
  SMARTARRAY_HOST_LATENCY_US="${latency}" run_suite "${build}" "${label} latency ${latency}us" \
    -R '^host\.'
done

echo "==== sanitizers ===="
printf '%s\n' "${summary[@]}"
exit ${status}
