#!/usr/bin/env bash
# Runs compute-sanitizer's memcheck, racecheck, synccheck and initcheck over every test binary and
# example of a build, on the cuda backend, and prints one summary line per tool. Logs go to
# $OUT/compute-sanitizer (default gpu-out/compute-sanitizer), one per tool and binary.
# Exits non-zero when any tool reports an error, a binary fails under a tool, or a run times out.
#   bash scripts/compute_sanitizer.sh [BUILD_DIR]            (default build-gpu)
#   TOOLS="memcheck racecheck synccheck initcheck"  TOOL_TIMEOUT=900 (seconds per binary and tool)
#   RACECHECK_GTEST_FILTER=PATTERN   narrows racecheck, the slowest tool, to some tests
#   INITCHECK_GTEST_FILTER=PATTERN   the tests initcheck runs (default: all but the gated ones)
#
# Choices:
# - racecheck only checks shared-memory hazards in kernels, and is slow: it runs over the test
#   binaries only, not the examples; RACECHECK_GTEST_FILTER can narrow it further for large suites.
# - API errors are not reported (--report-api-errors no): tests provoke them on purpose (a bad
#   launch configuration, a cudaMalloc beyond the device's memory) and assert the exceptions that
#   the library turns them into. A binary whose tests fail under a tool still fails this script.
# - No leak check: the process-wide pools are never destroyed by design (see docs/design.md), so
#   their chunks are live until the process exits.
# - initcheck tracks every copy by waiting for it, so a stream that a test holds closed with a
#   host function (a gate) blocks the host there; the few tests that assert that the host does not
#   wait for a gated stream cannot hold under it, and it skips them by default. memcheck,
#   racecheck and synccheck run them.
# - initcheck runs with SMARTARRAY_BATCHED_UPLOADS=0: it takes the destination of a batched copy
#   (cudaMemcpyBatchAsync, small uploads on an idle stream) for uninitialized memory.
# - initcheck reports reads of device memory that nothing wrote. Pool blocks are handed out
#   uninitialized and a discard acquire writes before anything reads, so every report is a real
#   uninitialized read.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
build="${1:-build-gpu}"
out="${OUT:-gpu-out}/compute-sanitizer"
tools="${TOOLS:-memcheck racecheck synccheck initcheck}"
limit="${TOOL_TIMEOUT:-900}"
mkdir -p "${out}"
rm -f "${out}/summary.txt"

if ! command -v compute-sanitizer >/dev/null 2>&1; then
  echo "error: compute-sanitizer not found (it ships with the CUDA toolkit, in /usr/local/cuda/bin)" >&2
  exit 1
fi

