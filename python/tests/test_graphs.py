"""sa.capture, sa.Graph and sa.Stream: a captured pipeline replays with exact residency (only the
stale bytes it reads are copied first), misuses inside the capture raise naming the call and the
capture's Python file:line, and smartarray's own streams are accepted as any other. Runs on the
host backend (CI) and on a GPU."""
import gc
import re
import weakref

import numpy as np
import pytest

import smartarray as sa
from conftest import ON_GPU, random_array

N = 3000
CHAIN = 4  # arrays after the input: x -> a0 -> a1 -> a2 -> a3


def poisoned(n=N, dtype=np.float64):
    """A device-only array whose device copy holds a poison value (nothing a copy writes)."""
    out = sa.SmartArray(np.full(n, -7.0, dtype), where="gpu")
    out.gpu_changed()
    return out


def chain(x, arrays, stream):
    """The pipeline: a device copy from each array into the next."""
    src = x
    for dst in arrays:
        dst.copy_to_device(src, stream)
        src = dst


def capture_here(stream, fn):
    """sa.capture called from the line CAPTURE_LINE of this file, which its errors name."""
    return sa.capture(stream, fn)


CAPTURE_LINE = capture_here.__code__.co_firstlineno + 2
HERE = re.escape(f"{__file__}:{CAPTURE_LINE} ")


def test_chain_replays_with_exact_counts_and_matches_the_eager_chain():
    s = sa.Stream()
    data = random_array(N, np.float64, seed=1)
    eager_x, x = sa.SmartArray(data), sa.SmartArray(data)
    eager = [poisoned() for _ in range(CHAIN)]
    with sa.expect_transfers(h2d=1, d2d=CHAIN):
        chain(eager_x, eager, s)
    arrays = [poisoned() for _ in range(CHAIN)]
    # The capture records and copies nothing; the graph's own copies are counted once, here.
    with sa.expect_transfers(d2d=CHAIN):
        g = sa.capture(s, lambda stream: chain(x, arrays, stream))
    assert [a["id"] for a in g.arrays()] == [x.id] + [a.id for a in arrays]
    assert g.arrays()[0]["bytes_read"] == data.nbytes and g.arrays()[0]["bytes_written"] == 0
    assert all(a["bytes_read"] == 0 and a["bytes_written"] == data.nbytes
               for a in g.arrays()[1:])
    assert g.device == sa.get_current_device().id and g.launches == 0
    # First replay: the input is valid on the host only, so one upload of it.
    with sa.expect_transfers(h2d=1, h2d_bytes=data.nbytes):
        g.launch()
    assert g.launches == 1
    # A host read of the last array: one D2H; the result is the eager chain's.
    with sa.expect_transfers(d2h=1, d2h_bytes=data.nbytes):
        result = arrays[-1].copy_to_host()
    with sa.expect_transfers(d2h=1):
        np.testing.assert_array_equal(result, eager[-1].copy_to_host())
    np.testing.assert_array_equal(result, data)
    # Nothing stale: a replay copies nothing.
    with sa.expect_transfers():
        g.launch()
        g.launch(s)
    # The host writes the input: the next replay uploads exactly those bytes, once.
    fresh = random_array(N, np.float64, seed=2)
    x.host_view("discard")[...] = fresh
    with sa.expect_transfers(h2d=1, h2d_bytes=fresh.nbytes):
        g.launch()
    with sa.expect_transfers(d2h=1, d2h_bytes=fresh.nbytes):
        np.testing.assert_array_equal(arrays[-1].host(), fresh)
    # An intermediate array read by the host and not written since: the replay copies nothing.
    with sa.expect_transfers(d2h=1):
        np.testing.assert_array_equal(arrays[1].host(), fresh)
    with sa.expect_transfers():
        g.launch()
    assert g.launches == 5
    assert "launches=5" in repr(g)


