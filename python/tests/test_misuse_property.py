"""The misuse-aware property test of the Python layer: random sequences of valid calls on three
arrays, checked against a NumPy model, with random invalid calls interleaved (a bad dtype, shape,
index, stream, access name; a device ordinal out of range, huge or of NumPy's, or no integer, on
any call that takes one; a bad device budget; bad expect_transfers() arguments). Each invalid
call must raise the error NumPy would raise, naming the bad value, and change nothing: the
array's validity, transfer counts and contents, the process-wide counts, the current device and
every device's budget are what they were before it.

SMARTARRAY_MISUSE_OPS sets the number of operations (default 200,000, in sequences of 200) and
SMARTARRAY_MISUSE_SEED the seed; a divergence names the seed, the sequence and its operations."""
import os

import numpy as np
import pytest

import smartarray as sa

OPERATIONS = int(os.environ.get("SMARTARRAY_MISUSE_OPS", "200000"))
SEED = int(os.environ.get("SMARTARRAY_MISUSE_SEED", "20261127"))
PER_SEQUENCE = 200
DTYPES = [np.float64, np.float32, np.int32, np.uint8, np.complex64]

#: Calls that take a device ordinal: (what, call(array, model, ordinal)).
ORDINAL_CALLS = [
    ("SmartArray(device=)", lambda a, m, o: sa.SmartArray(m, where="gpu", device=o)),
    ("is_valid", lambda a, m, o: a.is_valid("device", device=o)),
    ("copy_to_device", lambda a, m, o: a.copy_to_device(m, device=o)),
    ("device_array_like", lambda a, m, o: sa.device_array_like(m, device=o)),
    ("select_device", lambda a, m, o: sa.select_device(o)),
    ("gpus[]", lambda a, m, o: sa.gpus[o]),
    ("device_transfer_stats", lambda a, m, o: sa.device_transfer_stats(o)),
    ("device_budget", lambda a, m, o: sa.device_budget(o)),
    ("set_device_budget", lambda a, m, o: sa.set_device_budget(sa.device_budget(0), device=o)),
    ("device_memory_stats", lambda a, m, o: sa.device_memory_stats(o)),
]
HUGE = [2**31, -2**31 - 1, 2**63, -2**63 - 1, 2**64, 10**30]
NOT_INTEGERS = [1.5, np.float64(1.0), "1", True, False, np.True_, b"0"]
COUNT_KEYWORDS = ["h2d", "d2h", "d2d", "d2d_peer", "staged", "h2d_bytes", "d2h_bytes",
                  "d2d_bytes", "d2d_peer_bytes", "staged_bytes"]


class Divergence(AssertionError):
    pass


