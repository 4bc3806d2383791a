"""Device tensors in and out of gpu-target functions under the simulator:
``keep_on_device=True`` results with the CUDA Array Interface (v3) and DLPack, and GPU
arrays (numba device arrays, DeviceTensors, hand-made ``__cuda_array_interface__``
objects, DLPack producers) taken as arguments without a host round trip."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from numba import cuda
from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

import tensorweave as tw
from tensorweave.errors import InvalidArgumentError
from tensorweave.targets.gpu import interop
from tensorweave.targets.gpu.allocator import default_allocator


def _model(x, y):
    return tw.tanh(x) * 2.0 + y, tw.reduce_sum(x, axis=1)


def _expected(x, y):
    return np.tanh(x) * np.float32(2) + y, x.sum(axis=1)


class _Interface:
    """A hand-made GPU array: only ``__cuda_array_interface__`` (in the simulator, device
    memory is host memory, so it points at a NumPy buffer)."""

    def __init__(self, host: np.ndarray, strides=None) -> None:
        self.host = host
        self.__cuda_array_interface__ = {
            "shape": host.shape, "typestr": host.dtype.str, "version": 3,
            "data": (host.ctypes.data, False), "strides": strides}


class _DLPackOnly:
    """A DLPack producer that is nothing else (as a JAX or CuPy array would be)."""

    def __init__(self, tensor) -> None:
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


class _Transfers:
    """Counts the simulator's host<->device copies (device-to-device ones apart)."""

    def __init__(self, monkeypatch) -> None:
        self.uploads = self.downloads = self.device_copies = 0
        to_dev, to_host = FakeCUDAArray.copy_to_device, FakeCUDAArray.copy_to_host

        def copy_to_device(arr, src, stream=0):
            if isinstance(src, FakeCUDAArray):
                self.device_copies += 1
            else:
                self.uploads += 1
            return to_dev(arr, src, stream)

        def copy_to_host(arr, *a, **kw):
            self.downloads += 1
            return to_host(arr, *a, **kw)
        monkeypatch.setattr(FakeCUDAArray, "copy_to_device", copy_to_device)
        monkeypatch.setattr(FakeCUDAArray, "copy_to_host", copy_to_host)


def _args(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=4).astype(np.float32))


