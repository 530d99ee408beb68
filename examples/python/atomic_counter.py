"""The seed notebook's atomic counter: every thread adds one to a SmartArray counter."""
import numpy as np

import smartarray as sa
from _common import counts_since, require_gpu


def test_atomic_counter(blocks=256, threads=128):
    cuda = require_gpu()

    @cuda.jit
    def count(counter):
        cuda.atomic.add(counter, 0, 1)

    counter = sa.SmartArray(np.zeros(1, np.int32))
    start = sa.transfer_stats()
    count[blocks, threads](counter)
    assert counter[0] == blocks * threads
    assert counts_since(start) == {"h2d_count": 1, "d2h_count": 1, "d2d_count": 0}


if __name__ == "__main__":
    test_atomic_counter()
    print("atomic_counter: ok")
