"""Bad input raises before anything changes: each test gives a bad argument, checks the error's
type and that its message names the bad value, then that the contents, the validity and the
counts are as before and that the array is still usable. Also the lifetime of views: they keep
the memory valid but never keep a SmartArray alive through a cycle the collector cannot see."""
import gc
import re
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
    ("SMARTARRAY_DEVICE_BUDGET", "-5", "4 KiB to 1 EiB"),
    ("SMARTARRAY_DEVICE_BUDGET", "100", "4 KiB to 1 EiB"),
    ("SMARTARRAY_DEVICE_BUDGET", "17179869184G", "4 KiB to 1 EiB"),
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



# --- device budgets --------------------------------------------------------------------------------

def _budgets():
    return [sa.device_budget(i) for i in range(sa.device_count())]


@pytest.mark.parametrize("nbytes", [True, False, np.True_, 1.5, np.float64(8192.0), "1000", 1e30,
                                    b"4096", 4096j, [4096]], ids=repr)
def test_a_budget_that_is_no_integer_raises_type_error(nbytes):
    """set_device_budget takes an int or a NumPy integer of bytes (or None): anything else,
    a bool or a whole float included, raises TypeError naming it; no budget changes."""
    before = _budgets()
    with pytest.raises(TypeError, match=re.escape(repr(nbytes))):
        sa.set_device_budget(nbytes)
    with pytest.raises(TypeError, match=re.escape(repr(nbytes))):
        sa.set_device_budget(nbytes, device=sa.device_count() - 1)
    assert _budgets() == before


@pytest.mark.parametrize("nbytes", [-1, -(2**63), -(2**70), np.int64(-4096), 2**60 + 1, 2**63,
                                    2**64, 10**30, np.uint64(2**64 - 1)], ids=repr)
def test_a_budget_out_of_range_raises_value_error(nbytes):
    """A negative budget, or one above 2**60 (1 EiB, the most SMARTARRAY_DEVICE_BUDGET takes),
    raises ValueError naming it; no budget changes."""
    before = _budgets()
    with pytest.raises(ValueError, match=rf"(?<!\d){int(nbytes)}(?!\d)"):
        sa.set_device_budget(nbytes)
    assert _budgets() == before


def test_a_budget_below_one_tile_raises_value_error():
    """A budget smaller than one tile could hold no array: ValueError naming it (the C++ layer's
    check, translated); the budget is as before."""
    before = _budgets()
    try:
        with pytest.raises(ValueError, match=r"(?<!\d)100(?!\d)"):
            sa.set_device_budget(100)
        assert _budgets() == before
    finally:
        sa.set_device_budget(None)


def test_budgets_of_numpy_integers_are_taken_as_ints():
    """np.int64 / np.uint64 budgets set what the int of the same value sets."""
    budget = sa.device_budget()
    wanted = budget + int(np.random.default_rng().integers(1, 64)) * (1 << 20)
    try:
        for kind in (np.int64, np.uint64):
            sa.set_device_budget(None)
            sa.set_device_budget(kind(wanted))
            got = sa.device_budget()
            sa.set_device_budget(None)
            sa.set_device_budget(wanted)
            assert got == sa.device_budget() and type(got) is int
    finally:
        sa.set_device_budget(None)
    assert sa.device_budget() == budget


# --- expect_transfers ------------------------------------------------------------------------------

_COUNT_KEYWORDS = ["h2d", "d2h", "d2d", "d2d_peer", "staged"]
_BYTES_KEYWORDS = ["h2d_bytes", "d2h_bytes", "d2d_bytes", "d2d_peer_bytes", "staged_bytes"]


@pytest.mark.parametrize("keyword", _COUNT_KEYWORDS + _BYTES_KEYWORDS)
@pytest.mark.parametrize("value, error", [
    ("0", TypeError), (1.5, TypeError), (1.0, TypeError), (True, TypeError), (np.False_, TypeError),
    (None, TypeError), (b"1", TypeError), (-1, ValueError), (np.int64(-3), ValueError),
    (-(2**70), ValueError)], ids=repr)
def test_expect_transfers_takes_non_negative_integers_only(keyword, value, error):
    """Each count of expect_transfers() is a non-negative int or NumPy integer (a byte count may
    also be None: not checked): anything else raises at the call, naming the keyword and the
    value, before any counting starts."""
    if value is None and keyword in _BYTES_KEYWORDS:
        with sa.expect_transfers(**{keyword: None}):
            pass
        return
    with pytest.raises(error) as raised:
        sa.expect_transfers(**{keyword: value})
    message = str(raised.value)
    assert keyword in message and (repr(value) if error is TypeError else str(value)) in message


def test_expect_transfers_takes_numpy_integer_counts():
    """NumPy integer counts are counts: a block with one H2D of n bytes passes with np.int64(1)
    and np.uint32(n), and fails with np.int64(2)."""
    src = random_array(int(np.random.default_rng().integers(10, 1000)), np.float64)
    with sa.expect_transfers(h2d=np.int64(1), h2d_bytes=np.uint32(src.nbytes), d2h=np.int8(0)):
        sa.to_device(src)
    with pytest.raises(sa.TransferMismatch, match="h2d_count: expected 2, observed 1"):
        with sa.expect_transfers(h2d=np.int64(2)):
            sa.to_device(src)


@pytest.mark.parametrize("array", [5, "a", np.ones(3), [1.0]], ids=repr)
def test_expect_transfers_array_must_be_a_smartarray(array):
    """array= names a SmartArray, whose own counters are checked: anything else is a TypeError
    naming what was passed (it once failed later, with AttributeError, inside the block)."""
    with pytest.raises(TypeError, match=r"array must be a SmartArray.*" +
                       re.escape(type(array).__name__)):
        sa.expect_transfers(array=array)


# --- Numba, when it is not installed ---------------------------------------------------------------

def test_numba_memory_manager_without_numba_is_no_attribute():
    """Without Numba, sa.NumbaMemoryManager raises AttributeError (caused by the ImportError), so
    hasattr() is False and getattr() with a default gives the default; Numba is hidden from the
    import machinery (sys.modules['numba'] = None) in a fresh process."""
    _run("""
        import sys
        sys.modules["numba"] = None
        import smartarray as sa
        for name in ("NumbaMemoryManager", "_numba_memory_manager"):
            assert not hasattr(sa, name)
            assert getattr(sa, name, "absent") == "absent"
            try:
                getattr(sa, name)
            except AttributeError as error:
                assert name in str(error) and "Numba" in str(error), error
                assert isinstance(error.__cause__, ImportError), repr(error.__cause__)
            else:
                raise AssertionError("no AttributeError")
        assert not hasattr(sa, "no_such_name")
    """)
