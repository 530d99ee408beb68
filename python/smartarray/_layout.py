"""Shapes, strides and memory orders of the arrays (contiguous, C or F order)."""
import math
import operator

import numpy as np


def contiguous_strides(shape, itemsize, order):
    """Byte strides of a contiguous array in C or F order."""
    strides = [0] * len(shape)
    step = itemsize
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for i in dims:
        strides[i] = step
        step *= max(shape[i], 1)
    return tuple(strides)


def normalize_shape(shape, itemsize=1):
    """`shape` as a tuple of ints; ValueError for a negative extent, OverflowError when its bytes
    do not fit a 64-bit size."""
    if shape is None:
        raise TypeError("SmartArray: give obj or shape")
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"SmartArray: negative dimension in shape {shape}")
    if math.prod(shape) * itemsize >= 1 << 63:
        raise OverflowError(f"SmartArray: shape {shape} of {itemsize}-byte elements is "
                            f"{math.prod(shape) * itemsize} bytes, more than any array can hold")
    return shape


def contiguous_order(shape, strides, itemsize):
    """'C' or 'F' when (shape, byte strides) is contiguous in that order, else None."""
    if strides is None or math.prod(shape) <= 1:
        return "C"
    if tuple(strides) == contiguous_strides(shape, itemsize, "C"):
        return "C"
    if tuple(strides) == contiguous_strides(shape, itemsize, "F"):
        return "F"
    # Dimensions of extent 1 may carry any stride.
    for order in ("C", "F"):
        expected = contiguous_strides(shape, itemsize, order)
        if all(s == e or n == 1 for s, e, n in zip(strides, expected, shape)):
            return order
    return None


def reshaped(shape, order_now, newshape, order):
    """(shape, memory order) of a reshape of a contiguous array of `shape` in `order_now` to
    `newshape` (one extent may be -1) read in `order`, without a copy; NotImplementedError when it
    would need one."""
    size, ndim = math.prod(shape), len(shape)
    if len(newshape) == 1 and not isinstance(newshape[0], (int, np.integer)):
        newshape = tuple(newshape[0])
    newshape = list(newshape)
    if newshape.count(-1) > 1:
        raise ValueError("reshape: only one dimension can be -1")
    if -1 in newshape:
        known = math.prod(s for s in newshape if s != -1)
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape size {size} into {tuple(newshape)}")
        newshape[newshape.index(-1)] = size // known
    newshape = normalize_shape(newshape)
    if math.prod(newshape) != size:
        raise ValueError(f"reshape: cannot reshape size {size} into {newshape}")
    if order not in ("C", "F"):
        raise ValueError(f"reshape: order must be 'C' or 'F', not {order!r}")
    if order != order_now and ndim > 1 and len(newshape) > 1 and size > 1:
        raise NotImplementedError(
            f"reshape: order={order!r} on an {order_now}-ordered array would need a copy")
    if order != order_now and ndim > 1 and size > 1 and len(newshape) <= 1:
        raise NotImplementedError("reshape: flattening in the other order would need a copy")
    mem_order = order_now if len(newshape) > 1 else order
    if ndim <= 1:
        mem_order = order
    return newshape, mem_order


def check_index(key, shape):
    """IndexError, NumPy's, for an integer index out of `shape`."""
    key = key if isinstance(key, tuple) else (key,)
    if len(key) > len(shape):
        raise IndexError(f"too many indices: {len(key)} for an array of {len(shape)} dimensions")
    for axis, (k, n) in enumerate(zip(key, shape)):
        if not -n <= k < n:
            raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
