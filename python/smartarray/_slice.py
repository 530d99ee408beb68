"""ArraySlice: a range of a SmartArray's elements in memory order, which smartarray.dist's send
and recv move alone (the C++ layer's Slice)."""
import operator


class ArraySlice:
    """`count` elements of `array` from element `first`, counted over the flattened array in
    memory order (``array.slice(first, count)``). It names the elements; it copies nothing."""

    __slots__ = ("array", "first", "count")

    def __init__(self, array, first, count):
        first = _index("first", first)
        count = _index("count", count)
        if first < 0 or count < 0 or first + count > array.size:
            raise IndexError(f"slice({first}, {count}) of {array._name()}: the range "
                             f"[{first}, {first + count}) is not within its {array.size} elements")
        self.array = array
        self.first = first
        self.count = count

    @property
    def nbytes(self):
        return self.count * self.array.itemsize

    def __repr__(self):
        return f"<slice [{self.first}, {self.first + self.count}) of {self.array._name()}>"


def _index(name, value):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"slice: {name} must be an int, not {type(value).__name__}") from None
