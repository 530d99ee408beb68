"""Devices, with Numba's names: ``gpus``, ``select_device``, ``get_current_device``.

Each thread has a current device, as in CUDA (``cudaSetDevice``). Whatever names no device uses
it: a new array's first device copy, ``device_view()``, ``gpu()``, ``__cuda_array_interface__``
and ``__dlpack__`` without a stream. On the host backend the devices are the emulated ones
(``SMARTARRAY_HOST_DEVICES``). An ordinal out of range raises ValueError naming it and the
device count.
"""
import contextlib
import operator

from . import _ext


class Device:
    """One device. ``with device:`` makes it current for the block and restores the previous
    current device after it (Numba's ``with cuda.gpus[i]:``)."""

    __slots__ = ("id", "_previous")

    def __init__(self, ordinal):
        self.id = _ordinal(ordinal)
        self._previous = []

    @property
    def name(self):
        return _ext._device_properties(self.id)[0]

    @property
    def compute_capability(self):
        """(major, minor); (0, 0) for an emulated device."""
        return tuple(_ext._device_properties(self.id)[1:3])

    @property
    def total_memory(self):
        return _ext._device_properties(self.id)[3]

    def can_access_peer(self, owner):
        """True when this device reads `owner`'s memory directly (a peer copy, not through the
        host)."""
        return _ext._peer_access(self.id, _ordinal(owner))

    def __enter__(self):
        self._previous.append(_ext._current_device())
        _ext._set_current_device(self.id)
        return self

    def __exit__(self, *exc):
        _ext._set_current_device(self._previous.pop())
        return False

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(("smartarray.Device", self.id))

    def __repr__(self):
        return f"<smartarray.Device {self.id} '{self.name}'>"


class _Gpus:
    """``gpus[i]`` is device i; ``len(gpus)`` the device count; iterable."""

    def __len__(self):
        return _ext.device_count()

    def __getitem__(self, ordinal):
        return Device(ordinal)

    def __iter__(self):
        return (Device(i) for i in range(len(self)))

    @property
    def current(self):
        return get_current_device()

    def __repr__(self):
        return f"<smartarray.gpus: {len(self)} device(s)>"


gpus = _Gpus()


def get_current_device():
    """The calling thread's current device."""
    return Device(_ext._current_device())


def select_device(device):
    """Makes `device` (an ordinal or a Device) the calling thread's current device; returns it."""
    _ext._set_current_device(_ordinal(device))
    return get_current_device()


def device_count():
    """The number of devices (GPUs; emulated devices on the host backend)."""
    return _ext.device_count()


def device_name(device=None):
    """The name of `device` (default: the current one)."""
    return _ext._device_properties(current_or(device))[0]


def device_transfer_stats(device):
    """The copies into and out of one device's memory: an H2D on the device it goes to, a D2H on
    the one it comes from, a peer copy and a staged read on the device they go to."""
    return _ext._device_transfer_stats(_ordinal(device))


def _ordinal(device):
    """The checked ordinal of an int or a Device (anything with .id, as Numba's devices)."""
    if isinstance(device, bool):
        raise TypeError("device: expected an ordinal or a device, not a bool")
    try:
        ordinal = operator.index(getattr(device, "id", device))
    except TypeError:
        raise TypeError(f"device: expected an ordinal or a device, not {type(device).__name__}") \
            from None
    return _ext._check_device(ordinal)


def current_or(device):
    """The checked ordinal of `device`, or the current device's when None."""
    return _ext._current_device() if device is None else _ordinal(device)


@contextlib.contextmanager
def device_guard(ordinal):
    """Makes device `ordinal` current for the block (nothing to do when it already is)."""
    previous = _ext._current_device()
    if previous == ordinal:
        yield
        return
    _ext._set_current_device(ordinal)
    try:
        yield
    finally:
        _ext._set_current_device(previous)


def default_stream_of(ordinal):
    """The handle of device `ordinal`'s default stream: 0 (the current device's) when it is
    current, else the named default stream of that device."""
    return 0 if ordinal == _ext._current_device() else _ext._default_stream(ordinal)


def creation_stream(handle, device):
    """The stream on which a new array is first used: `handle` (0: the current device's default
    stream), or with `device` given, that device's default stream. ValueError when `handle`
    lives on another device than `device`."""
    if device is None:
        return handle
    ordinal = _ordinal(device)
    if handle == 0:
        return default_stream_of(ordinal)
    on = _ext._stream_device(handle)
    if on != ordinal:
        raise ValueError(f"stream {handle:#x} lives on device {on}, not on device={ordinal}")
    return handle
