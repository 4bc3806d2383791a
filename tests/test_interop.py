"""Interop (issue 15): `EagerTensor` speaks NumPy's array protocol and DLPack, and compiled
functions take any array that exports DLPack or NumPy's array interface (PyTorch CPU
tensors, JAX CPU arrays, hand-made producers) as a graph argument, without a copy."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tensorweave.errors import DTypeError
from tensorweave.frontend.function import ConcreteFunction
from tensorweave.targets.cpu.executable import NativeStep
from tests.helpers import TARGETS, assert_same

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8]


def pointer(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class DLPackOnly:
    """An array of "another library": only DLPack, which it takes from a NumPy array."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


class ArrayInterfaceOnly:
    """An array of "another library" that only has NumPy's array interface."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array  # keeps the buffer alive
        self.__array_interface__ = array.__array_interface__


class LegacyDLPack(DLPackOnly):
    """A DLPack producer of before DLPack 1.0: ignores the consumer's max_version."""

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__()


@pytest.fixture
def seen_arrays(monkeypatch):
    """The arrays each compiled call, and each native cpu step, was handed."""
    seen = {"call": [], "native": []}
    call_flat, native_call = ConcreteFunction.call_flat, NativeStep.__call__

    def spy_call(self, arrays, *rest):  # rest: call_flat's `donated` (donate_argnums)
        seen["call"].append(list(arrays))
        return call_flat(self, arrays, *rest)

    def spy_native(self, arrays, step=None):
        seen["native"].append(list(arrays))
        return native_call(self, arrays, step)

    monkeypatch.setattr(ConcreteFunction, "call_flat", spy_call)
    monkeypatch.setattr(NativeStep, "__call__", spy_native)
    return seen


# ------------------------------------------------------------------ EagerTensor protocols

@settings(max_examples=15)
@given(st.sampled_from(DTYPES).flatmap(
    lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))))
def test_eager_tensor_array_protocol_numpy2_semantics(value):
    t = tw.constant(value)
    view = np.asarray(t)  # copy=None: the tensor's own (read-only) buffer
    assert np.shares_memory(view, t._array) and not view.flags.writeable
    np.testing.assert_array_equal(view, value)
    fresh = np.array(t)  # copy=True: a writeable copy
    assert not np.shares_memory(fresh, t._array) and fresh.flags.writeable
    np.testing.assert_array_equal(fresh, value)
    assert np.shares_memory(np.asarray(t, copy=False), t._array)
    converted = np.asarray(t, dtype=np.float64)
    assert converted.dtype == np.float64
    np.testing.assert_array_equal(converted, value.astype(np.float64))
    if value.dtype != np.float64:
        with pytest.raises(ValueError, match="needs a copy"):
            np.asarray(t, dtype=np.float64, copy=False)


@settings(max_examples=15)
@given(st.sampled_from(DTYPES).flatmap(
    lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))))
def test_eager_tensor_dlpack_shares_its_buffer_read_only(value):
    t = tw.constant(value)
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU, device 0
    out = np.from_dlpack(t)
    np.testing.assert_array_equal(out, value)
    assert out.dtype == value.dtype
    if value.size:
        assert pointer(out) == pointer(t._array)
    assert not out.flags.writeable  # an eager tensor is immutable, through DLPack too


def test_dlpack_export_keeps_the_buffer_alive():
    t = tw.constant(np.arange(1000, dtype=np.float64))
    out = np.from_dlpack(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(out, np.arange(1000, dtype=np.float64))


def test_legacy_dlpack_consumer_gets_a_copy_it_may_write():
    # DLPack before 1.0 cannot say "read-only": such a consumer gets its own copy
    t = tw.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    capsule = t.__dlpack__()
    assert "dltensor" in repr(capsule)
    out = np.from_dlpack(LegacyDLPack(np.asarray(t).copy()))
    np.testing.assert_array_equal(out, np.asarray(t))
    with pytest.raises(BufferError):
        t.__dlpack__(copy=False)


def test_compiled_results_are_numpy_arrays():
    for target in TARGETS:
        f = tw.compile(lambda x: (x + 1, {"y": x * 2}), target=target)
        a, d = f(np.ones(3, np.float32))
        assert type(a) is np.ndarray and type(d["y"]) is np.ndarray, target


# ------------------------------------------------------------------ foreign array arguments

def _sources(value: np.ndarray):
    return {"dlpack": DLPackOnly(value), "array_interface": ArrayInterfaceOnly(value),
            "eager": tw.constant(value)}


@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=10)
@given(data=st.data())
def test_compiled_functions_take_foreign_arrays_without_a_copy(target, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5))
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    x = data.draw(hnp.arrays(dtype, shape, elements=st.floats(-10, 10, width=32)))
    y = data.draw(hnp.arrays(dtype, shape, elements=st.floats(-10, 10, width=32)))
    f = tw.compile(lambda a, b: a * 2.0 + b, target=target)
    want = x * 2 + y
    seen = {"call": []}
    call_flat = ConcreteFunction.call_flat

    def spy(self, arrays, *rest):
        seen["call"].append(list(arrays))
        return call_flat(self, arrays, *rest)

    ConcreteFunction.call_flat = spy
    try:
        for name, src in _sources(x).items():
            got = f(src, y)
            assert_same(got, want)
            passed = seen["call"][-1][0]
            assert pointer(passed) == pointer(np.asarray(x) if name != "eager"
                                              else src._array), name
            got = f(y, src)  # second position, and again through the fast path
            assert_same(got, y * 2 + x)
            assert pointer(seen["call"][-1][1]) == pointer(seen["call"][-2][0]), name
    finally:
        ConcreteFunction.call_flat = call_flat
    assert f.experimental_get_tracing_count() == 1  # one signature, whatever the producer


