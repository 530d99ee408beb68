#!/usr/bin/env bash
# Builds the Conan package (conanfile.py) and its test_package with `conan create`, offline: the
# recipe has no Conan requirements. Conan comes from install_deps.sh --conan, with its own home
# under build-deps/conan-home (the package cache and the default profile). Release, C++20, one CUDA
# architecture, the distributed layer off (the recipe's default).
#   bash scripts/conan_check.sh [conan create arguments...]
# Environment:
#   CUDA_ARCHITECTURES          default 75-virtual (one PTX target; the recipe's own default is
#                               the project's: the GPU present, else a fat binary)
#   CMAKE_BUILD_PARALLEL_LEVEL  the build's jobs (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
bash scripts/install_deps.sh --conan >/dev/null
export CONAN_HOME="${PWD}/build-deps/conan-home"
# The package of an earlier run goes first: each build gets new folders in the cache.
build-deps/venv/bin/conan remove "smartarray/*" --confirm -vwarning
build-deps/venv/bin/conan create . --no-remote -s build_type=Release -s compiler.cppstd=20 \
  -o "smartarray/*:cuda_architectures=${CUDA_ARCHITECTURES:-75-virtual}" \
  -c "tools.build:jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-2}" "$@"
