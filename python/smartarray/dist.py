"""smartarray.dist: SmartArrays exchanged between MPI processes, over mpi4py.

The C++ distributed layer (smartarray::dist) for Python arrays: a Communicator made from an
mpi4py communicator, the halo exchange, send and recv of arrays and slices, and the collectives
all_reduce, broadcast, all_gather and reduce_scatter. Each acquires exactly what it moves, on
the side the transport uses, and counts one message sent or received per message
(``sent_count``, ``received_count`` and their bytes in ``transfer_stats()``). Every collective
first checks its arguments on every rank, then agrees: when any rank's check fails, or the ranks
pass different sizes, dtypes, ops, roots, widths or periodicity, every rank raises the same
error and nothing is acquired. See docs/python.md, "Several processes (mpi4py)".
"""
import operator

from ._array import SmartArray
from ._slice import ArraySlice
from ._streams import stream_handle

try:
    from . import _dist
except ImportError as error:
    raise ImportError(
        "smartarray.dist needs the extension module smartarray._dist, which this build of "
        "smartarray lacks: it is built where CMake finds MPI (Open MPI or MPICH with its "
        f"development files, e.g. Debian's libopenmpi-dev) ({error})") from error

__all__ = ["Communicator", "exchange_halos", "all_reduce", "broadcast", "all_gather",
           "reduce_scatter", "send", "recv", "OPS"]

OPS = ("sum", "prod", "min", "max")


class Communicator:
    """A group of MPI processes that exchange SmartArrays, each bound to one device.

    `comm` is an mpi4py communicator (``MPI.COMM_WORLD`` or any other), kept alive as long as
    this object. Collective: every process of `comm` makes one. `device` is this process's device
    (default: its rank among the processes of its node, modulo the device count); `transport` is
    "nccl", "mpi_device" or "mpi_host" (default: NCCL where the build has it and each process has
    a GPU of its own, else MPI from device memory with a CUDA-aware MPI, else MPI from host
    memory; the host backend defaults to "mpi_host" and emulates "mpi_device").
    """

    def __init__(self, comm, device=None, transport=None):
        try:
            from mpi4py import MPI
        except ImportError as error:
            raise ImportError(f"smartarray.dist.Communicator needs mpi4py ({error})") from error
        if not isinstance(comm, MPI.Comm):
            raise TypeError("Communicator: comm must be an mpi4py communicator (mpi4py.MPI.Comm), "
                            f"not {type(comm).__module__}.{type(comm).__qualname__}")
        if comm == MPI.COMM_NULL:
            raise ValueError("Communicator: comm is MPI.COMM_NULL")
        _check_same_mpi(MPI)
        if device is not None:
            device = operator.index(device)
        if transport is not None and not isinstance(transport, str):
            raise TypeError("Communicator: transport must be a str, not "
                            f"{type(transport).__name__}")
        self._mpi_comm = comm  # the duplicate below is made from it; keep it alive as long
        self._native = _dist._Communicator(MPI._handleof(comm), device, transport)

    @property
    def rank(self):
        """This process's rank, 0 to size - 1."""
        return self._native.rank

    @property
    def size(self):
        """The number of processes."""
        return self._native.size

    @property
    def transport(self):
        """"nccl", "mpi_device" or "mpi_host"."""
        return self._native.transport

    @property
    def device(self):
        """The ordinal of the device this process works on."""
        return self._native.device

    @property
    def mpi_comm(self):
        """The mpi4py communicator this one was made from."""
        return self._mpi_comm

    def __repr__(self):
        return (f"<smartarray.dist.Communicator rank {self.rank} of {self.size}, "
                f"{self.transport}, device {self.device}>")


def exchange_halos(a, width, periodic=False, comm=None, stream=0):
    """Exchanges the halos of `a`, laid out (flattened, in memory order) as
    ``[width halo | interior | width halo]``: each rank sends its first and last `width` interior
    elements to ranks rank - 1 and rank + 1 and receives theirs into its halos. With `periodic`,
    rank 0 and the last rank are neighbours; without, their outer halos are left as they are."""
    native = _native(comm)
    with _Agreed("exchange_halos", native):
        args = (_address(a, "a"), _dtype_name(a), _int("width", width), bool(periodic))
        handle = stream_handle(stream)
    _dist.exchange_halos(*args, native, handle)


def all_reduce(a, op="sum", comm=None, stream=0):
    """Reduces `a` element by element over every rank, in place, with `op` ("sum", "prod", "min"
    or "max"); float32, float64 and the 8- to 64-bit integers."""
    native = _native(comm)
    with _Agreed("all_reduce", native):
        args = (_address(a, "a"), _dtype_name(a), _op(op))
        handle = stream_handle(stream)
    _dist.all_reduce(*args, native, handle)