def test_native_cpu_step_reads_a_dlpack_argument_in_place(seen_arrays):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    f = tw.compile(lambda a: tw.reduce_sum(a * a, axis=1), target="cpu")
    for _ in range(2):  # the first call and the fast path
        np.testing.assert_allclose(f(DLPackOnly(x)), (x * x).sum(1))
        assert pointer(seen_arrays["native"][-1][0]) == pointer(x)


def test_strided_foreign_arrays_give_the_right_values():
    x = np.arange(24, dtype=np.float64).reshape(4, 6)
    for target in TARGETS:
        f = tw.compile(lambda a: a - 1.0, target=target)
        np.testing.assert_array_equal(f(DLPackOnly(x.T)), x.T - 1)
        np.testing.assert_array_equal(f(DLPackOnly(x[:, ::2])), x[:, ::2] - 1)


def test_foreign_arrays_match_an_input_signature():
    f = tw.compile(lambda a: a + 1, input_signature=[tw.TensorSpec([None, 2], tw.float32)])
    np.testing.assert_array_equal(f(DLPackOnly(np.zeros((3, 2), np.float32))),
                                  np.ones((3, 2), np.float32))
    with pytest.raises(tw.errors.InvalidArgumentError, match="argument 'a' must match"):
        f(DLPackOnly(np.zeros((3, 2), np.float64)))


# ------------------------------------------------------------------ PyTorch, JAX (optional)

@pytest.mark.parametrize("target", TARGETS)
def test_pytorch_cpu_tensors_in_and_out(target, seen_arrays):
    torch = pytest.importorskip("torch")
    f = tw.compile(lambda a, b: tw.matmul(a, b) + 1.0, target=target)
    a = torch.randn(5, 3, dtype=torch.float64)
    b = torch.randn(3, 4, dtype=torch.float64)
    for _ in range(2):
        got = f(a, b)
        np.testing.assert_allclose(got, a.numpy() @ b.numpy() + 1, rtol=1e-12)
        passed = seen_arrays["call"][-1]
        assert [pointer(p) for p in passed] == [a.data_ptr(), b.data_ptr()]
    if target == "cpu":
        assert pointer(seen_arrays["native"][-1][0]) == a.data_ptr()
    assert f.experimental_get_tracing_count() == 1
    back = torch.from_dlpack(got)  # results go to PyTorch without a copy too
    assert back.data_ptr() == pointer(got)


def test_pytorch_reads_an_eager_tensor_without_a_copy():
    torch = pytest.importorskip("torch")
    t = tw.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    out = torch.from_dlpack(t)
    assert out.data_ptr() == pointer(t._array)
    np.testing.assert_array_equal(out.numpy(), np.asarray(t))


def test_pytorch_tensor_that_requires_grad_is_a_clear_error():
    torch = pytest.importorskip("torch")
    f = tw.compile(lambda weights: weights * 2)
    with pytest.raises(DTypeError) as e:
        f(torch.ones(3, requires_grad=True))
    msg = str(e.value)
    assert "<lambda>()" in msg and "argument 'weights'" in msg and "torch.Tensor" in msg
    assert "test_interop.py" in msg and "detach()" in msg


def test_jax_cpu_arrays(seen_arrays):
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    for target in TARGETS:
        f = tw.compile(lambda a: a * 3.0, target=target)
        for _ in range(2):
            np.testing.assert_array_equal(f(x), np.asarray(x) * 3)
            assert pointer(seen_arrays["call"][-1][0]) == x.unsafe_buffer_pointer()
        assert f.experimental_get_tracing_count() == 1
    assert pointer(seen_arrays["native"][-1][0]) == x.unsafe_buffer_pointer()


# ------------------------------------------------------------------ tw.experimental.dlpack

def test_experimental_dlpack_round_trip():
    from tensorweave.experimental import dlpack
    value = np.arange(12, dtype=np.float32).reshape(3, 4)
    capsule = dlpack.to_dlpack(tw.constant(value))
    assert "dltensor" in repr(capsule)
    back = dlpack.from_dlpack(capsule)
    assert isinstance(back, tw.EagerTensor) and back.dtype == tw.float32
    np.testing.assert_array_equal(back.numpy(), value)
    with pytest.raises(BufferError, match="consumed already"):
        dlpack.from_dlpack(capsule)
    np.testing.assert_array_equal(dlpack.from_dlpack(DLPackOnly(value)).numpy(), value)
    with pytest.raises(TypeError, match="expected a DLPack capsule or an object with "
                                        "__dlpack__, got list"):
        dlpack.from_dlpack([1, 2])
    assert tw.experimental.dlpack is dlpack


def test_experimental_dlpack_with_pytorch():
    torch = pytest.importorskip("torch")
    from tensorweave.experimental import dlpack
    t = torch.arange(5, dtype=torch.int32)
    np.testing.assert_array_equal(dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t)).numpy(),
                                  t.numpy())
    out = torch.from_dlpack(dlpack.to_dlpack(tw.constant(np.ones(3, np.float64))))
    assert out.dtype == torch.float64 and out.tolist() == [1.0, 1.0, 1.0]