def test_replay_orders_after_eager_work_without_a_host_wait():
    s = sa.Stream()
    x, y, z = sa.SmartArray(random_array(N, np.float64, seed=3)), poisoned(), poisoned()
    g = sa.capture(s, lambda stream: y.copy_to_device(x, stream))
    g.launch()
    # Eager device work writes the input on another stream: the replay needs no copy.
    other = sa.Stream()
    fresh = random_array(N, np.float64, seed=4)
    z.host_view("discard")[...] = fresh
    with sa.expect_transfers(h2d=1, d2d=1):
        x.copy_to_device(z, other)
    with sa.expect_transfers():
        g.launch()
    np.testing.assert_array_equal(y.host(), fresh)


def test_launch_on_another_stream_and_default_stream():
    s = sa.Stream()
    data = random_array(N, np.float64, seed=5)
    x, y = sa.SmartArray(data), poisoned()
    g = sa.capture(s, lambda stream: y.copy_to_device(x, stream))
    g.launch(sa.Stream())
    g.launch(0)
    np.testing.assert_array_equal(y.host(), data)


def test_capture_takes_an_int_handle_and_passes_fn_the_stream_as_given():
    s = sa.Stream()
    seen = []
    data = random_array(N, np.float64, seed=6)
    x, y = sa.SmartArray(data), poisoned()

    def fn(stream):
        seen.append(stream)
        y.copy_to_device(x, stream)

    g = sa.capture(s.handle, fn)
    assert seen == [s.handle]
    g.launch()
    np.testing.assert_array_equal(y.host(), data)


@pytest.mark.parametrize("stream", [0, None])
def test_default_stream_is_refused(stream):
    x = sa.SmartArray(random_array(N, np.float64))
    with pytest.raises(ValueError, match="default stream"):
        sa.capture(stream, lambda s: None)
    with sa.expect_transfers(h2d=1):
        x.prefetch_to_device()  # no capture is left open


@pytest.mark.parametrize("fn", [3, "copy", None, [print]])
def test_fn_must_be_callable(fn):
    with pytest.raises(TypeError, match=re.escape(f"fn must be callable (it is called with "
                                                  f"the stream), not {fn!r}")):
        sa.capture(sa.Stream(), fn)


def test_an_exception_inside_fn_propagates_and_leaves_everything_as_it_was():
    s = sa.Stream()
    data = random_array(N, np.float64, seed=7)
    x, y = sa.SmartArray(data), poisoned()

    def fn(stream):
        y.copy_to_device(x, stream)
        raise KeyError("from fn")

    with pytest.raises(KeyError, match="from fn"):
        sa.capture(s, fn)
    assert x.is_valid("host") and not x.is_valid("device")
    assert y.is_valid("device") and not y.is_valid("host")
    # The stream is usable and no capture is left open: eager work runs, a new capture works.
    with sa.expect_transfers(h2d=1, d2d=1):
        y.copy_to_device(x, s)
    s.synchronize()
    assert s.query()
    np.testing.assert_array_equal(y.host(), data)
    g = sa.capture(s, lambda stream: y.copy_to_device(x, stream))
    g.launch()


def test_host_read_of_a_written_array_names_the_capture_in_python():
    s = sa.Stream()
    x, y = sa.SmartArray(random_array(N, np.float64)), poisoned()

    def fn(stream):
        y.copy_to_device(x, stream)
        y.host()

    with pytest.raises(ValueError) as error:
        capture_here(s, fn)
    message = str(error.value)
    assert f"{y._name()}: host access" in message
    assert f"sa::capture (opened at {__file__}:{CAPTURE_LINE} on stream" in message
    assert not y.is_valid("host") and y.is_valid("device")


def test_misuses_inside_fn_raise_naming_the_call_and_the_capture():
    s = sa.Stream()
    x, y = sa.SmartArray(random_array(N, np.float64)), poisoned()
    with pytest.raises(ValueError, match=rf"^synchronize inside sa::capture \(opened at {HERE}"):
        capture_here(s, lambda stream: (y.copy_to_device(x, stream), sa.synchronize(stream)))
    with pytest.raises(ValueError, match="synchronize inside sa::capture"):
        sa.capture(s, lambda stream: (y.copy_to_device(x, stream), stream.synchronize()))
    with pytest.raises(ValueError, match=rf"copy_to_device from host data \(ndarray\) inside "
                                         rf"sa::capture \(opened at {HERE}"):
        capture_here(s, lambda stream: y.copy_to_device(np.ones(N), stream))
    with pytest.raises(ValueError, match="work on the default stream inside sa::capture"):
        sa.capture(s, lambda stream: y.copy_to_device(x))
    with pytest.raises(ValueError, match="captures do not nest"):
        sa.capture(s, lambda stream: sa.capture(sa.Stream(), lambda t: None))
    # Nothing was changed.
    assert x.is_valid("host") and not x.is_valid("device")
    with sa.expect_transfers(d2h=1):
        np.testing.assert_array_equal(y.host(), np.full(N, -7.0))


