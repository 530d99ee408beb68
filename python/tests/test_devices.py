"""Several devices: sa.gpus, the current device, device= placement, per-device validity, peer and
staged reads, per-device counters. On the host backend the devices are emulated
(SMARTARRAY_HOST_DEVICES=N, SMARTARRAY_HOST_PEER_ACCESS=0); 2+ device tests skip on one."""
import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import smartarray as sa
from conftest import gpu_only, host_only, random_array

N = len(sa.gpus)
LAST = N - 1
two_devices = pytest.mark.skipif(N < 2, reason="needs 2+ devices (SMARTARRAY_HOST_DEVICES=2 "
                                               "emulates them on the host backend)")


@pytest.fixture(autouse=True)
def _restore_current_device():
    before = sa.get_current_device().id
    yield
    sa.select_device(before)


def _cross_read(nbytes, to=0, owner=1):
    """expect_transfers() keywords of a whole-array read on `to` of data only `owner` holds."""
    if sa.gpus[to].can_access_peer(owner):
        return {"d2d_peer": 1, "d2d_peer_bytes": nbytes}
    return {"h2d": 1, "d2h": 1, "staged": 1, "staged_bytes": nbytes}


def _only_on(device, src):
    """A SmartArray whose only valid copy is device `device`'s, holding `src` ("a kernel" wrote it)."""
    a = sa.device_array(src.shape, src.dtype, device=device)
    with sa.gpus[device]:
        a.device_view("discard").emulated_ndarray()[...] = src
        a.gpu_changed()
    return a


# --- any device count ----------------------------------------------------------------------------

def test_gpus_lists_every_device():
    """len(gpus) == device_count(); gpus[i].id == i; iteration yields them in order."""
    assert N == sa.device_count() >= 1
    assert [d.id for d in sa.gpus] == list(range(N))
    for i in range(N):
        d = sa.gpus[i]
        assert d.id == i and d == sa.Device(i) and isinstance(d.name, str) and d.name
        cc = d.compute_capability
        assert len(cc) == 2 and all(isinstance(v, int) for v in cc)


def test_device_context_manager_restores_the_current_device():
    """with gpus[i]: i is current; the previous one is back after it, also after an exception."""
    assert sa.select_device(0).id == 0 and sa.get_current_device().id == 0
    with sa.gpus[LAST] as d:
        assert d.id == LAST and sa.get_current_device().id == LAST
        with sa.gpus[0]:
            assert sa.get_current_device().id == 0
        assert sa.get_current_device().id == LAST
    assert sa.get_current_device().id == 0
    with pytest.raises(KeyError):
        with sa.gpus[LAST]:
            raise KeyError("inside")
    assert sa.get_current_device().id == 0


def _in_threads(*bodies, timeout=60):
    """Runs each body in its own thread (the barriers it waits on order them); re-raises the
    first error of any."""
    errors = []

    def run(body):
        try:
            body()
        except BaseException as error:  # noqa: BLE001 - reported by the test's thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(body,)) for body in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    if errors:
        raise errors[0]


@two_devices
@pytest.mark.parametrize("shared_id", [0, 1])
def test_one_device_object_entered_by_two_threads(shared_id):
    """Thread A (device 0 current) and thread B (device 1 current) enter the same Device object;
    A leaves while B is still inside, then B leaves: each gets its own previous device back (the
    previous devices were once kept in one list per object, so A got B's and B got A's)."""
    shared = sa.gpus[shared_id]
    step = threading.Barrier(2, timeout=30)
    seen = {}

    def thread_a():
        sa.select_device(0)
        with shared:
            seen["a inside"] = sa.get_current_device().id
            step.wait()  # 1: A is inside
            step.wait()  # 2: B is inside
        seen["a after"] = sa.get_current_device().id
        step.wait()  # 3: A has left

    def thread_b():
        sa.select_device(1)
        step.wait()  # 1
        with shared:
            seen["b inside"] = sa.get_current_device().id
            step.wait()  # 2
            step.wait()  # 3
            seen["b before leaving"] = sa.get_current_device().id
        seen["b after"] = sa.get_current_device().id

    _in_threads(thread_a, thread_b)
    assert seen == {"a inside": shared_id, "b inside": shared_id, "a after": 0,
                    "b before leaving": shared_id, "b after": 1}


