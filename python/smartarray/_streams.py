"""Stream handles from Numba, CuPy and PyTorch streams, the __cuda_stream__ protocol, or ints.

The C++ arrays and pools remember the streams they were used on, so a stream must be forgotten
(``smartarray.forget_stream``) before it is destroyed. Stream objects are therefore kept alive
here from their first use; once nothing else refers to one, it is forgotten and let go (checked
whenever a new stream object comes in, and by ``forget_unused_streams()``). An int handle is the
caller's to forget before destroying its stream.
"""
import sys

from . import _ext
from ._devices import current_or

# handle -> the stream object that owns it, kept alive while arrays and pools may name it.
_kept = {}
# id(stream object) -> its handle, for the objects in _kept (a kernel launch names its stream for
# every argument).
_handles = {}


class Stream(_ext._Stream):
    """A stream of smartarray's own (C++ ``sa::Stream``) on `device` (default: the current one),
    at `priority`: 'normal' (the device's least, that of every other stream) or 'high' (its
    greatest; on the host backend kept and reported, but nothing is scheduled by it).

    Accepted wherever the package takes a stream, and by other libraries through
    ``__cuda_stream__``. Destroying it waits for its work and makes the arrays and pools forget
    it, so it is never kept alive by smartarray the way foreign stream objects are: an array made
    with ``stream=`` it, or a graph captured on it, refers to it."""

    def __init__(self, device=None, priority="normal"):
        if not isinstance(priority, str) or priority not in ("normal", "high"):
            raise ValueError(f"Stream: priority must be 'normal' or 'high', not {priority!r}")
        super().__init__(current_or(device), priority == "high")

    @property
    def device(self):
        """The ordinal of the device the stream lives on."""
        return self._device

    @property
    def priority(self):
        """'normal' or 'high', as the backend reports it."""
        return self._priority

    def __cuda_stream__(self):
        return (0, self.handle)

    def __repr__(self):
        return (f"<smartarray.Stream {self.handle:#x} device={self._device} "
                f"priority={self._priority!r}>")


def _keep(handle, stream):
    if handle == 0:
        return
    if handle in _kept:
        # The same live stream in a new wrapper (PyTorch makes one for each current_stream()).
        _handles.pop(id(_kept[handle]), None)
    else:
        forget_unused_streams()
    _kept[handle] = stream
    _handles[id(stream)] = handle


def forget_unused_streams():
    """Forgets, and lets go of, every kept stream object that nothing else refers to."""
    for handle in list(_kept):
        if sys.getrefcount(_kept[handle]) <= 2:  # the dict's reference and the argument's
            _ext.forget_stream(handle)
            _handles.pop(id(_kept.pop(handle)), None)


def forget_stream(stream):
    """Makes smartarray forget `stream` before it is destroyed: waits for its work; the pools and
    arrays stop naming it. Needed only for int handles of streams you destroy yourself."""
    handle = stream_handle(stream)
    _handles.pop(id(_kept.pop(handle, None)), None)
    _ext.forget_stream(handle)


def stream_handle(stream):
    """The cudaStream_t of `stream` as an int (0: the default stream).

    Accepts None or 0 (the default stream), an int handle, a ``smartarray.Stream``, a Numba
    stream (``.handle``), a CuPy stream (``.ptr``), a PyTorch stream (``.cuda_stream``), or any
    object with ``__cuda_stream__``.
    """
    if stream is None:
        return 0
    if isinstance(stream, bool):
        raise TypeError("stream: expected a stream or an int handle, not a bool")
    if isinstance(stream, int):
        return _checked(stream)
    if isinstance(stream, Stream):  # forgets itself when destroyed: nothing to keep
        return stream.handle
    handle = _handles.get(id(stream))
    if handle is not None and _kept.get(handle) is stream:  # a kept stream: no attribute lookups
        return handle
    handle = _checked(_object_handle(stream))  # a bad stream object is never kept
    _keep(handle, stream)
    return handle


def _checked(handle):
    """`handle`, once it is a pointer-sized value and, on the host backend, a live stream: a bad
    handle raises ValueError naming it before anything uses it. On the cuda backend a foreign
    cudaStream_t cannot be checked without undefined behaviour, so it is trusted."""
    if not 0 <= handle < 1 << 64:
        raise ValueError(f"stream: {handle} is not a stream handle (0 to 2**64 - 1)")
    if handle:
        _ext._check_stream(handle)
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
    raise TypeError(f"stream {stream!r}: cannot get a CUDA stream handle from a "
                    f"{type(stream).__name__}")


def is_default_stream(handle):
    """True for 0 (the current device's default stream) and for a device's named default
    stream (``default_stream(d)`` in C++: a small number that no allocator returns)."""
    return handle == 0 or _ext._default_stream_base <= handle < _ext._default_stream_end


def cai_stream(handle):
    """The CAI v3 / DLPack stream number of a handle: 1 is the legacy default stream (of the
    device of the data)."""
    return 1 if is_default_stream(handle) else handle


def from_protocol_stream(value):
    """A CAI / DLPack stream number to a handle: None, 1 and -1 are the legacy default stream
    (-1: no synchronization asked), 2 the per-thread default stream. 0, which the protocols leave
    undefined, is taken as CUDA takes it: the legacy default stream (numba-cuda passes it for
    Numba's default stream)."""
    if value is None or value in (0, 1, -1):
        return 0
    return int(value)


def synchronize(stream=0):
    """Waits for the work queued on `stream` (any stream kind, or an int handle)."""
    _ext._synchronize(stream_handle(stream))
