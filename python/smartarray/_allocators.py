"""PyTorch, CuPy and Numba allocating from smartarray's device pools.

Their device memory then comes from the pool that SmartArrays' device copies come from, under the
same budget. When a request does not fit, the pool makes room by dropping SmartArrays' device
copies (clean ones first, then dirty ones, least recently used first, each dirty one written back
to the host first) before it fails. The libraries' own blocks are never dropped: their memory is
theirs until they free it. See docs/python.md, "Sharing the GPU with PyTorch, CuPy and Numba".

torch, cupy and numba are imported only by the functions that need them.
"""
import ctypes
import functools
import weakref

from . import _ext
from ._arguments import non_negative_int
from ._devices import current_or


def _require_gpu(library):
    backend = _ext.backend()
    if backend != "cuda":
        raise RuntimeError(
            f"{library} on smartarray's device pool needs the cuda backend; this is the {backend} "
            f"backend, whose emulated devices' memory is host memory")


# --- pools ---------------------------------------------------------------------------------------

def device_memory_stats(device=None):
    """The figures of `device`'s pool (default: the current device) as a dict: current_bytes and
    current_count (live allocations, in the bytes asked for), peak_bytes, peak_count, total_bytes,
    total_count, bytes_in_use (live blocks, sizes rounded up to 256 bytes), reserved_bytes (held
    from the device), largest_free_block, upstream_allocations and fragmentation. SmartArrays'
    device copies and the memory of PyTorch, CuPy and Numba through smartarray's allocators all
    count here."""
    return _ext._device_memory_stats(current_or(device))


def pinned_memory_stats():
    """The figures of the pinned host pool, which every device shares (same keys as
    device_memory_stats)."""
    return _ext._pinned_memory_stats()


def device_budget(device=None):
    """The most memory `device`'s pool may hold (default: the current device): the budget last
    set, else SMARTARRAY_DEVICE_BUDGET, else the device's total memory."""
    return _ext._device_budget(current_or(device))


#: The largest budget (C++'s max_device_budget, 1 EiB); checked here because a larger int may not
#: fit the C++ size_t at all. The smallest (one tile) is the C++ layer's check.
MAX_DEVICE_BUDGET = _ext._max_device_budget


def set_device_budget(nbytes, device=None):
    """Sets the most memory `device`'s pool may hold (default: the current device): `nbytes`, an
    int or a NumPy integer from one tile (4 KiB) to 2**60 (1 EiB), or None: the device's memory.
    Memory held above a lowered budget stays until evicted; the pool only stops growing past it.
    Allocations through smartarray's allocators count against it. TypeError for a bool, a float
    or a string; ValueError for a negative number, one above 2**60 or one below a tile (the C++
    layer's check); nothing changes then."""
    if nbytes is not None:
        nbytes = non_negative_int(nbytes, "set_device_budget: nbytes", MAX_DEVICE_BUDGET,
                                  "1 EiB, as for SMARTARRAY_DEVICE_BUDGET")
    _ext._set_device_budget(nbytes, current_or(device))


# --- PyTorch --------------------------------------------------------------------------------------

@functools.cache
def torch_allocator():
    """PyTorch's ``CUDAPluggableAllocator`` over smartarray's device pools (one per process).

    ``torch.cuda.memory.change_current_allocator(sa.torch_allocator())`` makes every CUDA tensor
    of the process come from smartarray's pools, and must run before PyTorch's first CUDA
    allocation (PyTorch refuses to swap an allocator in use). Or, scoped and at any time, where
    PyTorch has ``torch.cuda.MemPool``:
    ``pool = torch.cuda.MemPool(sa.torch_allocator().allocator())`` and
    ``with torch.cuda.use_mem_pool(pool):`` (PyTorch's caching allocator then takes its segments
    from smartarray and keeps freed blocks cached until ``torch.cuda.empty_cache()``).

    A request that cannot be met even by evicting every SmartArray device copy raises
    ``RuntimeError`` naming smartarray's pool (not ``torch.cuda.OutOfMemoryError``: PyTorch raises
    that for its own allocator only)."""
    _require_gpu("PyTorch")
    from torch.cuda.memory import CUDAPluggableAllocator
    return CUDAPluggableAllocator(_ext.__file__, "smartarray_torch_malloc",
                                  "smartarray_torch_free")


# --- CuPy -----------------------------------------------------------------------------------------

def _cupy_stream_getter():
    """The address of CuPy's C function that returns the current stream (a Cython function that
    CuPy exports for its own modules), or 0 when this CuPy has none: allocations then go on the
    default stream."""
    import importlib
    for module in ("cupy.cuda.stream", "cupy_backends.cuda.stream"):
        try:
            capsule = importlib.import_module(module).__pyx_capi__["get_current_stream_ptr"]
        except (ImportError, AttributeError, KeyError):
            continue
        address = _ext._capsule_function(capsule, "intptr_t (void)")
        if address:
            return address
    return 0


