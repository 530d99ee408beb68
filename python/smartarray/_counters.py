"""The process-wide transfer counters, and expect_transfers(), C++'s ExpectTransfers."""
import contextlib

from . import _ext
from ._arguments import non_negative_int
from ._array import SmartArray


def transfer_stats():
    """The process-wide transfer counters (a dict: h2d_count, h2d_bytes, d2h_count, d2h_bytes,
    d2d_count, d2d_bytes, d2d_peer_count, d2d_peer_bytes, staged_count, staged_bytes,
    prefetch_*, allocation_*, sent_*, received_*, wait_count): a peer copy (device to device
    across devices) counts as d2d_peer, a read across devices without peer access as one D2H, one
    H2D and one staged; sent_* and received_* count the messages of the C++ distributed layer
    (docs/distributed.md) in this process."""
    return _ext._global_transfer_stats()


class TransferMismatch(AssertionError):
    """An expect_transfers() block made other transfers than expected."""


def expect_transfers(h2d=0, d2h=0, d2d=0, *, d2d_peer=0, staged=0, h2d_bytes=None,
                     d2h_bytes=None, d2d_bytes=None, d2d_peer_bytes=None, staged_bytes=None,
                     array=None):
    """C++'s ExpectTransfers: the block must make exactly these copies (process-wide, or of
    `array`'s own counters); bytes are checked when given. Raises TransferMismatch naming the
    observed counts. Yields a callable that returns the counts observed so far.

    Each count is a non-negative int (or NumPy integer), each byte count one or None (not
    checked), `array` a SmartArray or None: anything else raises TypeError or ValueError naming
    the keyword and the value, at the call."""
    counts = {"h2d": h2d, "d2h": d2h, "d2d": d2d, "d2d_peer": d2d_peer, "staged": staged}
    expected = {f"{name}_count": non_negative_int(value, f"expect_transfers: {name}")
                for name, value in counts.items()}
    byte_counts = {"h2d_bytes": h2d_bytes, "d2h_bytes": d2h_bytes, "d2d_bytes": d2d_bytes,
                   "d2d_peer_bytes": d2d_peer_bytes, "staged_bytes": staged_bytes}
    expected.update({name: non_negative_int(value, f"expect_transfers: {name}")
                     for name, value in byte_counts.items() if value is not None})
    if array is not None and not isinstance(array, SmartArray):
        raise TypeError(f"expect_transfers: array must be a SmartArray or None, not {array!r} "
                        f"({type(array).__name__})")
    return _expecting(expected, array)


@contextlib.contextmanager
def _expecting(expected, array):
    """The block of expect_transfers(), whose arguments are checked."""
    read = array.transfer_stats if array is not None else transfer_stats
    start = read()

    def observed():
        now = read()
        return {k: now[k] - start[k] for k in now}

    yield observed
    got = observed()
    wrong = {k: (v, got[k]) for k, v in expected.items() if got[k] != v}
    if wrong:
        parts = ", ".join(f"{k}: expected {e}, observed {o}" for k, (e, o) in wrong.items())
        raise TransferMismatch(f"expect_transfers: {parts} (observed {got})")
