#!/usr/bin/env bash
# The GPU machines reach no package registry and lack Google Benchmark. This copies this machine's
# Debian GoogleTest and Google Benchmark (headers, libraries, CMake configs) into .deps/usr, which
# the device call carries; scripts/gpu_check.sh uses it when present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
rm -rf .deps && mkdir -p .deps/usr/include .deps/usr/lib/x86_64-linux-gnu/cmake
cp -r /usr/include/benchmark /usr/include/gtest /usr/include/gmock .deps/usr/include/
cp -a /usr/lib/x86_64-linux-gnu/libbenchmark* /usr/lib/x86_64-linux-gnu/libgtest* \
  /usr/lib/x86_64-linux-gnu/libgmock* .deps/usr/lib/x86_64-linux-gnu/
cp -r /usr/lib/x86_64-linux-gnu/cmake/benchmark /usr/lib/x86_64-linux-gnu/cmake/GTest \
  .deps/usr/lib/x86_64-linux-gnu/cmake/
du -sh .deps
