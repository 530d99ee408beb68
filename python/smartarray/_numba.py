"""SmartArrays passed straight to Numba's ``@cuda.jit`` kernels and ``@vectorize(target='cuda')``
ufuncs, at the speed of Numba's own device arrays.

Through ``__cuda_array_interface__`` alone, Numba types a foreign array from its CAI dict and
builds a new device array from it at every launch, synchronizing the stream that the dict names:
about 0.13 ms an argument. Here instead:

- typing: ``SmartArray._numba_type_`` (Numba's documented typing hook) gives the array type
  without touching the data;
- kernel arguments: a SmartArray is acquired ``read_write`` on the launch stream (a kernel does
  not say which arguments it writes, as with Numba's SmartArray) and handed to Numba as its own
  device array, made once per device copy and cached;
- ufuncs: inputs are acquired ``read`` and ``out=`` ``discard`` (the ufunc overwrites it) on the
  ufunc's stream, and ``out=`` is returned as the SmartArray itself.

Acquiring on the launch stream keeps the residency exact: the array's next use, on any stream or
on the host, waits for the kernel. The hooks replace ``wrap_arg`` in Numba's CUDA dispatcher and
wrap ``CUDAUFuncMechanism.call``, which are Numba internals: they are installed only for the
versions listed in ``SUPPORTED`` (tested), and any other version takes the interface path, which
is correct but slower. ``SMARTARRAY_NUMBA_DEVICE_ARRAY=0`` turns them off as well.
"""
import importlib.metadata
import sys

from ._views import numba_cuda

#: Numba's CUDA targets the hooks are installed for, by release series: the target built into
#: Numba itself. numba-cuda (NVIDIA's, which becomes ``numba.cuda`` once installed) takes the
#: interface path: its 0.30 compiles nothing with NumPy 2.5 (``np.row_stack`` is gone), so the
#: hooks could not be tested with it.
SUPPORTED = {"numba-cuda": (), "numba": ("0.68.",)}

READ, READ_WRITE, DISCARD = 0, 1, 2
_installed = None  # None: not decided yet; then True or False
_types = {}  # (dtype, ndim, layout) -> Numba array type


def target_version(cuda):
    """('numba-cuda', version) or ('numba', version) for the CUDA target in use."""
    if getattr(cuda, "implementation", "Built-in") == "NVIDIA":
        return "numba-cuda", importlib.metadata.version("numba-cuda")
    return "numba", sys.modules["numba"].__version__


def supported(cuda):
    package, version = target_version(cuda)
    return any(version.startswith(series) for series in SUPPORTED[package])


def hooks_installed():
    """True once the fast path is installed (Numba imported, supported, cuda backend)."""
    return bool(ensure_hooks())


def ensure_hooks():
    """Installs the hooks the first time Numba's CUDA target is seen (called by array
    construction and the typing hook; a dictionary lookup once decided)."""
    global _installed
    if _installed is not None:
        return _installed
    cuda = numba_cuda()
    if cuda is None:
        return False  # not decided: Numba may be imported later
    _installed = supported(cuda)
    if _installed:
        _install(cuda)
    return _installed


def array_type(array):
    """The Numba type of a SmartArray as a kernel argument: the type of Numba's own device array
    of that dtype, dimension and layout (so kernels compiled for either serve both)."""
    key = (array.dtype, array.ndim, "C" if array.is_c_contiguous() else "F")
    cached = _types.get(key)
    if cached is not None:
        return cached
    cuda = numba_cuda()
    if cuda is None:
        return None
    if getattr(cuda, "implementation", "Built-in") == "NVIDIA":
        from numba.cuda import types
        from numba.cuda.np.numpy_support import from_dtype
    else:
        from numba.core import types
        from numba.np.numpy_support import from_dtype
    cached = _types[key] = types.Array(from_dtype(key[0]), key[1], key[2])
    return cached


class NumbaType:
    """``SmartArray._numba_type_``: computed at the first look and then kept in the array's own
    dictionary (a non-data descriptor), so that Numba's dispatcher, which looks it up twice per
    argument and launch, reads a plain attribute. None, and not kept, before Numba is imported."""

    def __get__(self, array, owner=None):
        if array is None:
            return self
        ensure_hooks()
        value = array_type(array)
        if value is not None:
            array.__dict__["_numba_type_"] = value
        return value


def _install(cuda):
    from numba.cuda import args, dispatcher, vectorizers

    from ._array import SmartArray

    class KernelArgument(args.ArgHint):
        """A SmartArray argument of a kernel launch: read_write on the launch stream, handed over
        as Numba's own device array (what InOut of a device array hands over)."""

        def to_device(self, retr, stream=0):
            return self.value._numba_array(READ_WRITE, stream)

    original_wrap_arg = dispatcher.wrap_arg

    def wrap_arg(value, default=args.InOut):
        if isinstance(value, SmartArray):
            return KernelArgument(value)
        return original_wrap_arg(value, default)

    dispatcher.wrap_arg = wrap_arg

    mechanism = vectorizers.CUDAUFuncMechanism
    original_call = mechanism.call.__func__

    def call(cls, typemap, inputs, kws):
        out = kws.get("out")
        if not isinstance(out, SmartArray) and not any(isinstance(a, SmartArray) for a in inputs):
            return original_call(cls, typemap, inputs, kws)
        stream = kws.get("stream", 0)
        inputs = [a._numba_array(READ, stream) if isinstance(a, SmartArray) else a for a in inputs]
        if isinstance(out, SmartArray):
            kws = dict(kws, out=out._numba_array(DISCARD, stream))
        result = original_call(cls, typemap, inputs, kws)
        return out if isinstance(out, SmartArray) else result

    mechanism.call = classmethod(call)
