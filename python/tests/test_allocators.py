"""PyTorch, CuPy and Numba allocating from smartarray's device pools (smartarray/_allocators.py,
python/src/allocators.cpp): the C entry points called through ctypes on any backend, and the
eviction that a foreign allocation causes (host backend, in a fresh process with a small device).
The real libraries on a GPU: test_gpu_allocators.py."""
import ctypes
import importlib.util
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import smartarray as sa
from conftest import host_only
from smartarray import _ext

N = len(sa.gpus)
HERE = os.path.dirname(os.path.abspath(__file__))


def _lib():
    lib = ctypes.CDLL(_ext.__file__)
    lib.smartarray_torch_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    lib.smartarray_torch_malloc.restype = ctypes.c_void_p
    lib.smartarray_torch_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                          ctypes.c_void_p]
    lib.smartarray_torch_free.restype = None
    lib.smartarray_cupy_malloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.smartarray_cupy_malloc.restype = ctypes.c_void_p
    lib.smartarray_cupy_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    lib.smartarray_cupy_free.restype = None
    return lib


def _delta(before, after):
    return {k: after[k] - before[k] for k in ("current_bytes", "current_count", "total_bytes",
                                              "total_count", "bytes_in_use")}


def _rounded(size):
    return -(-size // 256) * 256


def run_script(script, **env):
    """Runs `script` in a fresh interpreter (settings read when the backend starts, process-wide
    allocators); its last line must be OK, or SKIP: reason."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                       text=True, timeout=600, cwd=HERE, env={**os.environ, **env})
    lines = r.stdout.strip().splitlines()
    last = lines[-1] if lines else ""
    if r.returncode == 0 and last.startswith("SKIP:"):
        pytest.skip(last[5:].strip())
    assert r.returncode == 0 and last == "OK", (
        f"exit {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}")


# --- the C entry points, on any backend ----------------------------------------------------------

def test_entry_points_are_exported_from_the_extension():
    """ctypes finds the four functions in the extension's file, at the addresses that
    _allocator_functions() reports (the ones CuPy's CFunctionAllocator gets)."""
    lib = _lib()
    addresses = _ext._allocator_functions()
    for name in ("torch_malloc", "torch_free", "cupy_malloc", "cupy_free"):
        function = getattr(lib, f"smartarray_{name}")
        assert ctypes.cast(function, ctypes.c_void_p).value == addresses[name]


@pytest.mark.parametrize("device", range(N))
def test_torch_entry_points_round_trip(device):
    """malloc: one live allocation of the bytes asked for in the device's pool (256-byte blocks);
    free gives it back; size 0 is a null pointer and no allocation."""
    lib = _lib()
    size = 3 * 4096 + 40
    before = sa.device_memory_stats(device)
    ptr = lib.smartarray_torch_malloc(size, device, None)
    assert ptr and ptr % 256 == 0
    assert _delta(before, sa.device_memory_stats(device)) == {
        "current_bytes": size, "current_count": 1, "total_bytes": size, "total_count": 1,
        "bytes_in_use": _rounded(size)}
    lib.smartarray_torch_free(ptr, size, device, None)
    assert _delta(before, sa.device_memory_stats(device)) == {
        "current_bytes": 0, "current_count": 0, "total_bytes": size, "total_count": 1,
        "bytes_in_use": 0}
    assert lib.smartarray_torch_malloc(0, device, None) is None
    assert sa.device_memory_stats(device)["total_count"] == before["total_count"] + 1


@pytest.mark.parametrize("device", range(N))
def test_cupy_entry_points_round_trip(device):
    """CuPy's malloc has no stream (param NULL: the default stream) and its free no size: the
    size is kept per block, so the free gives back exactly what the malloc took."""
    lib = _lib()
    sizes = [1, 255, 257, 1 << 20]
    before = sa.device_memory_stats(device)
    ptrs = [lib.smartarray_cupy_malloc(None, size, device) for size in sizes]
    assert all(ptrs) and len(set(ptrs)) == len(sizes)
    assert _delta(before, sa.device_memory_stats(device)) == {
        "current_bytes": sum(sizes), "current_count": 4, "total_bytes": sum(sizes),
        "total_count": 4, "bytes_in_use": sum(_rounded(s) for s in sizes)}
    for ptr in reversed(ptrs):
        lib.smartarray_cupy_free(None, ptr, device)
    assert _delta(before, sa.device_memory_stats(device))["current_count"] == 0
    assert sa.device_memory_stats(device)["bytes_in_use"] == before["bytes_in_use"]
    assert lib.smartarray_cupy_malloc(None, 0, device) is None


def test_cupy_free_of_a_foreign_pointer_is_reported_and_left_alone(capfd):
    lib = _lib()
    before = sa.device_memory_stats(0)
    ptr = lib.smartarray_cupy_malloc(None, 512, 0)
    lib.smartarray_cupy_free(None, ptr, 0)
    lib.smartarray_cupy_free(None, ptr, 0)  # twice
    assert "not a block of smartarray_cupy_malloc" in capfd.readouterr().err
    assert sa.device_memory_stats(0)["current_count"] == before["current_count"]


@pytest.mark.parametrize("owner", range(N))
def test_cupy_free_with_a_wrong_device_forgets_nothing(owner, capfd):
    """A free naming a device that does not exist, or another device than the block's, is
    reported and leaves the block allocated and known (it once dropped the block from the map,
    and the right free then called it foreign): the pools and the block's bytes are as before,
    and a free with the block's device gives it back."""
    lib = _lib()
    rng = np.random.default_rng()
    size = int(rng.integers(1, 1 << 16))
    data = rng.integers(1, 256, size, dtype=np.uint8)
    before = [sa.device_memory_stats(d) for d in range(N)]
    ptr = lib.smartarray_cupy_malloc(None, size, owner)
    assert ptr
    # The block's bytes are checked where the host can read them: the emulated device's memory is
    # host memory; a GPU's is not.
    readable = sa.backend() == "host"
    if readable:
        ctypes.memmove(ptr, data.ctypes.data, size)
    held = [_delta(before[d], sa.device_memory_stats(d)) for d in range(N)]
    others = [d for d in range(N) if d != owner]
    for bad in [N, N + 3, -1, -(2**31), 2**31 - 1] + others:
        lib.smartarray_cupy_free(None, ptr, bad)
        err = capfd.readouterr().err
        assert f"smartarray_cupy_free of {ptr:#x} on device {bad}:" in err, err
        assert f"the block is device {owner}'s (left allocated" in err, err
        assert [_delta(before[d], sa.device_memory_stats(d)) for d in range(N)] == held
        if readable:
            assert bytes((ctypes.c_ubyte * size).from_address(ptr)) == data.tobytes()
    lib.smartarray_cupy_free(None, ptr, owner)
    assert "smartarray_cupy_free" not in capfd.readouterr().err
    assert [_delta(before[d], sa.device_memory_stats(d))["current_count"] for d in range(N)] == \
        [0] * N
    assert sa.device_memory_stats(owner)["bytes_in_use"] == before[owner]["bytes_in_use"]


def test_failed_cupy_malloc_returns_null_and_keeps_the_message():
    """A bad device: no exception crosses into CuPy; the message waits for the Python side."""
    lib = _lib()
    assert lib.smartarray_cupy_malloc(None, 4096, N) is None
    message = _ext._allocator_error()
    assert "smartarray_cupy_malloc of 4096 bytes on device" in message and str(N) in message


def test_device_allocate_is_numbas_path():
    """The binding behind NumbaMemoryManager.memalloc: same pool, MemoryError-free round trip,
    ValueError for a device that does not exist."""
    before = sa.device_memory_stats(0)
    ptr = _ext._device_allocate(10_000, 0, 0)
    assert ptr and _delta(before, sa.device_memory_stats(0))["current_bytes"] == 10_000
    _ext._device_free(ptr, 10_000, 0)
    assert _delta(before, sa.device_memory_stats(0))["current_count"] == 0
    with pytest.raises(ValueError, match="device"):
        _ext._device_allocate(16, N, 0)


def test_pinned_blocks_round_trip():
    """The pinned pool's blocks (what cupy_pinned_allocator hands CuPy) hold what is written."""
    size = 100_000
    before = sa.pinned_memory_stats()
    ptr = _ext._pinned_allocate(size)
    assert _delta(before, sa.pinned_memory_stats())["current_count"] == 1
    data = np.random.default_rng(3).integers(1, 255, size, dtype=np.uint8)
    ctypes.memmove(ptr, data.ctypes.data, size)
    assert bytes((ctypes.c_ubyte * size).from_address(ptr)) == data.tobytes()
    _ext._pinned_free(ptr, size)
    assert _delta(before, sa.pinned_memory_stats())["current_count"] == 0


def test_device_budget_can_be_set_and_restored():
    budget = sa.device_budget()
    assert budget >= sa.device_memory_stats()["reserved_bytes"]
    try:
        sa.set_device_budget(budget + (1 << 30))
        assert sa.device_budget() == budget + (1 << 30)
    finally:
        sa.set_device_budget(None)
    assert sa.device_budget() == sa.gpus[0].total_memory or "SMARTARRAY_DEVICE_BUDGET" in os.environ
    with pytest.raises(ValueError, match="negative"):
        sa.set_device_budget(-1)


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="needs numba")
def test_numba_memory_manager_allocates_from_the_pool():
    """memalloc with a stand-in for Numba's context (no GPU needed): one block of the pool of the
    context's device, of the size asked; freeing the MemoryPointer gives it back."""
    assert sa.NumbaMemoryManager is sa._numba_memory_manager
    class Context:  # Numba's manager keeps a weak proxy of its context
        device = types.SimpleNamespace(id=N - 1)

    context = Context()
    manager = sa.NumbaMemoryManager(context=context)
    assert manager.interface_version == 1
    manager.initialize()
    before = sa.device_memory_stats(N - 1)
    memory = manager.memalloc(1000)
    assert memory.size == 1000 and memory.device_pointer_value % 256 == 0
    assert _delta(before, sa.device_memory_stats(N - 1)) == {
        "current_bytes": 1000, "current_count": 1, "total_bytes": 1000, "total_count": 1,
        "bytes_in_use": 1024}
    memory.free()
    assert _delta(before, sa.device_memory_stats(N - 1))["current_count"] == 0
    assert not manager.memalloc(0).device_pointer_value
    info = manager.get_memory_info()
    assert 0 < info.free <= info.total
    with manager.defer_cleanup():
        manager.reset()


@host_only
def test_the_libraries_need_the_cuda_backend():
    for make in (sa.torch_allocator, sa.cupy_allocator, sa.cupy_pinned_allocator):
        with pytest.raises(RuntimeError, match="needs the cuda backend"):
            make()


def test_import_smartarray_needs_numpy_only():
    run_script("""
        import sys
        import smartarray as sa
        assert callable(sa.torch_allocator) and callable(sa.cupy_allocator)
        loaded = {"torch", "cupy", "numba"} & set(sys.modules)
        assert not loaded, loaded
        print("OK")
    """)


# --- the eviction a foreign allocation causes (host backend) -------------------------------------

EVICTION = """
    import ctypes, sys
    import numpy as np
    import smartarray as sa
    from smartarray import _ext

    MiB = 1 << 20
    entry, dev = "{entry}", {device}
    lib = ctypes.CDLL(_ext.__file__)
    lib.smartarray_torch_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    lib.smartarray_torch_malloc.restype = ctypes.c_void_p
    lib.smartarray_cupy_malloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.smartarray_cupy_malloc.restype = ctypes.c_void_p
    lib.smartarray_torch_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                          ctypes.c_void_p]
    lib.smartarray_cupy_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    malloc = {{
        "torch": lambda size: lib.smartarray_torch_malloc(size, dev, None),
        "cupy": lambda size: lib.smartarray_cupy_malloc(None, size, dev),
        "numba": lambda size: _ext._device_allocate(size, dev, 0),
    }}[entry]
    free = {{
        "torch": lambda ptr, size: lib.smartarray_torch_free(ptr, size, dev, None),
        "cupy": lambda ptr, size: lib.smartarray_cupy_free(None, ptr, dev),
        "numba": lambda ptr, size: _ext._device_free(ptr, size, dev),
    }}[entry]

    rng = np.random.default_rng(11)
    n = MiB // 8
    with sa.gpus[dev]:
        # The 16 MiB budget, filled: 4 dirty copies (device-written, host stale) first, so they
        # take the pool's first two chunks, then 12 clean ones (device copies of host data).
        dirty, clean = [], []
        for _ in range(4):
            a = sa.SmartArray(rng.random(n) + 0.5, where="gpu")
            y = rng.random(n) + 2.0
            a.device_view("read_write").emulated_ndarray()[:] = y
            dirty.append((a, y))
        for _ in range(12):
            x = rng.random(n) + 0.5
            clean.append((sa.SmartArray(x, where="gpu"), x))
        arrays = dirty + clean
        full = sa.device_memory_stats()
        assert full["bytes_in_use"] == full["reserved_bytes"] == 16 * MiB, full

        # 14 MiB fit only once every clean copy (12 MiB) and the two least recently used dirty
        # ones are dropped; those two are written back first.
        with sa.expect_transfers(d2h=2, d2h_bytes=2 * MiB, h2d=0):
            ptr = malloc(14 * MiB)
        assert ptr, _ext._allocator_error()
        stats = [a.transfer_stats() for a, _ in arrays]
        assert [s["d2h_count"] for s in stats] == [1, 1] + [0] * 14, stats
        assert [s["d2h_bytes"] for s in stats] == [MiB, MiB] + [0] * 14, stats
        assert [s["h2d_count"] for s in stats] == [1] * 16, stats
        on_device = [False, False, True, True] + [False] * 12
        assert [a.is_valid("device") for a, _ in arrays] == on_device
        assert [a.is_valid("host") for a, _ in arrays] == [True, True, False, False] + [True] * 12
        now = sa.device_memory_stats()
        assert now["current_bytes"] == 16 * MiB and now["bytes_in_use"] == 16 * MiB, now
        for a, expected in arrays:
            assert np.array_equal(np.asarray(a), expected)

        # More than the budget: every copy goes, and then the request fails.
        assert lib.smartarray_cupy_malloc(None, 3 * MiB, dev) is None
        assert "out of memory" in _ext._allocator_error(), _ext._allocator_error()
        try:
            _ext._device_allocate(3 * MiB, dev, 0)
            raise AssertionError("no MemoryError")
        except MemoryError as e:
            assert "out of memory" in str(e), e
        assert not any(a.is_valid("device") for a, _ in arrays)
        for a, expected in arrays:
            assert np.array_equal(np.asarray(a), expected)
        free(ptr, 14 * MiB)
        assert sa.device_memory_stats()["current_count"] == 0
    print("OK")
"""


@host_only
@pytest.mark.parametrize("entry", ["torch", "cupy", "numba"])
def test_a_foreign_allocation_evicts_clean_copies_then_the_oldest_dirty_ones(entry):
    """The emulated device is limited to a 16 MiB budget, filled with 12 clean and 4 dirty
    SmartArray copies; a 14 MiB block through PyTorch's, CuPy's or Numba's entry point needs every
    clean copy and the two least recently used dirty ones dropped: exactly those two are written
    back (one D2H of their bytes each, none for the clean ones), the dropped copies are no longer
    valid on the device, every array keeps its values."""
    run_script(EVICTION.format(entry=entry, device=N - 1), SMARTARRAY_BACKEND="host",
         SMARTARRAY_DEVICE_BUDGET="16M", SMARTARRAY_HOST_DEVICE_MEMORY="64M")
