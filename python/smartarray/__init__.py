"""smartarray for Python: Numba's SmartArray API on the C++ smartarray core.

One array, a host copy and a device copy, copied only when a side you ask for is stale, with
exact transfer counts. Zero-copy interop through ``__cuda_array_interface__`` v3 (Numba, CuPy,
PyTorch) and DLPack (NumPy, CuPy, PyTorch, JAX). See docs/python.md.
"""
import contextlib
import sys

import numpy as np

from . import _ext
from ._allocators import (cupy_allocator, cupy_pinned_allocator, device_budget,
                          device_memory_stats, pinned_memory_stats, set_device_budget,
                          torch_allocator)
from ._arguments import non_negative_int as _non_negative_int
from ._array import SmartArray, backend
from ._devices import (Device, device_count, device_name, device_transfer_stats,
                       get_current_device, gpus, select_device)
from ._dtypes import SUPPORTED as supported_dtypes
from ._dtypes import check_dtype as _check_dtype
from ._interop import asarray, from_dlpack
from ._layout import contiguous_order, normalize_shape
from ._streams import forget_stream, forget_unused_streams, stream_handle
from ._views import DeviceArrayView

__all__ = [
    "SmartArray", "DeviceArrayView", "asarray", "from_dlpack", "backend", "to_device",
    "device_array", "device_array_like", "pinned_array", "mapped_array", "transfer_stats",
    "expect_transfers", "TransferMismatch", "synchronize", "synchronize_device", "trace_enabled",
    "stream_handle", "forget_stream", "forget_unused_streams", "supported_dtypes", "device_name",
    "Device", "gpus", "select_device", "get_current_device", "device_count",
    "device_transfer_stats", "torch_allocator", "cupy_allocator", "cupy_pinned_allocator",
    "device_memory_stats", "pinned_memory_stats", "device_budget", "set_device_budget",
]  # and NumbaMemoryManager, left out here: it imports Numba (see __getattr__)
__version__ = "0.1.0"

synchronize_device = _ext.synchronize_device
trace_enabled = _ext.trace_enabled


def __getattr__(name):
    """``NumbaMemoryManager`` (and ``_numba_memory_manager``, which Numba reads for
    ``NUMBA_CUDA_MEMORY_MANAGER=smartarray``), made on first use: the class derives from Numba's,
    and ``import smartarray`` needs NumPy only."""
    if name in ("NumbaMemoryManager", "_numba_memory_manager"):
        from ._allocators import numba_memory_manager
        try:
            return numba_memory_manager()
        except ImportError as error:
            # hasattr() and getattr(sa, name, default) expect AttributeError for a name that
            # cannot be had.
            raise AttributeError(f"module 'smartarray' has no attribute {name!r} without Numba "
                                 f"({error})", name=name, obj=sys.modules[__name__]) from error
    raise AttributeError(f"module 'smartarray' has no attribute {name!r}")


def synchronize(stream=0):
    """Waits for the work queued on `stream` (any stream kind, or an int handle)."""
    _ext._synchronize(stream_handle(stream))


# --- Numba's cuda memory API ---------------------------------------------------------------------

def to_device(obj, stream=0, copy=True, to=None, device=None):
    """Numba's ``cuda.to_device(obj, stream=0, copy=True, to=None)``: a SmartArray valid on the
    device (the current one, `stream`'s, or `device`) and on the host (one H2D on `stream`). With
    `to`, `obj` is copied into that array."""
    if to is not None:
        to.copy_to_device(obj, stream=stream, device=device)
        return to
    return SmartArray(obj, copy=copy, where="gpu", stream=stream, device=device)


def _shaped(shape, dtype, strides, order):
    if strides is not None:
        dt = _check_dtype(dtype)
        arr_order = _order_of_strides(shape, strides, dt.itemsize)
        if arr_order is None:
            raise ValueError(f"strides {strides} are not contiguous for shape {shape}")
        order = arr_order
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', not {order!r}")
    return order


def _order_of_strides(shape, strides, itemsize):
    shape, strides = normalize_shape(shape, itemsize), tuple(strides)
    if len(strides) != len(shape):
        raise ValueError(f"strides {strides} do not match the {len(shape)} dimensions of shape "
                         f"{shape}")
    return contiguous_order(shape, strides, itemsize)


def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0, device=None):
    """Numba's ``cuda.device_array``: uninitialized, valid on the device only (the current one,
    `stream`'s, or `device`; no host memory until the host needs it)."""
    order = _shaped(shape, dtype, strides, order)
    return SmartArray(shape=shape, dtype=dtype, order=order, where="gpu", stream=stream,
                      device=device)


