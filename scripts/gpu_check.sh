#!/usr/bin/env bash
# One call on a GPU machine, with that machine's own CMake, CUDA, GoogleTest and Google Benchmark
# (Ubuntu 24.04's or Debian 12's packages alike): build, run the whole test suite on both backends
# and the demo, run the benchmarks and then the ratio targets again as interleaved repetitions
# (scripts/bench_targets.sh), and print a summary last. Logs go to gpu-out/ and, packed, to $OUT.
#   bash scripts/gpu_check.sh [--no-tests] [--no-bench] [--bench-filter REGEX] [--results DIR]
#                             [--sanitize] [--python [--wheels DIR]]
# Tests and benchmarks each fit in one 10-minute call on 16 cores: run them as two calls,
# `--no-bench` then `--no-tests` (which builds only the benchmarks if the build is not there).
# --results DIR (default gpu-out/results) receives the canonical result set and nothing else: one
#   JSON per benchmark binary (bench_<name>.json) and the interleaved targets
#   (targets_pipelines.json, targets_modes.json, targets_partial.json), each with its provenance
#   (bench_main.hpp). Copy it as is into benchmarks/results/ and run scripts/bench_report.py. It
#   is also copied to $OUT/results. --bench-filter makes it a partial set.
# --sanitize also runs compute-sanitizer's memcheck, racecheck, synccheck and initcheck over the
#   tests and examples (scripts/compute_sanitizer.sh) and fails the call on any error.
# --python builds the Python package into build-py/gpu-venv over $PYTHON (default
#   /opt/torch/.venv/bin/python where it exists, else python3; its Numba, CuPy and PyTorch are
#   shared), runs its pytest suite on the cuda backend and the seed benchmark
#   (python/benchmarks/bench_seed.py, JSON into the results folder). --wheels DIR installs
#   scikit-build-core, nanobind and pytest offline from wheels in DIR. Alone with --no-tests and
#   --no-bench, nothing of the C++ build is made.
# Environment:
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
tests=1
bench=1
filter="."
sanitize=0
python=0
wheels=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python=1 ;;
    --wheels) wheels="$(realpath "$2")"; shift ;;
    --no-tests) tests=0 ;;
    --no-bench) bench=0 ;;
    --bench-filter) filter="$2"; shift ;;
    --results) results="$2"; shift ;;
    --sanitize) sanitize=1 ;;
    *) echo "gpu_check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "${out}"
jobs="${JOBS:-$(nproc)}"

# The commit the benchmarks record: the caller's, else git's (with -dirty for uncommitted changes).
if [ -z "${SMARTARRAY_GIT_COMMIT:-}" ] && command -v git > /dev/null && [ -e .git ]; then
  commit=$(git rev-parse HEAD 2> /dev/null) &&
    { git diff --quiet HEAD 2> /dev/null || commit="${commit}-dirty"; } &&
    export SMARTARRAY_GIT_COMMIT="${commit}"
fi

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "${out}/gpu.txt"
# How the GPUs reach each other (NVLink, PCIe), for the multi-GPU figures.
[ "$(wc -l < "${out}/gpu.txt")" -gt 1 ] && nvidia-smi topo -m > "${out}/topology.txt" 2>&1
status=0
: > "${out}/summary.txt"
if [ "${python}" -eq 1 ]; then
  base="${PYTHON:-}"
  [ -n "${base}" ] || { [ -x /opt/torch/.venv/bin/python ] && base=/opt/torch/.venv/bin/python; } || base=python3
  pip_env=()
  [ -z "${wheels}" ] || pip_env=(PIP_NO_INDEX=1 PIP_FIND_LINKS="${wheels}")
  env "${pip_env[@]}" PYTHON="${base}" PYTHON_SHARE_SITE=1 VENV=build-py/gpu-venv \
    CMAKE_BUILD_PARALLEL_LEVEL="${jobs}" SMARTARRAY_BACKEND=cuda \
    bash scripts/python_test.sh > "${out}/pytest.log" 2>&1 || status=1
  echo "pytest (cuda): $(grep -E '(passed|failed|error)' "${out}/pytest.log" | tail -1)" | tee -a "${out}/summary.txt"
  mkdir -p "${results}"
  SMARTARRAY_BACKEND=cuda build-py/gpu-venv/bin/python python/benchmarks/bench_seed.py \
    --out "${results}/python_bench.json" > "${out}/python_bench.txt" 2>&1 || status=1
  tail -n 30 "${out}/python_bench.txt" >> "${out}/summary.txt"
  if [ "${tests}" -eq 0 ] && [ "${bench}" -eq 0 ] && [ "${sanitize}" -eq 0 ]; then
    [ -z "${OUT:-}" ] || { tar czf "${OUT}/gpu-out.tgz" "${out}"; cp "${out}/summary.txt" "${OUT}/"; }
    echo "==== summary ===="; cat "${out}/summary.txt"; exit ${status}
  fi
fi
build="${BUILD_DIR:-build-gpu}"
configure=(-DCMAKE_BUILD_TYPE=Release -DSMARTARRAY_WARNINGS_AS_ERRORS=ON)
if [ ! -f "${build}/CMakeCache.txt" ]; then
  # Ninja where the machine has it, else the default generator (make).
  command -v ninja > /dev/null && configure+=(-G Ninja)
