import numpy as np
import pytest

import smartarray as sa
from conftest import ALL_DTYPES, host_only, random_array


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_numpy_from_dlpack(dtype, order):
    src = random_array((3, 4), dtype, order=order)
    a = sa.SmartArray(src)
    x = np.from_dlpack(a)
    np.testing.assert_array_equal(x, src)
    assert x.strides == src.strides
    assert not x.flags.writeable  # versioned capsule, read acquire: flagged read-only


def test_dlpack_device_and_capsules():
    a = sa.SmartArray(random_array(6, np.float32))
    if sa.backend() == "host":
        assert a.__dlpack_device__() == (1, 0)
    legacy = a.__dlpack__()
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    versioned = a.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    del legacy, versioned  # unconsumed capsules free themselves


@host_only
def test_numpy_from_dlpack_gets_the_current_host_data(counts):
    a = sa.SmartArray(random_array(8, np.float64))
    a.gpu().emulated_ndarray()[...] = 3.0
    a.gpu_changed()
    x = np.from_dlpack(a)  # the host copy is made valid first: one D2H
    assert (x == 3.0).all()
    assert a.is_valid("host") and a.is_valid("gpu")
    assert counts() == {"h2d_count": 1, "d2h_count": 1, "d2d_count": 0}


@host_only
def test_legacy_capsule_is_a_read_write_host_acquire():
    a = sa.SmartArray(random_array(4, np.int32))
    a.gpu()
    cap = a.__dlpack__()  # legacy: no read-only flag, so the device copy becomes stale
    assert not a.is_valid("gpu")
    del cap


def test_dlpack_keeps_the_array_alive():
    a = sa.SmartArray(random_array(1000, np.float32))
    expect = a.copy_to_host()
    x = np.from_dlpack(a)
    del a
    import gc
    gc.collect()
    np.testing.assert_array_equal(x, expect)


def test_dlpack_copy_and_device_arguments():
    src = random_array(5, np.int64)
    a = sa.SmartArray(src)
    c = np.from_dlpack(a, copy=True)
    np.testing.assert_array_equal(c, src)
    np.testing.assert_array_equal(np.from_dlpack(a, device="cpu"), src)
    if sa.backend() == "host":
        with pytest.raises(BufferError):
            a.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(4, 0))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_from_dlpack_numpy(dtype, counts):
    src = random_array((2, 5), dtype)
    a = sa.from_dlpack(src)
    np.testing.assert_array_equal(a.host(), src)
    assert a.shape == src.shape and a.dtype == src.dtype
    assert counts() == {"h2d_count": 0, "d2h_count": 0, "d2d_count": 0}


def test_from_dlpack_round_trip_and_asarray():
    src = random_array((4, 3), np.complex64, order="F")
    a = sa.SmartArray(src)
    b = sa.from_dlpack(a)
    np.testing.assert_array_equal(b.host(), src)
    assert b.strides == src.strides
    assert sa.asarray(a) is a
    np.testing.assert_array_equal(sa.asarray([[1, 2]], dtype=np.uint8).host(), [[1, 2]])
    c = sa.asarray(src)
    np.testing.assert_array_equal(c.host(), src)


def test_from_dlpack_rejects_non_contiguous_and_non_producers():
    src = random_array((6, 6), np.float32)[::2, ::3]
    with pytest.raises((ValueError, BufferError)):
        sa.from_dlpack(src)
    with pytest.raises(TypeError):
        sa.from_dlpack([1, 2, 3])
