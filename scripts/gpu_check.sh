#!/usr/bin/env bash
# One call on a GPU machine: build everything, run the whole test suite on both backends, the demo
# and the benchmarks (then the ratio targets again as interleaved repetitions, scripts/bench_targets.sh),
# and print a summary last. Logs go to gpu-out/ and, packed, to $OUT.
#   bash scripts/gpu_check.sh [--no-tests] [--no-bench] [--bench-filter REGEX] [--sanitize]
# --sanitize also runs compute-sanitizer's memcheck, racecheck, synccheck and initcheck over the
# tests and examples (scripts/compute_sanitizer.sh) and fails the call on any error.
# The GPU machines have no package registry: scripts/pack_gpu_deps.sh packs GoogleTest and Google
# Benchmark into .deps/, which this script uses when present (carry it with the call).
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
out=gpu-out
mkdir -p "${out}"
tests=1
bench=1
filter="."
sanitize=0
while [ $# -gt 0 ]; do
  case "$1" in
    --no-tests) tests=0 ;;
    --no-bench) bench=0 ;;
    --bench-filter) filter="$2"; shift ;;
    --sanitize) sanitize=1 ;;
  esac
  shift
done
prefix=()
if [ -d .deps/usr ]; then
  prefix=(-DCMAKE_PREFIX_PATH="${PWD}/.deps/usr")
  export LD_LIBRARY_PATH="${PWD}/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "${out}/gpu.txt"
build=build-gpu
cmake -S . -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSMARTARRAY_WARNINGS_AS_ERRORS=ON "${prefix[@]}" > "${out}/configure.log" 2>&1 ||
  { tail -50 "${out}/configure.log"; exit 1; }
cmake --build "${build}" -j 16 > "${out}/build.log" 2>&1 ||
  { grep -E "error|Error" -A3 "${out}/build.log" | head -80; exit 1; }

status=0
: > "${out}/summary.txt"
if [ "${tests}" -eq 1 ]; then
  # Each GoogleTest binary on each backend (the longer differential run on the GPU), then the
  # examples, latency runs and compile-fail checks through CTest.
  for backend in host cuda; do
    passed=0; failed=0; skipped=0
    for f in "${build}"/tests/test_*; do
      [ -x "$f" ] || continue
      log="${out}/$(basename "$f").${backend}.log"
      SMARTARRAY_BACKEND=${backend} SMARTARRAY_DIFF_SEQUENCES=20000 SMARTARRAY_PROPERTY_OPS=500000 \
        "$f" > "${log}" 2>&1 || status=1
      p=$(grep -oE '\[  PASSED  \] [0-9]+' "${log}" | grep -oE '[0-9]+$' || echo 0)
      fl=$(grep -oE '\[  FAILED  \] [0-9]+ test' "${log}" | grep -oE '[0-9]+' || echo 0)
      s=$(grep -oE '\[  SKIPPED \] [0-9]+' "${log}" | grep -oE '[0-9]+$' || echo 0)
      passed=$((passed + p)); failed=$((failed + fl)); skipped=$((skipped + s))
      [ "${fl}" -eq 0 ] || grep -E '^\[  FAILED  \]' "${log}" | head -5
    done
    echo "gtest ${backend}: ${passed} passed, ${failed} failed, ${skipped} skipped" | tee -a "${out}/summary.txt"
  done
  grep -h "fault sweep:" "${out}"/test_fault_sweep.*.log >> "${out}/summary.txt" 2>/dev/null
  grep -h "property test:" "${out}"/test_property.*.log >> "${out}/summary.txt" 2>/dev/null
  ctest --test-dir "${build}" --output-on-failure -j 4 -R "example|_latency|compile_fail" \
    > "${out}/ctest.log" 2>&1 || status=1
  grep -E "tests passed|tests failed" "${out}/ctest.log" | sed 's/^/ctest (examples, latency, compile-fail): /' |
    tee -a "${out}/summary.txt"
  SMARTARRAY_BACKEND=cuda "${build}/benchmarks/bench_pipelines" --demo 2>&1 | tee "${out}/demo.txt" || status=1
fi

# Pack what exists so far: a call cut off at its time limit still returns the tests' results.
pack() { [ -n "${OUT:-}" ] && tar czf "${OUT}/gpu-out.tgz" "${out}" 2>/dev/null && cp "${out}/summary.txt" "${OUT}/summary.txt"; }
pack

if [ "${bench}" -eq 1 ]; then
  for b in "${build}"/benchmarks/bench_*; do
    [ -x "$b" ] || continue
    name=$(basename "$b")
    SMARTARRAY_BACKEND=cuda "$b" --benchmark_filter="${filter}" --benchmark_min_time="${BENCH_MIN_TIME:-0.2}" \
      --benchmark_out="${out}/${name}.json" --benchmark_out_format=json > "${out}/${name}.txt" 2>&1
    echo "benchmark ${name}: rc=$?" | tee -a "${out}/summary.txt"
    pack
  done
fi

if [ "${bench}" -eq 1 ]; then
  # The ratio targets again, as interleaved repetitions (see scripts/bench_targets.sh).
  OUT_DIR="${out}" bash scripts/bench_targets.sh "${build}" | tee -a "${out}/summary.txt" || status=1
  pack
fi

if [ "${sanitize}" -eq 1 ]; then
  OUT="${out}" bash scripts/compute_sanitizer.sh "${build}" > "${out}/compute-sanitizer.log" 2>&1 || status=1
  cat "${out}/compute-sanitizer/summary.txt" >> "${out}/summary.txt" 2>/dev/null ||
    tail -n 5 "${out}/compute-sanitizer.log" >> "${out}/summary.txt"
fi

pack
echo "==== summary ===="
cat "${out}/summary.txt"
exit ${status}
