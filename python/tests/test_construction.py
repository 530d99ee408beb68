import numpy as np
import pytest

import smartarray as sa
from conftest import ALL_DTYPES, random_array


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_from_numpy_every_dtype_and_order(dtype, order, counts):
    src = random_array((3, 5), dtype, order=order)
    a = sa.SmartArray(src)
    assert a.shape == (3, 5) and a.dtype == np.dtype(dtype) and a.size == 15 and a.ndim == 2
    assert a.strides == src.strides
    assert a.is_valid("host") and not a.is_valid("gpu")
    np.testing.assert_array_equal(a.host(), src)
    np.testing.assert_array_equal(np.asarray(a), src)
    np.testing.assert_array_equal(a.copy_to_host(), src)
    assert counts() == {"h2d_count": 0, "d2h_count": 0, "d2d_count": 0}
    src[0, 0] = src[1, 1]  # the SmartArray owns a copy
    assert a.transfer_stats()["h2d_count"] == 0


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_shape_dtype_constructor_is_zero_filled(dtype):
    a = sa.SmartArray(shape=(4, 2), dtype=dtype, order="F")
    assert a.shape == (4, 2) and a.strides == (np.dtype(dtype).itemsize, 4 * np.dtype(dtype).itemsize)
    np.testing.assert_array_equal(a.host(), np.zeros((4, 2), dtype))


def test_order_forced_and_dtype_converted():
    src = random_array((2, 3), np.float64)
    a = sa.SmartArray(src, dtype=np.float32, order="F")
    assert a.dtype == np.float32 and a.strides == (4, 8)
    np.testing.assert_array_equal(a.host(), src.astype(np.float32))


def test_non_contiguous_source_is_made_contiguous():
    src = random_array((6, 6), np.int32)[::2, 1::2]
    a = sa.SmartArray(src)
    np.testing.assert_array_equal(a.host(), src)


def test_lists_scalars_and_empty():
    assert sa.SmartArray([1, 2, 3]).host().tolist() == [1, 2, 3]
    z = sa.SmartArray(np.float32(2.5))
    assert z.shape == () and z.host()[()] == 2.5
    e = sa.SmartArray(np.empty((0, 3), np.float32))
    assert e.size == 0 and e.host().shape == (0, 3)
    assert sa.SmartArray(shape=5).dtype == np.float64


def test_non_native_byte_order_is_converted():
    src = np.arange(4, dtype=">i4")
    a = sa.SmartArray(src)
    assert a.dtype == np.dtype("=i4")
    np.testing.assert_array_equal(a.host(), src)


def test_reshape_and_ravel_share_the_data(counts):
    src = random_array((2, 6), np.float32)
    a = sa.SmartArray(src)
    r = a.reshape(3, 4)
    assert r.shape == (3, 4)
    np.testing.assert_array_equal(r.host(), src.reshape(3, 4))
    r[0, 0] = 42.0
    assert a.host()[0, 0] == 42.0
    assert a.reshape((-1,)).shape == (12,) and a.ravel().shape == (12,)
    np.testing.assert_array_equal(a.ravel().host(), a.host().ravel())
    with pytest.raises(ValueError):
        a.reshape(5, 5)
    with pytest.raises(NotImplementedError):
        a.reshape(4, 3, order="F")
    with pytest.raises(NotImplementedError):
        a.ravel(order="F")
    f = sa.SmartArray(random_array((2, 3), np.int16, order="F"))
    np.testing.assert_array_equal(f.ravel(order="F").host(), f.host().ravel(order="F"))
    assert counts() == {"h2d_count": 0, "d2h_count": 0, "d2d_count": 0}


def test_indexing_and_len():
    src = random_array((3, 4), np.int64)
    a = sa.SmartArray(src)
    assert len(a) == 3 and a[1, 2] == src[1, 2] and a[-1, -1] == src[-1, -1]
    np.testing.assert_array_equal(a[1], src[1])
    a[2, 3] = 7
    a[0] = 5
    expect = src.copy()
    expect[2, 3] = 7
    expect[0] = 5
    np.testing.assert_array_equal(a.host(), expect)


def test_labels_ids_and_modes():
    a = sa.SmartArray(np.ones(3))
    a.label = "weights"
    assert a.label == "weights" and a.id > 0 and "weights" in repr(a)
    assert a.memory_mode == "explicit"
    assert sa.SmartArray(np.ones(3), mode="pageable").memory_mode == "pageable"


def test_pinned_and_mapped_arrays():
    p = sa.pinned_array((4,), np.float32)
    np.testing.assert_array_equal(p.host(), np.zeros(4, np.float32))
    m = sa.mapped_array((2, 2), np.int32, order="F")
    assert m.memory_mode == "mapped" and m.strides == (4, 8)
    m.host()[...] = 3
    m.host_changed()
    np.testing.assert_array_equal(m.copy_to_host(), np.full((2, 2), 3, np.int32))
