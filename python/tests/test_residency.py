"""host()/host_changed()/gpu()/gpu_changed() with exact transfer counts. The device side is the
host backend's emulated device: DeviceArrayView.emulated_ndarray() plays the kernels."""
import ctypes

import numpy as np
import pytest

import smartarray as sa
from conftest import ALL_DTYPES, host_only, random_array

NONE = {"h2d_count": 0, "d2h_count": 0, "d2d_count": 0}


def one(kind):
    d = dict(NONE)
    d[kind] = 1
    return d


@host_only
@pytest.mark.parametrize("dtype", [np.float32, np.complex128, np.int8, np.float16, np.bool_])
def test_numba_protocol_round_trip(dtype, counts):
    src = random_array((4, 3), dtype)
    a = sa.SmartArray(src)
    g = a.gpu()  # one H2D
    assert counts() == one("h2d_count")
    assert a.is_valid("host") and a.is_valid("gpu")
    a.gpu()  # valid: nothing
    assert counts() == one("h2d_count")
    dev = g.emulated_ndarray()
    np.testing.assert_array_equal(dev, src)
    new = random_array((4, 3), dtype, seed=1)
    dev[...] = new  # "a kernel" writes the device copy
    a.gpu_changed()
    assert not a.is_valid("host")
    np.testing.assert_array_equal(a.host(), new)  # one D2H
    assert counts() == {"h2d_count": 1, "d2h_count": 1, "d2d_count": 0}
    a.host()  # valid: nothing
    h = a.host()
    h[0, 0] = src[0, 0]
    a.host_changed()
    assert not a.is_valid("gpu")
    np.testing.assert_array_equal(a.gpu().emulated_ndarray()[0], np.r_[src[0, :1], new[0, 1:]])
    assert counts() == {"h2d_count": 2, "d2h_count": 1, "d2d_count": 0}
    assert a.transfer_stats()["h2d_bytes"] == 2 * src.nbytes
    assert a.transfer_stats()["d2h_bytes"] == src.nbytes


@host_only
def test_where_gpu_uploads_once_and_device_array_is_device_only(counts):
    src = random_array(1000, np.float64)
    a = sa.SmartArray(src, where="gpu")
    assert counts() == one("h2d_count") and a.is_valid("gpu") and a.is_valid("host")
    d = sa.SmartArray(shape=(10,), dtype=np.int32, where="gpu")
    assert d.is_valid("gpu") and not d.is_valid("host")
    e = sa.device_array((5, 2), np.float32, order="F")
    assert e.strides == (4, 20) and not e.is_valid("host")
    e.gpu(readonly=False).emulated_ndarray()[...] = 1.5
    e.gpu_changed()
    np.testing.assert_array_equal(e.copy_to_host(), np.full((5, 2), 1.5, np.float32))
    assert counts() == {"h2d_count": 1, "d2h_count": 1, "d2d_count": 0}
    like = sa.device_array_like(e)
    assert like.shape == e.shape and like.strides == e.strides and not like.is_valid("host")


@host_only
def test_to_device_and_copy_to_host(counts):
    src = random_array((8, 8), np.int32)
    with sa.expect_transfers(h2d=1, h2d_bytes=src.nbytes):
        d = sa.to_device(src)
    with sa.expect_transfers():  # the host copy is valid: no transfer
        out = d.copy_to_host()
    np.testing.assert_array_equal(out, src)
    d.gpu().emulated_ndarray()[...] = 7
    d.gpu_changed()
    poison = np.full((8, 8), -1, np.int32)
    with sa.expect_transfers(d2h=1, array=d):
        r = d.copy_to_host(poison)
    assert r is poison and (poison == 7).all()
    assert not d.is_valid("host")  # copy_to_host leaves the residency as it was
    new = random_array((8, 8), np.int32, seed=3)
    with sa.expect_transfers(h2d=1):
        sa.to_device(new, to=d)
    np.testing.assert_array_equal(d.host(), new)


@host_only
def test_readonly_gpu_view_keeps_the_host_valid(counts):
    a = sa.SmartArray(random_array(16, np.float32))
    v = a.gpu(readonly=True)
    assert v.readonly and a.is_valid("host") and a.is_valid("gpu")
    a.device_view("read_write")
    assert not a.is_valid("host")
    a.host_view("read")
    assert a.is_valid("host") and a.is_valid("gpu")
    a.host_view("read_write")
    assert not a.is_valid("gpu")
    assert counts() == {"h2d_count": 1, "d2h_count": 1, "d2d_count": 0}


@host_only
def test_numpy_protocols_acquire_the_host(counts):
    src = random_array((3, 3), np.float64)
    a = sa.SmartArray(src)
    a.gpu().emulated_ndarray()[...] = 2.0
    a.gpu_changed()
    x = np.asarray(a)  # read acquire: one D2H, the device stays valid, read-only
    assert not x.flags.writeable and (x == 2.0).all()
    assert a.is_valid("gpu") and a.is_valid("host")
    m = memoryview(a.buffer())  # read-only buffer
    assert m.readonly and m.shape == (3, 3) and m.format == "d"
    m.release()
    assert counts() == {"h2d_count": 1, "d2h_count": 1, "d2d_count": 0}
    np.add(a, 1)  # reads only
    assert a.is_valid("gpu")


