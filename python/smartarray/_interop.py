"""Zero-copy exchange with other libraries: ``__cuda_array_interface__`` v3 and DLPack, both ways.

An export names one device copy: the one on the current device (or on the device of the array's
own stream), or the one that DLPack's ``dl_device`` names. An import of device memory wraps it
without a copy as that device's copy.
"""
import math
import operator

import numpy as np

from . import _ext
from ._devices import current_or, default_stream_of, device_guard
from ._dtypes import check_dtype, from_dlpack_code
from ._layout import contiguous_order
from ._streams import from_protocol_stream
from ._views import cai_dict, no_device_error

READ, READ_WRITE = 0, 1
kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13


def export_stream(array, device=None):
    """(stream handle, device) of a device export: the array's stream and its device (by default
    the current device's default stream); with `device`, that device's copy, on the array's
    stream when it lives there, else on that device's default stream."""
    if device is None:
        return array.stream, _ext._stream_device(array.stream)
    ordinal = current_or(device)
    if array.stream != 0 and _ext._stream_device(array.stream) == ordinal:
        return array.stream, ordinal
    return default_stream_of(ordinal), ordinal


def cuda_array_interface(array):
    if _ext.backend() != "cuda":
        raise no_device_error("SmartArray.__cuda_array_interface__")
    handle, _ = export_stream(array)
    return cai_dict(array, array._device_ptr(READ_WRITE, handle), False, handle)


def dlpack_device(array):
    if _ext.backend() == "cuda":
        return (kDLCUDA, export_stream(array)[1])
    return (kDLCPU, 0)


#: The default of __dlpack__'s dl_device: a consumer that passes dl_device=None (NumPy) asks for
#: the host copy with stream None, one that passes nothing follows __dlpack_device__.
UNNAMED = object()


def dlpack(array, stream, max_version, dl_device, copy):
    """A DLPack capsule: versioned ("dltensor_versioned", 1.0) when max_version >= (1, 0), else
    legacy ("dltensor").

    Which copy: dl_device=(1, 0) the host copy, (2, n) the copy on device n (cuda backend only).
    Without a device, the copy that __dlpack_device__ names (on the cuda backend, the device),
    acquired read_write on the array's stream (on that device), whenever the consumer names a
    stream, or speaks DLPack 1.0 (max_version) without passing dl_device at all: such a consumer
    read __dlpack_device__ first, and stream None is the legacy default stream for it (the
    protocol's rule; cuda.core, and so numba-cuda, call so for the default stream). The host copy
    when the consumer names neither a stream nor a device: NumPy's from_dlpack (dl_device=None
    passed, or an old one that passes nothing) and every CPU consumer. The consumer's stream (None,
    0 or 1: the legacy default stream, 2: per-thread, -1: no synchronization asked) then waits for
    the array's work through an event, which is the stream handoff of the protocol. The array
    never names the consumer's stream, which the consumer may destroy.
    A host export is made valid (one D2H when stale): a read acquire flagged READ_ONLY in a
    versioned capsule; a read_write acquire (device becomes stale) in a legacy one.
    copy=True: a host copy (NumPy's); copy=True on the device raises BufferError.
    """
    versioned = _pair(max_version, "max_version")[0] >= 1 if max_version is not None else False
    if stream is not None and (not isinstance(stream, int) or isinstance(stream, bool)):
        raise TypeError(f"__dlpack__: stream must be None or an int, not {stream!r}")
    if stream is not None and stream < -1:
        raise ValueError(f"__dlpack__: stream {stream} is neither -1 nor a stream")
    on_cuda = _ext.backend() == "cuda"
    device = None
    device_named = dl_device is not UNNAMED
    if not device_named:
        dl_device = None
    if dl_device is not None:
        dev_type, dev_id = _pair(dl_device, "dl_device")
        if dev_type == kDLCPU and dev_id != 0:
            raise BufferError(f"__dlpack__: dl_device {tuple(dl_device)}: the CPU is device 0")
        if dev_type == kDLCUDA:
            if not on_cuda:
                raise BufferError("__dlpack__: dl_device=kDLCUDA but the host backend has no GPU")
            device = current_or(dev_id)
        elif dev_type != kDLCPU:
            raise BufferError(f"__dlpack__: unsupported dl_device {tuple(dl_device)}")
        on_host = dev_type == kDLCPU
    else:
        on_host = not on_cuda or (stream is None and (device_named or max_version is None))
    if on_host:
        if stream is not None and stream != -1 and on_cuda and dl_device is None:
            raise BufferError("__dlpack__: a stream with a host export")
        if copy:
            host = np.array(array.host_view("read"), copy=True)
            kw = {"max_version": max_version} if max_version is not None else {}
            return host.__dlpack__(**kw)
        return array._dlpack(versioned, True, READ if versioned else READ_WRITE, 0, 0)
    if copy:
        raise BufferError("__dlpack__: copy=True on the device is not supported")
    handle, ordinal = export_stream(array, device)
    consumer = from_protocol_stream(stream)
    if consumer == 0:
        consumer = default_stream_of(ordinal)  # the legacy default stream of that device
    return array._dlpack(versioned, False, READ_WRITE, handle, ordinal, consumer)


