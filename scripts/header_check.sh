#!/usr/bin/env bash
# Compile checks that need no GPU, for CUDA 13 and CUDA 12:
#   1. every public header on its own with g++ -fsyntax-only, against the installed CUDA 13;
#   2. every public header on its own with nvcc -c (host and device front ends), CUDA 13;
#   3. every public header on its own with g++, against the CUDA 12 runtime headers and CCCL of the
#      PyPI wheels nvidia-cuda-runtime-cu12 / nvidia-cuda-cccl-cu12 (no nvcc there: g++ only);
#   4. every translation unit of src/ with g++, against the same CUDA 12 headers
#      (src/runtime/cuda/*.cu as C++: they hold host code only, which this script checks).
# Each TU is checked with the project's warnings as errors. One summary line per step; the errors
# of every failing TU are printed; exits non-zero on any failure. The wheels go into a virtualenv
# under the build folder, reused on later runs.
#   bash scripts/header_check.sh          (after scripts/install_deps.sh --python)
#   JOBS=N  BUILD_DIR=build-cu12  CUDA_PATH=/usr/local/cuda  SKIP_CUDA13=1 (steps 3 and 4 only)
#   CU12_RUNTIME_VERSION=12.9.79  CU12_CCCL_VERSION=12.9.27  (the wheels to check against)
# The floor, CUDA 12.4: SKIP_CUDA13=1 BUILD_DIR=build-cu12.4 CU12_RUNTIME_VERSION=12.4.127
#   CU12_CCCL_VERSION=12.4.127.post1 bash scripts/header_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
jobs="${JOBS:-$(nproc)}"
build="${BUILD_DIR:-build-cu12}"
cuda="${CUDA_PATH:-/usr/local/cuda}"
cu12_runtime="${CU12_RUNTIME_VERSION:-12.9.79}"
cu12_cccl="${CU12_CCCL_VERSION:-12.9.27}"
work="${root}/${build}/header-check"
venv="${root}/${build}/venv"

# Only the include dirs given below: none from the environment (a CUDA 13 one would leak into the
# CUDA 12 compiles).
unset CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH

# Headers that need nvcc by design (they #error otherwise): the g++ steps skip them.
nvcc_only=(smartarray/adapters/thrust_interop.hpp)

rm -rf "${work}"
mkdir -p "${work}/tu" "${work}/logs"
mapfile -t headers < <(cd include && find smartarray -name '*.hpp' | LC_ALL=C sort)
mapfile -t sources < <(find src -name '*.cpp' -o -name '*.cu' | LC_ALL=C sort)
host_headers=()
for h in "${headers[@]}"; do
  [[ " ${nvcc_only[*]} " == *" ${h} "* ]] || host_headers+=("${h}")
done
# One TU per header that includes it and nothing else.
for h in "${headers[@]}"; do
  printf '#include <%s>\n' "${h}" > "${work}/tu/${h//\//_}.cpp"
  cp "${work}/tu/${h//\//_}.cpp" "${work}/tu/${h//\//_}.cu"
done

# Compiles one item of one step; the output goes to its log, and a .failed file marks a failure.
# shellcheck disable=SC2317  # run by xargs
check_one() {  # step item
  local step="$1" item="$2"
  local log="${HC_WORK}/logs/${step}/${item//\//_}.log"
  local warn=(-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Werror)
  local cmd
  case "${step}" in
    gxx13-headers)
      cmd=(g++ -std=c++20 -fsyntax-only "${warn[@]}" -I"${HC_ROOT}/include"
           -isystem "${HC_CUDA}/include" -isystem "${HC_CUDA}/include/cccl"
           "${HC_WORK}/tu/${item//\//_}.cpp") ;;
    nvcc13-headers)  # PTX only (no ptxas): the front ends and the host compiler do the checking
      cmd=("${HC_CUDA}/bin/nvcc" -std=c++20 --expt-relaxed-constexpr --extended-lambda
           -arch=compute_90 -Werror=all-warnings -Xcompiler=-Wall -Xcompiler=-Wextra
           -Xcompiler=-Werror -I"${HC_ROOT}/include" -c "${HC_WORK}/tu/${item//\//_}.cu"
           -o /dev/null) ;;
    gxx12-headers)
      cmd=(g++ -std=c++20 -fsyntax-only "${warn[@]}" -I"${HC_ROOT}/include"
           -isystem "${HC_CU12_RUNTIME}" -isystem "${HC_CU12_CCCL}"
           "${HC_WORK}/tu/${item//\//_}.cpp") ;;
    gxx12-sources)
      cmd=(g++ -std=c++20 -fsyntax-only "${warn[@]}" -I"${HC_ROOT}/include" -I"${HC_ROOT}/src"
           -isystem "${HC_CU12_RUNTIME}" -isystem "${HC_CU12_CCCL}" -x c++ "${HC_ROOT}/${item}") ;;
  esac
  if ! "${cmd[@]}" > "${log}" 2>&1; then
    { echo "\$ ${cmd[*]}"; cat "${log}"; } > "${log}.failed"
  fi
  return 0
}
export -f check_one
export HC_ROOT="${root}" HC_WORK="${work}" HC_CUDA="${cuda}"

