"""The misuse-aware property test of the Python layer: random sequences of valid calls on three
arrays, checked against a NumPy model, with random invalid calls interleaved (a bad dtype, shape,
index, stream, device ordinal or access name). Each invalid call must raise the error NumPy would
raise, naming the bad value, and change nothing: the validity, the transfer counts and the
contents are what they were before it.

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
        return (a.is_valid("host"), a.valid_devices(), a.transfer_stats())

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
        bad_device = count + int(self.rng.integers(5)) if self.rng.integers(2) else -1
        strings = np.array(["w"] * n)
        cases = [
            (TypeError, "<U1", lambda: a.copy_to_device(strings)),
            (ValueError, "shape", lambda: a.copy_to_device(self.values(model.dtype, n + 1))),
            (ValueError, "abc", lambda: a.__setitem__(0, "abc")),
            (IndexError, str(n), lambda: a.__setitem__(n, 1)),
            (IndexError, str(n + 3), lambda: a[n + 3]),
            (ValueError, str(bad_device), lambda: sa.SmartArray(model, device=bad_device)),
            (ValueError, str(bad_device), lambda: a.is_valid("device", device=bad_device)),
            (ValueError, str(bad_device), lambda: a.copy_to_device(model, device=bad_device)),
            (ValueError, "bogus", lambda: a.host_view("bogus")),
            (ValueError, "bogus", lambda: a.device_view("bogus")),
            (ValueError, str(2**64), lambda: a.gpu(stream=2**64)),
            (TypeError, "1.5", lambda: a.gpu(stream=1.5)),
        ]
        if sa.backend() == "host":
            class Bogus:
                cuda_stream = 0x4D2
            cases.append((ValueError, "0x4d2", lambda: a.gpu(stream=Bogus())))
        error, names, call = cases[int(self.rng.integers(len(cases)))]
        self.log.append(f"(misuse) a{slot}: expect {error.__name__} naming {names!r}")
        before = self.state(a)
        try:
            call()
        except error as raised:
            if names not in str(raised):
                raise Divergence(f"{error.__name__} does not name {names!r}: {raised}") from None
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
