"""PyTorch, CuPy and Numba allocating from smartarray's device pools, on a GPU: each library in a
fresh process (their allocators are process-wide and must be set before their first allocation),
skipped without a GPU or without the library."""
import importlib.util

import numpy as np
import pytest

import smartarray as sa
from conftest import gpu_only
from smartarray import _ext
from test_allocators import run_script


def _needs(module):
    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"needs {module}")


GPU_EVICTION = """
    import sys
    import numpy as np
    import smartarray as sa
    from smartarray import _ext

    GiB = 1 << 30
    library = "{library}"
    if library == "torch":
        import torch
        torch.cuda.memory.change_current_allocator(sa.torch_allocator())
        def empty(n):
            return torch.empty(n, dtype=torch.uint8, device="cuda")
        def write(a):
            torch.as_tensor(a, device="cuda").add_(1)
            torch.cuda.synchronize()
        failure = RuntimeError
    else:
        import cupy
        def empty(n):
            return cupy.empty(n, dtype=cupy.uint8)
        def write(a):
            d = cupy.asarray(a)
            d += 1
            cupy.cuda.Device().synchronize()
        failure = cupy.cuda.memory.OutOfMemoryError
    free, total = _ext._memory_info(0)
    if free < 8 * GiB:
        print(f"SKIP: {{free}} bytes free on GPU 0, the test needs 8 GiB")
        sys.exit(0)
    # Quick on any GPU: smartarray's pool may hold 5 GiB, and the arrays take 1 GiB each, so that
    # each is one chunk of the pool (its chunks grow up to 1 GiB).
    sa.set_device_budget(5 * GiB, 0)

    rng = np.random.default_rng(5)
    def rand():
        return np.frombuffer(rng.bytes(GiB), np.uint8)
    dirty, clean = [], []
    for _ in range(2):
        x = rand()
        a = sa.SmartArray(x, where="gpu")
        write(a)  # device copy x + 1, host copy stale
        dirty.append((a, x + np.uint8(1)))
    for _ in range(3):
        x = rand()
        clean.append((sa.SmartArray(x, where="gpu"), x))
    arrays = dirty + clean
    full = sa.device_memory_stats(0)
    assert full["bytes_in_use"] == full["reserved_bytes"] == 5 * GiB, full
    if library == "cupy":
        cupy.cuda.set_allocator(sa.cupy_allocator())

    # 4 GiB: no room without eviction (the pool is at its budget); with it, the 3 clean copies and
    # the older dirty one go, and that one is written back.
    with sa.expect_transfers(d2h=1, d2h_bytes=GiB, h2d=0):
        big = empty(4 * GiB)
    stats = [a.transfer_stats() for a, _ in arrays]
    assert [s["d2h_count"] for s in stats] == [1, 0, 0, 0, 0], stats
    assert [s["d2h_bytes"] for s in stats] == [GiB, 0, 0, 0, 0], stats
    assert [a.is_valid("device") for a, _ in arrays] == [False, True, False, False, False]
    assert sa.device_memory_stats(0)["current_bytes"] == 5 * GiB
    big.fill(7) if library == "cupy" else big.fill_(7)
    del big
    assert sa.device_memory_stats(0)["current_bytes"] == GiB

    # More than the budget: the last copy goes (written back), then the request fails with
    # smartarray's message.
    try:
        empty(6 * GiB)
        raise AssertionError("no error")
    except failure as e:
        text = str(e) + str(e.__cause__)
        assert "smartarray_" in text and "out of memory" in text, text
    assert sa.device_memory_stats(0)["current_bytes"] == 0
    for a, expected in arrays:
        assert np.array_equal(np.asarray(a), expected)
    print("OK")
"""


@gpu_only
@_needs("torch")
def test_torch_tensor_evicts_smartarrays():
    """change_current_allocator(sa.torch_allocator()), then torch.empty() of a tensor that fits
    only once the clean copies and the older dirty one are dropped."""
    run_script(GPU_EVICTION.format(library="torch"))


@gpu_only
@_needs("cupy")
def test_cupy_array_evicts_smartarrays():
    """The same with cupy.cuda.set_allocator(sa.cupy_allocator()) and cupy.empty()."""
    run_script(GPU_EVICTION.format(library="cupy"))


