"""GPU machine only: zero-copy interop with Numba, CuPy and PyTorch (whichever is installed), with
exact transfer counts and the CAI / DLPack stream rules."""
import weakref

import numpy as np
import pytest

import smartarray as sa
from conftest import gpu_only, random_array
from smartarray import _numba

pytestmark = gpu_only
N = 1 << 20


def _ptr(dev):
    return dev.__cuda_array_interface__["data"][0]


def _counts(start):
    now = sa.transfer_stats()
    return {k: now[k] - start[k] for k in ("h2d_count", "d2h_count", "d2d_count")}


# --- Numba ---------------------------------------------------------------------------------------

@pytest.fixture
def numba_cuda():
    cuda = pytest.importorskip("numba.cuda")
    if not cuda.is_available():
        pytest.skip("Numba sees no GPU")
    return cuda


def test_cai_export_is_a_read_write_acquire(numba_cuda, monkeypatch):
    monkeypatch.setenv("SMARTARRAY_NUMBA_DEVICE_ARRAY", "0")  # DeviceArrayView, not Numba's
    a = sa.SmartArray(random_array(N, np.float32))
    start = sa.transfer_stats()
    cai = a.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (N,) and cai["typestr"] == "<f4"
    assert cai["data"][1] is False and cai["stream"] == 1 and cai["strides"] is None
    assert _counts(start) == {"h2d_count": 1, "d2h_count": 0, "d2d_count": 0}
    assert a.is_valid("gpu") and not a.is_valid("host")
    ro = a.gpu(readonly=True).__cuda_array_interface__
    assert ro["data"] == (cai["data"][0], True)
    f = sa.SmartArray(random_array((3, 5), np.float64, order="F"))
    assert f.__cuda_array_interface__["strides"] == (8, 24)


