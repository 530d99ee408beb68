#!/usr/bin/env bash
# Builds the Python package's wheel once (pip wheel . into build-py/dist), installs it into
# build-py/venv (made on first use) and runs its pytest suite: python/tests and the examples under
# examples/python; where MPI is installed, then smartarray.dist's tests and example under mpirun
# with 2 and 4 ranks; with WHEEL_CHECK=1, then checks the wheel alone. Without a GPU that is the
# host backend (the examples that need Numba's CUDA target report as skipped), run on one
# emulated device and then on two; with GPUs, the cuda backend on every visible GPU and the
# interop tests of whatever of Numba, CuPy and PyTorch the venv has.
#   bash scripts/python_test.sh [pytest arguments...]
# Environment:
#   PYTHON_INSTALL_ONLY=1  install, run nothing
#   VENV                   the virtual environment (default build-py/venv)
#   PYTHON                 the interpreter that makes it (default python3)
#   WHEEL_DIR              where the wheel goes (default build-py/dist)
#   WHEEL_CHECK=1          after the suite, the wheel alone: installed in a fresh venv
#                          (build-py/venv-wheel, or WHEEL_VENV) with what it requires from the index
#                          (NumPy; offline, PIP_FIND_LINKS must hold a NumPy wheel), imported from
#                          outside the repository for a round trip with exact copy counts; no file
#                          outside the package; its extension needing no libraries but the C/C++
#                          runtime's and CUDA's. CI sets it; scripts/gpu_check.sh does not.
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
py="$(realpath "${venv}")/bin/python"
if [ "${PYTHON_SHARE_SITE:-0}" = 1 ]; then
  "${PYTHON:-python3}" -c 'import site; print("\n".join(site.getsitepackages()))' \
    > "$("${py}" -c 'import site; print(site.getsitepackages()[0])')/smartarray-shared-site.pth"
fi
"${py}" -m pip install -q --upgrade pip
"${py}" -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.0" "numpy>=1.24" "pytest>=7"
# mpi4py for smartarray.dist's tests, where MPI is installed: PyPI's wheel loads the system's
# libmpi (smartarray.dist.Communicator checks that it is the one smartarray._dist links).
if command -v mpirun >/dev/null 2>&1; then
  "${py}" -m pip install -q "mpi4py>=4"
fi

defines=()
if [ -n "${CUDA_ARCHITECTURES:-}" ]; then
  defines=(-C "cmake.define.CMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}")
elif ! nvidia-smi -L >/dev/null 2>&1; then
  defines=(-C "cmake.define.CMAKE_CUDA_ARCHITECTURES=75-virtual")
fi
# The distributed layer (smartarray._dist) where MPI is installed, said explicitly: a build folder
# keeps the SMARTARRAY_WITH_MPI of its first configuration, which was OFF before the package had it.
if command -v mpicxx >/dev/null 2>&1; then
  defines+=(-C "cmake.define.SMARTARRAY_WITH_MPI=ON")
fi
# No build isolation: the venv's scikit-build-core and nanobind stay at one path, so that the
# build directory (build-py/<wheel tag>) is reused and a rebuild compiles only what changed.
dist="${WHEEL_DIR:-build-py/dist}"
rm -rf "${dist}"
"${py}" -m pip wheel -q --no-build-isolation --no-deps "${defines[@]}" -w "${dist}" .
wheel=$(realpath "${dist}"/smartarray-*.whl)
"${py}" -m pip install -q --no-deps --force-reinstall "${wheel}"

[ "${PYTHON_INSTALL_ONLY:-0}" = 1 ] && exit 0
backend=$(cd python/tests && "${py}" -c 'import smartarray as sa; print(sa.backend())')
status=0
run_pytest() {
  (cd python/tests && "${py}" -c 'import smartarray as sa
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
# smartarray.dist's tests under mpirun, with 2 and 4 ranks (one process skips them), where MPI is
# installed: as root too, more ranks than cores, no cross-memory attach (containers forbid it),
# and a time limit, since a rank that fails between two collectives leaves the others waiting.
if command -v mpirun >/dev/null 2>&1; then
  for ranks in 2 4; do
    echo "python_test.sh: smartarray.dist's tests with ${ranks} ranks"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
      OMPI_MCA_btl_vader_single_copy_mechanism=none timeout 600 \
      mpirun -np "${ranks}" --oversubscribe "${py}" -m pytest -q -p no:cacheprovider -rs \
      python/tests/test_dist_collectives.py python/tests/test_dist_errors_and_p2p.py \
      examples/python/distributed_jacobi.py || status=$?
  done
fi

if [ "${WHEEL_CHECK:-0}" = 1 ]; then
  fresh="${WHEEL_VENV:-build-py/venv-wheel}"
  "${PYTHON:-python3}" -m venv --clear "${fresh}"
  fresh=$(realpath "${fresh}")
  "${fresh}/bin/python" -m pip install -q "${wheel}"
  # From outside the repository, so that python/smartarray cannot be the one imported.
  ext=$(cd / && "${fresh}/bin/python" - <<'PY'
import sys
import numpy as np
import smartarray as sa
x = np.random.default_rng(7).uniform(1.0, 2.0, 1000)
with sa.expect_transfers(h2d=1, d2h=1):
    a = sa.to_device(x)
    a.gpu_changed()
    assert np.array_equal(a.host(), x)
print("wheel:", sa.__file__, file=sys.stderr)
print("wheel: smartarray", sa.__version__, "backend:", sa.backend(), "numpy", np.__version__,
      "- to_device, gpu_changed, host: 1 H2D, 1 D2H", file=sys.stderr)
print(sa._ext.__file__)
PY
)
  # The wheel holds the package and its metadata only.
  "${fresh}/bin/python" - "${wheel}" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
stray = [n for n in names if not n.startswith(("smartarray/", "smartarray-"))]
print(f"wheel: {len(names)} files, {len(stray)} outside the package", file=sys.stderr)
sys.exit(f"python_test.sh: files outside the package in the wheel: {stray}" if stray else 0)
PY
  # What auditwheel would look at: the shared libraries the extension names. Besides glibc's and
  # the C++ runtime's, only the CUDA driver's (the CUDA runtime is linked in statically).
  readelf -d "${ext}" | grep -E "NEEDED|RUNPATH|RPATH" | sed 's/^ */wheel: /'
  if ldd "${ext}" | grep "not found"; then
    echo "python_test.sh: the wheel's extension misses libraries" >&2
    exit 1
  fi
  unexpected=$(readelf -d "${ext}" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -vE \
    '^(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|libcuda)\.so|^ld-linux' ||
    true)
  if [ -n "${unexpected}" ]; then
    echo "python_test.sh: the wheel's extension needs $(echo "${unexpected}" | tr '\n' ' ')" >&2
    exit 1
  fi
  # smartarray._dist exports its init function alone (src/dist/dist.map): what it links
  # statically, exported, mixes with the process's libstdc++.so at load time, which crashed.
  for module in "$(dirname "${ext}")"/_dist*.so; do
    [ -e "${module}" ] || continue
    exported=$(nm -D --defined-only "${module}" | awk '{print $3}' | grep -vx 'PyInit__dist' |
      head -n 3 || true)
    if [ -n "${exported}" ]; then
      echo "python_test.sh: $(basename "${module}") exports more than PyInit__dist:" \
        "${exported}" >&2
      exit 1
    fi
    echo "wheel: $(basename "${module}") exports PyInit__dist alone"
  done
fi
exit "${status}"