def device_array_like(ary, stream=0, device=None):
    """Numba's ``cuda.device_array_like(ary)``: same shape, dtype and order; device-only."""
    order = "F" if (getattr(ary, "flags", None) is not None and ary.flags.f_contiguous and
                    not ary.flags.c_contiguous) else getattr(ary, "_order", "C")
    return device_array(ary.shape, ary.dtype, order=order, stream=stream, device=device)


def pinned_array(shape, dtype=np.float64, strides=None, order="C"):
    """Numba's ``cuda.pinned_array``: a zero-filled SmartArray whose host copy is pinned
    (MemoryError when pinned memory cannot be had, never silently pageable)."""
    order = _shaped(shape, dtype, strides, order)
    out = SmartArray.__new__(SmartArray)
    _init_empty(out, shape, dtype, order, "explicit", pinned=True)
    return out


def mapped_array(shape, dtype=np.float64, strides=None, order="C", stream=0, portable=False,
                 wc=False):
    """Numba's ``cuda.mapped_array``: a SmartArray in mapped mode (kernels read the pinned host
    buffer directly; nothing is ever copied)."""
    order = _shaped(shape, dtype, strides, order)
    out = SmartArray.__new__(SmartArray)
    _init_empty(out, shape, dtype, order, "mapped", portable=portable, write_combined=wc)
    out.stream = stream_handle(stream)
    return out


def _init_empty(out, shape, dtype, order, mode, **kw):
    _ext._Core.__init__(out)
    out._owner = None
    out.stream = 0
    dt = _check_dtype(dtype)
    out._configure(normalize_shape(shape, dt.itemsize), dt, order)
    out._alloc_host(0, out.nbytes, mode, **kw)


# --- counters ------------------------------------------------------------------------------------

def transfer_stats():
    """The process-wide transfer counters (a dict: h2d_count, h2d_bytes, d2h_count, d2h_bytes,
    d2d_count, d2d_bytes, d2d_peer_count, d2d_peer_bytes, staged_count, staged_bytes,
    prefetch_*, allocation_*, sent_*, received_*, wait_count): a peer copy (device to device
    across devices) counts as d2d_peer, a read across devices without peer access as one D2H, one
    H2D and one staged; sent_* and received_* count the messages of the C++ distributed layer
    (docs/distributed.md) in this process."""
    return _ext._global_transfer_stats()


class TransferMismatch(AssertionError):
    """An expect_transfers() block made other transfers than expected."""


def expect_transfers(h2d=0, d2h=0, d2d=0, *, d2d_peer=0, staged=0, h2d_bytes=None,
                     d2h_bytes=None, d2d_bytes=None, d2d_peer_bytes=None, staged_bytes=None,
                     array=None):
    """C++'s ExpectTransfers: the block must make exactly these copies (process-wide, or of
    `array`'s own counters); bytes are checked when given. Raises TransferMismatch naming the
    observed counts. Yields a callable that returns the counts observed so far.

    Each count is a non-negative int (or NumPy integer), each byte count one or None (not
    checked), `array` a SmartArray or None: anything else raises TypeError or ValueError naming
    the keyword and the value, at the call."""
    counts = {"h2d": h2d, "d2h": d2h, "d2d": d2d, "d2d_peer": d2d_peer, "staged": staged}
    expected = {f"{name}_count": _non_negative_int(value, f"expect_transfers: {name}")
                for name, value in counts.items()}
    byte_counts = {"h2d_bytes": h2d_bytes, "d2h_bytes": d2h_bytes, "d2d_bytes": d2d_bytes,
                   "d2d_peer_bytes": d2d_peer_bytes, "staged_bytes": staged_bytes}
    expected.update({name: _non_negative_int(value, f"expect_transfers: {name}")
                     for name, value in byte_counts.items() if value is not None})
    if array is not None and not isinstance(array, SmartArray):
        raise TypeError(f"expect_transfers: array must be a SmartArray or None, not {array!r} "
                        f"({type(array).__name__})")
    return _expecting(expected, array)


@contextlib.contextmanager
def _expecting(expected, array):
    """The block of expect_transfers(), whose arguments are checked."""
    read = array.transfer_stats if array is not None else transfer_stats
    start = read()

    def observed():
        now = read()
        return {k: now[k] - start[k] for k in now}

    yield observed
    got = observed()
    wrong = {k: (v, got[k]) for k, v in expected.items() if got[k] != v}
    if wrong:
        parts = ", ".join(f"{k}: expected {e}, observed {o}" for k, (e, o) in wrong.items())
        raise TransferMismatch(f"expect_transfers: {parts} (observed {got})")