def test_one_device_object_nested_in_one_thread():
    """Entering the same Device object twice in one thread restores each level's device."""
    shared = sa.gpus[0]
    sa.select_device(LAST)
    with shared:
        sa.select_device(LAST)
        with shared:
            assert sa.get_current_device().id == 0
        assert sa.get_current_device().id == LAST
        sa.select_device(0)
    assert sa.get_current_device().id == LAST


_BAD_ORDINAL_CALLS = {
    "gpus[]": lambda o: sa.gpus[o],
    "Device": lambda o: sa.Device(o),
    "select_device": lambda o: sa.select_device(o),
    "SmartArray(device=)": lambda o: sa.SmartArray(np.ones(3), where="gpu", device=o),
    "to_device": lambda o: sa.to_device(np.ones(3), device=o),
    "device_array": lambda o: sa.device_array(3, device=o),
    "device_array_like": lambda o: sa.device_array_like(np.ones(3), device=o),
    "copy_to_device": lambda o: sa.SmartArray(np.ones(3)).copy_to_device(np.ones(3), device=o),
    "is_valid": lambda o: sa.SmartArray(np.ones(3)).is_valid("device", device=o),
    "device_transfer_stats": lambda o: sa.device_transfer_stats(o),
    "can_access_peer": lambda o: sa.gpus[0].can_access_peer(o),
    "device_name": lambda o: sa.device_name(o),
    "device_memory_stats": lambda o: sa.device_memory_stats(o),
    "device_budget": lambda o: sa.device_budget(o),
    "set_device_budget": lambda o: sa.set_device_budget(sa.device_budget(0) + 4096, device=o),
}
#: The calls where None is no ordinal (elsewhere None means the current device).
_NONE_IS_NO_ORDINAL = ["gpus[]", "Device", "select_device", "device_transfer_stats",
                       "can_access_peer"]


def _devices_state():
    """What a rejected ordinal must leave as it was: the current device, each device's budget
    and copy counts, the process-wide copy counts (not the pools' allocations: a call of the table
    may make an array on the host before it gets to the ordinal)."""
    def copies(stats):
        return {k: v for k, v in stats.items() if not k.startswith("allocation_")}

    return (sa.get_current_device().id, [sa.device_budget(i) for i in range(N)],
            [copies(sa.device_transfer_stats(i)) for i in range(N)], copies(sa.transfer_stats()))


@pytest.mark.parametrize("call", list(_BAD_ORDINAL_CALLS), ids=str)
@pytest.mark.parametrize("ordinal", [
    N, N + 7, -1, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**63 - 1, 2**63, -2**63, -2**63 - 1,
    2**64, 10**30, -10**30, np.int64(N), np.uint64(2**64 - 1), np.int32(-1), np.int8(-128)],
    ids=repr)
def test_out_of_range_ordinal_raises_value_error(call, ordinal):
    """ValueError naming the ordinal and the device count, for any int however large and for
    NumPy integers, before any C++ call narrows it; nothing copied or changed."""
    before = _devices_state()
    with pytest.raises(ValueError, match=rf"ordinal {ordinal}\b.* has {N} device"):
        _BAD_ORDINAL_CALLS[call](ordinal)
    assert _devices_state() == before


def test_dlpack_dl_device_out_of_range():
    """dl_device=(2, n): ValueError naming n and the count on a GPU; BufferError on the host."""
    a = sa.SmartArray(random_array(4, np.float32))
    if sa.backend() == "cuda":
        for ordinal in (N, 2**31, -2**63 - 1):
            with pytest.raises(ValueError, match=rf"ordinal {ordinal}\b.* has {N} device"):
                a.__dlpack__(dl_device=(2, ordinal), stream=1)
    else:
        for ordinal in (0, N):
            with pytest.raises(BufferError):
                a.__dlpack__(dl_device=(2, ordinal))


_NOT_INTEGERS = [True, False, np.True_, "0", 1.5, np.float64(0.0), 1j, b"0", None]