def cupy_allocator():
    """An allocator for ``cupy.cuda.set_allocator(sa.cupy_allocator())`` (or
    ``cupy.cuda.using_allocator``): CuPy's device memory from smartarray's device pools.

    Memory is taken on CuPy's current stream and released after the work queued so far on every
    blocking stream (CuPy does not say which stream a block was last used on, and may destroy its
    streams before their blocks are freed): work queued on a ``non_blocking`` CuPy stream must be
    complete before an array it uses is dropped. A request that cannot be met even by evicting
    every SmartArray device copy raises ``cupy.cuda.memory.OutOfMemoryError``, caused by
    smartarray's message."""
    _require_gpu("CuPy")
    from cupy.cuda import memory, runtime
    functions = _ext._allocator_functions()
    allocator = memory.CFunctionAllocator(_cupy_stream_getter(), functions["cupy_malloc"],
                                          functions["cupy_free"], _ext)
    malloc = allocator.malloc

    def smartarray_cupy_malloc(size):
        pointer = malloc(size)
        if size and not pointer.ptr:
            device = runtime.getDevice()
            in_use = _ext._device_memory_stats(device)["current_bytes"]
            error = memory.OutOfMemoryError(size, in_use, _ext._device_budget(device))
            raise error from MemoryError(_ext._allocator_error())
        return pointer

    return smartarray_cupy_malloc


class _PinnedBlock:
    """A block of smartarray's pinned pool, as ``cupy.cuda.PinnedMemoryPointer`` wants its memory:
    ``ptr`` and ``size``; freed when the last pointer to it goes (CuPy keeps the pointers of
    pending async copies alive until the copies are done)."""

    __slots__ = ("ptr", "size", "__weakref__")

    def __init__(self, size):
        self.size = size
        self.ptr = _ext._pinned_allocate(size)

    def __del__(self, _free=_ext._pinned_free):  # bound now: module globals may be gone at exit
        if self.ptr:
            _free(self.ptr, self.size)
            self.ptr = 0


def cupy_pinned_allocator():
    """An allocator for ``cupy.cuda.set_pinned_memory_allocator(sa.cupy_pinned_allocator())``:
    CuPy's pinned host memory (the staging buffers of its async copies) from smartarray's pinned
    pool. Raises MemoryError when no pinned memory can be had."""
    _require_gpu("CuPy")
    from cupy.cuda import PinnedMemoryPointer

    def smartarray_cupy_pinned_malloc(size):
        return PinnedMemoryPointer(_PinnedBlock(size), 0)

    return smartarray_cupy_pinned_malloc


# --- Numba ----------------------------------------------------------------------------------------

def _numba_device_pointer(driver, address):
    """A device pointer as Numba's MemoryPointer takes it: a CUdeviceptr of the NVIDIA bindings,
    or a ctypes integer with Numba's own ctypes bindings."""
    if getattr(driver, "USE_NV_BINDING", True):
        return driver.binding.CUdeviceptr(address)
    return ctypes.c_uint64(address)


@functools.cache
def numba_memory_manager():
    """The class ``sa.NumbaMemoryManager`` (made on first use: it derives from Numba's)."""
    from numba.cuda.cudadrv import driver

    class NumbaMemoryManager(driver.GetIpcHandleMixin, driver.HostOnlyCUDAMemoryManager):
        """Numba's External Memory Management plugin over smartarray's device pools:
        ``numba.cuda.set_memory_manager(sa.NumbaMemoryManager)`` before Numba makes its CUDA
        context (its first device array or kernel launch), or
        ``NUMBA_CUDA_MEMORY_MANAGER=smartarray`` in the environment.

        Device arrays come from the pool of the context's device; pinned and mapped host memory
        stay Numba's own. Numba's plugin interface passes no stream: memory is taken on the
        device's default stream, and released after the work queued so far on every blocking
        stream (Numba's streams are blocking unless made otherwise). A request that cannot be met
        even by evicting every SmartArray device copy raises MemoryError. IPC handles name the
        pool's chunk and the array's offset in it (``GetIpcHandleMixin``)."""

        def initialize(self):
            # Numba's own manager sizes its deferred host frees by the device's memory.
            if not self.deallocations.memory_capacity:
                self.deallocations.memory_capacity = self.get_memory_info().total

        def memalloc(self, size):
            device = int(self.context.device.id)
            address = _ext._device_allocate(size, device, 0)
            context = weakref.proxy(self.context)
            pointer = _numba_device_pointer(driver, address)
            if not address:
                return driver.MemoryPointer(context, pointer, size)
            free = functools.partial(_ext._device_free, address, size, device)
            return driver.MemoryPointer(context, pointer, size, finalizer=free)

        def get_memory_info(self):
            free, total = _ext._memory_info(int(self.context.device.id))
            return driver.MemoryInfo(free=free, total=total)

        def reset(self):
            # Device blocks belong to their MemoryPointers, which free them; the host ones to
            # Numba's base class.
            super().reset()

        def defer_cleanup(self):
            # Freeing a pool block waits for nothing, so only the base class's host frees defer.
            return super().defer_cleanup()

        @property
        def interface_version(self):
            return 1

    NumbaMemoryManager.__module__ = "smartarray"
    NumbaMemoryManager.__qualname__ = "NumbaMemoryManager"
    return NumbaMemoryManager