@gpu_only
@_needs("torch")
def test_torch_mem_pool_takes_its_segments_from_smartarray():
    """The scoped route: PyTorch's caching allocator takes its segments from smartarray's pool."""
    run_script("""
        import torch, smartarray as sa
        if not (hasattr(torch.cuda, "MemPool") and hasattr(torch.cuda, "use_mem_pool")):
            print("SKIP: this PyTorch has no torch.cuda.MemPool and use_mem_pool")
            raise SystemExit
        pool = torch.cuda.MemPool(sa.torch_allocator().allocator())
        before = sa.device_memory_stats(0)
        with torch.cuda.use_mem_pool(pool):
            t = torch.ones(1 << 20, device="cuda")
        assert sa.device_memory_stats(0)["current_bytes"] - before["current_bytes"] >= 4 << 20
        assert float(t.sum()) == 1 << 20
        print("OK")
    """)


@gpu_only
@_needs("cupy")
def test_cupy_allocations_take_cupys_current_stream():
    import cupy
    getter = sa._allocators._cupy_stream_getter()
    assert getter, "CuPy's get_current_stream_ptr was not found: allocations use the default stream"
    before = sa.device_memory_stats(0)
    stream = cupy.cuda.Stream()
    with cupy.cuda.using_allocator(sa.cupy_allocator()), stream:
        assert _ext._current_stream_of(getter) == stream.ptr
        x = cupy.arange(100_000, dtype=cupy.float32)
        assert sa.device_memory_stats(0)["current_count"] == before["current_count"] + 1
        y = x * 2
        stream.synchronize()
        assert np.array_equal(y.get(), np.arange(100_000, dtype=np.float32) * 2)
    del x, y
    assert sa.device_memory_stats(0)["current_count"] == before["current_count"]
    assert _ext._current_stream_of(getter) == cupy.cuda.get_current_stream().ptr


@gpu_only
@_needs("cupy")
def test_cupy_pinned_allocator_with_an_async_copy():
    run_script("""
        import gc
        import numpy as np, cupy, smartarray as sa
        cupy.cuda.set_pinned_memory_allocator(sa.cupy_pinned_allocator())
        n = 1 << 20
        before = sa.pinned_memory_stats()
        mem = cupy.cuda.alloc_pinned_memory(n * 8)
        assert sa.pinned_memory_stats()["current_count"] == before["current_count"] + 1
        assert sa.pinned_memory_stats()["current_bytes"] == before["current_bytes"] + n * 8
        host = np.frombuffer(mem, np.float64, n)
        x = np.random.default_rng(2).random(n) + 0.5
        host[:] = x
        back = np.frombuffer(cupy.cuda.alloc_pinned_memory(n * 8), np.float64, n)
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            d = cupy.empty(n, cupy.float64)
            d.set(host, stream=stream)
            (d * 2).get(stream=stream, out=back)
        stream.synchronize()
        assert np.array_equal(back, x * 2)
        extra = cupy.cuda.alloc_pinned_memory(4096)
        count = sa.pinned_memory_stats()["current_count"]
        del extra
        gc.collect()
        assert sa.pinned_memory_stats()["current_count"] == count - 1
        print("OK")
    """)


NUMBA = """
    import gc
    import numpy as np, smartarray as sa
    from numba import cuda
    if {set_manager}:
        cuda.set_memory_manager(sa.NumbaMemoryManager)
    context = cuda.current_context()
    assert isinstance(context.memory_manager, sa.NumbaMemoryManager), context.memory_manager
    before = sa.device_memory_stats(0)
    d = cuda.device_array(1000, dtype=np.float64)
    grown = sa.device_memory_stats(0)
    assert grown["bytes_in_use"] - before["bytes_in_use"] == 8192, (before, grown)
    assert grown["current_bytes"] - before["current_bytes"] == 8000
    assert grown["current_count"] - before["current_count"] == 1

    @cuda.jit
    def double(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = 2 * x[i]

    x = np.random.default_rng(4).random(1000) + 0.5
    double[4, 256](cuda.to_device(x), d)
    assert np.array_equal(d.copy_to_host(), 2 * x)
    info = context.get_memory_info()
    assert 0 < info.free <= info.total, info
    handle = context.get_ipc_handle(d.gpu_data)
    assert handle.size == 8000 and handle.offset >= 0, handle
    del d, handle
    gc.collect()
    assert sa.device_memory_stats(0)["current_count"] == before["current_count"]
    print("OK")
"""


@gpu_only
@_needs("numba")
def test_numba_device_arrays_come_from_the_pool():
    """set_memory_manager(sa.NumbaMemoryManager) before Numba's context: device_array() is one
    block of smartarray's pool (8000 bytes: 8192 in use), kernels use it, del gives it back."""
    run_script(NUMBA.format(set_manager=True))


@gpu_only
@_needs("numba")
def test_numba_memory_manager_from_the_environment():
    run_script(NUMBA.format(set_manager=False), NUMBA_CUDA_MEMORY_MANAGER="smartarray")
