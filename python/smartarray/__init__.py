"""smartarray for Python: Numba's SmartArray API on the C++ smartarray core.

One array, a host copy and a device copy, copied only when a side you ask for is stale, with
exact transfer counts. Zero-copy interop through ``__cuda_array_interface__`` v3 (Numba, CuPy,
PyTorch) and DLPack (NumPy, CuPy, PyTorch, JAX). See docs/python.md.
"""
import sys

from . import _allocators, _ext
from ._allocators import (cupy_allocator, cupy_pinned_allocator, device_budget,
                          device_memory_stats, pinned_memory_stats, set_device_budget,
                          torch_allocator)
from ._array import SmartArray, backend
from ._counters import TransferMismatch, expect_transfers, transfer_stats
from ._devices import (Device, device_count, device_name, device_transfer_stats,
                       get_current_device, gpus, select_device)
from ._dtypes import SUPPORTED as supported_dtypes
from ._graphs import Graph, capture
from ._memory_api import (asarray, device_array, device_array_like, from_dlpack, mapped_array,
                          pinned_array, to_device)
from ._streams import Stream, forget_stream, forget_unused_streams, stream_handle, synchronize
from ._views import DeviceArrayView

__all__ = [
    "SmartArray", "DeviceArrayView", "asarray", "from_dlpack", "backend", "to_device",
    "device_array", "device_array_like", "pinned_array", "mapped_array", "transfer_stats",
    "expect_transfers", "TransferMismatch", "synchronize", "synchronize_device", "trace_enabled",
    "stream_handle", "forget_stream", "forget_unused_streams", "supported_dtypes", "device_name",
    "Device", "gpus", "select_device", "get_current_device", "device_count",
    "device_transfer_stats", "torch_allocator", "cupy_allocator", "cupy_pinned_allocator",
    "device_memory_stats", "pinned_memory_stats", "device_budget", "set_device_budget",
    "Prefetch", "Stream", "capture", "Graph",
]  # and NumbaMemoryManager, left out here: it imports Numba (see __getattr__)
__version__ = "0.1.0"

Prefetch = _ext.Prefetch
synchronize_device = _ext.synchronize_device
trace_enabled = _ext.trace_enabled


def __getattr__(name):
    """``NumbaMemoryManager`` (and ``_numba_memory_manager``, which Numba reads for
    ``NUMBA_CUDA_MEMORY_MANAGER=smartarray``), made on first use: the class derives from Numba's,
    and ``import smartarray`` needs NumPy only. ``dist`` (smartarray.dist), imported on first
    use: it loads MPI."""
    if name in ("NumbaMemoryManager", "_numba_memory_manager"):
        try:
            return _allocators.numba_memory_manager()
        except ImportError as error:
            # hasattr() and getattr(sa, name, default) expect AttributeError for a name that
            # cannot be had.
            raise AttributeError(f"module 'smartarray' has no attribute {name!r} without Numba "
                                 f"({error})", name=name, obj=sys.modules[__name__]) from error
    if name == "dist":
        # The distributed layer (smartarray._dist, which loads MPI), imported on first use; it
        # raises ImportError naming what is missing where the build has no MPI.
        import importlib
        return importlib.import_module(".dist", __name__)
    raise AttributeError(f"module 'smartarray' has no attribute {name!r}")
