#!/usr/bin/env bash
# CMake versions other than the system's: for each version given (default: 3.22, the minimum),
# installs that CMake from PyPI into a virtual environment (build-cmake-venvs/<version>, once),
# configures the whole project with it and default options (tests, examples and benchmarks on, so
# GoogleTest and Google Benchmark must be installed; configure only), then builds and runs the four
# consumers with it (scripts/consumers.sh). Prints one line per step; exits non-zero when one fails.
#   bash scripts/cmake_compat.sh [version...]     e.g. 3.22 3.26 (3.26 is the first with nvcc C++20)
#   CONFIGURE_ONLY=1 (no consumers)  JOBS=N
# Needs python3 with venv and pip (scripts/install_deps.sh --python), and PyPI
# (pip install "cmake==<version>.*").
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
export PATH="/usr/local/cuda/bin:${PATH}"
versions=("$@")
[ ${#versions[@]} -eq 0 ] && versions=(3.22)
status=0
summary=()
start_all=${SECONDS}

for version in "${versions[@]}"; do
  venv="${root}/build-cmake-venvs/${version}"
  cmake_bin="${venv}/bin/cmake"
  if ! "${cmake_bin}" --version 2>/dev/null | grep -q "^cmake version ${version}\."; then
    echo "installing cmake==${version}.* into ${venv}"
    if ! { python3 -m venv --clear "${venv}" &&
           "${venv}/bin/pip" install --quiet --disable-pip-version-check \
             "cmake==${version}.*"; }; then
      echo "error: could not install cmake ${version} from PyPI (needs python3-venv and pip)" >&2
      summary+=("FAIL  cmake ${version}: not installed")
      status=1
      continue
    fi
  fi
  found="$("${cmake_bin}" --version | head -n 1)"

  # The whole project with default options, in a fresh build directory.
  build="${root}/build-cmake-compat-${version}"
  rm -rf "${build}"
  mkdir -p "${build}"
  log="${build}/configure.log"
  start=${SECONDS}
  if "${cmake_bin}" -S "${root}" -B "${build}" > "${log}" 2>&1; then
    archs="$(grep -o 'smartarray: CUDA architectures .*' "${log}" | head -n 1)"
    summary+=("PASS  ${found}: project configured, default options ($((SECONDS - start)) s)")
    summary+=("      ${archs}")
  else
    echo "---- ${found}: configure failed; last lines of ${log}:" >&2
    tail -n 40 "${log}" >&2
    summary+=("FAIL  ${found}: project configure (log: ${log})")
    status=1
  fi

  if [ "${CONFIGURE_ONLY:-0}" != 1 ]; then
    start=${SECONDS}
    if CMAKE="${cmake_bin}" BUILD_DIR="${root}/build-cmake-compat-${version}-consumers" \
         bash scripts/consumers.sh > "${build}/consumers.log" 2>&1; then
      summary+=("PASS  ${found}: four consumers built and run ($((SECONDS - start)) s)")
    else
      summary+=("FAIL  ${found}: consumers (log: ${build}/consumers.log)")
      status=1
    fi
    sed -n '/^consumers (/,$p' "${build}/consumers.log"
  fi
done

echo
echo "cmake_compat ($((SECONDS - start_all)) s):"
printf '  %s\n' "${summary[@]}"
exit ${status}