def test_numba_kernel_on_smartarrays_counts(numba_cuda):
    cuda = numba_cuda

    @cuda.jit
    def scale(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = 2 * x[i]

    src = random_array(N, np.float32)
    x = sa.SmartArray(src)
    out = sa.SmartArray(np.full(N, -1, np.float32))
    start = sa.transfer_stats()
    scale[(N + 255) // 256, 256](x.gpu(readonly=True), out)
    assert x.is_valid("host")
    np.testing.assert_array_equal(out.host(), 2 * src)
    assert _counts(start) == {"h2d_count": 2, "d2h_count": 1, "d2d_count": 0}
    d = cuda.as_cuda_array(out)
    assert d.device_ctypes_pointer.value == out.__cuda_array_interface__["data"][0]


def test_numba_vectorize_on_smartarrays(numba_cuda):
    from numba import vectorize

    @vectorize(["float64(float64, float64)"], target="cuda")
    def add(x, y):
        return x + y

    a, b = sa.SmartArray(random_array(N, np.float64, 1)), sa.SmartArray(random_array(N, np.float64, 2))
    out = sa.device_array(N, np.float64)
    start = sa.transfer_stats()
    assert add(a, b, out=out) is out
    if _numba.hooks_installed():
        # Inputs are read acquires (one H2D each, the host stays valid), out= a discard.
        assert a.is_valid("host") and a.is_valid("device") and b.is_valid("host")
        assert out.is_valid("device") and not out.is_valid("host")
        assert _counts(start) == {"h2d_count": 2, "d2h_count": 0, "d2d_count": 0}
        np.testing.assert_array_equal(out.host(), a.host() + b.host())
        assert _counts(start) == {"h2d_count": 2, "d2h_count": 1, "d2d_count": 0}
    else:  # the interface path: every CAI export is a read_write acquire
        np.testing.assert_array_equal(out.host(), a.copy_to_host() + b.copy_to_host())
        assert _counts(start) == {"h2d_count": 2, "d2h_count": 3, "d2d_count": 0}


def test_the_fast_path_is_installed_on_supported_numba(numba_cuda):
    sa.SmartArray(np.ones(4))  # array construction installs it once Numba is imported
    assert _numba.hooks_installed() == _numba.supported(numba_cuda)
    assert sa.SmartArray(np.ones((2, 3), np.float32))._numba_type_ is not None


def test_kernel_arguments_are_acquired_on_the_launch_stream(numba_cuda):
    """A kernel on another stream than the arrays': inputs read there after their upload, and
    the host read of the result waits for the kernel (no synchronize in between)."""
    cuda = numba_cuda

    @cuda.jit
    def slow_scale(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            v = x[i]
            for _ in range(200):  # long enough for a missing wait to read stale results
                v = v * 1.0001
            out[i] = v

    src = random_array(N, np.float32)
    x = sa.SmartArray(src)
    out = sa.SmartArray(np.full(N, np.nan, np.float32))
    s = cuda.stream()
    slow_scale[(N + 255) // 256, 256, s](x, out)
    got = out.host()
    expect = src.copy()
    for _ in range(200):
        expect = expect * np.float32(1.0001)
    np.testing.assert_allclose(got, expect, rtol=1e-5)
    if _numba.hooks_installed():  # read_write: the kernel may have written x too
        assert not x.is_valid("host") and x.is_valid("device")


def test_arrays_of_a_stream_launched_on_it(numba_cuda):
    from numba import vectorize
    cuda = numba_cuda

    @vectorize(["float32(float32, float32)"], target="cuda")
    def mul(x, y):
        return x * y

    s = cuda.stream()
    a = sa.to_device(random_array(N, np.float32, 3), stream=s)
    b = sa.to_device(random_array(N, np.float32, 4), stream=s)
    out = sa.device_array(N, np.float32, stream=s)
    # The interface path exports a and b read_write: copy_to_host then reads their device copies.
    with sa.expect_transfers(d2h=1 if _numba.hooks_installed() else 3):
        mul(a, b, out=out, stream=s)
        np.testing.assert_allclose(out.host(), a.copy_to_host() * b.copy_to_host(), rtol=1e-6)


def test_gpu_hands_numba_its_own_device_array(numba_cuda):
    a = sa.SmartArray(random_array(1000, np.float32))
    d = a.gpu(readonly=True)
    assert isinstance(d, numba_cuda.devicearray.DeviceNDArray)
    assert a.gpu(readonly=True) is d  # cached while the device pointer stays
    np.testing.assert_array_equal(d.copy_to_host(), a.host())
    s = numba_cuda.stream()
    assert isinstance(a.gpu(stream=s), sa.DeviceArrayView)  # other streams: CAI with the stream


def test_a_cached_numba_array_makes_no_reference_cycle(numba_cuda):
    a = sa.SmartArray(random_array(1000, np.float32))
    d = a.gpu()
    alive = weakref.ref(a)
    del a
    assert alive() is None  # freed at once, not at a GC pass: its device block is back in the pool
    np.testing.assert_array_equal(d.copy_to_host().size, 1000)  # d keeps the C++ array alive


def test_streams_nothing_refers_to_are_forgotten_before_they_are_destroyed(numba_cuda):
    from smartarray import _streams
    src = random_array(1 << 16, np.float32)
    kept = len(_streams._kept)
    for _ in range(20):
        s = numba_cuda.stream()
        a = sa.SmartArray(src, stream=s)
        a.gpu(readonly=True)  # a's device block is released on s when a goes
        del a, s
    sa.forget_unused_streams()
    assert len(_streams._kept) <= kept
    for _ in range(20):  # the pool hands out the blocks released on those streams
        b = sa.SmartArray(src)
        np.testing.assert_array_equal(b.gpu(readonly=True).copy_to_host(), src)


def test_cai_stream_is_waited_for_by_the_consumer(numba_cuda):
    cuda = numba_cuda
    s = cuda.stream()
    src = random_array(1 << 24, np.float32)
    a = sa.SmartArray(src, stream=s)  # its acquires run on s
    cai = a.__cuda_array_interface__  # the H2D is queued on s
    assert cai["stream"] == sa.stream_handle(s)
    d = cuda.as_cuda_array(a)  # Numba waits on the CAI stream (CUDA_ARRAY_INTERFACE_SYNC)
    np.testing.assert_array_equal(d.copy_to_host(), src)


def test_numba_cuda_kernel_arguments_are_cached_memory_views(numba_cuda):
    """numba-cuda's fast path: a SmartArray argument is acquired on the launch stream and handed
    over as one cuda.core StridedMemoryView per device copy, made once; steady-state launches on
    resident arrays copy nothing, and the results are exact."""
    if getattr(numba_cuda, "implementation", "Built-in") != "NVIDIA" or \
            not _numba.hooks_installed():
        pytest.skip("needs numba-cuda with the fast path (numba.cuda.implementation == 'NVIDIA')")
    from cuda.core.utils import StridedMemoryView
    cuda = numba_cuda

    @cuda.jit
    def axpy(alpha, x, y, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = alpha * x[i] + y[i]

    x, y = random_array(N, np.float32, 5), random_array(N, np.float32, 6)
    a, b = sa.to_device(x), sa.to_device(y)
    out = sa.device_array(N, np.float32)
    view = out._numba_view(1, 0)
    assert isinstance(view, StridedMemoryView) and out._numba_view(1, 0) is view
    assert view.ptr == _ptr(out.gpu()) and view.shape == (N,)
    for stream in (0, cuda.stream()):
        out.copy_to_device(np.full(N, np.nan, np.float32))  # poison
        with sa.expect_transfers(d2h=1):  # resident: only the result's read
            axpy[(N + 255) // 256, 256, stream](np.float32(3), a, b, out)
            got = out.host()
        np.testing.assert_allclose(got, 3 * x + y, rtol=1e-6)
        assert not a.is_valid("host")  # kernel arguments are read_write acquires


def test_a_kernel_rejects_a_smartarray_of_another_type_as_numba_does(numba_cuda):
    """The type comes from SmartArray._numba_type_: a kernel compiled for float32 and int32
    vectors refuses a float64 SmartArray with Numba's own error, which names the array's type.
    (A kernel of one signature is not type-checked at launch, by either target.)"""
    cuda = numba_cuda

    @cuda.jit(["void(float32[::1])", "void(int32[::1])"])
    def touch(x):
        x[0] = 1

    a = sa.SmartArray(random_array(16, np.float64))
    with pytest.raises(TypeError, match=r"array\(float64, 1d, C\)"):
        touch[1, 1](a)
    assert a.is_valid("host") and not a.is_valid("gpu")  # refused before any acquire


def test_an_unsupported_target_version_warns_once_and_takes_the_interface_path(numba_cuda,
                                                                               monkeypatch):
    sa.SmartArray(np.ones(4))  # decides the fast path for the version in use
    package, version = _numba.target_version(numba_cuda)
    monkeypatch.setitem(_numba.SUPPORTED, package, ())
    monkeypatch.setattr(_numba, "_installed", None)
    with pytest.warns(RuntimeWarning, match=f"{package} {version} is not among"):
        assert _numba.ensure_hooks() is False
    assert _numba.ensure_hooks() is False  # decided: no second warning


def test_a_default_stream_dlpack_consumer_gets_the_device_copy(numba_cuda):
    """cuda.core (numba-cuda's argument path for any DLPack object) reads __dlpack_device__, then
    calls __dlpack__(stream=None, max_version=(1, 0)) for the default stream: the protocol's
    legacy default stream, so the device copy, acquired read_write (the consumer may write it).
    NumPy passes dl_device=None and gets the host copy."""
    utils = pytest.importorskip("cuda.core.utils")
    src = random_array(N, np.float32, 7)
    a = sa.SmartArray(src)
    start = sa.transfer_stats()
    view = utils.StridedMemoryView.from_dlpack(a, stream_ptr=0)
    assert view.is_device_accessible and view.ptr == _ptr(a.gpu(readonly=True))
    assert a.is_valid("gpu") and not a.is_valid("host")
    assert _counts(start) == {"h2d_count": 1, "d2h_count": 0, "d2d_count": 0}
    x = np.from_dlpack(a)  # dl_device=None, stream None: the host copy (one D2H)
    np.testing.assert_array_equal(x, src)
    assert _counts(start) == {"h2d_count": 1, "d2h_count": 1, "d2d_count": 0}


def test_a_numba_cuda_kernel_on_any_dlpack_object_over_a_smartarray_is_correct(numba_cuda):
    """The interface path, as numba-cuda takes it for an array it has no fast path for (an object
    that only forwards the protocols): on the default stream it writes the device copy, which the
    residency then knows, so the host reads the kernel's results (not a stale copy)."""
    if getattr(numba_cuda, "implementation", "Built-in") != "NVIDIA":
        pytest.skip("numba-cuda's DLPack argument path")
    cuda = numba_cuda

    class Protocols:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    @cuda.jit
    def twice(x, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = 2 * x[i]

    src = random_array(N, np.float32, 8)
    x = sa.SmartArray(src)
    out = sa.SmartArray(np.full(N, np.nan, np.float32))
    out.gpu(readonly=True)  # valid on both sides: a write through a host pointer would leave
    # the device copy stale while still counted valid
    twice[(N + 255) // 256, 256](Protocols(x), Protocols(out))
    assert out.is_valid("gpu") and not out.is_valid("host")
    np.testing.assert_array_equal(out.host(), 2 * src)
    np.testing.assert_array_equal(out.gpu(readonly=True).copy_to_host(), 2 * src)


def test_import_numba_device_array(numba_cuda):
    cuda = numba_cuda
    src = random_array((64, 32), np.int32)
    d = cuda.to_device(src)
    start = sa.transfer_stats()
    a = sa.asarray(d)
    assert a.is_valid("gpu") and not a.is_valid("host")
    assert a.__cuda_array_interface__["data"][0] == d.device_ctypes_pointer.value  # no copy
    np.testing.assert_array_equal(a.host(), src)
    assert _counts(start) == {"h2d_count": 0, "d2h_count": 1, "d2d_count": 0}


# --- CuPy ----------------------------------------------------------------------------------------

@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


def test_cupy_asarray_and_from_dlpack(cp):
    src = random_array(N, np.float32)
    a = sa.SmartArray(src)
    c = cp.asarray(a)  # CAI: read_write acquire, one H2D
    assert c.data.ptr == _ptr(a.gpu())
    c *= 3
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal(a.host(), 3 * src)
    b = sa.SmartArray(src)
    start = sa.transfer_stats()
    d = cp.from_dlpack(b)  # stream given: the device copy
    assert _counts(start) == {"h2d_count": 1, "d2h_count": 0, "d2d_count": 0}
    np.testing.assert_array_equal(cp.asnumpy(d), src)


def test_smartarray_from_cupy_is_zero_copy(cp):
    c = cp.arange(1000, dtype=cp.float64) + 1
    a = sa.from_dlpack(c)
    assert _ptr(a.gpu()) == c.data.ptr
    assert a.is_valid("gpu") and not a.is_valid("host")
    np.testing.assert_array_equal(a.host(), np.arange(1000) + 1.0)
    c2 = cp.ones((10, 4), order="F", dtype=cp.complex64)
    b = sa.asarray(c2)
    assert b.strides == (8, 80)


def test_dlpack_stream_handoff_with_cupy(cp):
    s = cp.cuda.Stream(non_blocking=True)
    src = random_array(1 << 24, np.float32)
    a = sa.SmartArray(src)
    with s:
        d = cp.from_dlpack(a)  # CuPy passes s: the H2D is queued on s, CuPy's work follows it
        total = float(d.sum())
    assert total == pytest.approx(float(src.astype(np.float64).sum()), rel=1e-3)


# --- PyTorch -------------------------------------------------------------------------------------

@pytest.fixture
def torch():
    t = pytest.importorskip("torch")
    if not t.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    return t


def test_torch_as_tensor_and_from_dlpack(torch):
    src = random_array((128, 64), np.float32)
    a = sa.SmartArray(src)
    t = torch.as_tensor(a, device="cuda")  # CAI
    assert t.data_ptr() == _ptr(a.gpu())
    t.add_(1)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(a.host(), src + 1)
    b = sa.SmartArray(src)
    u = torch.from_dlpack(b)
    assert u.is_cuda and u.data_ptr() == _ptr(b.gpu())
    back = sa.from_dlpack(torch.arange(10, device="cuda", dtype=torch.int64))
    np.testing.assert_array_equal(back.host(), np.arange(10))


def test_torch_stream_is_accepted(torch):
    s = torch.cuda.Stream()
    a = sa.SmartArray(random_array(1000, np.float32), stream=s)
    assert a.stream == s.cuda_stream
    with torch.cuda.stream(s):
        t = torch.from_dlpack(a)
        t.mul_(2)
    s.synchronize()
    a.gpu_changed(s)
    assert (a.host() > 0).all()


def test_numpy_from_dlpack_gets_host_data_after_device_writes(cp):
    a = sa.SmartArray(random_array(1000, np.float32))
    cp.asarray(a)[...] = 5  # through CAI: the host copy went stale
    cp.cuda.Device().synchronize()
    x = np.from_dlpack(a)  # stream None: the host copy, made valid (one D2H)
    assert (x == 5).all() and a.is_valid("host")