tests=()
for f in "${build}"/tests/test_*; do [ -f "$f" ] && [ -x "$f" ] && tests+=("$f"); done
examples=()
for f in "${build}"/examples/*; do [ -f "$f" ] && [ -x "$f" ] && examples+=("$f"); done
if [ ${#tests[@]} -eq 0 ]; then
  echo "error: no test binaries in ${build}/tests; build first (bash scripts/gpu_check.sh builds ${build})" >&2
  exit 1
fi

# The tests that hold a stream closed with a gate and assert that the host does not wait for it.
gated="-Concurrency.EightThreadsReadOneConstArrayWhileItsDeviceCopyIsNewer"
gated+=":*MemoryModes.HostReadWaitsForAGatedDeviceWriter/*:*MemoryModes.HostWriteWaitsForAGatedDeviceReader/*"
gated+=":*MemoryModes.WorkOnTwoStreamsIsOrdered/*:PinnedPoolHostWriters.*"
gated+=":PoolConformance/*.BlockFreedOnStreamAReachesStreamBOnlyAfterBWaitsForItsLastUse"
gated+=":Residency.DeviceReadOnStreamBSeesWriteOnStreamAWithoutBlockingTheHost"
gated+=":Residency.DeviceWriteOnStreamBWaitsForReadOnStreamA"
gated+=":Residency.ACopyConstructionIsAUseOfItsSourceThatLaterWritersWaitFor"
gated+=":Residency.AWriteThroughGpuIsOrderedAfterPendingReadsOnOtherStreams"
gated+=":MemoryModesPageable.StagingBlocksAreFreeForAnyoneOnceATransferReturns"
# Death tests stop a child process with a signal, which compute-sanitizer may intercept (the
# stale-host guard's child hangs on its SIGSEGV): no tool runs them.
deaths="StaleHostGuard.ReadThroughAPointerKeptAcrossADeviceWriteStopsWithAClearMessage"
deaths+=":PoolConformance/*.FreeingAWaitingSmallBlockAgainStops"

export SMARTARRAY_BACKEND=cuda
status=0
summary=()
for tool in ${tools}; do
  options=(--tool "${tool}" --report-api-errors no --print-limit 100)
  # initcheck does not see cudaMemcpyBatchAsync write its destination (CUDA 13.0: a probe that
  # uploads 4000 floats in one batched copy and sums them on the device gets the right sum and
  # 4000 reports), so small uploads take the plain path under it.
  tool_env=()
  [ "${tool}" = initcheck ] && tool_env=(SMARTARRAY_BATCHED_UPLOADS=0)
  binaries=("${tests[@]}")
  [ "${tool}" != racecheck ] && binaries+=("${examples[@]}")
  errors=0; warnings=0; failed=0; timed_out=0; ran=0
  start=${SECONDS}
  for binary in "${binaries[@]}"; do
    name=$(basename "${binary}")
    log="${out}/${tool}.${name}.log"
    args=()
    case "${binary}" in
      */examples/*) args=(--quick) ;;
      *) args=("--gtest_filter=-${deaths}")
         [ "${tool}" = racecheck ] && [ -n "${RACECHECK_GTEST_FILTER:-}" ] &&
           args=("--gtest_filter=${RACECHECK_GTEST_FILTER}-${deaths}")
         [ "${tool}" = initcheck ] &&
           args=("--gtest_filter=${INITCHECK_GTEST_FILTER:-${gated}:${deaths}}") ;;
    esac
    timeout "${limit}" env "${tool_env[@]}" compute-sanitizer "${options[@]}" "${binary}" \
      "${args[@]}" > "${log}" 2>&1
    rc=$?
    ran=$((ran + 1))
    # One summary per process (a death test forks): add them up. racecheck counts its hazards in
    # a summary of its own: "RACECHECK SUMMARY: 2 hazards displayed (1 errors, 1 warnings)".
    if [ "${tool}" = racecheck ]; then
      count=$(sed -nE 's/.*RACECHECK SUMMARY: .*\(([0-9]+) errors?, [0-9]+ warnings?\).*/\1/p' "${log}" |
        awk '{n += $1} END {if (NR) print n}')
      warnings=$((warnings + $(sed -nE 's/.*RACECHECK SUMMARY: .*, ([0-9]+) warnings?\).*/\1/p' "${log}" |
        awk '{n += $1} END {print n + 0}')))
    else
      count=$(grep -oE 'ERROR SUMMARY: [0-9]+ errors?' "${log}" | awk '{n += $3} END {if (NR) print n}')
    fi
    if [ "${rc}" -eq 124 ]; then
      timed_out=$((timed_out + 1))
      echo "${tool} ${name}: timed out after ${limit} s (${log})"
    elif [ -z "${count}" ]; then
      failed=$((failed + 1))
      echo "${tool} ${name}: no ERROR SUMMARY, rc=${rc} (${log})"
    else
      errors=$((errors + count))
      if [ "${count}" -ne 0 ] || [ "${rc}" -ne 0 ]; then
        [ "${rc}" -ne 0 ] && failed=$((failed + 1))
        echo "${tool} ${name}: ${count} errors, rc=${rc} (${log})"
        grep -m 20 -E '^=========' "${log}" | head -20
      fi
    fi
  done
  line="compute-sanitizer ${tool}: ERROR SUMMARY: ${errors} errors"
  [ "${tool}" = racecheck ] && line+=", ${warnings} hazard warnings"
  line+=" (${ran} binaries, ${failed} failed, ${timed_out} timed out, $((SECONDS - start)) s)"
  summary+=("${line}")
  if [ "${errors}" -ne 0 ] || [ "${failed}" -ne 0 ] || [ "${timed_out}" -ne 0 ]; then status=1; fi
done

printf '%s\n' "${summary[@]}" | tee "${out}/summary.txt"
exit ${status}
