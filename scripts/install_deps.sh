#!/usr/bin/env bash
# Installs what the build needs when it is missing (Debian/Ubuntu, as root). On a machine that
# already has everything (the GPU machines, CI after the first run) it installs nothing.
#   bash scripts/install_deps.sh [--python]
# --python also makes sure python3 (or $PYTHON) can make virtual environments with pip (the CI checks that take
# CUDA 12 headers and CMake 3.22 from PyPI: header_check.sh, cmake_compat.sh).
set -euo pipefail

export PATH="/usr/local/cuda/bin:${PATH}"
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
[ -f /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)
[ -f /usr/include/benchmark/benchmark.h ] || missing+=(libbenchmark-dev)
if [ "${1:-}" = "--python" ]; then
  "${PYTHON:-python3}" -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv python3-pip)
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

if ! command -v nvcc >/dev/null 2>&1; then
  echo "error: nvcc not found; install the CUDA toolkit (12.4 or later) under /usr/local/cuda" >&2
  exit 1
fi