fi
[ -n "${CUDA_ARCHS:-}" ] && configure+=(-DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS}")
cmake -S . -B "${build}" "${configure[@]}" > "${out}/configure.log" 2>&1 ||
  { tail -50 "${out}/configure.log"; exit 1; }
# A benchmarks-only call builds only the benchmarks.
targets=()
if [ "${tests}" -eq 0 ] && [ "${sanitize}" -eq 0 ]; then
  for source in benchmarks/bench_*.cu benchmarks/bench_*.cpp; do
    name=$(basename "${source%.*}")
    [ "${name}" = bench_main ] || targets+=(--target "${name}")
  done
fi
cmake --build "${build}" -j "${jobs}" "${targets[@]}" > "${out}/build.log" 2>&1 ||
  { grep -E "error|Error" -A3 "${out}/build.log" | head -80; exit 1; }

if [ "${tests}" -eq 1 ]; then
  # Each GoogleTest binary on each backend (the longer differential run on the GPU), then the
  # examples, latency runs and compile-fail checks through CTest.
  for backend in host cuda; do
    passed=0; failed=0; skipped=0
    for f in "${build}"/tests/test_*; do
      [ -x "$f" ] || continue
      log="${out}/$(basename "$f").${backend}.log"
      SMARTARRAY_BACKEND=${backend} SMARTARRAY_DIFF_SEQUENCES=20000 SMARTARRAY_PROPERTY_OPS=500000 \
        SMARTARRAY_RANGE_PROPERTY_OPS=1000000 "$f" > "${log}" 2>&1 || status=1
      p=$(grep -oE '\[  PASSED  \] [0-9]+' "${log}" | grep -oE '[0-9]+$' || echo 0)
      fl=$(grep -oE '\[  FAILED  \] [0-9]+ test' "${log}" | grep -oE '[0-9]+' || echo 0)
      s=$(grep -oE '\[  SKIPPED \] [0-9]+' "${log}" | grep -oE '[0-9]+$' || echo 0)
      passed=$((passed + p)); failed=$((failed + fl)); skipped=$((skipped + s))
      [ "${fl}" -eq 0 ] || grep -E '^\[  FAILED  \]' "${log}" | head -5
    done
    echo "gtest ${backend}: ${passed} passed, ${failed} failed, ${skipped} skipped" | tee -a "${out}/summary.txt"
  done
  grep -h "fault sweep:" "${out}"/test_fault_sweep.*.log >> "${out}/summary.txt" 2>/dev/null
  grep -h "property test:" "${out}"/test_property.*.log "${out}"/test_range_property.*.log \
    >> "${out}/summary.txt" 2>/dev/null
  # The multi-device suite runs on every GPU of the machine above (it skips with one); the host
  # backend's runs on two emulated devices (the *_2 tests) come with the CTest runs below.
  multi="${out}/test_multi_device.cuda.log"
  echo "multi-device (cuda, $(grep -c . "${out}/gpu.txt") GPU(s)):" \
    "$(grep -oE '\[  PASSED  \] [0-9]+' "${multi}" | grep -oE '[0-9]+$' || echo 0) passed," \
    "$(grep -oE '\[  SKIPPED \] [0-9]+' "${multi}" | grep -oE '[0-9]+$' || echo 0) skipped" |
    tee -a "${out}/summary.txt"
  ctest --test-dir "${build}" --output-on-failure -j 4 -R "example|_latency|compile_fail|_2" \
    > "${out}/ctest.log" 2>&1 || status=1
  grep -E "tests passed|tests failed" "${out}/ctest.log" | sed 's/^/ctest (examples, latency, compile-fail, two emulated devices): /' |
    tee -a "${out}/summary.txt"
  SMARTARRAY_BACKEND=cuda "${build}/benchmarks/bench_pipelines" --demo 2>&1 | tee "${out}/demo.txt" || status=1
fi

# Pack what exists so far: a call cut off at its time limit still returns what it finished.
pack() {
  [ -n "${OUT:-}" ] || return 0
  tar czf "${OUT}/gpu-out.tgz" "${out}" 2>/dev/null
  cp "${out}/summary.txt" "${OUT}/summary.txt"
  if [ -d "${results}" ]; then mkdir -p "${OUT}/results" && cp "${results}"/*.json "${OUT}/results/" 2>/dev/null; fi
  return 0
}
pack

if [ "${bench}" -eq 1 ]; then
  mkdir -p "${results}"
  rm -f "${results}"/*.json  # the set is this call's runs only
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
  # The ratio targets again, as interleaved repetitions (see scripts/bench_targets.sh).
  start=${SECONDS}
  OUT_DIR="${results}" LOG_DIR="${out}" bash scripts/bench_targets.sh "${build}" | tee -a "${out}/summary.txt" ||
    status=1
  echo "targets: $((SECONDS - start)) s; results in ${results}/ (copy into benchmarks/results/)" |
    tee -a "${out}/summary.txt"
  # Each JSON's provenance and every target with its figure and whether it is met.
  python3 scripts/bench_report.py "${results}" --targets 2>&1 | tee -a "${out}/summary.txt"
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
