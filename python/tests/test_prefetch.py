"""prefetch_to_host (a token with wait() and ready()), prefetch_to_device and discard, with exact
transfer counts. The device writes are the host backend's emulated device
(DeviceArrayView.emulated_ndarray()) or, on a GPU, CuPy."""
import numpy as np
import pytest

import smartarray as sa
from conftest import ON_GPU, random_array


def device_write(a, values):
    """`values` become `a`'s contents on the device; the host copy is stale then."""
    if ON_GPU:
        cupy = pytest.importorskip("cupy")
        cupy.asarray(a.device_view("discard"))[...] = cupy.asarray(values)
    else:
        a.device_view("discard").emulated_ndarray()[...] = values


def stats_since(a, before):
    after = a.transfer_stats()
    return {k: after[k] - before[k] for k in ("h2d_count", "d2h_count", "d2h_bytes", "wait_count")}


def test_prefetch_to_host_copies_once_and_the_read_after_it_copies_nothing():
    a = sa.SmartArray(random_array(1 << 16, np.float32))
    values = random_array(1 << 16, np.float32, seed=1)
    device_write(a, values)
    before = a.transfer_stats()
    token = a.prefetch_to_host()
    assert isinstance(token, sa.Prefetch)
    queued = stats_since(a, before)
    assert queued["d2h_count"] == 1 and queued["d2h_bytes"] == values.nbytes
    assert queued["wait_count"] == 0
    token.wait()
    assert token.ready()
    before = a.transfer_stats()
    np.testing.assert_array_equal(a.host_view("read"), values)
    assert stats_since(a, before) == {"h2d_count": 0, "d2h_count": 0, "d2h_bytes": 0,
                                      "wait_count": 0}
    assert a.is_valid("gpu")


def test_the_first_host_access_waits_for_the_prefetch_without_wait():
    a = sa.SmartArray(random_array(1000, np.int64))
    values = random_array(1000, np.int64, seed=2)
    device_write(a, values)
    token = a.prefetch_to_host(stream=0)
    np.testing.assert_array_equal(a.copy_to_host(), values)
    assert token.ready()
    assert a.transfer_stats()["d2h_count"] == 1


def test_a_host_valid_array_copies_nothing_and_its_token_is_ready(counts):
    a = sa.SmartArray(random_array(100, np.float64))
    token = a.prefetch_to_host()
    assert token.ready()
    token.wait()
    assert counts()["d2h_count"] == 0


def test_prefetch_to_device_uploads_once_and_a_device_read_then_copies_nothing():
    values = random_array(5000, np.float32)
    a = sa.SmartArray(values)
    a.prefetch_to_device()
    assert a.transfer_stats()["h2d_count"] == 1
    assert a.is_valid("gpu")
    a.device_view("read")
    assert a.transfer_stats()["h2d_count"] == 1


def test_discarded_values_are_never_copied():
    a = sa.SmartArray(random_array(4096, np.float32))
    device_write(a, random_array(4096, np.float32, seed=3))
    a.discard()
    before = a.transfer_stats()
    a.host_view("read")
    a.device_view("read")
    a.prefetch_to_host().wait()
    assert stats_since(a, before)["d2h_count"] == 0
    assert stats_since(a, before)["h2d_count"] == 0
    assert a.is_valid("host") and a.is_valid("gpu")
    fresh = random_array(4096, np.float32, seed=4)
    a.host_view("discard")[...] = fresh
    a.device_view("read")
    assert stats_since(a, before)["h2d_count"] == 1
    np.testing.assert_array_equal(a.copy_to_host(), fresh)


def test_a_stream_that_is_not_one_raises_type_error():
    a = sa.SmartArray(random_array(10, np.float32))
    with pytest.raises(TypeError):
        a.prefetch_to_host(stream="fast")
    with pytest.raises(TypeError):
        a.prefetch_to_device(stream=1.5)
