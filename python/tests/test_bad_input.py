"""Bad input raises before anything changes: each test gives a bad argument, checks the error's
type and that its message names the bad value, then that the contents, the validity and the
counts are as before and that the array is still usable. Also the lifetime of views: they keep
the memory valid but never keep a SmartArray alive through a cycle the collector cannot see."""
import gc
import resource
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import smartarray as sa
from conftest import host_only, random_array


def _state(a):
    return (a.is_valid("host"), a.valid_devices(), a.transfer_stats())


def _unchanged(a, before, values):
    """`a` is as `before` said, counts included, and still holds `values` and works."""
    assert _state(a) == before
    np.testing.assert_array_equal(a.copy_to_host(), values)
    a.device_view("read")  # still usable on the device


def _run(script, **env):
    """Runs `script` in a fresh interpreter (with `env` added); returns its completed process."""
    import os
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                       text=True, timeout=120, env={**os.environ, **env})
    assert r.returncode == 0, r.stderr
    return r


# --- values and keys -------------------------------------------------------------------------------

def test_a_value_that_does_not_convert_changes_nothing():
    """a[0] = 'abc' raises ValueError before the write acquire: the device copy stays valid."""
    src = random_array(8, np.float64)
    a = sa.to_device(src)
    before = _state(a)
    with pytest.raises(ValueError, match="abc"):
        a[0] = "abc"
    with pytest.raises(ValueError):
        a[0:2] = [1.0, 2.0, 3.0]  # does not broadcast
    with pytest.raises(IndexError):
        a[8] = 1.0
    _unchanged(a, before, src)


def test_a_zero_copy_import_takes_no_dtype_or_shape():
    """SmartArray(a, copy=False, dtype=...) would need a copy: ValueError, nothing imported."""
    a = sa.SmartArray(random_array(6, np.float64))
    for kw in ({"dtype": np.int32}, {"shape": (2, 3)}):
        with pytest.raises(ValueError, match="copy=False"):
            sa.SmartArray(a, copy=False, **kw)


def test_shapes_too_large_for_any_array():
    """A shape whose bytes overflow a 64-bit size raises OverflowError naming the shape."""
    for shape in ((2**40, 2**40), (2**63,)):
        with pytest.raises(OverflowError, match=r"shape \("):
            sa.SmartArray(shape=shape, dtype=np.uint8)
    with pytest.raises(ValueError, match="strides"):
        sa.device_array((2, 3), strides=(24,))


def test_access_names_are_checked():
    a = sa.SmartArray(random_array(4, np.int32))
    before = _state(a)
    for call in (a.host_view, a.device_view):
        with pytest.raises(ValueError, match="bogus"):
            call("bogus")
    _unchanged(a, before, a.copy_to_host())


# --- streams -----------------------------------------------------------------------------------

@host_only
def test_a_bogus_stream_is_rejected_and_never_kept():
    """A stream object with a handle that is no stream raises ValueError naming it; it is not
    kept, so later streams and forget_unused_streams() work as before."""
    from smartarray import _streams

    class Bogus:
        cuda_stream = 1234

    class Negative:
        __cuda_stream__ = (0, -1)

    src = random_array(16, np.float32)
    a = sa.SmartArray(src)
    before = _state(a)
    kept = dict(_streams._kept)
    with pytest.raises(ValueError, match="0x4d2|1234"):
        a.gpu(stream=Bogus())
    with pytest.raises(ValueError, match="-1"):
        a.gpu(stream=Negative())
    with pytest.raises(ValueError, match="99|0x63"):
        sa.device_array(4, stream=99)
    with pytest.raises(ValueError, match=str(2**64)):
        a.gpu(stream=2**64)
    assert _streams._kept == kept
    sa.forget_unused_streams()
    _unchanged(a, before, src)


def test_dlpack_arguments_are_checked():
    """__dlpack__ rejects a stream that is not an int, a negative one other than -1, a
    max_version or dl_device that is not a pair of ints, and a CPU device other than 0."""
    src = random_array(5, np.float64)
    a = sa.SmartArray(src)
    before = _state(a)
    for stream, error in (("x", TypeError), (1.5, TypeError), (True, TypeError),
                          (-5, ValueError)):
        with pytest.raises(error, match=repr(stream) if error is TypeError else "-5"):
            a.__dlpack__(stream=stream)
    for kw in ({"max_version": 5}, {"max_version": ()}, {"dl_device": (1,)}):
        with pytest.raises(TypeError, match="pair of ints"):
            a.__dlpack__(**kw)
    with pytest.raises(BufferError, match=r"\(1, 5\)"):
        a.__dlpack__(dl_device=(1, 5))
    _unchanged(a, before, src)


