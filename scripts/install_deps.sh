#!/usr/bin/env bash
# Installs what the build needs when it is missing (Debian/Ubuntu, as root). On a machine that
# already has everything (the GPU machines, CI after the first run) it installs nothing.
#   bash scripts/install_deps.sh [--python] [--fuzz]
# --python also makes sure python3 (or $PYTHON) can make virtual environments with pip (the CI
# checks that take CUDA 12 headers and CMake 3.22 from PyPI: header_check.sh, cmake_compat.sh).
# --fuzz also installs clang and its libFuzzer runtime (the fuzz preset, scripts/fuzz.sh).
set -euo pipefail

export PATH="/usr/local/cuda/bin:${PATH}"
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
[ -f /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
[ -f /usr/include/benchmark/benchmark.h ] || missing+=(libbenchmark-dev)
python=false
fuzz=false
for option in "$@"; do
  case "${option}" in
    --python) python=true ;;
    --fuzz) fuzz=true ;;
    *) echo "install_deps.sh: unknown option ${option}" >&2; exit 2 ;;
  esac
done
if ${python}; then
  "${PYTHON:-python3}" -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv python3-pip)
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
if ${fuzz} && ! links_a_fuzzer; then  # clang was just installed without its runtime
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    "libclang-rt-$(clang++ -dumpversion | cut -d. -f1)-dev"
  links_a_fuzzer || { echo "error: clang++ cannot link a libFuzzer target" >&2; exit 1; }
fi

if ! command -v nvcc >/dev/null 2>&1; then
  echo "error: nvcc not found; install the CUDA toolkit (12.4 or later) under /usr/local/cuda" >&2
  exit 1
fi
