"""The seed notebook's histogram: atomic adds into bins, checked against np.histogram."""
import numpy as np

import smartarray as sa
from _common import counts_since, require_gpu


def test_histogram(n=1 << 20, bins=64):
    cuda = require_gpu()

    @cuda.jit
    def histogram(x, xmin, xmax, counts):
        nbins = counts.shape[0]
        width = (xmax - xmin) / nbins
        start = cuda.grid(1)
        for i in range(start, x.shape[0], cuda.gridsize(1)):
            b = int((x[i] - xmin) / width)
            if 0 <= b < nbins:
                cuda.atomic.add(counts, b, 1)

    rng = np.random.default_rng(5)
    data = rng.normal(size=n).astype(np.float32)
    x = sa.SmartArray(data)
    hist = sa.SmartArray(np.zeros(bins, np.int32))
    start = sa.transfer_stats()
    histogram[256, 256](x.gpu(readonly=True), np.float32(-4), np.float32(4), hist)
    got = hist.host()
    assert counts_since(start) == {"h2d_count": 2, "d2h_count": 1, "d2d_count": 0}
    width = np.float32(8) / bins
    idx = ((data - np.float32(-4)) / width).astype(np.int64)
    expect = np.bincount(idx[(idx >= 0) & (idx < bins)], minlength=bins)
    np.testing.assert_array_equal(got, expect)


if __name__ == "__main__":
    test_histogram()
    print("histogram: ok")
