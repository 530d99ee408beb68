"""The dtypes SmartArray supports, with their buffer-protocol formats and DLPack codes."""
import numpy as np

# numpy dtype -> (buffer format, (DLPack code, bits, lanes))
_TABLE = {
    np.dtype(np.bool_): ("?", (6, 8, 1)),
    np.dtype(np.int8): ("b", (0, 8, 1)),
    np.dtype(np.int16): ("h", (0, 16, 1)),
    np.dtype(np.int32): ("i", (0, 32, 1)),
    np.dtype(np.int64): ("q", (0, 64, 1)),
    np.dtype(np.uint8): ("B", (1, 8, 1)),
    np.dtype(np.uint16): ("H", (1, 16, 1)),
    np.dtype(np.uint32): ("I", (1, 32, 1)),
    np.dtype(np.uint64): ("Q", (1, 64, 1)),
    np.dtype(np.float16): ("e", (2, 16, 1)),
    np.dtype(np.float32): ("f", (2, 32, 1)),
    np.dtype(np.float64): ("d", (2, 64, 1)),
    np.dtype(np.complex64): ("Zf", (5, 64, 1)),
    np.dtype(np.complex128): ("Zd", (5, 128, 1)),
}
_FROM_DL = {v[1]: k for k, v in _TABLE.items()}

SUPPORTED = tuple(_TABLE)


def check_dtype(dtype):
    """The native-order numpy dtype for `dtype`, or TypeError naming the supported ones."""
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"SmartArray: unsupported dtype {dtype!r}: {e}") from None
    if dt.byteorder not in ("=", "|"):
        native = dt.newbyteorder("=")
        if native in _TABLE:
            return native
    if dt not in _TABLE:
        names = ", ".join(str(d) for d in _TABLE)
        raise TypeError(f"SmartArray: unsupported dtype {dt} (supported: {names})")
    return dt


def buffer_format(dt):
    return _TABLE[dt][0]


def dlpack_code(dt):
    return _TABLE[dt][1]


def from_dlpack_code(code, bits, lanes):
    dt = _FROM_DL.get((code, bits, lanes))
    if dt is None:
        raise TypeError(f"from_dlpack: unsupported DLPack dtype (code={code}, bits={bits}, lanes={lanes})")
    return dt