@pytest.mark.parametrize("call, ordinal", [
    (call, ordinal) for call in _BAD_ORDINAL_CALLS for ordinal in _NOT_INTEGERS
    if ordinal is not None or call in _NONE_IS_NO_ORDINAL], ids=repr)
def test_an_ordinal_that_is_no_integer_raises_type_error(call, ordinal):
    """A bool, a str, a float (also a whole one), or None where it does not mean the current
    device, is no device ordinal: TypeError naming it; nothing changed."""
    before = _devices_state()
    with pytest.raises(TypeError, match=re.escape(repr(ordinal))):
        _BAD_ORDINAL_CALLS[call](ordinal)
    assert _devices_state() == before


@pytest.mark.parametrize("kind", [np.int8, np.uint8, np.int32, np.int64, np.uint64])
def test_numpy_integers_are_ordinals(kind):
    """Every ordinal path takes a NumPy integer as the int of the same value."""
    last = kind(LAST)
    assert sa.gpus[last].id == LAST and sa.gpus[last] == sa.gpus[LAST]
    assert type(sa.Device(last).id) is int
    assert sa.select_device(last).id == LAST and sa.get_current_device().id == LAST
    sa.select_device(0)
    src = random_array(7, np.float32)
    with sa.expect_transfers(h2d=1, h2d_bytes=src.nbytes):
        a = sa.to_device(src, device=last)
    assert a.valid_devices() == [LAST] and a.is_valid("device", device=last)
    assert sa.device_transfer_stats(last) == sa.device_transfer_stats(LAST)
    assert sa.device_budget(last) == sa.device_budget(LAST)
    assert sa.device_memory_stats(last)["peak_bytes"] == \
        sa.device_memory_stats(LAST)["peak_bytes"]
    assert sa.device_name(last) == sa.gpus[LAST].name
    assert sa.gpus[0].can_access_peer(last) == sa.gpus[0].can_access_peer(LAST)


def test_is_valid_host_takes_no_device():
    """is_valid('host', device=0) raises ValueError: the host copy is on no device."""
    with pytest.raises(ValueError):
        sa.SmartArray(np.ones(3)).is_valid("host", device=0)


@pytest.mark.parametrize("make", ["to_device", "SmartArray"])
def test_upload_to_the_last_device(make):
    """to_device / SmartArray(where='gpu') with device=last: one H2D, counted on that device;
    valid on the host and on that device only."""
    src = random_array((6, 5), np.int32)
    per_device = [sa.device_transfer_stats(i)["h2d_count"] for i in range(N)]
    with sa.expect_transfers(h2d=1, h2d_bytes=src.nbytes):
        if make == "to_device":
            a = sa.to_device(src, device=LAST)
        else:
            a = sa.SmartArray(src, where="gpu", device=sa.gpus[LAST])
    assert a.valid_devices() == [LAST] and a.is_valid("host")
    assert a.is_valid("device", device=LAST)
    assert [sa.device_transfer_stats(i)["h2d_count"] - per_device[i] for i in range(N)] == \
        [int(i == LAST) for i in range(N)]
    with sa.expect_transfers():
        np.testing.assert_array_equal(a.copy_to_host(), src)


def test_device_array_is_valid_on_its_device_only():
    """device_array / device_array_like(device=last): nothing copied; valid there only."""
    with sa.expect_transfers():
        a = sa.device_array((4, 3), np.float32, order="F", device=LAST)
        b = sa.device_array_like(a, device=LAST)
    for x in (a, b):
        assert x.valid_devices() == [LAST] and not x.is_valid("host")
    assert b.strides == a.strides == (4, 16)


def test_default_device_is_the_current_one():
    """Without device=, the data goes to the current device."""
    with sa.gpus[LAST], sa.expect_transfers(h2d=1):
        a = sa.to_device(random_array(10, np.float64))
        assert a.is_valid("device") and a.valid_devices() == [LAST]


def test_copy_to_device_on_the_last_device():
    """copy_to_device(device=last) into a device array: one H2D; the host and that device valid."""
    src = random_array(100, np.float64)
    a = sa.device_array(100, np.float64, device=LAST)
    with sa.expect_transfers(h2d=1, h2d_bytes=src.nbytes):
        a.copy_to_device(src, device=LAST)
    assert a.is_valid("host") and a.valid_devices() == [LAST]
    np.testing.assert_array_equal(a.copy_to_host(), src)