def test_a_host_read_of_an_array_the_graph_only_reads_is_allowed():
    s = sa.Stream()
    data = random_array(N, np.float64, seed=8)
    x, y = sa.SmartArray(data), poisoned()

    def fn(stream):
        y.copy_to_device(x, stream)
        np.testing.assert_array_equal(x.host(), data)

    g = sa.capture(s, fn)
    g.launch()
    np.testing.assert_array_equal(y.host(), data)


def test_launch_after_an_array_is_gone_raises_naming_it_and_copies_nothing():
    s = sa.Stream()
    x, arrays = sa.SmartArray(random_array(N, np.float64)), [poisoned()]
    arrays[0].label = "gone"
    g = sa.capture(s, lambda stream: arrays[0].copy_to_device(x, stream))
    arrays.clear()
    gc.collect()
    with sa.expect_transfers():
        with pytest.raises(ValueError, match="SmartArray #[0-9]+ .gone. was destroyed since "
                                             "the graph was captured"):
            g.launch()
    assert g.launches == 0


def test_copy_to_device_from_a_smartarray_is_one_device_copy():
    data = random_array((30, 20), np.float32, seed=9)
    src = sa.to_device(data)
    dst = sa.device_array((30, 20), np.float32)
    with sa.expect_transfers(d2d=1, d2d_bytes=data.nbytes):
        dst.copy_to_device(src)
    assert dst.is_valid("device") and not dst.is_valid("host")
    assert src.is_valid("host") and src.is_valid("device")
    np.testing.assert_array_equal(dst.copy_to_host(), data)
    with sa.expect_transfers():
        dst.copy_to_device(dst.reshape(30, 20))  # itself: nothing to copy
    for bad, what in [(sa.device_array((20, 30), np.float32), "shape"),
                      (sa.device_array((30, 20), np.float64), "dtype"),
                      (sa.device_array((30, 20), np.float32, order="F"), "ordered")]:
        with pytest.raises(ValueError, match=what):
            dst.copy_to_device(bad)
    with sa.expect_transfers(d2h=1):  # copy_to_host leaves the residency as it was
        np.testing.assert_array_equal(dst.copy_to_host(), data)


def test_stream_of_smartarray_is_accepted_everywhere():
    s = sa.Stream()
    assert sa.stream_handle(s) == s.handle != 0
    assert s.__cuda_stream__() == (0, s.handle)
    assert s.device == sa.get_current_device().id and s.priority == "normal"
    assert sa.Stream(priority="high").priority == "high"
    assert f"{s.handle:#x}" in repr(s)
    data = random_array(N, np.float32, seed=10)
    with sa.expect_transfers(h2d=2, d2d=1, d2h=1):
        a = sa.SmartArray(data, where="gpu", stream=s)
        b = sa.to_device(data, stream=s)
        b.copy_to_device(a, s)
        b.device_view("read", stream=s)
        token = b.prefetch_to_host(s)
    token.wait()
    sa.synchronize(s)
    s.synchronize()
    assert s.query()
    np.testing.assert_array_equal(b.copy_to_host(stream=s), data)


def test_a_destroyed_stream_is_forgotten():
    s = sa.Stream()
    handle = s.handle
    data = random_array(N, np.float64, seed=11)
    x, y = sa.SmartArray(data), poisoned()
    y.copy_to_device(x, s)  # both arrays now name the stream in their pending work
    alive = weakref.ref(s)
    del s
    assert alive() is None  # smartarray keeps no reference to its own streams
    with pytest.raises(ValueError, match=f"stream {handle:#x} is not a live stream"):
        sa.stream_handle(handle)  # no live stream has that handle any more
    np.testing.assert_array_equal(y.host(), data)
    with sa.expect_transfers(d2d=1):
        x.copy_to_device(y)


