#!/usr/bin/env bash
# Builds the libFuzzer target (tests/fuzz: the whole SmartArray API against a model, on the host
# backend) with clang, AddressSanitizer and UndefinedBehaviorSanitizer, and fuzzes it for
# FUZZ_SECONDS, starting from the corpus in tests/fuzz/corpus. New inputs go to a temporary
# directory, so the repository stays as it is. A divergence from the model, a sanitizer report, a
# leak or a hang saves the input under build-fuzz/artifacts/ and fails the script.
#   FUZZ_SECONDS=60 JOBS=N bash scripts/fuzz.sh [extra libFuzzer flags...]
# (clang and libFuzzer: scripts/install_deps.sh --fuzz)
# Replay a saved input (prints the divergence and the operations):
#   build-fuzz/tests/fuzz/fuzz_smart_array build-fuzz/artifacts/crash-...
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
build=build-fuzz
jobs="${JOBS:-$(nproc)}"
seconds="${FUZZ_SECONDS:-60}"
corpus=tests/fuzz/corpus

# The fuzz preset builds only the fuzzer: the library's sources compiled by clang
# (tests/fuzz/CMakeLists.txt).
mkdir -p "${build}/artifacts"
if ! cmake --preset fuzz > "${build}/fuzz-configure.log" 2>&1 ||
   ! cmake --build --preset fuzz -j "${jobs}" > "${build}/fuzz-build.log" 2>&1; then
  tail -n 60 "${build}/fuzz-configure.log" "${build}/fuzz-build.log" 2>/dev/null
  echo "fuzz: build failed (${build}/fuzz-build.log)" >&2
  exit 1
fi
fuzzer="${build}/tests/fuzz/fuzz_smart_array"

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${work}/corpus"
# Without detect_stack_use_after_return, which costs a third of the executions here: the ASan job
# (scripts/sanitizers.sh) runs the same interpreter with it, in the property test.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:report_error_type=1"
log="${build}/fuzz.log"
# Inputs up to 1 KiB (about 200 operations) from the start (-len_control=0); a hang is a deadlock.
"${fuzzer}" "${work}/corpus" "${corpus}" -max_total_time="${seconds}" -max_len=1024 \
  -len_control=0 -timeout=60 -rss_limit_mb=4096 -artifact_prefix="${build}/artifacts/" \
  -print_final_stats=1 "$@" > "${log}" 2>&1
status=$?
if [ "${status}" -ne 0 ]; then
  grep -E -m 1 -A 400 "divergence from the model|ERROR: |runtime error:|ALARM|deadly signal" "${log}" |
    head -n 200
fi

echo "==== fuzz (host backend, ${seconds} s) ===="
grep -E "^Done [0-9]+ runs" "${log}" || echo "fuzz: libFuzzer did not finish (exit ${status})"
grep -E "^fuzz_smart_array: " "${log}"
echo "fuzz: exit ${status}; log ${log}"
exit ${status}
