#!/usr/bin/env bash
# The GPU side of the project, on a GPU machine with its own CMake, CUDA, GoogleTest and Google
# Benchmark (Ubuntu 24.04's or Debian 12's packages alike), with every GPU of the machine visible
# (CUDA_VISIBLE_DEVICES narrows it). Logs go to gpu-out/ and, packed, to $OUT; a summary is last.
#   bash scripts/gpu_check.sh [PHASE...] [--bench-filter REGEX] [--results DIR] [--wheels DIR]
# Phases, in this order whatever order they are given in (default: tests python, the whole suite):
#   tests     build, then every GoogleTest binary on both backends (the longer differential
#             runs), the examples, latency runs and compile-fail checks through CTest, the demo
#   python    the Python package over $PYTHON (default python3; its Numba, CuPy and PyTorch are
#             shared into build-py/gpu-venv), its pytest suite on the cuda backend, and the seed
#             benchmark (python/benchmarks/bench_seed.py, JSON into the results folder)
#   bench     the C++ benchmarks, one JSON each (bench_<name>.json)
#   targets   the ratio targets again as interleaved repetitions (scripts/bench_targets.sh), then
#             scripts/bench_report.py's check of every target
#   sanitize  compute-sanitizer's memcheck, racecheck, synccheck and initcheck over the tests and
#             examples (scripts/compute_sanitizer.sh); fails the call on any error
# Each of tests, python, bench and targets fits one 10-minute call on a machine of two GPUs and 32
# cores: run them as separate calls there (a call that finds the build folder reuses it).
# --results DIR (default gpu-out/results) receives the canonical result set and nothing else, each
#   JSON with its provenance (bench_main.hpp): copy it into benchmarks/results/ and run
#   scripts/bench_report.py. --bench-filter makes it a partial set.
# --wheels DIR installs scikit-build-core, nanobind and pytest offline from wheels in DIR.
# Environment:
#   PYTHON                 the interpreter for the python phase (default python3)
#   SMARTARRAY_GIT_COMMIT  the commit each JSON records; taken from git when the tree has .git,
#                          else pass it (a copied tree without .git otherwise records "unknown")
#   CUDA_ARCHS             CMAKE_CUDA_ARCHITECTURES for a fresh build (default: the project's)
#   BENCH_MIN_TIME         seconds per benchmark (default 0.2); REPS, TARGET_MIN_TIME: see
#                          scripts/bench_targets.sh
#   JOBS                   build parallelism (default: the CPU count)
#   BUILD_DIR              the build folder (default build-gpu)
#   BENCH_BACKEND          the benchmarks' backend (default cuda; host only to try this script
#                          without a GPU)
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
out=gpu-out
results="${out}/results"
filter="."
wheels=""
phases=" "
while [ $# -gt 0 ]; do
  case "$1" in
    tests | python | bench | targets | sanitize) phases+="$1 " ;;
    --wheels) wheels="$(realpath "$2")"; shift ;;
    --bench-filter) filter="$2"; shift ;;
    --results) results="$2"; shift ;;
    *) echo "gpu_check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ "${phases}" != " " ] || phases=" tests python "
has() { [[ "${phases}" == *" $1 "* ]]; }
mkdir -p "${out}"
jobs="${JOBS:-$(nproc)}"
build="${BUILD_DIR:-build-gpu}"

# The commit the benchmarks record: the caller's, else git's (with -dirty for uncommitted changes).
if [ -z "${SMARTARRAY_GIT_COMMIT:-}" ] && command -v git > /dev/null && [ -e .git ]; then
  commit=$(git rev-parse HEAD 2> /dev/null) &&
    { git diff --quiet HEAD 2> /dev/null || commit="${commit}-dirty"; } &&
    export SMARTARRAY_GIT_COMMIT="${commit}"
fi

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "${out}/gpu.txt"
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
visible="${CUDA_VISIBLE_DEVICES-all}"
# How the GPUs reach each other (NVLink, PCIe), for the multi-GPU figures.
[ "${gpus}" -gt 1 ] && nvidia-smi topo -m > "${out}/topology.txt" 2>&1
status=0
: > "${out}/summary.txt"
echo "phases:${phases}on ${gpus} GPU(s), CUDA_VISIBLE_DEVICES=${visible}" | tee -a "${out}/summary.txt"

