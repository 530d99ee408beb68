"""SmartArray: Numba's SmartArray API over the C++ smartarray core.

Residency, transfers and streams are the C++ SmartArray's (a flat SmartArray<std::byte>); the
shape, dtype and order live here. The host side is exported through ``host()``, ``__array__`` and
the buffer protocol; the device side through ``gpu()``, ``__cuda_array_interface__`` (v3) and
``__dlpack__``.
"""
import math
import operator
import os
import sys

import numpy as np

from . import _ext
from ._dtypes import buffer_format, check_dtype, dlpack_code, from_dlpack_code
from ._streams import cai_stream, from_protocol_stream, stream_handle

READ, READ_WRITE, DISCARD = 0, 1, 2
_kDLCPU, _kDLCUDA, _kDLCUDAHost, _kDLCUDAManaged = 1, 2, 3, 13


def backend():
    """'cuda' on a machine with a usable GPU, else 'host' (the emulated device);
    SMARTARRAY_BACKEND=host|cuda chooses."""
    return _ext.backend()


def _no_gpu_error(what):
    return AttributeError(
        f"{what}: the smartarray host backend has no GPU (its 'device' copy is a separate host "
        "allocation), so there is no CUDA device pointer to export; run on a machine with a GPU, "
        "or use host(), np.asarray() or __dlpack__ for the data")


def _layout(shape, itemsize, order):
    """Byte strides of a contiguous array in C or F order."""
    strides = [0] * len(shape)
    step = itemsize
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for i in dims:
        strides[i] = step
        step *= max(shape[i], 1)
    return tuple(strides)


def _normalize_shape(shape):
    if shape is None:
        raise TypeError("SmartArray: give obj or shape")
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"SmartArray: negative dimension in shape {shape}")
    return shape


def _contiguous_order(shape, strides, itemsize):
    """'C' or 'F' when (shape, byte strides) is contiguous in that order, else None."""
    if strides is None or math.prod(shape) <= 1:
        return "C"
    if tuple(strides) == _layout(shape, itemsize, "C"):
        return "C"
    if tuple(strides) == _layout(shape, itemsize, "F"):
        return "F"
    # Dimensions of extent 1 may carry any stride.
    c = all(s == e or n == 1 for s, e, n in zip(strides, _layout(shape, itemsize, "C"), shape))
    if c:
        return "C"
    f = all(s == e or n == 1 for s, e, n in zip(strides, _layout(shape, itemsize, "F"), shape))
    return "F" if f else None


