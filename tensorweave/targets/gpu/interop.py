"""Device tensors in and out of the gpu target, without a host round trip.

`DeviceTensor` is what ``tw.compile(target="gpu", keep_on_device=True)`` returns: a
C-contiguous array in device memory from the caching allocator, given back to the pool
when the last reference goes. It exposes the CUDA Array Interface (version 3, with the
stream its producer's work was queued on) and DLPack (``__dlpack__`` returning a
``"dltensor"`` capsule, ``__dlpack_device__`` returning ``(kDLCUDA, 0)``), so
``torch.as_tensor``/``torch.from_dlpack``, ``cupy.asarray`` and ``jax.dlpack`` take it
without a copy.

`as_device_array` goes the other way: a numba device array (real or simulated), a
`DeviceTensor`, any object with ``__cuda_array_interface__`` (CuPy, PyTorch CUDA
tensors, numba) or a DLPack producer on a CUDA device becomes a numba device array
viewing the same memory, which a step copies device-to-device into its argument buffer.

Under numba's CUDA simulator "device memory" is host memory: simulated arrays expose no
``__cuda_array_interface__`` of their own, so this module builds the interface from
their host buffer, and views foreign interfaces as simulated arrays over that memory.
The protocols, pointers and lifetimes are the same as on a GPU.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from ...errors import InvalidArgumentError
from . import transfer
from .device import cuda, require, simulator_requested

KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3
KDL_CUDA_MANAGED = 13
_CUDA_DEVICES = (KDL_CUDA, KDL_CUDA_MANAGED)

# DLPack type codes (dlpack.h: kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLComplex, kDLBool)
_DL_CODE = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_NP_KIND = {v: k for k, v in _DL_CODE.items()}


# ------------------------------------------------------------------ DLPack structs

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _Deleter)]

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# The destructor gets the dying capsule as a raw pointer: these take it as one, so no
# reference is taken to an object being freed.
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))

# What an exported DLManagedTensor keeps alive (its struct, shape array and the tensor
# owning the memory), by the struct's address, until the consumer calls the deleter (or
# the capsule dies unconsumed).
_exported: dict[int, tuple[Any, ...]] = {}
_exported_lock = threading.Lock()


@_Deleter
def _dl_deleter(managed: Any) -> None:
    with _exported_lock:
        _exported.pop(ctypes.addressof(managed.contents), None)


@_CapsuleDestructor
def _capsule_destructor(capsule: int) -> None:
    # A capsule still named "dltensor" was never consumed: its producer frees it.
    if _raw_is_valid(capsule, b"dltensor"):
        ptr = _raw_get_pointer(capsule, b"dltensor")
        with _exported_lock:
            _exported.pop(int(ptr), None)


def _dl_dtype(dtype: np.dtype) -> _DLDataType:
    code = _DL_CODE.get(dtype.kind)
    if code is None:
        raise InvalidArgumentError(f"DLPack has no type for {dtype}")
    return _DLDataType(code, dtype.itemsize * 8, 1)


def _np_dtype(t: _DLDataType) -> np.dtype:
    kind = _NP_KIND.get(int(t.code))
    if kind is None or t.lanes != 1:
        raise InvalidArgumentError(f"a DLPack tensor of type code {t.code} (lanes {t.lanes}) "
                                   f"has no NumPy dtype")
    return np.dtype(f"{kind}{t.bits // 8}") if kind != "b" else np.dtype(np.bool_)


def _typestr(dtype: np.dtype) -> str:
    return np.dtype(dtype).str


def default_stream_handle() -> int | None:
    """The CUDA Array Interface's ``stream`` for work on numba's default stream: 1 for
    the legacy default stream, 2 for the per-thread one, None in the simulator (nothing
    runs asynchronously there)."""
    if simulator_requested():
        return None
    from numba.core import config
    return 2 if getattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM", 0) else 1


def _pointer(array: Any) -> int:
    """The device address of a numba device array's first element."""
    if simulator_requested():
        return int(array._ary.ctypes.data) if array.size else 0
    return int(array.__cuda_array_interface__["data"][0])


def interface_of(array: Any) -> dict[str, Any]:
    """The CUDA Array Interface (v3) of a C-contiguous numba device array."""
    dtype = np.dtype(array.dtype)
    return {"shape": tuple(int(s) for s in array.shape), "typestr": _typestr(dtype),
            "data": (_pointer(array), False), "version": 3, "strides": None,
            "descr": [("", _typestr(dtype))], "stream": default_stream_handle()}