@pytest.mark.parametrize("kwargs, error, what", [
    ({"priority": "urgent"}, ValueError, "'urgent'"),
    ({"priority": 1}, ValueError, "priority must be 'normal' or 'high', not 1"),
    ({"device": 99}, ValueError, "device ordinal 99"),
    ({"device": "0"}, TypeError, "'0'"),
])
def test_bad_stream_arguments_raise_naming_them(kwargs, error, what):
    with pytest.raises(error, match=what):
        sa.Stream(**kwargs)


@pytest.mark.skipif(len(sa.gpus) < 2, reason="needs two devices (SMARTARRAY_HOST_DEVICES=2)")
def test_capture_on_a_stream_of_device_1():
    s1 = sa.Stream(device=1)
    assert s1.device == 1
    data = random_array(N, np.float64, seed=12)
    x, y = sa.SmartArray(data), sa.device_array(N, np.float64, device=1)
    g = sa.capture(s1, lambda stream: y.copy_to_device(x, stream))
    assert g.device == 1
    with sa.expect_transfers(h2d=1):
        g.launch()
    assert y.valid_devices() == [1]
    np.testing.assert_array_equal(y.host(), data)
    with pytest.raises(ValueError, match="captured on device 1"):
        g.launch(sa.Stream(device=0))


@pytest.mark.skipif(not ON_GPU, reason="Numba's CUDA target needs a GPU")
def test_numba_kernels_over_smartarrays_are_captured():
    cuda = pytest.importorskip("numba.cuda")
    if not cuda.is_available():
        pytest.skip("Numba's CUDA target sees no GPU")

    @cuda.jit
    def scale(out, x, alpha):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = alpha * x[i]

    @cuda.jit
    def add(out, x, y):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = x[i] + y[i]

    n, threads = 100_000, 256
    blocks = (n + threads - 1) // threads
    data = random_array(n, np.float32, seed=13)
    x = sa.SmartArray(data)
    y, z = sa.device_array(n, np.float32), sa.device_array(n, np.float32)
    stream = cuda.stream()

    def pipeline(s):
        scale[blocks, threads, s](y, x, np.float32(2.0))
        add[blocks, threads, s](z, y, x)

    # Eagerly first: compiles and loads the kernels (a capture cannot load a module) and makes
    # the device copies the capture binds.
    pipeline(stream)
    stream.synchronize()
    np.testing.assert_allclose(z.host(), 3 * data, rtol=1e-6)
    g = sa.capture(stream, pipeline)
    fresh = random_array(n, np.float32, seed=14)
    x.host_view("discard")[...] = fresh
    # Kernel arguments are read_write acquires: x's whole precondition is uploaded, once.
    with sa.expect_transfers(h2d=1, h2d_bytes=fresh.nbytes):
        g.launch()
    with sa.expect_transfers(d2h=1):
        np.testing.assert_allclose(z.host(), 3 * fresh, rtol=1e-6)
    with sa.expect_transfers():
        for _ in range(3):
            g.launch()
    stream.synchronize()
    with sa.expect_transfers(d2h=1):
        np.testing.assert_allclose(z.host(), 3 * fresh, rtol=1e-6)
    # A kernel launched on the default stream inside the capture is refused.
    with pytest.raises(ValueError, match="default stream inside sa::capture"):
        sa.capture(stream, lambda s: scale[blocks, threads](y, x, np.float32(2.0)))


def test_device_views_inside_a_capture_name_no_stream():
    """A CAI consumer (CuPy, Numba) synchronizes the stream that the dict names, which a captured
    stream refuses; inside a capture the dict names none."""
    from smartarray._views import cai_dict
    s = sa.Stream()
    y = poisoned()
    seen = []

    def fn(stream):
        view = y.device_view("read_write", stream=stream)
        seen.append(cai_dict(y, view.device_ctypes_pointer, False, stream.handle))

    sa.capture(s, fn)
    assert seen[0]["stream"] is None
    assert cai_dict(y, 0, False, s.handle)["stream"] == s.handle