def test_keep_on_device_results_expose_the_cuda_array_interface():
    f = tw.compile(_model, target="gpu", keep_on_device=True)
    x, y = _args()
    a, s = f(x, y)
    assert isinstance(a, interop.DeviceTensor) and isinstance(s, interop.DeviceTensor)
    want_a, want_s = _expected(x, y)
    np.testing.assert_allclose(np.asarray(a), want_a, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(s.numpy(), want_s, rtol=2e-5, atol=1e-6)
    cai = a.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (3, 4) and cai["typestr"] == "<f4"
    assert cai["strides"] is None and cai["data"][1] is False
    assert cai["stream"] is None  # the simulator runs nothing asynchronously
    # the interface points at the tensor's own device buffer
    assert cai["data"][0] == a.array._ary.ctypes.data
    assert a.__dlpack_device__() == (interop.KDL_CUDA, 0)
    assert (a.shape, a.dtype, a.ndim, a.size) == ((3, 4), np.float32, 2, 12)


def test_each_call_returns_fresh_device_tensors_and_frees_them():
    f = tw.compile(lambda x: x + 1.0, target="gpu", keep_on_device=True)
    x = np.arange(8, dtype=np.float32)
    first = f(x)
    second = f(x * 2)
    assert first.__cuda_array_interface__["data"][0] != second.__cuda_array_interface__["data"][0]
    np.testing.assert_array_equal(first.numpy(), x + 1)  # not overwritten by the next call
    np.testing.assert_array_equal(second.numpy(), x * 2 + 1)
    in_use = default_allocator().stats()["in_use"]
    del first, second
    gc.collect()
    assert default_allocator().stats()["in_use"] == in_use - 2 * 512  # back in the pool


def test_device_arguments_take_no_host_round_trip(monkeypatch):
    f = tw.compile(_model, target="gpu", keep_on_device=True)
    x, y = _args(1)
    a, _ = f(x, y)  # compiles and binds
    dy = cuda.to_device(y)
    t = _Transfers(monkeypatch)
    a2, s2 = f(a, dy)
    assert t.downloads == 0 and t.uploads == 0  # nothing went through the host
    assert t.device_copies >= 2 + 2  # two arguments in, two fresh results out
    want_a, want_s = _expected(_expected(x, y)[0], y)
    np.testing.assert_allclose(a2.numpy(), want_a, rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(s2.numpy(), want_s, rtol=2e-5, atol=1e-5)


def test_host_results_from_device_arguments():
    f = tw.compile(_model, target="gpu")
    x, y = _args(2)
    a, s = f(cuda.to_device(x), cuda.to_device(y))
    assert isinstance(a, np.ndarray)
    np.testing.assert_allclose(a, _expected(x, y)[0], rtol=2e-5, atol=1e-6)


def test_a_cuda_array_interface_object_is_viewed_not_copied():
    x, y = _args(3)
    obj = _Interface(x.copy())
    view = interop.as_device_array(obj)
    obj.host[0, 0] = 42.0  # the view sees the producer's memory
    assert view.copy_to_host()[0, 0] == 42.0
    f = tw.compile(_model, target="gpu")
    a, s = f(obj, _Interface(y))
    want_a, want_s = _expected(obj.host, y)
    np.testing.assert_allclose(a, want_a, rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(s, want_s, rtol=2e-5, atol=1e-5)


def test_strided_device_arguments_are_refused_with_the_argument_name():
    x = np.zeros((4, 4), np.float32)
    f = tw.compile(lambda v: v * 2.0, target="gpu")
    with pytest.raises(InvalidArgumentError, match=r"argument 'v'.*C-contiguous"):
        f(_Interface(x, strides=(4, 16)))  # a transposed view


def test_dlpack_round_trip_and_lifetimes():
    f = tw.compile(lambda v: v * 3, target="gpu", keep_on_device=True)
    t = f(np.arange(6, dtype=np.int32).reshape(2, 3))
    base = interop.exported_count()
    capsule = t.__dlpack__()
    assert interop.exported_count() == base + 1
    del capsule  # never consumed: the capsule's destructor frees the export
    gc.collect()
    assert interop.exported_count() == base
    producer = _DLPackOnly(t)
    assert interop.is_device_object(producer)
    view = interop.as_device_array(producer)  # consumes a capsule
    assert view.copy_to_host().tolist() == [[0, 3, 6], [9, 12, 15]]
    assert view._ary.ctypes.data == t.__cuda_array_interface__["data"][0]  # no copy
    again = f(producer)  # a DLPack producer as an argument
    assert again.numpy().tolist() == [[0, 9, 18], [27, 36, 45]]
    del view
    gc.collect()
    assert interop.exported_count() == base  # the consumer called the deleter


def test_bool_and_int64_dlpack_dtypes():
    f = tw.compile(lambda a, b: (a > 1, b + 1), target="gpu", keep_on_device=True)
    m, n = f(np.arange(3, dtype=np.float64), np.arange(3, dtype=np.int64))
    for t in (m, n):
        view = interop.as_device_array(_DLPackOnly(t))
        assert view.dtype == t.dtype
        np.testing.assert_array_equal(view.copy_to_host(), t.numpy())
    assert m.__cuda_array_interface__["typestr"] == "|b1"


def test_other_targets_copy_device_arguments_to_the_host():
    f = tw.compile(lambda v: v - 1.0, target="reference")
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(f(cuda.to_device(x)), x - 1)
    np.testing.assert_array_equal(f(_Interface(x)), x - 1)