# ------------------------------------------------------------------ DeviceTensor

class DeviceTensor:
    """A tensor in GPU memory returned by a gpu-target function with
    ``keep_on_device=True`` (see the module docstring). ``numpy()`` (or
    ``np.asarray(t)``) copies it to the host."""

    __array_priority__ = 10

    def __init__(self, array: Any, block: Any = None, allocator: Any = None) -> None:
        self._array = array
        self._block = block
        self._allocator = allocator

    @property
    def array(self) -> Any:
        """The numba device array holding the elements."""
        return self._array

    @property
    def shape(self) -> tuple[int, ...]:
        """The tensor's shape."""
        return tuple(int(s) for s in self._array.shape)

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the elements."""
        return np.dtype(self._array.dtype)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def device(self) -> str:
        """The device holding the tensor (``/device:GPU:0``)."""
        return "/device:GPU:0"

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return interface_of(self._array)

    def __dlpack__(self, *, stream: int | None = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A ``"dltensor"`` capsule viewing this tensor (DLPack 0.8 layout, which every
        consumer accepts). The work that produced the tensor is on the default stream;
        a consumer on another `stream` synchronizes with the whole device first."""
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"a GPU tensor cannot be exported to DLPack device {dl_device}")
        if copy:
            raise BufferError("DeviceTensor.__dlpack__ exports views only (copy=True)")
        if stream not in (None, -1, 1, 2) and not simulator_requested():
            cuda().synchronize()
        return export_dlpack(self._array, owner=self)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (KDL_CUDA, 0)

    def numpy(self) -> np.ndarray:
        """A host copy of the tensor."""
        if not self.size:
            return np.empty(self.shape, self.dtype)
        return transfer.to_host(self._array)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("a GPU tensor cannot be viewed on the host without a copy")
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __float__(self) -> float:
        return float(self.numpy())

    def __bool__(self) -> bool:
        return bool(self.numpy())

    def __int__(self) -> int:
        return int(self.numpy())

    def __repr__(self) -> str:
        return f"DeviceTensor(shape={list(self.shape)}, dtype={self.dtype}, device=GPU:0)"

    def __del__(self) -> None:
        block, self._block = self._block, None
        if block is not None and self._allocator is not None:
            try:
                self._allocator.free(block)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass


def export_dlpack(array: Any, owner: Any) -> Any:
    """A ``"dltensor"`` PyCapsule viewing C-contiguous device `array`; `owner` stays
    alive until the consumer calls the deleter (or the capsule dies unconsumed)."""
    dtype = np.dtype(array.dtype)
    shape = (ctypes.c_int64 * max(1, len(array.shape)))(*[int(s) for s in array.shape])
    managed = _DLManagedTensor()
    t = managed.dl_tensor
    t.data = _pointer(array) or None
    t.device = _DLDevice(KDL_CUDA, 0)
    t.ndim = len(array.shape)
    t.dtype = _dl_dtype(dtype)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = None  # C-contiguous
    t.byte_offset = 0
    managed.manager_ctx = None
    managed.deleter = _dl_deleter
    address = ctypes.addressof(managed)
    with _exported_lock:
        _exported[address] = (managed, shape, owner, array)
    return _api.PyCapsule_New(address, b"dltensor",
                              ctypes.cast(_capsule_destructor, ctypes.c_void_p))


def exported_count() -> int:
    """How many exported DLPack tensors are still alive (not yet deleted)."""
    with _exported_lock:
        return len(_exported)


class _Imported:
    """Keeps a consumed DLPack tensor alive; calls its deleter when dropped."""

    def __init__(self, managed: Any, capsule: Any) -> None:
        self.managed = managed
        self.capsule = capsule

    def __del__(self) -> None:
        m = self.managed
        if m is not None and m.contents.deleter:
            self.managed = None
            m.contents.deleter(m)


