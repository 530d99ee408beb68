"""smartarray.dist is loaded on first use of sa.dist: `import smartarray` needs NumPy only, and a
build without the distributed layer raises ImportError naming what is missing."""
import subprocess
import sys

import pytest


def run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_import_smartarray_loads_neither_mpi4py_nor_the_distributed_module():
    assert run("import sys, smartarray\n"
               "print(sorted(m for m in ('mpi4py', 'smartarray._dist', 'smartarray.dist') "
               "if m in sys.modules))") == "[]"


def test_a_build_without_the_distributed_module_raises_import_error_naming_it():
    # sys.modules[name] = None makes `import name` fail, as in a build without MPI.
    out = run("import sys\n"
              "sys.modules['smartarray._dist'] = None\n"
              "import smartarray as sa\n"
              "try:\n"
              "    sa.dist\n"
              "except ImportError as error:\n"
              "    print(error)\n")
    assert "smartarray._dist" in out and "MPI" in out


def test_sa_dist_is_the_module_where_it_is_built():
    sa = pytest.importorskip("smartarray")
    try:
        dist = sa.dist
    except ImportError:
        pytest.skip("this build has no smartarray._dist (no MPI)")
    assert dist.__name__ == "smartarray.dist"
    assert {"Communicator", "exchange_halos", "all_reduce", "send", "recv"} <= set(dist.__all__)
