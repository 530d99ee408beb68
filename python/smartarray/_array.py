"""SmartArray: Numba's SmartArray API over the C++ smartarray core.

Residency, transfers and streams are the C++ SmartArray's (a flat SmartArray<std::byte>); the
shape, dtype and order live here. The host side is exported through ``host()``, ``__array__`` and
the buffer protocol; the device side through ``gpu()``, ``__cuda_array_interface__`` (v3) and
``__dlpack__``.
"""
import math

import numpy as np

from . import _ext, _interop
from ._devices import creation_stream, current_or
from ._dtypes import buffer_format, check_dtype, dlpack_code
from ._layout import (check_index, contiguous_order, contiguous_strides, normalize_shape,
                      reshaped)
from ._numba import NumbaType, ensure_hooks
from ._slice import ArraySlice
from ._streams import stream_handle
from ._views import (DeviceArrayView, device_object, keeper, ndarray_at, numba_device_array,
                     numba_memory_view)

READ, READ_WRITE, DISCARD = 0, 1, 2


def backend():
    """'cuda' on a machine with a usable GPU, else 'host' (the emulated device);
    SMARTARRAY_BACKEND=host|cuda chooses."""
    return _ext.backend()


class SmartArray(_ext._Core):
    """Numba's ``SmartArray(obj=None, copy=True, shape=None, dtype=None, order=None, where='host')``.

    - ``obj``: an array-like (copied into the host copy), or a device producer
      (``__cuda_array_interface__`` or ``__dlpack__`` on a GPU), wrapped without a copy when
      ``copy=False``.
    - ``shape``/``dtype``/``order``: a new array when ``obj`` is None (zero-filled on the host, or
      device-only and uninitialized with ``where='gpu'``).
    - ``where``: 'host' (valid on the host) or 'gpu' (also uploaded: one H2D; with no obj,
      device-only). On the host backend 'gpu' means the emulated device.
    - ``mode`` (extension): 'explicit' (default), 'pageable', 'mapped' or 'managed'.
    - ``device`` (extension): the device that ``where='gpu'`` puts the data on (default: the
      current one, or the device of ``stream``). Later device accesses without a stream use the
      device current at that time.
    """

    def __init__(self, obj=None, copy=True, shape=None, dtype=None, order=None, where="host",
                 *, stream=0, mode="explicit", device=None):
        super().__init__()
        if where not in ("host", "gpu"):
            raise ValueError(f"SmartArray: where must be 'host' or 'gpu', not {where!r}")
        if order not in (None, "C", "F", "A", "K"):
            raise ValueError(f"SmartArray: order must be 'C' or 'F', not {order!r}")
        self._owner = None
        self.stream = stream_handle(stream)
        self._stream_object = stream  # keeps a stream object alive as long as the array uses it
        handle = creation_stream(self.stream, device)
        ensure_hooks()
        if obj is None:
            dt = check_dtype(np.float64 if dtype is None else dtype)
            shape = normalize_shape(shape, dt.itemsize)
            self._configure(shape, dt, "F" if order == "F" else "C")
            if where == "gpu":
                self._alloc_device(self.nbytes, handle, mode)
            else:
                self._alloc_host(0, self.nbytes, mode)
            return
        if isinstance(obj, SmartArray) or (not isinstance(obj, np.ndarray) and (
                hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__"))):
            if not copy:
                if shape is not None or dtype is not None:
                    raise ValueError("SmartArray(obj, copy=False): shape= and dtype= would need a "
                                     "copy; a zero-copy import keeps the producer's")
                _interop.adopt(self, obj, device)
                return
            obj = (obj.copy_to_host() if isinstance(obj, SmartArray)
                   else _interop.to_numpy(obj, SmartArray))
        if not copy:
            raise ValueError(
                "SmartArray(obj, copy=False): the C++ array owns its host copy, so host memory "
                "cannot be wrapped; copy=False is zero-copy only for device producers "
                "(__cuda_array_interface__ / __dlpack__ on a GPU). Use copy=True.")
        if dtype is not None:
            dtype = check_dtype(dtype)
        arr = np.asarray(obj, dtype=dtype)
        dt = check_dtype(arr.dtype)
        if arr.dtype != dt:
            arr = arr.astype(dt)
        want = order if order in ("C", "F") else ("F" if arr.flags.f_contiguous and not
                                                   arr.flags.c_contiguous else "C")
        arr = np.require(arr, requirements=[want])
        self._configure(arr.shape, dt, want)
        ptr = arr.__array_interface__["data"][0] if arr.size else 0
        self._alloc_host(ptr, self.nbytes, mode)
        if where == "gpu":
            self._device_ptr(READ, handle)

    # --- layout ---------------------------------------------------------------------------------

    def _configure(self, shape, dtype, order):
        self.__dict__.pop("_numba_type_", None)  # kept by NumbaType for the old layout
        self._shape = tuple(shape)
        self._dtype = dtype
        self._order = order
        self._strides = contiguous_strides(self._shape, dtype.itemsize, order)
        self._set_layout(list(self._shape), list(self._strides), buffer_format(dtype),
                         dtype.itemsize, dlpack_code(dtype))

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def strides(self):
        return self._strides

    @property
    def size(self):
        return math.prod(self._shape)

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def nbytes(self):
        return self.size * self._dtype.itemsize

    @property
    def itemsize(self):
        return self._dtype.itemsize

    def is_c_contiguous(self):
        return self._order == "C" or self.ndim <= 1 or self.size <= 1

    def is_f_contiguous(self):
        return self._order == "F" or self.ndim <= 1 or self.size <= 1

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d SmartArray")
        return self._shape[0]

    def _view(self, shape, order):
        out = SmartArray.__new__(SmartArray)
        _ext._Core.__init__(out)
        out._share(self)
        out._owner = self._owner
        out.stream = self.stream
        out._stream_object = self._stream_object
        out._configure(shape, self._dtype, order)
        return out

    def reshape(self, *newshape, order="C"):
        """A view with a new shape, sharing this array's data and residency (no copy). Only
        reshapes that keep the memory order are possible (as for Numba device arrays)."""
        return self._view(*reshaped(self._shape, self._order, newshape, order))

    def ravel(self, order="C"):
        """The array flattened, as a view (no copy) when the order matches the memory order."""
        if self.ndim > 1 and order != self._order and self.size > 1:
            raise NotImplementedError(f"ravel: order={order!r} on an {self._order}-ordered array "
                                      "would need a copy")
        return self._view((self.size,), "C")

    def slice(self, first, count):
        """The `count` elements from element `first` of the flattened array in memory order, as
        an ArraySlice (no copy), for smartarray.dist.send and recv."""
        return ArraySlice(self, first, count)

    # --- Numba's SmartArray protocol ---------------------------------------------------------------

    def host(self):
        """The host copy as a NumPy array (refreshed when stale: one D2H), not marked changed.
        After writing through it, call host_changed()."""
        ptr = self._host()
        return ndarray_at(ptr, self._shape, self._strides, self._dtype, False, keeper(self))

    def host_changed(self):
        """The host copy was modified: the device copy becomes stale."""
        self._host_changed()

    def gpu(self, stream=None, readonly=False):
        """The device copy (refreshed when stale: one H2D) as a device array that Numba kernels
        accept, not marked changed: after a kernel writes it, call gpu_changed(). With
        readonly=True it is a read acquire and exports readonly=True; the host stays valid.
        A DeviceArrayView (CAI v3), or Numba's own DeviceNDArray when Numba is imported and the
        stream is the default one (see _views.device_object). Without a stream: the array's
        stream, by default the current device's default stream, so the copy on the current
        device."""
        handle = self.stream if stream is None else stream_handle(stream)
        if readonly:
            ptr = self._device_ptr(READ, handle)
        else:
            ptr = self._device_unmarked(handle)
        return device_object(self, ptr, handle, readonly)

    def gpu_changed(self, stream=None):
        """The device copy was modified (on `stream`): the host copy becomes stale."""
        self._device_changed(self.stream if stream is None else stream_handle(stream))

    def device_view(self, access="read_write", stream=None):
        """The C++ acquire API: the device copy made valid for `access` ('read', 'read_write',
        'discard') on `stream` (default: the array's stream, by default the current device's), as
        a DeviceArrayView, or Numba's device array (see gpu()); the bookkeeping is done."""
        code = _access_code(access)
        handle = self.stream if stream is None else stream_handle(stream)
        return device_object(self, self._device_ptr(code, handle), handle, code == READ)

    def host_view(self, access="read_write"):
        """The C++ acquire API on the host: a NumPy view, made valid for `access`."""
        code = _access_code(access)
        ptr = self._host_ptr(code)
        return ndarray_at(ptr, self._shape, self._strides, self._dtype, code == READ,
                          keeper(self))

    def buffer(self, writable=False):
        """The host copy through the buffer protocol (``memoryview(a.buffer())``,
        ``np.asarray(a.buffer())``, Cython typed memoryviews). Each export is a host acquire: a
        read-only one a read acquire; a writable one (``writable=True``, or a consumer asking
        for PyBUF_WRITABLE) a read_write acquire, so the device copy becomes stale and writes
        through it need no host_changed(). SmartArray itself has no buffer protocol: Numba would
        type it as a host buffer instead of reading its __cuda_array_interface__."""
        buf = _ext._HostBuffer()
        buf._share(self)
        buf._set_layout(list(self._shape), list(self._strides), buffer_format(self._dtype),
                        self._dtype.itemsize, dlpack_code(self._dtype))
        buf._set_writable(bool(writable))
        return buf

    def is_valid(self, side, device=None):
        """True when `side` ('host', or 'device'/'gpu': the copy on `device`, by default the
        current one) holds every element."""
        if side not in ("host", "gpu", "device"):
            raise ValueError(f"is_valid: side must be 'host' or 'device', not {side!r}")
        if side == "host":
            if device is not None:
                raise ValueError("is_valid: device= names a device copy, not the host copy")
            return self._is_valid_on_host()
        return self._is_valid_on(current_or(device))

    def valid_devices(self):
        """The ordinals of the devices whose copy holds every element."""
        return [d for d in range(_ext.device_count()) if self._is_valid_on(d)]

    # --- Numba's DeviceNDArray names ---------------------------------------------------------------

    def copy_to_host(self, out=None, stream=0):
        """The elements in a NumPy array (or `out`), without changing the residency: one D2H when
        the host copy is stale, else a host copy."""
        handle = stream_handle(stream)
        if out is None:
            out = np.empty(self._shape, self._dtype, order=self._order)
        else:
            if not isinstance(out, np.ndarray):
                raise TypeError(f"copy_to_host: out must be a numpy.ndarray, not {type(out).__name__}")
            if out.shape != self._shape:
                raise ValueError(f"copy_to_host: out has shape {out.shape}, the array {self._shape}")
            if out.dtype != self._dtype:
                raise ValueError(f"copy_to_host: out has dtype {out.dtype}, the array {self._dtype}")
            if not out.flags.writeable:
                raise ValueError("copy_to_host: out is read-only")
            if contiguous_order(out.shape, out.strides, out.itemsize) != self._order and not (
                    out.flags.c_contiguous and self.is_c_contiguous()) and not (
                    out.flags.f_contiguous and self._order == "F"):
                raise ValueError(f"copy_to_host: out must be {self._order}-contiguous "
                                 f"(strides {out.strides}, expected {self._strides})")
        if self.nbytes:
            self._copy_to(out.__array_interface__["data"][0], self.nbytes, handle)
        return out

    def copy_to_device(self, ary, stream=0, device=None):
        """Numba's ``d.copy_to_device(ary)``: `ary`'s elements become this array's contents on the
        device (the current one, `stream`'s, or `device`). From another SmartArray (same shape,
        dtype and order): one device-to-device copy on `stream`, which leaves this array valid on
        that device only (a graph captures it). From host data: one H2D, through the host copy,
        which is left valid (refused inside ``capture``). A source that does not fit changes
        nothing."""
        if isinstance(ary, SmartArray):
            self._copy_device_to_device(ary, creation_stream(stream_handle(stream), device))
            return
        _ext._refuse_in_capture(
            f"{self._name()}: copy_to_device from host data ({type(ary).__name__})",
            "it writes the host copy now and uploads it, which a replay would not repeat; copy "
            "into the array before the capture, or from a SmartArray inside it")
        src = np.asarray(ary)
        if src.shape != self._shape:
            raise ValueError(f"copy_to_device: source shape {src.shape}, the array {self._shape}")
        try:
            values = src.astype(self._dtype, casting="same_kind", copy=False)
        except TypeError as e:
            raise TypeError(f"copy_to_device: cannot cast the source's {src.dtype} to the array's "
                            f"{self._dtype} (same_kind casting)") from e
        handle = creation_stream(stream_handle(stream), device)
        np.copyto(self.host_view("discard"), values)
        self._device_ptr(READ, handle)

    def _copy_device_to_device(self, src, handle):
        if src.shape != self._shape or src.dtype != self._dtype:
            raise ValueError(f"copy_to_device: the source SmartArray has shape {src.shape} and "
                             f"dtype {src.dtype}, the array {self._shape} and {self._dtype}")
        if src._order != self._order and not (self.is_c_contiguous() and src.is_c_contiguous()):
            raise ValueError(f"copy_to_device: the source SmartArray is {src._order}-ordered, the "
                             f"array {self._order}-ordered; a device copy keeps the byte order")
        self._copy_from(src, handle)

    # --- prefetch and discard -----------------------------------------------------------------

    def prefetch_to_host(self, stream=0):
        """Starts copying the elements that the host lacks to the host on `stream`, and returns
        at once with a Prefetch token (.wait(), .ready()). The copies are those a host read would
        make, counted alike; the first host access waits for exactly these copies and copies
        nothing more. An array that the host holds copies nothing, and its token is ready."""
        return self._prefetch_to_host(stream_handle(stream))

    def prefetch_to_device(self, stream=0):
        """Uploads the elements that `stream`'s device lacks now, on `stream`, as a device read
        would: a kernel on `stream` then copies nothing. The host does not wait."""
        self._prefetch_to_device(stream_handle(stream))

    def discard(self):
        """Gives up the elements' values: unspecified on every side, and never copied (not by a
        host or device read, not by eviction) until something writes them. Mapped and managed
        arrays have one buffer: nothing changes for them."""
        self._discard()

    # --- counters ------------------------------------------------------------------------------

    def transfer_stats(self):
        """This array's own transfer counters (a dict: h2d_count, h2d_bytes, d2h_count, ...)."""
        return self._transfer_stats()

    @property
    def id(self):
        return self._id

    @property
    def label(self):
        return self._label()

    @label.setter
    def label(self, value):
        self._set_label(str(value))

    @property
    def memory_mode(self):
        return self._memory_mode()

    def _name(self):
        label = self._label()
        return f"SmartArray #{self._id}" + (f' "{label}"' if label else "")

    # --- NumPy ---------------------------------------------------------------------------------

    def __array__(self, dtype=None, copy=None):
        """The host copy (a read acquire): a read-only view, or a copy with copy=True or a dtype
        conversion. To write: host() then host_changed(), host_view('read_write'), or
        np.asarray(a.buffer(writable=True))."""
        view = self.host_view("read")
        if dtype is not None and np.dtype(dtype) != self._dtype:
            if copy is False:
                raise ValueError("__array__: a dtype conversion needs a copy")
            return view.astype(dtype)
        if copy:
            return view.copy()
        return view

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)) or (isinstance(key, tuple) and all(
                isinstance(k, (int, np.integer)) for k in key)):
            check_index(key, self._shape)
        return self.host_view("read")[key]

    def __setitem__(self, key, value):
        if isinstance(key, (int, np.integer)) or (isinstance(key, tuple) and all(
                isinstance(k, (int, np.integer)) for k in key)):
            check_index(key, self._shape)
        # Validate, then act: NumPy first assigns into a stand-in of this shape and dtype whose
        # every element is one scalar (zero strides), so a bad key or value raises before the
        # read_write acquire makes the device copy stale.
        stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, self._dtype), self._shape,
                                                   (0,) * self.ndim)
        try:
            stand_in[key] = value
        except (ValueError, TypeError) as error:
            if repr(value) in str(error) or len(repr(value)) > 80:
                raise
            raise type(error)(f"cannot assign {value!r} to a {self._dtype} array: {error}") \
                from None
        self.host_view("read_write")[key] = value

    def __repr__(self):
        where = (["host"] if self._is_valid_on_host() else []) + [
            f"device {d}" for d in self.valid_devices()]
        return (f"<{self._name()} shape={self._shape} dtype={self._dtype} order={self._order} "
                f"valid={'+'.join(where) or 'nowhere'}>")

    # --- Numba kernels and ufuncs (_numba.py) -------------------------------------------------

    #: Numba's typing hook: the type of Numba's own device array of this layout.
    _numba_type_ = NumbaType()

    def _numba_array(self, access, stream):
        """The copy on `stream`'s device, acquired for `access` on `stream` (a kernel launch or a
        ufunc call), as Numba's device array."""
        handle = stream if stream.__class__ is int else stream_handle(stream)
        ptr = self._device_ptr(access, handle)
        dev = numba_device_array(self, ptr)
        return dev if dev is not None else DeviceArrayView(self, ptr, handle, access == READ)

    def _numba_view(self, access, stream):
        """The copy on `stream`'s device, acquired for `access` on `stream` (a numba-cuda kernel
        launch), as cuda.core's StridedMemoryView."""
        handle = stream if stream.__class__ is int else stream_handle(stream)
        return numba_memory_view(self, self._device_ptr(access, handle))

    # --- __cuda_array_interface__ and DLPack (_interop.py) --------------------------------------

    @property
    def __cuda_array_interface__(self):
        """CAI v3 over the copy on the current device (or the array's stream's device): a
        read_write device acquire on that stream (the host copy becomes stale), whose stream the
        dict names. Raises AttributeError on the host backend (no GPU): hasattr() is then False
        and consumers treat the array as host data."""
        ensure_hooks()
        return _interop.cuda_array_interface(self)

    def __dlpack_device__(self):
        """(kDLCUDA, the device of an export without dl_device) on the cuda backend, (kDLCPU, 0)
        on the host backend."""
        return _interop.dlpack_device(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=_interop.UNNAMED,
                   copy=None):
        """A DLPack capsule; see _interop.dlpack for which copy and which stream."""
        return _interop.dlpack(self, stream, max_version, dl_device, copy)


def _access_code(access):
    codes = {"read": READ, "read_write": READ_WRITE, "discard": DISCARD}
    if access not in codes:
        raise ValueError(f"access must be 'read', 'read_write' or 'discard', not {access!r}")
    return codes[access]
