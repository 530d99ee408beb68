"""SmartArrays passed straight to Numba's ``@cuda.jit`` kernels and ``@vectorize(target='cuda')``
ufuncs, at the speed of the CUDA target's own arrays, on both targets: the one built into Numba
and NVIDIA's numba-cuda (``numba.cuda.implementation == "NVIDIA"``), which replaces it once
installed and is retiring its host-side array API (``cuda.to_device``, ``DeviceNDArray``).

Through the array protocols alone, the target types a foreign array and builds a view of it at
every launch: Numba's built-in target a DeviceNDArray from ``__cuda_array_interface__``,
synchronizing the stream that the dict names (about 0.13 ms an argument); numba-cuda a
StridedMemoryView from ``__dlpack__``. Here instead:

- typing: ``SmartArray._numba_type_`` (the targets' documented typing hook, which both check
  before any protocol) gives the array type without touching the data, cached per dtype,
  dimension and layout;
- kernel arguments: a SmartArray is acquired ``read_write`` on the launch stream (a kernel does
  not say which arguments it writes, as with Numba's SmartArray) and handed over as the object
  the target takes as it is, made once per device copy and cached: numba-cuda's launch gets
  cuda.core's ``StridedMemoryView`` (what it makes of any CAI or DLPack argument, and passes
  through untouched), Numba's built-in target its own device array;
- ufuncs: inputs are acquired ``read`` and ``out=`` ``discard`` (the ufunc overwrites it) on the
  ufunc's stream, handed over as the target's device array (what its ufunc machinery makes of
  every argument), and ``out=`` is returned as the SmartArray itself.

Acquiring on the launch stream keeps the residency exact: the array's next use, on any stream or
on the host, waits for the kernel. The hooks replace ``wrap_arg`` in the target's dispatcher (the
kernel argument's ``ArgHint``, a public class of ``numba.cuda.args``) and wrap
``CUDAUFuncMechanism.call``, which are internals: they are installed only for the versions listed
in ``SUPPORTED`` (tested), and any other version takes the interface path, which is correct but
slower, with one warning naming the version. ``SMARTARRAY_NUMBA_DEVICE_ARRAY=0`` turns them off
as well.
"""
import importlib.metadata
import sys
import warnings

from . import _ext
from ._views import numba_cuda

#: The CUDA targets the hooks are installed for, by release series: numba-cuda 0.30 (tested with
#: 0.30.4 on NumPy 2.2) and the target built into Numba 0.68.
SUPPORTED = {"numba-cuda": ("0.30.",), "numba": ("0.68.",)}

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
    else:
        package, version = target_version(cuda)
        warnings.warn(
            f"smartarray: {package} {version} is not among the versions whose kernel and ufunc "
            f"fast path is tested ({package} {', '.join(s + 'x' for s in SUPPORTED[package])}); "
            "SmartArrays reach its kernels through __dlpack__ / __cuda_array_interface__, which "
            "is correct but builds a view at every launch", RuntimeWarning, stacklevel=2)
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

    # A SmartArray, without importing _array (which imports this module): SmartArray is the one
    # Python class over the C++ core, whose other objects (keepers) never reach user code.
    SmartArray = _ext._Core
    nvidia = getattr(cuda, "implementation", "Built-in") == "NVIDIA"

    class KernelArgument(args.ArgHint):
        """A SmartArray argument of a kernel launch: read_write on the launch stream, handed over
        as what the target's launch takes without a copy (numba-cuda: a StridedMemoryView; the
        built-in target: its own device array, what InOut of a device array hands over)."""

        def to_device(self, retr, stream=0):
            if nvidia:
                return self.value._numba_view(READ_WRITE, stream)
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