@host_only
def test_dlpack_device_on_the_host_backend():
    """__dlpack_device__() is (kDLCPU, 0) on the host backend, whatever device is current."""
    a = sa.to_device(random_array(3, np.float32), device=LAST)
    with sa.gpus[LAST]:
        assert a.__dlpack_device__() == (1, 0)


# --- regressions ---------------------------------------------------------------------------------

def test_first_use_of_every_device():
    """Regression (crash on multi-GPU machines): in a fresh process, the first use of each device
    works and is one H2D, counted on that device."""
    script = textwrap.dedent("""
        import numpy as np, smartarray as sa
        x = np.arange(1, 1001, dtype=np.float64)
        for d in sa.gpus:
            before = sa.device_transfer_stats(d)["h2d_count"]
            with sa.expect_transfers(h2d=1, h2d_bytes=x.nbytes):
                a = sa.to_device(x, device=d)
            assert a.valid_devices() == [d.id], a.valid_devices()
            assert sa.device_transfer_stats(d)["h2d_count"] == before + 1
            np.testing.assert_array_equal(a.copy_to_host(), x)
        print("ok", len(sa.gpus))
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-2:] == ["ok", str(N)]


def test_error_message_with_a_number():
    """Regression (the extension crashed formatting numbers in messages): a huge allocation raises
    MemoryError whose message names the byte count."""
    with pytest.raises(MemoryError, match="1125899906842624"):
        sa.SmartArray(shape=2 ** 50, dtype=np.uint8)


# --- copy_to_device atomicity --------------------------------------------------------------------

@host_only
@pytest.mark.parametrize("bad", [np.array(["x", "y", "z", "w"]), np.full(4, 1 + 2j)],
                         ids=["str", "complex"])
def test_copy_to_device_of_an_uncastable_source_changes_nothing(bad):
    """TypeError; contents, validity and counts as before, also when the device copy (of the last
    device) was the only valid one."""
    src = random_array(4, np.float64)
    a = _only_on(LAST, src)
    with sa.expect_transfers():
        with pytest.raises(TypeError):
            a.copy_to_device(bad, device=LAST)
        with pytest.raises(TypeError):
            with sa.gpus[LAST]:
                a.copy_to_device(bad)
    assert not a.is_valid("host") and a.valid_devices() == [LAST]
    with sa.gpus[LAST], sa.expect_transfers():
        np.testing.assert_array_equal(a.device_view("read").emulated_ndarray(), src)
    poison = np.full(4, -1.0)
    with sa.expect_transfers(d2h=1, array=a):
        a.copy_to_host(poison)
    np.testing.assert_array_equal(poison, src)


# --- two devices ---------------------------------------------------------------------------------

@two_devices
def test_can_access_peer():
    """can_access_peer takes an ordinal or a Device; on the host backend it follows
    SMARTARRAY_HOST_PEER_ACCESS (default: on)."""
    import os
    peer = sa.gpus[0].can_access_peer(1)
    assert peer == sa.gpus[0].can_access_peer(sa.gpus[1]) and isinstance(peer, bool)
    if sa.backend() == "host":
        assert peer == (os.environ.get("SMARTARRAY_HOST_PEER_ACCESS", "1") != "0")


@host_only
@two_devices
def test_read_on_device_0_of_data_only_device_1_holds():
    """A read on the current device (0) of an array made on device 1: one peer copy, or one staged
    read (then the host holds it too, and a host read copies nothing); counted on device 0."""
    src = random_array((50, 4), np.float32)
    a = _only_on(1, src)
    expected = _cross_read(src.nbytes)
    before = [sa.device_transfer_stats(i) for i in range(2)]
    with sa.gpus[0]:
        with sa.expect_transfers(**expected):
            v = a.device_view("read")
        np.testing.assert_array_equal(v.emulated_ndarray(), src)
    after = [sa.device_transfer_stats(i) for i in range(2)]
    assert a.valid_devices() == [0, 1]
    kind = "d2d_peer_count" if "d2d_peer" in expected else "staged_count"
    assert after[0][kind] - before[0][kind] == 1 and after[1][kind] == before[1][kind]
    if kind == "staged_count":
        assert after[1]["d2h_count"] - before[1]["d2h_count"] == 1  # the D2H: where it came from
        assert a.is_valid("host")
        with sa.expect_transfers():
            np.testing.assert_array_equal(a.host_view("read"), src)


@host_only
@two_devices
def test_write_on_one_device_makes_the_others_stale():
    """After reads on both devices, a write on device 1 leaves device 1 the only valid copy."""
    src = random_array(64, np.int16)
    a = sa.to_device(src, device=0)
    with sa.gpus[1]:
        a.device_view("read")
    assert a.valid_devices() == [0, 1] and a.is_valid("host")
    with sa.gpus[1], sa.expect_transfers():
        a.device_view("read_write").emulated_ndarray()[...] = 7
        a.gpu_changed()
    assert a.valid_devices() == [1] and not a.is_valid("host")
    assert not a.is_valid("device", device=0)
    with sa.gpus[0], sa.expect_transfers(**_cross_read(src.nbytes, to=0, owner=1)):
        assert (a.device_view("read").emulated_ndarray() == 7).all()


# --- GPU machine: CuPy and PyTorch producers on GPU 1 ---------------------------------------------

def _ptr(view):
    return view.__cuda_array_interface__["data"][0]


@gpu_only
@two_devices
def test_cupy_array_on_gpu_1_is_imported_without_a_copy():
    """asarray of a CuPy array on GPU 1: the same pointer, valid on device 1 only; a read on
    device 0 is one peer copy (or staged) with the right data."""
    cupy = pytest.importorskip("cupy")
    src = random_array(1 << 16, np.float32)
    with cupy.cuda.Device(1):
        c = cupy.asarray(src)
    with sa.expect_transfers():
        a = sa.asarray(c)
        with sa.gpus[1]:
            assert _ptr(a.device_view("read")) == c.data.ptr
    assert a.valid_devices() == [1] and not a.is_valid("host")
    with sa.gpus[0], sa.expect_transfers(**_cross_read(src.nbytes)):
        v = a.device_view("read")
    with cupy.cuda.Device(0):
        np.testing.assert_array_equal(cupy.asarray(v).get(), src)


@gpu_only
@two_devices
def test_torch_tensor_on_gpu_1_imports_and_exports_by_device():
    """asarray of a tensor on cuda:1 is zero-copy and valid on 1 only; __dlpack_device__ names
    the current device; dl_device=(2, 0) exports device 0's copy to torch, with the right data."""
    torch = pytest.importorskip("torch")
    src = random_array((64, 32), np.float32)
    t = torch.as_tensor(src, device="cuda:1")
    a = sa.asarray(t)
    with sa.gpus[1]:
        assert _ptr(a.device_view("read")) == t.data_ptr()
        assert a.__dlpack_device__() == (2, 1)
    assert a.valid_devices() == [1] and not a.is_valid("host")
    with sa.gpus[1], sa.expect_transfers(**_cross_read(src.nbytes)):
        u = torch.from_dlpack(a.__dlpack__(dl_device=(2, 0), stream=1))
    assert u.device == torch.device("cuda:0")
    np.testing.assert_array_equal(u.cpu().numpy(), src)


@gpu_only
@two_devices
@pytest.mark.parametrize("lib", ["torch", "cupy"])
def test_to_device_1_pointer_agrees_with_the_consumer(lib):
    """to_device(device=1): its CAI pointer under gpus[1] is what torch / CuPy see, same data."""
    mod = pytest.importorskip(lib)
    src = random_array(1000, np.float64)
    a = sa.to_device(src, device=1)
    with sa.gpus[1]:
        ptr = a.__cuda_array_interface__["data"][0]
        if lib == "torch":
            t = mod.as_tensor(a, device="cuda:1")
            got, data = t.data_ptr(), t.cpu().numpy()
        else:
            with mod.cuda.Device(1):
                c = mod.asarray(a)
                got, data = c.data.ptr, c.get()
    assert got == ptr and a.valid_devices() == [1]
    np.testing.assert_array_equal(data, src)
