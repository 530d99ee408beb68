"""Stream handles from Numba, CuPy and PyTorch streams, the __cuda_stream__ protocol, or ints.

The C++ arrays and pools remember the streams they were used on, so a stream must be forgotten
(``smartarray.forget_stream``) before it is destroyed. Stream objects are therefore kept alive
here from their first use; once nothing else refers to one, it is forgotten and let go (checked
whenever a new stream object comes in, and by ``forget_unused_streams()``). An int handle is the
caller's to forget before destroying its stream.
"""
import sys

from . import _ext

# handle -> the stream object that owns it, kept alive while arrays and pools may name it.
_kept = {}


def _keep(handle, stream):
    if handle == 0:
        return
    if handle in _kept:
        # The same live stream (PyTorch makes a new wrapper object for each current_stream()).
        _kept[handle] = stream
        return
    forget_unused_streams()
    _kept[handle] = stream


def forget_unused_streams():
    """Forgets, and lets go of, every kept stream object that nothing else refers to."""
    for handle in list(_kept):
        if sys.getrefcount(_kept[handle]) <= 2:  # the dict's reference and the argument's
            _ext.forget_stream(handle)
            del _kept[handle]


def forget_stream(stream):
    """Makes smartarray forget `stream` before it is destroyed: waits for its work; the pools and
    arrays stop naming it. Needed only for int handles of streams you destroy yourself."""
    handle = stream_handle(stream)
    _kept.pop(handle, None)
    _ext.forget_stream(handle)


def stream_handle(stream):
    """The cudaStream_t of `stream` as an int (0: the default stream).

    Accepts None or 0 (the default stream), an int handle, a Numba stream (``.handle``), a CuPy
    stream (``.ptr``), a PyTorch stream (``.cuda_stream``), or any object with ``__cuda_stream__``.
    """
    if stream is None:
        return 0
    if isinstance(stream, bool):
        raise TypeError("stream: expected a stream or an int handle, not a bool")
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(f"stream: a handle cannot be negative ({stream})")
        return stream
    handle = _object_handle(stream)
    _keep(handle, stream)
    return handle


def _object_handle(stream):
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        value = proto() if callable(proto) else proto
        return int(value[1])
    for attr in ("cuda_stream", "ptr"):  # PyTorch, CuPy
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    handle = getattr(stream, "handle", None)  # Numba: a ctypes c_void_p
    if handle is not None:
        value = getattr(handle, "value", handle)
        return int(value or 0)
    raise TypeError(f"stream: cannot get a CUDA stream handle from {type(stream).__name__}")


def cai_stream(handle):
    """The CAI v3 / DLPack stream number of a handle: 1 is the legacy default stream."""
    return 1 if handle == 0 else handle


def from_protocol_stream(value):
    """A CAI / DLPack stream number to a handle: None, 1 and -1 are the legacy default stream
    (-1: no synchronization asked), 2 the per-thread default stream."""
    if value is None or value in (1, -1):
        return 0
    if value == 0:
        raise ValueError("stream 0 is ambiguous in the CAI and DLPack protocols: use 1 or 2")
    return int(value)
