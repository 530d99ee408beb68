#!/usr/bin/env bash
# One call on a GPU machine: build everything, run the whole test suite on both backends, the demo
# and the benchmarks, and print a summary last. Logs and JSON go to $OUT (or ./gpu-out).
#   bash scripts/gpu_check.sh [--no-bench] [--bench-filter REGEX]
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
out="${OUT:-gpu-out}"
mkdir -p "${out}"
bench=1
filter="."
while [ $# -gt 0 ]; do
  case "$1" in
    --no-bench) bench=0 ;;
    --bench-filter) filter="$2"; shift ;;
  esac
  shift
done

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "${out}/gpu.txt"
build=build-gpu
cmake -S . -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSMARTARRAY_WARNINGS_AS_ERRORS=ON > "${out}/configure.log" 2>&1 || { tail -50 "${out}/configure.log"; exit 1; }
cmake --build "${build}" -j 16 > "${out}/build.log" 2>&1 || { grep -E "error|Error" -A3 "${out}/build.log" | head -80; exit 1; }

ctest --test-dir "${build}" --output-on-failure -j 4 > "${out}/ctest.log" 2>&1
ctest_rc=$?
# The per-binary GoogleTest totals, for the summary.
for backend in host cuda; do
  passed=0; failed=0; skipped=0
  for f in "${build}"/tests/test_*; do
    [ -x "$f" ] || continue
    log="${out}/$(basename "$f").${backend}.log"
    SMARTARRAY_BACKEND=${backend} "$f" > "${log}" 2>&1
    p=$(grep -oE '\[  PASSED  \] [0-9]+' "${log}" | grep -oE '[0-9]+$' || echo 0)
    fl=$(grep -oE '\[  FAILED  \] [0-9]+ test' "${log}" | grep -oE '[0-9]+' || echo 0)
    s=$(grep -oE '\[  SKIPPED \] [0-9]+' "${log}" | grep -oE '[0-9]+$' || echo 0)
    passed=$((passed + p)); failed=$((failed + fl)); skipped=$((skipped + s))
  done
  echo "gtest ${backend}: ${passed} passed, ${failed} failed, ${skipped} skipped" | tee -a "${out}/summary.txt"
done

SMARTARRAY_BACKEND=cuda "${build}/examples/pipeline" 2>&1 | tee "${out}/demo.txt"

if [ "${bench}" -eq 1 ]; then
  for b in "${build}"/benchmarks/bench_*; do
    [ -x "$b" ] || continue
    name=$(basename "$b")
    SMARTARRAY_BACKEND=cuda "$b" --benchmark_filter="${filter}" --benchmark_min_time=0.2s \
      --benchmark_out="${out}/${name}.json" --benchmark_out_format=json > "${out}/${name}.txt" 2>&1
    echo "benchmark ${name}: rc=$?" | tee -a "${out}/summary.txt"
  done
fi

echo "==== summary ===="
tail -n 25 "${out}/ctest.log"
cat "${out}/summary.txt"
exit ${ctest_rc}
