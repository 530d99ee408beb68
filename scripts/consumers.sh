#!/usr/bin/env bash
# Builds and runs the four consumers of tests/consumers/ on the host backend, each configured with
# plain `cmake` and no flags of its own (find_package gets only CMAKE_PREFIX_PATH):
#   find_package_cxx       C++-only project (no CUDA language, no nvcc on PATH) against an install
#   find_package_cuda      CUDA project (.cu app) against the same install
#   add_subdirectory_cxx   C++-only project that add_subdirectory()s this repository
#   add_subdirectory_cuda  CUDA project that add_subdirectory()s this repository
# The install is the library alone (tests, examples and benchmarks off), built for one virtual
# architecture for speed, and installed with `cmake --install` into a temporary prefix. Each app
# computes on random data, checks its result and exits non-zero on a mismatch. Also checked: each
# app's compile line has exactly one -std= flag, and the add_subdirectory builds never looked for
# GoogleTest or Google Benchmark. Prints one line per consumer; exits non-zero when one fails.
#   bash scripts/consumers.sh
#   CMAKE=/path/to/cmake (default: cmake on PATH)  BUILD_DIR=build-consumers  JOBS=N
#   LIBRARY_CUDA_ARCHITECTURES=75-virtual (the installed library's)
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
export PATH="/usr/local/cuda/bin:${PATH}"
if ! cmake_bin="$(command -v "${CMAKE:-cmake}")"; then
  echo "error: no cmake (${CMAKE:-cmake})" >&2
  exit 1
fi
jobs="${JOBS:-$(nproc)}"
mkdir -p "${BUILD_DIR:-build-consumers}"
build="$(cd "${BUILD_DIR:-build-consumers}" && pwd)"
prefix="$(mktemp -d "${TMPDIR:-/tmp}/smartarray-prefix.XXXXXX")"
trap 'rm -rf "${prefix}"' EXIT
start_all=${SECONDS}
echo "consumers: $("${cmake_bin}" --version | head -1), build in ${build}, install prefix ${prefix}"

# PATH without nvcc, and no CUDACXX: the C++-only consumers must not need the CUDA compiler.
host_path=""
IFS=: read -r -a path_dirs <<< "${PATH}"
for dir in "${path_dirs[@]}"; do
  [ -n "${dir}" ] && [ ! -x "${dir}/nvcc" ] && host_path="${host_path:+${host_path}:}${dir}"
done

status=0
summary=()

fail() {  # name, log, reason
  status=1
  summary+=("FAIL  $1: $3 (log: $2)")
  echo "---- $1: $3; last lines of $2:" >&2
  tail -n 40 "$2" >&2
}

# The library alone, installed into the temporary prefix.
log="${build}/library.log"
start=${SECONDS}
if "${cmake_bin}" -S "${root}" -B "${build}/library" -DSMARTARRAY_BUILD_TESTS=OFF \
     -DSMARTARRAY_BUILD_EXAMPLES=OFF -DSMARTARRAY_BUILD_BENCHMARKS=OFF \
     -DCMAKE_CUDA_ARCHITECTURES="${LIBRARY_CUDA_ARCHITECTURES:-75-virtual}" > "${log}" 2>&1 &&
   "${cmake_bin}" --build "${build}/library" -j "${jobs}" >> "${log}" 2>&1 &&
   "${cmake_bin}" --install "${build}/library" --prefix "${prefix}" >> "${log}" 2>&1; then
  summary+=("PASS  library install ($((SECONDS - start)) s)")
  installed=1
else
  fail "library install" "${log}" "configure, build or install failed"
  installed=0
fi

consumer() {  # name, host_only (1: no nvcc on PATH), extra cmake arguments...
  local name="$1" host_only="$2"
  shift 2
  local dir="${build}/${name}" log="${build}/${name}.log" start=${SECONDS}
  local run_env=(env)
  [ "${host_only}" = 1 ] && run_env=(env -u CUDACXX "PATH=${host_path}")
  rm -rf "${dir}"
  if ! "${run_env[@]}" "${cmake_bin}" -S "${root}/tests/consumers/${name}" -B "${dir}" "$@" \
       > "${log}" 2>&1; then
    fail "${name}" "${log}" "configure failed"; return
  fi
  if ! "${run_env[@]}" "${cmake_bin}" --build "${dir}" -j "${jobs}" --verbose >> "${log}" 2>&1; then
    fail "${name}" "${log}" "build failed"; return
  fi
  # The app's compile line: exactly one language-standard flag (its C++20 is checked by a
  # static_assert in the app itself).
  local compile_line stds
  compile_line="$(grep -E -- ' -c [^ ]*tests/consumers/app\.(cpp|cu)( |$)' "${log}" | tail -n 1)"
  stds="$(grep -o -- ' -std=[^ ]*' <<< "${compile_line}" | tr -d ' ' | tr '\n' ' ')"
  if [ "$(wc -w <<< "${stds}")" -ne 1 ]; then
    fail "${name}" "${log}" "expected one -std flag on the app's compile line, got: ${stds:-none}"
    return
  fi
  if grep -Eq '^(GTest_DIR|benchmark_DIR):' "${dir}/CMakeCache.txt"; then
    fail "${name}" "${log}" "GoogleTest or Google Benchmark was looked for"; return
  fi
  local output
  if ! output="$(SMARTARRAY_BACKEND=host "${dir}/app" 2>&1)"; then
    echo "${output}" >> "${log}"
    fail "${name}" "${log}" "the app failed: ${output}"; return
  fi
  summary+=("PASS  ${name} ($((SECONDS - start)) s, ${stds% }): ${output}")
}

if [ "${installed}" = 1 ]; then
  consumer find_package_cxx 1 -DCMAKE_PREFIX_PATH="${prefix}"
  consumer find_package_cuda 0 -DCMAKE_PREFIX_PATH="${prefix}"
fi
consumer add_subdirectory_cxx 0
consumer add_subdirectory_cuda 0

echo
echo "consumers ($("${cmake_bin}" --version | head -1), $((SECONDS - start_all)) s):"
printf '  %s\n' "${summary[@]}"
exit ${status}