class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p),
                ("strides", ctypes.c_void_p), ("suboffsets", ctypes.c_void_p),
                ("internal", ctypes.c_void_p)]


def _get_buffer(obj, flags):
    """PyObject_GetBuffer, as a C consumer (Cython's typed memoryviews) calls it."""
    api = ctypes.pythonapi
    api.PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
    api.PyBuffer_Release.argtypes = [ctypes.POINTER(_PyBuffer)]
    view = _PyBuffer()
    if api.PyObject_GetBuffer(obj, ctypes.byref(view), flags) != 0:
        raise BufferError("PyObject_GetBuffer failed")
    return view, lambda: api.PyBuffer_Release(ctypes.byref(view))


PyBUF_WRITABLE, PyBUF_STRIDES = 0x0001, 0x0008 | 0x0010


@host_only
def test_writable_buffer_marks_the_host_changed(counts):
    a = sa.SmartArray(random_array(4, np.int32))
    a.gpu()
    assert a.is_valid("gpu")
    view, release = _get_buffer(a.buffer(), PyBUF_WRITABLE | PyBUF_STRIDES)
    assert view.readonly == 0
    assert not a.is_valid("gpu")  # the writable export was a read_write acquire
    ctypes.cast(view.buf, ctypes.POINTER(ctypes.c_int32))[1] = 99
    release()
    assert a.host()[1] == 99
    np.testing.assert_array_equal(a.gpu().emulated_ndarray()[1], 99)
    assert counts() == {"h2d_count": 2, "d2h_count": 0, "d2d_count": 0}
    view, release = _get_buffer(a.buffer(), PyBUF_STRIDES)  # read-only: the device stays valid
    assert view.readonly == 1 and a.is_valid("gpu")
    release()
    w = np.asarray(a.buffer(writable=True))  # writable on request: a read_write acquire
    assert w.flags.writeable and not a.is_valid("gpu")
    w[2] = 5
    np.testing.assert_array_equal(a.gpu().emulated_ndarray()[2], 5)


def test_smartarray_itself_is_no_buffer():
    """Numba types buffer-protocol objects as host buffers before it reads
    __cuda_array_interface__: SmartArray exports its host copy through buffer() instead."""
    with pytest.raises(TypeError):
        memoryview(sa.SmartArray(np.ones(3)))


def test_f_ordered_buffer_needs_strides():
    a = sa.SmartArray(random_array((3, 2), np.float32, order="F"))
    with pytest.raises(BufferError):
        _get_buffer(a.buffer(), 0)  # PyBUF_SIMPLE: C-contiguous only
    m = memoryview(a.buffer())
    assert m.strides == (4, 12) and m.f_contiguous
    m.release()


def test_array_dunder_copy_and_dtype():
    src = random_array(5, np.int16)
    a = sa.SmartArray(src)
    c = a.__array__(copy=True)
    c[0] = 0
    assert a.host()[0] == src[0]
    f = np.asarray(a, dtype=np.float64)
    assert f.dtype == np.float64 and (f == src).all()


def test_cuda_array_interface_is_absent_on_the_host_backend():
    if sa.backend() == "cuda":
        pytest.skip("host backend behaviour")
    a = sa.SmartArray(np.ones(3))
    assert not hasattr(a, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="host backend has no GPU"):
        a.__cuda_array_interface__
    with pytest.raises(AttributeError, match="host backend has no GPU"):
        a.gpu().__cuda_array_interface__
    assert a.is_valid("host")


def test_expect_transfers_reports_a_mismatch():
    a = sa.SmartArray(np.ones(3))
    with pytest.raises(sa.TransferMismatch, match="h2d_count: expected 1, observed 0"):
        with sa.expect_transfers(h2d=1):
            a.host()


def test_streams_are_accepted():
    class NumbaLike:
        class handle:
            value = None
    class CupyLike:
        ptr = 0
    class TorchLike:
        cuda_stream = 0
    class Proto:
        def __cuda_stream__(self):
            return (0, 0)
    for s in (None, 0, NumbaLike(), CupyLike(), TorchLike(), Proto()):
        assert sa.stream_handle(s) == 0
    with pytest.raises(TypeError):
        sa.stream_handle("stream")
    a = sa.SmartArray(np.ones(3), stream=CupyLike())
    a.copy_to_host(stream=TorchLike())
    sa.synchronize(NumbaLike())


def test_the_counters_name_every_kind_of_transfer_and_messages_stay_zero_without_mpi():
    a = sa.SmartArray(random_array((64,), np.float64))
    a.gpu()
    for stats in (sa.transfer_stats(), a.transfer_stats()):
        for key in ("sent_count", "sent_bytes", "received_count", "received_bytes"):
            assert key in stats
    mine = a.transfer_stats()
    assert (mine["sent_count"], mine["received_count"]) == (0, 0)
    assert mine["h2d_count"] == 1
