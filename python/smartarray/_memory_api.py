"""Numba's CUDA memory API over SmartArray: to_device, device_array, device_array_like,
pinned_array, mapped_array, and the imports of other libraries' arrays (from_dlpack, asarray)."""
import numpy as np

from . import _ext
from ._array import SmartArray
from ._dtypes import check_dtype
from ._interop import wrapped
from ._layout import contiguous_order, normalize_shape
from ._streams import stream_handle


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
        dt = check_dtype(dtype)
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
    dt = check_dtype(dtype)
    out._configure(normalize_shape(shape, dt.itemsize), dt, order)
    out._alloc_host(0, out.nbytes, mode, **kw)


def from_dlpack(x):
    """Imports a DLPack (or CAI) producer of CUDA memory without a copy, as a SmartArray that does
    not own its memory, valid on the producer's device only. A CPU producer (NumPy) is copied
    into a host-valid array instead: CPU memory cannot serve as the device copy."""
    return wrapped(SmartArray, x)


def asarray(x, dtype=None):
    """`x` as a SmartArray: itself when it is one, a zero-copy import of a device producer
    (DLPack or CAI), else a host copy of the array-like."""
    if isinstance(x, SmartArray):
        if dtype is not None and check_dtype(dtype) != x.dtype:
            raise ValueError("asarray: a dtype conversion needs a copy")
        return x
    if not isinstance(x, np.ndarray) and (hasattr(x, "__cuda_array_interface__") or
                                          hasattr(x, "__dlpack__")):
        out = from_dlpack(x)
        if dtype is not None and check_dtype(dtype) != out.dtype:
            raise ValueError("asarray: a dtype conversion needs a copy")
        return out
    return SmartArray(x, dtype=dtype)
