"""Checks of the whole numbers that callers pass (byte counts, transfer counts): a Python int or a
NumPy integer, never a bool, a float or a string. Device ordinals have their own check
(_devices.ordinal_of), which also knows the device count."""
import operator

import numpy as np


def non_negative_int(value, name, maximum=None, maximum_text=None):
    """`value` as an int: TypeError naming `name` and `value` when it is no integer, ValueError
    naming them when it is negative or above `maximum` (`maximum_text` says what that is)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a non-negative int, not the bool {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: expected a non-negative int, not {value!r} "
                        f"({type(value).__name__})") from None
    if number < 0:
        raise ValueError(f"{name}: {number} is negative")
    if maximum is not None and number > maximum:
        raise ValueError(f"{name}: {number} is more than {maximum}, the most allowed"
                         + (f" ({maximum_text})" if maximum_text else ""))
    return number