def broadcast(a, root=0, comm=None, stream=0):
    """Copies rank `root`'s `a` into every other rank's `a` (read on root, overwritten
    elsewhere)."""
    native = _native(comm)
    with _Agreed("broadcast", native):
        args = (_address(a, "a"), _dtype_name(a), _int("root", root))
        handle = stream_handle(stream)
    _dist.broadcast(*args, native, handle)


def all_gather(a, out, comm=None, stream=0):
    """Gathers every rank's `a` into every rank's `out` (``size`` times as many elements, of the
    same dtype), in rank order."""
    native = _native(comm)
    with _Agreed("all_gather", native):
        args = (_address(a, "a"), _dtype_name(a), _address(out, "out"), _dtype_name(out))
        handle = stream_handle(stream)
    _dist.all_gather(*args, native, handle)


def reduce_scatter(a, out, op="sum", comm=None, stream=0):
    """Reduces `a` element by element over every rank with `op`, and leaves block `rank` of the
    result (``a.size // size`` elements) in this rank's `out`."""
    native = _native(comm)
    with _Agreed("reduce_scatter", native):
        args = (_address(a, "a"), _dtype_name(a), _address(out, "out"), _dtype_name(out),
                _op(op))
        handle = stream_handle(stream)
    _dist.reduce_scatter(*args, native, handle)


def send(x, dest, tag=0, comm=None, stream=0):
    """Sends `x` (a SmartArray, or an ArraySlice: ``a.slice(first, count)``) to rank `dest`.
    Returns when the message has left (MPI) or once it is enqueued on `stream` (NCCL); pair it
    with a recv on `dest` as blocking MPI_Send and MPI_Recv."""
    native = _native(comm)
    array, first, nbytes = _range(x)
    _dist.send(_address(array, "x"), first, nbytes, _int("dest", dest), _int("tag", tag), native,
               stream_handle(stream))


def recv(x, source, tag=0, comm=None, stream=0):
    """Receives a message from rank `source` into `x` (a SmartArray or an ArraySlice), which must
    have the message's size: a message of another size raises ValueError and leaves `x` as it
    was."""
    native = _native(comm)
    array, first, nbytes = _range(x)
    _dist.recv(_address(array, "x"), first, nbytes, _int("source", source), _int("tag", tag),
               native, stream_handle(stream))


class _Agreed:
    """Converts this rank's arguments of the collective `what` (``with _Agreed(what, native):``):
    a TypeError or ValueError there goes through the call's agreement first, so that every rank
    raises (the others a ValueError naming this rank and the error) instead of waiting in the
    call for this one. A class, not a generator: it is entered on every call."""

    __slots__ = ("what", "native")

    def __init__(self, what, native):
        self.what = what
        self.native = native

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if kind is not None and issubclass(kind, (TypeError, ValueError)):
            _dist.refuse(self.what, self.native, f"{kind.__name__}: {error}")
        return False


_dtype_names = {}


def _dtype_name(a):
    """``a.dtype.name``, kept per dtype: NumPy builds the name in Python at every access (about
    4 us, more than the rest of a collective's Python side)."""
    name = _dtype_names.get(a.dtype)
    if name is None:
        name = _dtype_names[a.dtype] = a.dtype.name
    return name


def _native(comm):
    if not isinstance(comm, Communicator):
        raise TypeError("comm must be a smartarray.dist.Communicator, not "
                        f"{type(comm).__module__}.{type(comm).__qualname__}")
    return comm._native


def _address(a, name):
    if not isinstance(a, SmartArray):
        raise TypeError(f"{name} must be a smartarray.SmartArray, not {type(a).__name__}")
    return a._array_address


def _range(x):
    """(array, first byte, bytes) of a SmartArray or an ArraySlice."""
    if isinstance(x, ArraySlice):
        return x.array, x.first * x.array.itemsize, x.nbytes
    if isinstance(x, SmartArray):
        return x, 0, x.nbytes
    raise TypeError(f"x must be a smartarray.SmartArray or an ArraySlice (a.slice(first, count)), "
                    f"not {type(x).__name__}")


def _int(name, value):
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None


def _op(op):
    # An unknown name goes to every rank's agreement, which raises ValueError naming it on every
    # rank (raised here, on one rank, it would leave the others waiting).
    if not isinstance(op, str):
        raise TypeError(f"op must be one of {', '.join(OPS)} as a str, not {type(op).__name__}")
    return op


_checked_mpi = False


def _check_same_mpi(MPI):
    """mpi4py and smartarray._dist must use one MPI library: two would each have their own
    MPI_COMM_WORLD."""
    global _checked_mpi
    if _checked_mpi:
        return
    ours, theirs = _dist.mpi_library_version(), MPI.Get_library_version()
    if ours.strip() != theirs.strip():
        raise ImportError("smartarray.dist and mpi4py use different MPI libraries "
                          f"(smartarray: {ours.strip()!r}; mpi4py: {theirs.strip()!r}): install "
                          "mpi4py built against the system MPI (pip install --no-binary mpi4py "
                          "mpi4py)")
    _checked_mpi = True