def _from_dlpack(obj: Any) -> tuple[dict[str, Any], Any]:
    """The CUDA Array Interface of a DLPack producer on a CUDA device, and the object
    that keeps its memory alive."""
    stream = default_stream_handle()
    try:
        capsule = obj.__dlpack__(stream=stream)
    except TypeError:  # producers of the pre-stream protocol
        capsule = obj.__dlpack__()
    if not _api.PyCapsule_IsValid(capsule, b"dltensor"):
        raise InvalidArgumentError("__dlpack__ returned no 'dltensor' capsule")
    managed = ctypes.cast(_api.PyCapsule_GetPointer(capsule, b"dltensor"),
                          ctypes.POINTER(_DLManagedTensor))
    _api.PyCapsule_SetName(capsule, b"used_dltensor")  # consumed: we call the deleter
    keeper = _Imported(managed, capsule)
    t = managed.contents.dl_tensor
    dtype = _np_dtype(t.dtype)
    shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    strides = None
    if t.strides:
        strides = tuple(int(t.strides[i]) * dtype.itemsize for i in range(t.ndim))
    desc = {"shape": shape, "typestr": _typestr(dtype), "version": 3, "strides": strides,
            "data": ((t.data or 0) + int(t.byte_offset), False)}
    return desc, keeper


def _c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...] | None,
                  itemsize: int) -> bool:
    if strides is None:
        return True
    expected = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n > 1 and s != expected:
            return False
        expected *= n
    return True


def _simulated_view(desc: dict[str, Any], keeper: Any) -> Any:
    """A simulated device array over the host memory an interface points at."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
    dtype = np.dtype(desc["typestr"])
    shape = tuple(desc["shape"])
    n = int(np.prod(shape, dtype=np.int64))
    ptr = int(desc["data"][0])
    if n == 0 or not ptr:
        host = np.empty(shape, dtype)
    else:
        raw = (ctypes.c_char * (n * dtype.itemsize)).from_address(ptr)
        host = np.frombuffer(raw, dtype=dtype).reshape(shape)
    view = FakeCUDAArray(host)
    view._tw_owner = keeper  # the simulated array keeps the memory's owner alive
    return view


def is_device_object(x: Any) -> bool:
    """Whether `x` is an array in GPU memory this module can view: a numba device array
    (real or simulated), a `DeviceTensor`, an object with ``__cuda_array_interface__``,
    or a DLPack producer whose ``__dlpack_device__`` is a CUDA device."""
    if isinstance(x, (np.ndarray, np.generic)):
        return False
    if isinstance(x, DeviceTensor) or _is_numba_device_array(x):
        return True
    dev = getattr(x, "__dlpack_device__", None)
    if dev is not None:  # asked first: PyTorch CPU tensors refuse the interface loudly
        try:
            return int(dev()[0]) in _CUDA_DEVICES
        except Exception:  # noqa: BLE001 - a producer that cannot say: not ours
            return False
    try:
        return getattr(x, "__cuda_array_interface__", None) is not None
    except Exception:  # noqa: BLE001 - a property refusing (not on a GPU)
        return False


def _is_numba_device_array(x: Any) -> bool:
    module = type(x).__module__
    return module.startswith("numba") and "devicearray" in module \
        and hasattr(x, "copy_to_host")


def as_device_array(x: Any, what: str = "argument") -> Any:
    """A C-contiguous numba device array viewing device object `x` (no copy), keeping
    what owns the memory alive. Raises `InvalidArgumentError` for strided tensors and
    objects that are not on a CUDA device."""
    if isinstance(x, DeviceTensor):
        return x.array
    if _is_numba_device_array(x):
        if not x.is_c_contiguous():
            raise InvalidArgumentError(f"{what}: a device array must be C-contiguous")
        return x
    if hasattr(x, "__cuda_array_interface__"):
        desc, keeper = dict(x.__cuda_array_interface__), x
    elif hasattr(x, "__dlpack__"):
        desc, keeper = _from_dlpack(x)
    else:
        raise InvalidArgumentError(f"{what}: {type(x).__name__} is not a GPU array")
    dtype = np.dtype(desc["typestr"])
    shape = tuple(int(s) for s in desc["shape"])
    if not _c_contiguous(shape, desc.get("strides"), dtype.itemsize):
        raise InvalidArgumentError(f"{what}: a device tensor must be C-contiguous (strides "
                                   f"{desc.get('strides')} for shape {list(shape)}); make a "
                                   f"contiguous copy on the device first")
    desc["strides"] = None
    if simulator_requested():
        return _simulated_view(desc, keeper)
    return require().from_cuda_array_interface(desc, owner=keeper, sync=True)


def to_host(x: Any) -> np.ndarray:
    """A host copy of device object `x`."""
    arr = as_device_array(x)
    if not arr.size:
        return np.empty(tuple(arr.shape), np.dtype(arr.dtype))
    return transfer.to_host(arr)


__all__ = ["KDL_CUDA", "DeviceTensor", "as_device_array", "default_stream_handle",
           "export_dlpack", "exported_count", "interface_of", "is_device_object", "to_host"]