class _Raw:
    """An object with ``__array_interface__`` over raw host memory, keeping `owner` alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, ptr, shape, strides, dtype, readonly, owner):
        self.__array_interface__ = {
            "version": 3, "shape": shape, "typestr": dtype.str, "descr": dtype.descr,
            "data": (ptr, readonly), "strides": strides,
        }
        self.owner = owner


def _ndarray_at(ptr, shape, strides, dtype, readonly, owner):
    if math.prod(shape) == 0:
        return np.empty(shape, dtype)
    return np.asarray(_Raw(ptr, shape, strides, dtype, readonly, owner))


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
            raise _no_gpu_error("DeviceArrayView.__cuda_array_interface__")
        o = self._owner
        return {
            "shape": o.shape, "typestr": o.dtype.str, "descr": o.dtype.descr,
            "data": (self._ptr, self.readonly), "version": 3,
            "strides": None if o._order == "C" else o.strides,
            "stream": cai_stream(self._stream),
        }

    def copy_to_host(self, out=None, stream=0):
        return self._owner.copy_to_host(out, stream)

    def emulated_ndarray(self):
        """Host backend only: the emulated device copy as a NumPy array (after waiting for the
        emulated device), so that tests can play a kernel that writes the device copy."""
        if _ext.backend() != "host":
            raise RuntimeError("emulated_ndarray(): only on the host backend (this is a real GPU)")
        _ext.synchronize_device()
        o = self._owner
        return _ndarray_at(self._ptr, o.shape, o.strides, o.dtype, self.readonly, self)

    def __repr__(self):
        return (f"<smartarray.DeviceArrayView shape={self.shape} dtype={self.dtype} "
                f"readonly={self.readonly} of {self._owner._name()}>")


def _numba_fast_path():
    """numba.cuda when gpu() should hand Numba its own DeviceNDArray (already imported, cuda
    backend, not disabled with SMARTARRAY_NUMBA_DEVICE_ARRAY=0), else None."""
    cuda = sys.modules.get("numba.cuda")
    if cuda is None or _ext.backend() != "cuda":
        return None
    if os.environ.get("SMARTARRAY_NUMBA_DEVICE_ARRAY", "1") == "0":
        return None
    return cuda


def _device_object(owner, ptr, handle, readonly):
    """The object that gpu() and device_view() return.

    When Numba is imported and the acquire ran on the default stream, a Numba DeviceNDArray over
    the device copy: Numba types its own arrays at once at kernel launch, while every foreign CAI
    object costs it a DeviceNDArray built from the dict on each launch (about 0.1 ms an argument).
    It is made once per device pointer and cached on the array (for read and write acquires alike:
    Numba's device arrays carry no read-only flag), so a resident array costs one dict lookup per
    call. The default stream orders Numba's default-stream launches after the acquire. Otherwise a
    DeviceArrayView (CAI v3 with the acquire's stream, which consumers wait for)."""
    if handle == 0:
        cache = owner.__dict__.get("_numba_cache")
        if cache is not None and cache[0] == ptr:
            return cache[1]
        cuda = _numba_fast_path()
        if cuda is not None:
            dev = cuda.as_cuda_array(_CaiCarrier(owner, ptr), sync=False)
            owner._numba_cache = (ptr, dev)
            return dev
    return DeviceArrayView(owner, ptr, handle, readonly)


class _CaiCarrier:
    """The CAI of a device copy for Numba's as_cuda_array. It keeps the C++ array alive but not
    the Python SmartArray, which caches the Numba array made from it: no reference cycle, so the
    device memory goes back to the pool as soon as the last reference goes, not at a GC pass."""

    __slots__ = ("__cuda_array_interface__", "_core")

    def __init__(self, owner, ptr):
        self._core = _ext._Core()
        self._core._share(owner)
        self.__cuda_array_interface__ = {
            "shape": owner.shape, "typestr": owner.dtype.str, "descr": owner.dtype.descr,
            "data": (ptr, False), "version": 3,
            "strides": None if owner._order == "C" else owner.strides, "stream": None,
        }


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
    """

    def __init__(self, obj=None, copy=True, shape=None, dtype=None, order=None, where="host",
                 *, stream=0, mode="explicit"):
        super().__init__()
        if where not in ("host", "gpu"):
            raise ValueError(f"SmartArray: where must be 'host' or 'gpu', not {where!r}")
        if order not in (None, "C", "F", "A", "K"):
            raise ValueError(f"SmartArray: order must be 'C' or 'F', not {order!r}")
        self._owner = None
        self.stream = stream_handle(stream)
        self._stream_object = stream  # keeps a stream object alive as long as the array uses it
        handle = self.stream
        if obj is None:
            shape = _normalize_shape(shape)
            dt = check_dtype(np.float64 if dtype is None else dtype)
            self._configure(shape, dt, "F" if order == "F" else "C")
            if where == "gpu":
                self._alloc_device(self.nbytes, handle, mode)
            else:
                self._alloc_host(0, self.nbytes, mode)
            return
        if isinstance(obj, SmartArray) or (not isinstance(obj, np.ndarray) and (
                hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__"))):
            if not copy:
                _adopt(self, obj)
                return
            obj = obj.copy_to_host() if isinstance(obj, SmartArray) else _to_numpy(obj)
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
        self._shape = tuple(shape)
        self._dtype = dtype
        self._order = order
        self._strides = _layout(self._shape, dtype.itemsize, order)
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
        if len(newshape) == 1 and not isinstance(newshape[0], (int, np.integer)):
            newshape = tuple(newshape[0])
        newshape = list(newshape)
        if newshape.count(-1) > 1:
            raise ValueError("reshape: only one dimension can be -1")
        if -1 in newshape:
            known = math.prod(s for s in newshape if s != -1)
            if known == 0 or self.size % known:
                raise ValueError(f"reshape: cannot reshape size {self.size} into {tuple(newshape)}")
            newshape[newshape.index(-1)] = self.size // known
        newshape = _normalize_shape(newshape)
        if math.prod(newshape) != self.size:
            raise ValueError(f"reshape: cannot reshape size {self.size} into {newshape}")
        if order not in ("C", "F"):
            raise ValueError(f"reshape: order must be 'C' or 'F', not {order!r}")
        if order != self._order and self.ndim > 1 and len(newshape) > 1 and self.size > 1:
            raise NotImplementedError(
                f"reshape: order={order!r} on an {self._order}-ordered array would need a copy")
        if order != self._order and self.ndim > 1 and self.size > 1 and len(newshape) <= 1:
            raise NotImplementedError("reshape: flattening in the other order would need a copy")
        mem_order = self._order if len(newshape) > 1 else order
        if self.ndim <= 1:
            mem_order = order
        return self._view(newshape, mem_order)

    def ravel(self, order="C"):
        """The array flattened, as a view (no copy) when the order matches the memory order."""
        if self.ndim > 1 and order != self._order and self.size > 1:
            raise NotImplementedError(f"ravel: order={order!r} on an {self._order}-ordered array "
                                      "would need a copy")
        return self._view((self.size,), "C")

    # --- Numba's SmartArray protocol ---------------------------------------------------------------

    def host(self):
        """The host copy as a NumPy array (refreshed when stale: one D2H), not marked changed.
        After writing through it, call host_changed()."""
        ptr = self._host()
        return _ndarray_at(ptr, self._shape, self._strides, self._dtype, False, self)

    def host_changed(self):
        """The host copy was modified: the device copy becomes stale."""
        self._host_changed()

    def gpu(self, stream=None, readonly=False):
        """The device copy (refreshed when stale: one H2D) as a device array that Numba kernels
        accept, not marked changed: after a kernel writes it, call gpu_changed(). With
        readonly=True it is a read acquire and exports readonly=True; the host stays valid.
        A DeviceArrayView (CAI v3), or Numba's own DeviceNDArray when Numba is imported and the
        stream is the default one (see _device_object)."""
        handle = self.stream if stream is None else stream_handle(stream)
        if readonly:
            ptr = self._device_ptr(READ, handle)
        else:
            ptr = self._gpu(handle)
        return _device_object(self, ptr, handle, readonly)

    def gpu_changed(self, stream=None):
        """The device copy was modified (on `stream`): the host copy becomes stale."""
        self._gpu_changed(self.stream if stream is None else stream_handle(stream))

    def device_view(self, access="read_write", stream=None):
        """The C++ acquire API: the device copy made valid for `access` ('read', 'read_write',
        'discard') on `stream`, as a DeviceArrayView (the bookkeeping is done)."""
        code = {"read": READ, "read_write": READ_WRITE, "discard": DISCARD}[access]
        handle = self.stream if stream is None else stream_handle(stream)
        return _device_object(self, self._device_ptr(code, handle), handle, code == READ)

    def host_view(self, access="read_write"):
        """The C++ acquire API on the host: a NumPy view, made valid for `access`."""
        code = {"read": READ, "read_write": READ_WRITE, "discard": DISCARD}[access]
        ptr = self._host_ptr(code)
        return _ndarray_at(ptr, self._shape, self._strides, self._dtype, code == READ, self)

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
        buf.owner = self
        return buf

    def is_valid(self, side):
        """True when `side` ('host' or 'gpu'/'device') holds every element."""
        if side not in ("host", "gpu", "device"):
            raise ValueError(f"is_valid: side must be 'host' or 'gpu', not {side!r}")
        return self._is_valid(side != "host")

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
            if _contiguous_order(out.shape, out.strides, out.itemsize) != self._order and not (
                    out.flags.c_contiguous and self.is_c_contiguous()) and not (
                    out.flags.f_contiguous and self._order == "F"):
                raise ValueError(f"copy_to_host: out must be {self._order}-contiguous "
                                 f"(strides {out.strides}, expected {self._strides})")
        if self.nbytes:
            self._copy_to(out.__array_interface__["data"][0], self.nbytes, handle)
        return out

    def copy_to_device(self, ary, stream=0):
        """Numba's ``d.copy_to_device(ary)``: `ary`'s elements become this array's contents on the
        device (one H2D, through the host copy, which is left valid)."""
        src = np.asarray(ary)
        if src.shape != self._shape:
            raise ValueError(f"copy_to_device: source shape {src.shape}, the array {self._shape}")
        view = self.host_view("discard")
        np.copyto(view, src, casting="same_kind")
        self._device_ptr(READ, stream_handle(stream))

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
            _check_index(key, self._shape)
        return self.host_view("read")[key]

    def __setitem__(self, key, value):
        if isinstance(key, (int, np.integer)) or (isinstance(key, tuple) and all(
                isinstance(k, (int, np.integer)) for k in key)):
            _check_index(key, self._shape)
        self.host_view("read_write")[key] = value

    def __repr__(self):
        where = [s for s, ok in (("host", self._is_valid(False)), ("gpu", self._is_valid(True))) if ok]
        return (f"<{self._name()} shape={self._shape} dtype={self._dtype} order={self._order} "
                f"valid={'+'.join(where) or 'nowhere'}>")

    # --- __cuda_array_interface__ --------------------------------------------------------------

    @property
    def __cuda_array_interface__(self):
        """CAI v3 over the device copy: a read_write device acquire on this array's stream (the
        host copy becomes stale), whose stream the dict names. Raises AttributeError on the host
        backend (no GPU): hasattr() is then False and consumers treat the array as host data."""
        if _ext.backend() != "cuda":
            raise _no_gpu_error("SmartArray.__cuda_array_interface__")
        ptr = self._device_ptr(READ_WRITE, self.stream)
        return {
            "shape": self._shape, "typestr": self._dtype.str, "descr": self._dtype.descr,
            "data": (ptr, False), "version": 3,
            "strides": None if self._order == "C" else self._strides,
            "stream": cai_stream(self.stream),
        }

    # --- DLPack --------------------------------------------------------------------------------

    def __dlpack_device__(self):
        """(kDLCUDA, ordinal) on the cuda backend, (kDLCPU, 0) on the host backend."""
        if _ext.backend() == "cuda":
            return (_kDLCUDA, _ext.device_ordinal())
        return (_kDLCPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule: versioned ("dltensor_versioned", 1.0) when max_version >= (1, 0),
        else legacy ("dltensor").

        Which copy: dl_device=(1, 0) the host copy, (2, n) the device copy (cuda backend only);
        without dl_device, the host copy when stream is None (NumPy and every CPU consumer), else
        the device copy, acquired read_write on this array's stream; the consumer's stream (1 or
        None: the legacy default stream, 2: per-thread, -1: no synchronization asked) then waits
        for that work through an event, which is the stream handoff of the protocol. The array
        never names the consumer's stream, which the consumer may destroy.
        A host export is made valid (one D2H when stale): a read acquire flagged READ_ONLY in a
        versioned capsule; a read_write acquire (device becomes stale) in a legacy one.
        copy=True: a host copy (NumPy's); copy=True on the device raises BufferError.
        """
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        if dl_device is not None:
            dev_type, dev_id = int(dl_device[0]), int(dl_device[1])
            if dev_type == _kDLCPU:
                on_host = True
            elif dev_type == _kDLCUDA:
                if _ext.backend() != "cuda":
                    raise BufferError("__dlpack__: dl_device=kDLCUDA but the host backend has no GPU")
                if dev_id != _ext.device_ordinal():
                    raise BufferError(f"__dlpack__: the array is on device {_ext.device_ordinal()}, "
                                      f"not {dev_id}")
                on_host = False
            else:
                raise BufferError(f"__dlpack__: unsupported dl_device {tuple(dl_device)}")
        else:
            on_host = stream is None or _ext.backend() != "cuda"
        if on_host:
            if stream is not None and stream != -1 and _ext.backend() == "cuda" and dl_device is None:
                raise BufferError("__dlpack__: a stream with a host export")
            if copy:
                host = np.array(self.host_view("read"), copy=True)
                kw = {"max_version": max_version} if max_version is not None else {}
                return host.__dlpack__(**kw)
            return self._dlpack(versioned, True, READ if versioned else READ_WRITE, 0, 0)
        if copy:
            raise BufferError("__dlpack__: copy=True on the device is not supported")
        # The acquire runs on the array's stream; the consumer's stream waits for it (an event),
        # so the array never names a stream that the consumer may destroy.
        return self._dlpack(versioned, False, READ_WRITE, self.stream, _ext.device_ordinal(),
                            from_protocol_stream(stream))


def _check_index(key, shape):
    key = key if isinstance(key, tuple) else (key,)
    if len(key) > len(shape):
        raise IndexError(f"too many indices: {len(key)} for an array of {len(shape)} dimensions")
    for axis, (k, n) in enumerate(zip(key, shape)):
        if not -n <= k < n:
            raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")


def _to_numpy(obj):
    """A host copy of a device producer (for SmartArray(obj, copy=True))."""
    tmp = from_dlpack(obj)
    return tmp.copy_to_host()


def _adopt(self, obj):
    """Makes `self` a zero-copy wrapper of a producer's memory (from_dlpack / asarray)."""
    if isinstance(obj, SmartArray):
        self._share(obj)
        self._owner = obj._owner
        self._configure(obj.shape, obj.dtype, obj._order)
        return
    ptr, dev_type, shape, strides, dt, keep, stream = _import(obj)
    order = _contiguous_order(shape, strides, dt.itemsize)
    if order is None:
        raise ValueError(f"from_dlpack: the producer's array is not contiguous (shape {shape}, "
                         f"byte strides {strides})")
    nbytes = math.prod(shape) * dt.itemsize
    device_memory = dev_type in (_kDLCUDA, _kDLCUDAHost, _kDLCUDAManaged)
    if device_memory and _ext.backend() != "cuda":
        raise ValueError("from_dlpack: CUDA memory, but smartarray runs on the host backend")
    self._configure(shape, dt, order)
    if device_memory:
        if stream:
            _ext._synchronize(stream)
        self._wrap_device(ptr if nbytes else 0, nbytes)
        self._owner = keep
    else:
        # CPU memory cannot be the device copy (on the host backend the emulated device accepts
        # only its own allocations): one host copy, host-valid.
        self._alloc_host(ptr if nbytes else 0, nbytes, "explicit")


def _import(obj):
    """(pointer, device type, shape, byte strides, dtype, keep-alive, stream to wait for)."""
    if hasattr(obj, "__dlpack__"):
        dev = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (_kDLCPU, 0)
        kwargs = {}
        if dev[0] == _kDLCUDA:
            kwargs["stream"] = 1  # the consumer: the legacy default stream
        try:
            capsule = obj.__dlpack__(max_version=(1, 0), **kwargs)
        except TypeError:
            capsule = obj.__dlpack__(**kwargs)
        ptr, dev_type, _dev_id, shape, strides, (code, bits, lanes), _ro, keeper = \
            _ext._import_capsule(capsule)
        dt = from_dlpack_code(code, bits, lanes)
        shape = tuple(shape)
        byte_strides = None if strides is None else tuple(s * dt.itemsize for s in strides)
        return ptr, dev_type, shape, byte_strides, dt, (keeper, obj), 0
    if hasattr(obj, "__cuda_array_interface__"):
        cai = obj.__cuda_array_interface__
        dt = check_dtype(np.dtype(cai["typestr"]))
        shape = tuple(cai["shape"])
        strides = cai.get("strides")
        if cai.get("mask") is not None:
            raise ValueError("asarray: masked CAI arrays are not supported")
        stream = from_protocol_stream(cai.get("stream")) if cai.get("version", 0) >= 3 else 0
        return cai["data"][0], _kDLCUDA, shape, strides, dt, obj, stream
    raise TypeError(f"from_dlpack: {type(obj).__name__} has neither __dlpack__ nor "
                    "__cuda_array_interface__")


def from_dlpack(x):
    """Imports a DLPack (or CAI) producer of CUDA memory without a copy, as a device-valid
    SmartArray that does not own its memory. A CPU producer (NumPy) is copied into a host-valid
    array instead: CPU memory cannot serve as the device copy."""
    out = SmartArray.__new__(SmartArray)
    _ext._Core.__init__(out)
    out.stream = 0
    out._stream_object = None
    out._owner = None
    _adopt(out, x)
    return out


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