@host_only
def test_a_view_on_another_devices_stream_waits_for_its_copy():
    """emulated_ndarray() of a view acquired on a stream of device 1, with device 0 current,
    waits for that stream (it once waited for device 0 only and showed the poison pattern)."""
    _run("""
        import numpy as np, smartarray as sa
        x = np.arange(1.0, 65.0)
        a = sa.SmartArray(x)
        stream_of_device_1 = sa._ext._default_stream(1)
        np.testing.assert_array_equal(a.gpu(stream=stream_of_device_1).emulated_ndarray(), x)
    """, SMARTARRAY_HOST_DEVICES="2", SMARTARRAY_HOST_LATENCY_US="20000")


# --- lifetime --------------------------------------------------------------------------------------

def test_views_stored_on_their_array_do_not_keep_it_alive():
    """a.h = a.host() (and np.asarray, buffer, DLPack, device views) make no cycle: the array goes
    when its last reference goes, without a collector pass, and the views stay valid."""
    src = random_array(1000, np.float32)
    a = sa.SmartArray(src)
    a.h = a.host()
    a.n = np.asarray(a)
    a.m = memoryview(a.buffer())
    a.d = np.from_dlpack(a)
    views = (a.h, a.n, a.d)
    alive = weakref.ref(a)
    del a
    assert alive() is None
    for v in views:
        np.testing.assert_array_equal(v, src)
    b = sa.SmartArray(src)
    b.g = b.gpu(readonly=True)  # a view object, which the collector sees: gone at its next pass
    alive = weakref.ref(b)
    del b
    gc.collect()
    assert alive() is None


def test_a_thousand_arrays_with_live_views_give_their_memory_back():
    """1,000 arrays of 4 MiB, each holding a view of itself, made and dropped: the peak resident
    memory grows by far less than the 4 GiB they add up to."""
    start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    for _ in range(1000):
        a = sa.SmartArray(shape=1 << 20, dtype=np.float32)
        a.h = a.host()
        a.h[:8] = 1.0
        a.host_changed()
        del a
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start
    assert grown < 256 * 1024, f"peak RSS grew by {grown // 1024} MiB"


def test_no_leak_report_at_exit():
    """Exports still alive at exit (an unconsumed capsule, a NumPy array over DLPack, a view)
    make nanobind report no leaked instance."""
    err = _run("""
        import numpy as np, smartarray as sa
        a = sa.to_device(np.arange(10.0))
        capsule = a.__dlpack__()
        over_dlpack = np.from_dlpack(a)
        a.h = a.host()
    """).stderr
    assert "leak" not in err, err


# --- environment variables -------------------------------------------------------------------------

BAD_ENVIRONMENT = [
    ("SMARTARRAY_DEVICE_BUDGET", "-5", "1 B to 1 EiB"),
    ("SMARTARRAY_DEVICE_BUDGET", "17179869184G", "1 B to 1 EiB"),
    ("SMARTARRAY_DEVICE_BUDGET", "5X", "K, M, G or T"),
    ("SMARTARRAY_HOST_LATENCY_US", "9223372036854775807", "0 to 10000000"),
    ("SMARTARRAY_HOST_LATENCY_US", "18446744073709551615", "0 to 10000000"),
    ("SMARTARRAY_HOST_DEVICES", "0", "1 to"),
    ("SMARTARRAY_TRACE", "/nonexistent/dir/file", "cannot open"),
    ("SMARTARRAY_STALE_HOST_GUARD", "yes", "0 or 1"),
]


@pytest.mark.parametrize("name, value, allowed", BAD_ENVIRONMENT)
def test_a_bad_environment_value_is_an_error_of_the_first_operation(name, value, allowed):
    """The import succeeds; the first operation that reads the variable raises ValueError naming
    the variable, the value and what is allowed, and so does the next one (nothing was set up
    half-way). The host backend's settings apply to it only."""
    if name.startswith("SMARTARRAY_HOST_") and sa.backend() != "host":
        pytest.skip("a setting of the host backend")
    out = _run("""
        import numpy as np, smartarray as sa
        for attempt in range(2):
            try:
                sa.to_device(np.arange(4.0)).copy_to_host()
            except ValueError as error:
                print("raised:", error)
            else:
                print("no error")
    """, **{name: value}).stdout
    lines = out.splitlines()
    assert len(lines) == 2 and all(line.startswith("raised:") for line in lines), out
    for part in (name, value, allowed):
        assert part in lines[0], (part, lines[0])