def _pair(value, name):
    """A DLPack argument that is a pair of ints ((major, minor), (device type, device id))."""
    try:
        first, second = value
        return operator.index(first), operator.index(second)
    except (TypeError, ValueError):
        raise TypeError(f"__dlpack__: {name} must be a pair of ints, not {value!r}") from None


# --- imports ---------------------------------------------------------------------------------------

def wrapped(cls, x):
    """A new `cls` (SmartArray) that wraps producer `x`'s memory without a copy (adopt())."""
    out = cls.__new__(cls)
    _ext._Core.__init__(out)
    out.stream = 0
    out._stream_object = None
    out._owner = None
    adopt(out, x)
    return out


def to_numpy(obj, cls):
    """A host copy of a device producer (for SmartArray(obj, copy=True), whose class is `cls`)."""
    return wrapped(cls, obj).copy_to_host()


def adopt(self, obj, device=None):
    """Makes `self` a zero-copy wrapper of a producer's memory (from_dlpack / asarray). A
    producer that is a SmartArray (the only Python class over the C++ core) is shared."""
    if isinstance(obj, _ext._Core):
        self._share(obj)
        self._owner = obj._owner
        self._configure(obj.shape, obj.dtype, obj._order)
        return
    ptr, dev_type, dev_id, shape, strides, dt, keep = _import(obj)
    order = contiguous_order(shape, strides, dt.itemsize)
    if order is None:
        raise ValueError(f"from_dlpack: the producer's array is not contiguous (shape {shape}, "
                         f"byte strides {strides})")
    nbytes = math.prod(shape) * dt.itemsize
    device_memory = dev_type in (kDLCUDA, kDLCUDAHost, kDLCUDAManaged)
    if device_memory and _ext.backend() != "cuda":
        raise ValueError("from_dlpack: CUDA memory, but smartarray runs on the host backend")
    if device_memory and device is not None and current_or(device) != dev_id:
        raise ValueError(f"copy=False: the producer's memory is on device {dev_id}, not on "
                         f"device={current_or(device)}; a zero-copy import cannot move it")
    self._configure(shape, dt, order)
    if device_memory:
        self._wrap_device(ptr if nbytes else 0, nbytes, dev_id)
        self._owner = keep
    else:
        # CPU memory cannot be the device copy (on the host backend the emulated device accepts
        # only its own allocations): one host copy, host-valid.
        self._alloc_host(ptr if nbytes else 0, nbytes, "explicit")


def _import(obj):
    """(pointer, device type, device ordinal, shape, byte strides, dtype, keep-alive), once the
    producer's work on the memory is ordered before the current device's legacy default stream
    (DLPack) or finished (CAI), with the producer's device current meanwhile."""
    if hasattr(obj, "__dlpack__"):
        dev = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (kDLCPU, 0)
        kwargs = {}
        ordinal = _ext._current_device()
        if dev[0] == kDLCUDA:
            kwargs["stream"] = 1  # the consumer: the legacy default stream of the data's device
            ordinal = current_or(int(dev[1]))
        with device_guard(ordinal):
            try:
                capsule = obj.__dlpack__(max_version=(1, 0), **kwargs)
            except TypeError:
                capsule = obj.__dlpack__(**kwargs)
        ptr, dev_type, dev_id, shape, strides, (code, bits, lanes), _ro, keeper = \
            _ext._import_capsule(capsule)
        dt = from_dlpack_code(code, bits, lanes)
        shape = tuple(shape)
        byte_strides = None if strides is None else tuple(s * dt.itemsize for s in strides)
        return ptr, dev_type, dev_id, shape, byte_strides, dt, (keeper, obj)
    if hasattr(obj, "__cuda_array_interface__"):
        cai = obj.__cuda_array_interface__
        dt = check_dtype(np.dtype(cai["typestr"]))
        shape = tuple(cai["shape"])
        if cai.get("mask") is not None:
            raise ValueError("asarray: masked CAI arrays are not supported")
        ptr = cai["data"][0]
        ordinal = _ext._pointer_device(ptr)
        if ordinal < 0:
            ordinal = _ext._current_device()  # managed or unknown memory: the current device's
        stream = from_protocol_stream(cai.get("stream")) if cai.get("version", 0) >= 3 else 0
        if stream:
            with device_guard(ordinal):
                _ext._synchronize(stream)
        return ptr, kDLCUDA, ordinal, shape, cai.get("strides"), dt, obj
    raise TypeError(f"from_dlpack: {type(obj).__name__} has neither __dlpack__ nor "
                    "__cuda_array_interface__")