summary=()
status=0
run_step() {  # step, label, what (headers / translation units), note, items...
  local step="$1" label="$2" what="$3" note="$4"
  shift 4
  local start=${SECONDS}
  mkdir -p "${work}/logs/${step}"
  # shellcheck disable=SC2016  # expanded by the inner bash
  printf '%s\0' "$@" | xargs -0 -n 1 -P "${jobs}" bash -c 'check_one "$0" "$1"' "${step}"
  local failed=("${work}/logs/${step}"/*.failed)
  [ -e "${failed[0]}" ] || failed=()
  local line="${label}: $# ${what}, ${#failed[@]} failed ($((SECONDS - start)) s${note})"
  summary+=("${line}")
  echo "${line}"
  if [ ${#failed[@]} -ne 0 ]; then
    status=1
    for f in "${failed[@]}"; do
      echo "---- $(basename "${f%.log.failed}")"
      head -n 60 "${f}"
      [ "$(wc -l < "${f}")" -le 60 ] || echo "[... $(($(wc -l < "${f}") - 60)) more lines]"
    done
  fi
}

# CUDART_VERSION and CCCL_VERSION of a pair of include dirs, as "CUDA 12.9, CCCL 2.8.2".
versions() {  # runtime include dir, CCCL include dir
  local v
  v=$(printf '#include <cuda_runtime_api.h>\n#include <cuda/std/version>\n%s\n' \
      'CUDART_VERSION CCCL_VERSION' |
      g++ -std=c++20 -E -P -x c++ -isystem "$1" -isystem "$2" - | tail -n 1)
  local cudart=${v% *} cccl=${v#* }
  printf 'CUDA %d.%d, CCCL %d.%d.%d\n' $((cudart / 1000)) $((cudart % 1000 / 10)) \
    $((cccl / 1000000)) $((cccl / 1000 % 1000)) $((cccl % 1000))
}

# CUDA 13: the installed toolkit.
skipped="; not ${nvcc_only[*]}: it needs nvcc"
if [ "${SKIP_CUDA13:-0}" != 1 ]; then
  v13=$(versions "${cuda}/include" "${cuda}/include/cccl")
  run_step gxx13-headers "header check g++ (${v13})" headers "${skipped}" "${host_headers[@]}"
  run_step nvcc13-headers "header check nvcc (${v13})" headers "" "${headers[@]}"
fi

# CUDA 12: the PyPI wheels in a virtualenv, reused while it holds the pinned versions.
installed=$("${venv}/bin/python" - 2>/dev/null <<'EOF' || true
import importlib.metadata as m
print(m.version("nvidia-cuda-runtime-cu12"), m.version("nvidia-cuda-cccl-cu12"))
EOF
)
how="reused ${build}/venv"
if [ "${installed}" != "${cu12_runtime} ${cu12_cccl}" ]; then
  start=${SECONDS}
  [ -x "${venv}/bin/python" ] || python3 -m venv "${venv}"
  "${venv}/bin/python" -m pip install --quiet --disable-pip-version-check \
    "nvidia-cuda-runtime-cu12==${cu12_runtime}" "nvidia-cuda-cccl-cu12==${cu12_cccl}" ||
    { echo "header check: cannot install the CUDA 12 wheels into ${venv}"; exit 1; }
  how="installed into ${build}/venv in $((SECONDS - start)) s"
fi
# Only these two dirs: nothing of the CUDA 13 toolkit may leak into the CUDA 12 compiles.
HC_CU12_RUNTIME=$("${venv}/bin/python" -c \
  'import nvidia.cuda_runtime as m; print(list(m.__path__)[0] + "/include")')
HC_CU12_CCCL=$("${venv}/bin/python" -c \
  'import nvidia.cuda_cccl as m; print(list(m.__path__)[0] + "/include")')
export HC_CU12_RUNTIME HC_CU12_CCCL
v12=$(versions "${HC_CU12_RUNTIME}" "${HC_CU12_CCCL}")
echo "CUDA 12 headers: nvidia-cuda-runtime-cu12 ${cu12_runtime}," \
     "nvidia-cuda-cccl-cu12 ${cu12_cccl} (${v12}; ${how})"
run_step gxx12-headers "header check g++ (${v12})" headers "${skipped}" "${host_headers[@]}"

# src/runtime/cuda/*.cu compile as C++ only while they hold no device code (there is no CUDA 12
# nvcc here).
device_code=$(grep -lE '__global__|__device__|__shared__|<<<' src/runtime/cuda/*.cu || true)
if [ -n "${device_code}" ]; then
  echo "source check g++ (${v12}): device code in ${device_code//$'\n'/ }: g++ cannot check it" \
       "against CUDA 12; keep src/runtime/cuda host-only"
  summary+=("source check g++ (${v12}): device code in src/runtime/cuda")
  status=1
else
  run_step gxx12-sources "source check g++ (${v12})" "translation units" "" "${sources[@]}"
fi

echo "== header_check summary"
printf '%s\n' "${summary[@]}"
exit ${status}
