"""What the acquires hand out: NumPy arrays over the host copy, and device views over a device copy
(a ``DeviceArrayView``, or Numba's own device array when Numba is imported)."""
import math
import os
import sys

import numpy as np

from . import _ext
from ._streams import cai_stream


def no_device_error(what):
    return AttributeError(
        f"{what}: the smartarray host backend has no GPU (its 'device' copy is a separate host "
        "allocation), so there is no CUDA device pointer to export; run on a machine with a GPU, "
        "or use host(), np.asarray() or __dlpack__ for the data")


def keeper(array):
    """An object that keeps `array`'s C++ array alive, but not the Python SmartArray: what NumPy
    views and Numba arrays over its memory hold. NumPy arrays are invisible to the garbage
    collector, so a view holding the SmartArray (stored on it, ``a.h = a.host()``) would make a
    cycle that is never collected; the C++ array keeps the memory valid after ``del a`` all the
    same. Made once per array."""
    kept = array.__dict__.get("_keeper")
    if kept is None:
        kept = array._keeper = _ext._Core()
        kept._share(array)
    return kept


class _Raw:
    """An object with ``__array_interface__`` over raw host memory, keeping `owner` alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, ptr, shape, strides, dtype, readonly, owner):
        self.__array_interface__ = {
            "version": 3, "shape": shape, "typestr": dtype.str, "descr": dtype.descr,
            "data": (ptr, readonly), "strides": strides,
        }
        self.owner = owner


def ndarray_at(ptr, shape, strides, dtype, readonly, owner):
    if math.prod(shape) == 0:
        return np.empty(shape, dtype)
    return np.asarray(_Raw(ptr, shape, strides, dtype, readonly, owner))


def cai_dict(owner, ptr, readonly, stream):
    """CAI v3 over `owner`'s device copy at `ptr`; `stream` is a handle, or None for none. Inside
    sa.capture the dict names no stream: a consumer would synchronize it, which a captured stream
    refuses, and its work, queued on a captured stream, is ordered after the acquire anyway."""
    return {
        "shape": owner.shape, "typestr": owner.dtype.str, "descr": owner.dtype.descr,
        "data": (ptr, readonly), "version": 3,
        "strides": None if owner._order == "C" else owner.strides,
        "stream": None if stream is None or _ext._capturing() else cai_stream(stream),
    }


class DeviceArrayView:
    """The device copy of a SmartArray, as ``gpu()`` returns it: a CAI v3 producer that Numba
    kernels, CuPy and PyTorch accept. It does not own memory: it keeps its SmartArray alive and is
    valid until the next acquire of that array (a host access may replace the device copy)."""

    def __init__(self, owner, ptr, stream, readonly):
        self._owner = owner
        self._ptr = ptr
        self._stream = stream
        self.readonly = readonly
        self.shape = owner.shape
        self.strides = owner.strides
        self.dtype = owner.dtype
        self.size = owner.size
        self.ndim = owner.ndim

    @property
    def device_ctypes_pointer(self):
        return self._ptr

    @property
    def __cuda_array_interface__(self):
        if _ext.backend() != "cuda":
            raise no_device_error("DeviceArrayView.__cuda_array_interface__")
        return cai_dict(self._owner, self._ptr, self.readonly, self._stream)

    def copy_to_host(self, out=None, stream=0):
        return self._owner.copy_to_host(out, stream)

    def emulated_ndarray(self):
        """Host backend only: the emulated device copy as a NumPy array, once the stream of the
        acquire (on the view's device) has finished, so that tests can play a kernel that writes
        the device copy."""
        if _ext.backend() != "host":
            raise RuntimeError("emulated_ndarray(): only on the host backend (this is a real GPU)")
        _ext._synchronize(self._stream)
        o = self._owner
        return ndarray_at(self._ptr, o.shape, o.strides, o.dtype, self.readonly, keeper(o))

    def __repr__(self):
        return (f"<smartarray.DeviceArrayView shape={self.shape} dtype={self.dtype} "
                f"readonly={self.readonly} of {self._owner._name()}>")


def numba_cuda():
    """numba.cuda when device views should be Numba's own device arrays (Numba already imported,
    cuda backend, not disabled with SMARTARRAY_NUMBA_DEVICE_ARRAY=0), else None."""
    cuda = sys.modules.get("numba.cuda")
    if cuda is None or _ext.backend() != "cuda":
        return None
    if os.environ.get("SMARTARRAY_NUMBA_DEVICE_ARRAY", "1") == "0":
        return None
    return cuda


def numba_device_array(owner, ptr):
    """Numba's DeviceNDArray over `owner`'s device copy at `ptr`, made once per device pointer
    and cached on the array (Numba types its own arrays at once at kernel launch, while every
    foreign CAI object costs it a DeviceNDArray built from the dict on each launch, about 0.1 ms
    an argument). None when Numba is not in use."""
    cache = owner.__dict__.get("_numba_arrays")
    if cache is not None:
        dev = cache.get(ptr)
        if dev is not None:
            return dev
    cuda = numba_cuda()
    if cuda is None:
        return None
    dev = cuda.as_cuda_array(_CaiCarrier(owner, ptr), sync=False)
    if cache is None:
        cache = owner._numba_arrays = {}
    cache[ptr] = dev
    return dev


def numba_memory_view(owner, ptr):
    """cuda.core's StridedMemoryView over `owner`'s device copy at `ptr`, made once per device
    pointer and cached on the array: the kernel argument of numba-cuda, whose launch takes a
    StridedMemoryView as it is (the object it makes from any CAI or DLPack argument), with no
    export, copy or synchronization per launch."""
    cache = owner.__dict__.get("_numba_views")
    if cache is not None:
        view = cache.get(ptr)
        if view is not None:
            return view
    from cuda.core.utils import StridedMemoryView

    # stream_ptr=-1: the acquire on the launch stream orders it; nothing to wait for here.
    view = StridedMemoryView.from_cuda_array_interface(_CaiCarrier(owner, ptr), stream_ptr=-1)
    if cache is None:
        cache = owner._numba_views = {}
    cache[ptr] = view
    return view


def device_object(owner, ptr, handle, readonly):
    """The object that gpu() and device_view() return: on the default stream and with Numba in
    use, Numba's own device array over the copy (the default stream orders Numba's default-stream
    launches after the acquire; Numba's device arrays carry no read-only flag); otherwise a
    DeviceArrayView (CAI v3 with the acquire's stream, which consumers wait for)."""
    if handle == 0:
        dev = numba_device_array(owner, ptr)
        if dev is not None:
            return dev
    return DeviceArrayView(owner, ptr, handle, readonly)


class _CaiCarrier:
    """The CAI of a device copy for Numba's as_cuda_array and cuda.core's StridedMemoryView. It
    keeps the C++ array alive but not the Python SmartArray, which caches the Numba array or view
    made from it: no reference cycle, so the device memory goes back to the pool as soon as the
    last reference goes, not at a GC pass."""

    __slots__ = ("__cuda_array_interface__", "_core")

    def __init__(self, owner, ptr):
        self._core = keeper(owner)
        self.__cuda_array_interface__ = cai_dict(owner, ptr, False, None)
