"""Devices, with Numba's names: ``gpus``, ``select_device``, ``get_current_device``.

Each thread has a current device, as in CUDA (``cudaSetDevice``). Whatever names no device uses
it: a new array's first device copy, ``device_view()``, ``gpu()``, ``__cuda_array_interface__``
and ``__dlpack__`` without a stream. On the host backend the devices are the emulated ones
(``SMARTARRAY_HOST_DEVICES``). Every ordinal a caller passes goes through ``ordinal_of()``: one out
of range raises ValueError naming it and the device count, one that is no integer TypeError.
"""
import contextlib
import operator
import threading

import numpy as np

from . import _ext


class Device:
    """One device. ``with device:`` makes it current for the block and restores the previous
    current device after it (Numba's ``with cuda.gpus[i]:``). One Device object may be entered
    by several threads at once: each thread gets its own previous device back."""

    __slots__ = ("id", "_entered")

    def __init__(self, ordinal):
        self.id = ordinal_of(ordinal)
        self._entered = threading.local()  # .previous: this thread's stack of previous devices

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
        return _ext._peer_access(self.id, ordinal_of(owner))

    def _previous(self):
        """The calling thread's stack of the devices current when it entered this object."""
        stack = getattr(self._entered, "previous", None)
        if stack is None:
            stack = self._entered.previous = []
        return stack

    def __enter__(self):
        previous = self._previous()
        previous.append(_ext._current_device())
        try:
            _ext._set_current_device(self.id)
        except BaseException:
            previous.pop()
            raise
        return self

    def __exit__(self, *exc):
        _ext._set_current_device(self._previous().pop())
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
    _ext._set_current_device(ordinal_of(device))
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
    return _ext._device_transfer_stats(ordinal_of(device))


def ordinal_of(device):
    """The checked ordinal of an int, a NumPy integer or a Device (anything with .id, as Numba's
    devices): TypeError naming `device` when it is no integer (a bool neither), ValueError naming
    it and the device count when no device has it. Checked here, before any C++ call takes it as
    a C int, so that 2**31 or -2**63 is out of range like 5, not a mismatched argument."""
    value = getattr(device, "id", device)
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"device: expected an ordinal (an int) or a Device, not the bool "
                        f"{device!r}")
    try:
        ordinal = operator.index(value)
    except TypeError:
        raise TypeError(f"device: expected an ordinal (an int) or a Device, not {device!r} "
                        f"({type(device).__name__})") from None
    count = _ext.device_count()
    if not 0 <= ordinal < count:  # in the words of the extension's own check (device_of)
        ordinals = "ordinal 0" if count == 1 else f"ordinals 0 to {count - 1}"
        raise ValueError(f"device ordinal {ordinal} is out of range: the {_ext.backend()} "
                         f"backend has {count} device{'s' if count != 1 else ''} ({ordinals})")
    return ordinal


def current_or(device):
    """The checked ordinal of `device`, or the current device's when None."""
    return _ext._current_device() if device is None else ordinal_of(device)


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
    ordinal = ordinal_of(device)
    if handle == 0:
        return default_stream_of(ordinal)
    on = _ext._stream_device(handle)
    if on != ordinal:
        raise ValueError(f"stream {handle:#x} lives on device {on}, not on device={ordinal}")
    return handle