class Sequence:
    """Three arrays and their NumPy models, driven by one random generator."""

    def __init__(self, rng, log):
        self.rng = rng
        self.log = log
        self.arrays = []
        self.models = []
        self.misuses = 0
        for _ in range(3):
            self.new_array(len(self.arrays))

    # --- helpers ---------------------------------------------------------------------------------

    def values(self, dtype, n):
        """Random non-zero values of `dtype`."""
        dt = np.dtype(dtype)
        if dt.kind in "iu":
            return self.rng.integers(1, 100, size=n).astype(dt)
        if dt.kind == "c":
            return (self.rng.random(n) + 0.5 + 1j * self.rng.random(n)).astype(dt)
        return (self.rng.random(n) + 0.5).astype(dt)

    def new_array(self, slot):
        dtype = DTYPES[self.rng.integers(len(DTYPES))]
        n = int(self.rng.integers(1, 64))
        values = self.values(dtype, n)
        where = "gpu" if self.rng.integers(2) else "host"
        device = int(self.rng.integers(sa.device_count()))
        self.log.append(f"a{slot} = SmartArray({n} x {np.dtype(dtype)}, where={where}, "
                        f"device={device})")
        array = sa.SmartArray(values, where=where, device=device)
        if slot == len(self.arrays):
            self.arrays.append(array)
            self.models.append(values.copy())
        else:
            self.arrays[slot] = array
            self.models[slot] = values.copy()

    @staticmethod
    def state(a):
        """What a misuse must leave as it was: the array's validity and counts, the process-wide
        counts, the current device, every device's budget."""
        return (a.is_valid("host"), a.valid_devices(), a.transfer_stats(), sa.transfer_stats(),
                sa.get_current_device().id, [sa.device_budget(d) for d in range(sa.device_count())])

    def bad_ordinal(self):
        """An int or NumPy integer that no device has: just past the count, negative, huge."""
        count, k = sa.device_count(), int(self.rng.integers(5))
        form = int(self.rng.integers(4))
        if form == 0:
            return count + k
        if form == 1:
            return -1 - k
        if form == 2:
            return HUGE[int(self.rng.integers(len(HUGE)))]
        kind = (np.int8, np.int32, np.int64, np.uint64)[int(self.rng.integers(4))]
        return kind(count + k) if self.rng.integers(2) or kind is np.uint64 else kind(-1 - k)

    def pick(self, items):
        return items[int(self.rng.integers(len(items)))]

    def check(self, slot, when):
        got = self.arrays[slot].copy_to_host()
        if not np.array_equal(got, self.models[slot]):
            raise Divergence(f"a{slot}: contents differ from the model {when}")

    # --- valid calls -----------------------------------------------------------------------------

    def valid(self, slot):
        a, model = self.arrays[slot], self.models[slot]
        n = model.size
        form = int(self.rng.integers(7))
        if form == 0:
            i = int(self.rng.integers(n))
            v = self.values(model.dtype, 1)[0]
            self.log.append(f"a{slot}[{i}] = {v}")
            a[i] = v
            model[i] = v
        elif form == 1:
            i, j = sorted(int(k) for k in self.rng.integers(0, n + 1, size=2))
            v = self.values(model.dtype, j - i)
            self.log.append(f"a{slot}[{i}:{j}] = ...")
            a[i:j] = v
            model[i:j] = v
        elif form == 2:
            v = self.values(model.dtype, n)
            device = int(self.rng.integers(sa.device_count()))
            self.log.append(f"a{slot}.copy_to_device(..., device={device})")
            a.copy_to_device(v, device=device)
            model[:] = v
        elif form == 3:
            access = ("read", "read_write")[int(self.rng.integers(2))]
            self.log.append(f"a{slot}.device_view({access!r})")
            a.device_view(access)
        elif form == 4:
            self.log.append(f"a{slot}.host()")
            if not np.array_equal(a.host(), model):
                raise Divergence(f"a{slot}.host() differs from the model")
        elif form == 5:
            self.log.append(f"np.asarray(a{slot})")
            if not np.array_equal(np.asarray(a), model):
                raise Divergence(f"np.asarray(a{slot}) differs from the model")
        else:
            self.new_array(slot)

    # --- invalid calls ---------------------------------------------------------------------------

    def misuse(self, slot):
        """One call with one bad argument: (error type, what its message must name, the call)."""
        a, model = self.arrays[slot], self.models[slot]
        n = model.size
        count = sa.device_count()
        strings = np.array(["w"] * n)
        what, ordinal_call = self.pick(ORDINAL_CALLS)
        bad_device, not_ordinal = self.bad_ordinal(), self.pick(NOT_INTEGERS)
        device = int(self.rng.integers(count))
        too_big = (1 << 60) + int(self.rng.integers(1, 1 << 40))
        budget_type, budget_value = self.pick(NOT_INTEGERS + [1e30, "1000"]), self.pick(
            [-1 - int(self.rng.integers(1 << 40)), too_big, 2**64, np.int64(-4096)])
        keyword = self.pick(COUNT_KEYWORDS)
        count_type = self.pick(NOT_INTEGERS + ([None] if not keyword.endswith("_bytes") else []))
        count_value = self.pick([-1 - int(self.rng.integers(100)), np.int32(-7), -(2**70)])
        cases = [  # (error, what its message names, what the call is, the call)
            (TypeError, "<U1", "copy_to_device(strings)", lambda: a.copy_to_device(strings)),
            (ValueError, "shape", "copy_to_device(n + 1 values)",
             lambda: a.copy_to_device(self.values(model.dtype, n + 1))),
            (ValueError, "abc", "a[0] = 'abc'", lambda: a.__setitem__(0, "abc")),
            (IndexError, str(n), f"a[{n}] = 1", lambda: a.__setitem__(n, 1)),
            (IndexError, str(n + 3), f"a[{n + 3}]", lambda: a[n + 3]),
            (ValueError, (f"ordinal {bad_device} ", f"has {count} device"),
             f"{what} with {bad_device!r}", lambda: ordinal_call(a, model, bad_device)),
            (TypeError, repr(not_ordinal), f"{what} with {not_ordinal!r}",
             lambda: ordinal_call(a, model, not_ordinal)),
            (TypeError, ("nbytes", repr(budget_type)),
             f"set_device_budget({budget_type!r}, device={device})",
             lambda: sa.set_device_budget(budget_type, device=device)),
            (ValueError, ("nbytes", str(budget_value)),
             f"set_device_budget({budget_value!r}, device={device})",
             lambda: sa.set_device_budget(budget_value, device=device)),
            (TypeError, (keyword, repr(count_type)), f"expect_transfers({keyword}={count_type!r})",
             lambda: sa.expect_transfers(**{keyword: count_type})),
            (ValueError, (keyword, str(count_value)),
             f"expect_transfers({keyword}={count_value!r})",
             lambda: sa.expect_transfers(**{keyword: count_value})),
            (TypeError, ("array", "SmartArray", repr(n)), f"expect_transfers(array={n})",
             lambda: sa.expect_transfers(array=n)),
            (ValueError, "bogus", "host_view('bogus')", lambda: a.host_view("bogus")),
            (ValueError, "bogus", "device_view('bogus')", lambda: a.device_view("bogus")),
            (ValueError, str(2**64), "gpu(stream=2**64)", lambda: a.gpu(stream=2**64)),
            (TypeError, "1.5", "gpu(stream=1.5)", lambda: a.gpu(stream=1.5)),
        ]
        if sa.backend() == "host":
            class Bogus:
                cuda_stream = 0x4D2
            cases.append((ValueError, "0x4d2", "gpu(stream=Bogus())",
                          lambda: a.gpu(stream=Bogus())))
        error, names, label, call = self.pick(cases)
        names = (names,) if isinstance(names, str) else names
        self.log.append(f"(misuse) a{slot}: {label}: expect {error.__name__} naming {names!r}")
        before = self.state(a)
        try:
            call()
        except error as raised:
            missing = [name for name in names if name not in str(raised)]
            if missing:
                raise Divergence(f"{error.__name__} does not name {missing}: {raised}") from None
        else:
            raise Divergence(f"a{slot}: the call did not raise {error.__name__}")
        if self.state(a) != before:
            raise Divergence(f"a{slot}: state {self.state(a)} after the misuse, {before} before")
        self.misuses += 1
        self.check(slot, "after a misuse")

    def step(self):
        slot = int(self.rng.integers(3))
        if self.rng.random() < 0.3:
            self.misuse(slot)
        else:
            self.valid(slot)


def test_invalid_calls_interleaved_with_valid_ones_change_nothing():
    operations = misuses = sequence = 0
    while operations < OPERATIONS:
        rng = np.random.default_rng([SEED, sequence])
        log = []
        run = Sequence(rng, log)
        try:
            for _ in range(min(PER_SEQUENCE, OPERATIONS - operations)):
                run.step()
            for slot in range(3):
                run.check(slot, "at the end of the sequence")
        except Exception as error:
            pytest.fail(f"seed {SEED} (SMARTARRAY_MISUSE_SEED), sequence {sequence}: "
                        f"{type(error).__name__}: {error}\noperations:\n  " + "\n  ".join(log))
        operations += min(PER_SEQUENCE, OPERATIONS - operations)
        misuses += run.misuses
        sequence += 1
    print(f"misuse property test: {sa.backend()}: {operations} operations, {misuses} misuses "
          f"rejected, 0 divergences (seed {SEED})")
