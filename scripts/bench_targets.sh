#!/usr/bin/env bash
# The issues' ratio targets, measured against the machine's drift: the contenders that a target
# compares run as repetitions in random interleaved order (Google Benchmark's
# --benchmark_enable_random_interleaving), so that a slow change of the machine (clocks, the VM's
# neighbours) falls on both sides of each ratio instead of on whichever benchmark ran last.
# Writes ${OUT_DIR}/targets_pipelines.json, targets_modes.json, targets_partial.json and
# targets_multi_gpu.json (with the
# provenance of bench_main.hpp), and the console output of each next to them or in ${LOG_DIR};
# scripts/bench_report.py reports the median of each contender's repetitions and the ratios of the
# medians. `scripts/gpu_check.sh targets` runs it.
#   bash scripts/bench_targets.sh [BUILD_DIR [SET...]]  (default build-gpu and every set; run on
#                                                        a GPU machine)
#   SET: pipelines, modes, partial, multi_gpu (the JSON names without targets_)
#   REPS=9  TARGET_MIN_TIME=0.1  OUT_DIR=gpu-out  LOG_DIR=${OUT_DIR}  BENCH_BACKEND=cuda
# bench_partial's calls of milliseconds run at least 1 s per repetition whatever TARGET_MIN_TIME
# says (long_call_min_time there).
set -uo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-gpu}"
[ $# -gt 0 ] && shift
sets=("$@")
out="${OUT_DIR:-gpu-out}"
logs="${LOG_DIR:-${out}}"
reps="${REPS:-9}"
min_time="${TARGET_MIN_TIME:-0.1}"
mkdir -p "${out}" "${logs}"
status=0
run() {  # binary, filter, json name
  if [ ${#sets[@]} -gt 0 ] && [[ ! " ${sets[*]} " =~ " ${3#targets_} " ]]; then return 0; fi
  SMARTARRAY_BACKEND="${BENCH_BACKEND:-cuda}" "${build}/benchmarks/$1" --benchmark_filter="$2" \
    --benchmark_repetitions="${reps}" --benchmark_enable_random_interleaving=true \
    --benchmark_min_time="${min_time}" --benchmark_report_aggregates_only=false \
    --benchmark_out="${out}/$3.json" --benchmark_out_format=json > "${logs}/$3.txt" 2>&1
  local rc=$?
  echo "targets $3: rc=${rc}"
  [ "${rc}" -eq 0 ] || status=1
}
# issue 8: smartarray against explicit on every workload, and migration bandwidth against pinned.
run bench_pipelines '^BM_((add|gaussian|polar|chain10|iterative)/(explicit|smartarray)|bandwidth/(smartarray|pinned_memcpy))/' targets_pipelines
# issue 6: explicit against pinned, pageable against pageable memcpy, managed prefetch against on demand.
run bench_modes '/(explicit|pinned_memcpy|pageable|pageable_memcpy|managed_prefetch|managed_on_demand)/' targets_modes
# Partial residency: smartarray against explicit when the host reads or writes part of an array
# that the device works on, and out-of-core calls against a hand-written loop and the pinned
# bandwidth (bench_partial; copy_latency has no target).
run bench_partial '^BM_((scalar_read|boundary_update|slice_read|range_for|out_of_core)/|pinned_(h2d|duplex)/)' targets_partial
# Multi-GPU: a read on a second GPU against a hand-written cudaMemcpyPeerAsync (skipped, with
# every benchmark marked so, on a machine of one GPU).
run bench_multi_gpu '^BM_peer_read/(smartarray|explicit)/' targets_multi_gpu
exit ${status}
