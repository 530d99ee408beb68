#!/usr/bin/env bash
# Builds the Python package (pip install . into build-py/venv, made on first use) and runs its
# pytest suite: python/tests and the examples under examples/python. Without a GPU that is the host
# backend (the examples that need Numba's CUDA target report as skipped), run on one emulated
# device and then on two; with GPUs, the cuda backend on every visible GPU and the interop tests
# of whatever of Numba, CuPy and PyTorch the venv has.
#   bash scripts/python_test.sh [pytest arguments...]
# Environment:
#   PYTHON_INSTALL_ONLY=1  install, run nothing
#   VENV                   the virtual environment (default build-py/venv)
#   PYTHON                 the interpreter that makes it (default python3)
#   PYTHON_SHARE_SITE=1    the venv also sees PYTHON's own packages (Numba, CuPy, PyTorch on the GPU
#                          machine), through a .pth file that lists their folders (their own .pth
#                          files do not run: numba-cuda's redirection of numba.cuda among them,
#                          so the venv has Numba's built-in CUDA target)
#   CUDA_ARCHITECTURES     default: the GPU present, else 75-virtual (one PTX target keeps the CI
#                          build short; the project's own default without a GPU is a fat binary of
#                          every architecture, which takes many minutes on 2 cores)
# pip's own variables work too: PIP_NO_INDEX=1 PIP_FIND_LINKS=DIR installs offline from wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
bash scripts/install_deps.sh --python

venv="${VENV:-build-py/venv}"
if [ ! -x "${venv}/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "${venv}"
fi
py="${venv}/bin/python"
if [ "${PYTHON_SHARE_SITE:-0}" = 1 ]; then
  "${PYTHON:-python3}" -c 'import site; print("\n".join(site.getsitepackages()))' \
    > "$("${py}" -c 'import site; print(site.getsitepackages()[0])')/smartarray-shared-site.pth"
fi
"${py}" -m pip install -q --upgrade pip
"${py}" -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.0" "numpy>=1.24" "pytest>=7"

defines=()
if [ -n "${CUDA_ARCHITECTURES:-}" ]; then
  defines=(-C "cmake.define.CMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}")
elif ! nvidia-smi -L >/dev/null 2>&1; then
  defines=(-C "cmake.define.CMAKE_CUDA_ARCHITECTURES=75-virtual")
fi
# No build isolation: the venv's scikit-build-core and nanobind stay at one path, so that the
# build directory (build-py/<wheel tag>) is reused and a rebuild compiles only what changed.
"${py}" -m pip install -q --no-build-isolation "${defines[@]}" .

[ "${PYTHON_INSTALL_ONLY:-0}" = 1 ] && exit 0
backend=$(cd python/tests && "../../${py}" -c 'import smartarray as sa; print(sa.backend())')
status=0
run_pytest() {
  (cd python/tests && "../../${py}" -c 'import smartarray as sa
print("smartarray", sa.__version__, "backend:", sa.backend(), "devices:", len(sa.gpus))')
  "${py}" -m pytest -q -p no:cacheprovider -rs python/tests examples/python "$@" || status=$?
  if [ "${status}" -eq 5 ]; then
    echo "python_test.sh: pytest collected no tests" >&2
  fi
}
# Without a GPU, the suite runs twice: on one emulated device, then on two (the multi-device
# tests); with GPUs, once, on every visible GPU.
if [ "${backend}" = host ] && [ -z "${SMARTARRAY_HOST_DEVICES:-}" ]; then
  run_pytest "$@"
  SMARTARRAY_HOST_DEVICES=2 run_pytest "$@"
else
  run_pytest "$@"
fi
exit "${status}"