# Packs what exists so far: a call cut off at its time limit still returns what it finished.
pack() {
  [ -n "${OUT:-}" ] || return 0
  tar czf "${OUT}/gpu-out.tgz" "${out}" 2> /dev/null
  cp "${out}/summary.txt" "${OUT}/summary.txt"
  if [ -d "${results}" ]; then mkdir -p "${OUT}/results" && cp "${results}"/*.json "${OUT}/results/" 2> /dev/null; fi
  return 0
}

if has tests || has bench || has targets || has sanitize; then
  configure=(-DCMAKE_BUILD_TYPE=Release -DSMARTARRAY_WARNINGS_AS_ERRORS=ON)
  if [ ! -f "${build}/CMakeCache.txt" ]; then
    # Ninja where the machine has it, else the default generator (make).
    command -v ninja > /dev/null && configure+=(-G Ninja)
  fi
  [ -n "${CUDA_ARCHS:-}" ] && configure+=(-DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS}")
  cmake -S . -B "${build}" "${configure[@]}" > "${out}/configure.log" 2>&1 ||
    { tail -50 "${out}/configure.log"; exit 1; }
  # Without the tests and sanitize phases, only the benchmarks are built.
  targets=()
  if ! has tests && ! has sanitize; then
    for source in benchmarks/bench_*.cu benchmarks/bench_*.cpp; do
      name=$(basename "${source%.*}")
      [ "${name}" = bench_main ] || targets+=(--target "${name}")
    done
  fi
  cmake --build "${build}" -j "${jobs}" "${targets[@]}" > "${out}/build.log" 2>&1 ||
    { grep -E "error|Error" -A3 "${out}/build.log" | head -80; exit 1; }
fi

if has tests; then
  for backend in host cuda; do
    passed=0; failed=0; skipped=0; crashed=""
    for f in "${build}"/tests/test_*; do
      [ -x "$f" ] || continue
      log="${out}/$(basename "$f").${backend}.log"
      SMARTARRAY_BACKEND=${backend} SMARTARRAY_DIFF_SEQUENCES=20000 SMARTARRAY_PROPERTY_OPS=500000 \
        SMARTARRAY_RANGE_PROPERTY_OPS=1000000 "$f" > "${log}" 2>&1 || status=1
      # A binary that ends without GoogleTest's summary (a crash, an abort) counts as such.
      grep -qE '^\[==========\] [0-9]+ tests? from .* ran' "${log}" || crashed+=" $(basename "$f")"
      p=$(grep -oE '\[  PASSED  \] [0-9]+' "${log}" | grep -oE '[0-9]+$' || echo 0)
      fl=$(grep -oE '\[  FAILED  \] [0-9]+ test' "${log}" | grep -oE '[0-9]+' || echo 0)
      s=$(grep -oE '\[  SKIPPED \] [0-9]+' "${log}" | grep -oE '[0-9]+$' || echo 0)
      passed=$((passed + p)); failed=$((failed + fl)); skipped=$((skipped + s))
      [ "${fl}" -eq 0 ] || grep -E '^\[  FAILED  \]' "${log}" | head -5
    done
    echo "gtest ${backend}: ${passed} passed, ${failed} failed, ${skipped} skipped${crashed:+; ended without a summary:${crashed}}" |
      tee -a "${out}/summary.txt"
  done
  grep -h "fault sweep:" "${out}"/test_fault_sweep.*.log >> "${out}/summary.txt" 2> /dev/null
  grep -h "property test:" "${out}"/test_property.*.log "${out}"/test_range_property.*.log \
    >> "${out}/summary.txt" 2> /dev/null
  # The multi-device suite runs on every visible GPU (it skips with one); the host backend's runs
  # on two emulated devices (the *_2 tests) come with the CTest runs below.
  multi="${out}/test_multi_device.cuda.log"
  echo "multi-device (cuda, ${visible} of ${gpus} GPU(s)):" \
    "$(grep -oE '\[  PASSED  \] [0-9]+' "${multi}" | grep -oE '[0-9]+$' || echo 0) passed," \
    "$(grep -oE '\[  SKIPPED \] [0-9]+' "${multi}" | grep -oE '[0-9]+$' || echo 0) skipped" |
    tee -a "${out}/summary.txt"
  ctest --test-dir "${build}" --output-on-failure -j 4 -R "example|_latency|compile_fail|_2" \
    > "${out}/ctest.log" 2>&1 || status=1
  grep -E "tests passed|tests failed" "${out}/ctest.log" | sed 's/^/ctest (examples, latency, compile-fail, two emulated devices): /' |
    tee -a "${out}/summary.txt"
  SMARTARRAY_BACKEND=cuda "${build}/benchmarks/bench_pipelines" --demo 2>&1 | tee "${out}/demo.txt" || status=1
  pack
fi

if has python; then
  pip_env=()
  [ -z "${wheels}" ] || pip_env=(PIP_NO_INDEX=1 PIP_FIND_LINKS="${wheels}")
  env "${pip_env[@]}" PYTHON="${PYTHON:-python3}" PYTHON_SHARE_SITE=1 VENV=build-py/gpu-venv \
    CMAKE_BUILD_PARALLEL_LEVEL="${jobs}" SMARTARRAY_BACKEND=cuda \
    bash scripts/python_test.sh > "${out}/pytest.log" 2>&1 || status=1
  echo "pytest (cuda): $(grep -E '(passed|failed|error)' "${out}/pytest.log" | tail -1)" | tee -a "${out}/summary.txt"
  mkdir -p "${results}"
  SMARTARRAY_BACKEND=cuda build-py/gpu-venv/bin/python python/benchmarks/bench_seed.py \
    --out "${results}/python_bench.json" > "${out}/python_bench.txt" 2>&1 || status=1
  tail -n 40 "${out}/python_bench.txt" >> "${out}/summary.txt"
  pack
fi

if has bench; then
  mkdir -p "${results}"
  rm -f "${results}"/bench_*.json  # the set is this call's runs only
  [ "${filter}" = "." ] || echo "benchmarks: --bench-filter ${filter}, a partial result set" | tee -a "${out}/summary.txt"
  [ -n "${SMARTARRAY_GIT_COMMIT:-}" ] ||
    echo "benchmarks: no git commit known; the JSON records the build's (set SMARTARRAY_GIT_COMMIT)" |
    tee -a "${out}/summary.txt"
  for b in "${build}"/benchmarks/bench_*; do
    [ -x "$b" ] && [ -f "$b" ] || continue
    name=$(basename "$b")
    start=${SECONDS}
    SMARTARRAY_BACKEND="${BENCH_BACKEND:-cuda}" "$b" --benchmark_filter="${filter}" --benchmark_min_time="${BENCH_MIN_TIME:-0.2}" \
      --benchmark_out="${results}/${name}.json" --benchmark_out_format=json > "${out}/${name}.txt" 2>&1
    rc=$?
    [ "${rc}" -eq 0 ] || status=1
    echo "benchmark ${name}: rc=${rc}, $((SECONDS - start)) s" | tee -a "${out}/summary.txt"
    pack
  done
fi

if has targets; then
  mkdir -p "${results}"
  rm -f "${results}"/targets_*.json
  start=${SECONDS}
  OUT_DIR="${results}" LOG_DIR="${out}" bash scripts/bench_targets.sh "${build}" | tee -a "${out}/summary.txt" ||
    status=1
  echo "targets: $((SECONDS - start)) s; results in ${results}/ (copy into benchmarks/results/)" |
    tee -a "${out}/summary.txt"
  # Each JSON's provenance and every target with its figure and whether it is met.
  python3 scripts/bench_report.py "${results}" --targets 2>&1 | tee -a "${out}/summary.txt"
  pack
fi

if has sanitize; then
  OUT="${out}" bash scripts/compute_sanitizer.sh "${build}" > "${out}/compute-sanitizer.log" 2>&1 || status=1
  cat "${out}/compute-sanitizer/summary.txt" >> "${out}/summary.txt" 2> /dev/null ||
    tail -n 5 "${out}/compute-sanitizer.log" >> "${out}/summary.txt"
fi

pack
echo "==== summary ===="
cat "${out}/summary.txt"
exit ${status}
