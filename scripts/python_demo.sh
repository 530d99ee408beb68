#!/usr/bin/env bash
# Installs the Python package (as scripts/python_test.sh does, into build-py/venv) and runs the
# seed notebook's add (examples/python/seed_add.py), printing the transfers it made: on a GPU
# through Numba's @vectorize(target='cuda') when Numba is installed, else on the host backend's
# emulated device.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON_INSTALL_ONLY=1 bash scripts/python_test.sh
py="${VENV:-build-py/venv}/bin/python"
cd examples/python
"../../${py}" seed_add.py
