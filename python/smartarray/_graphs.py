"""``capture(stream, fn)`` and ``Graph``: C++ ``sa::capture`` for Python. ``fn(stream)`` runs once
under stream capture; each device acquire it makes records what the graph reads and writes of
each array, and ``Graph.launch`` replays the graph after copying only the stale bytes it reads.
See docs/python.md, "Graphs"."""
import sys

from . import _ext
from ._streams import stream_handle


def capture(stream, fn):
    """Runs ``fn(stream)`` once under stream capture and returns the ``Graph`` it recorded.

    `stream`: a ``smartarray.Stream`` or any stream the package takes (Numba's, CuPy's,
    PyTorch's, an int handle), not a default stream (``ValueError``). `fn` receives `stream` as
    given and queues its work there: smartarray's device calls (``copy_to_device`` from a
    SmartArray, ``device_view``, ``prefetch_to_device``), Numba kernels and ufuncs launched on
    `stream` with SmartArray arguments. Misuses inside `fn` (a host access of an array the graph
    writes, ``synchronize`` of the captured stream, a host-staged transfer, device work on the
    default stream) raise ``ValueError`` naming the call and the file and line of this call.
    Whatever `fn` raises propagates; the capture is then over, the stream usable and every
    array's residency as before."""
    if not callable(fn):
        raise TypeError(f"capture: fn must be callable (it is called with the stream), not "
                        f"{fn!r} ({type(fn).__name__})")
    handle = stream_handle(stream)
    caller = sys._getframe(1)
    graph = _ext._capture(handle, lambda: fn(stream), caller.f_code.co_filename,
                          caller.f_lineno)
    return Graph(graph, stream, handle)


class Graph:
    """A captured pipeline (``capture``) that replays with exact residency. Like the C++ graph,
    it binds its arrays by object: it does not keep the Python SmartArrays alive, and
    ``launch`` raises ``ValueError`` naming an array that was destroyed or reallocated since the
    capture, before anything is copied. It keeps the capture's stream object alive."""

    __slots__ = ("_graph", "_stream", "_handle")

    def __init__(self, graph, stream, handle):
        self._graph = graph
        self._stream = stream
        self._handle = handle

    def launch(self, stream=None):
        """Replays the graph on `stream` (default: the stream it was captured on; a stream of the
        graph's device). First copies exactly the bytes that the graph reads and the device
        lacks (what the host wrote since, counted as usual), then queues the graph, then marks
        what it writes as held by the device alone: a host read afterwards copies back only
        that. A replay with nothing stale copies nothing and never waits on the host."""
        self._graph.launch(self._handle if stream is None else stream_handle(stream))

    def arrays(self):
        """The arrays the graph uses, in the order the capture first touched them: dicts of
        ``id``, ``name`` ("SmartArray #3 'x'"), ``device``, ``bytes_read`` (must be valid on the
        device before each replay) and ``bytes_written`` (held by the device alone after it)."""
        return self._graph.arrays()

    @property
    def device(self):
        """The ordinal of the device the graph runs on."""
        return self._graph.device

    @property
    def launches(self):
        """The number of launches so far."""
        return self._graph.launches

    def __repr__(self):
        return (f"<smartarray.Graph device={self.device} arrays={len(self.arrays())} "
                f"launches={self.launches}>")
