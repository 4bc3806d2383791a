"""A known dim of a static shape (`x.shape[1]`, a `Dimension`) in NumPy arithmetic keeps
NumPy's result dtype for a Python int.

NumPy 2 promotes a plain Python int weakly (``np.float32(2) * 3`` stays float32) but an
int subclass strongly, as int64: before, ``float32_array / x.shape[0]`` was a float64
array and ``np.float32(1.5) + x.shape[0]`` a float64 scalar, where TensorFlow 2.21 (whose
``shape[0]`` is an int) and tensorweave with tuple shapes gave float32. Such a value made
into a variable or constant silently became float64."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.frontend.tensor_shape import Dimension


def _dims():
    x = tw.constant(np.ones((3, 4), np.float32))
    return x.shape[0], x.shape[1]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int8, np.uint8, np.int32])
def test_array_with_a_dim_keeps_the_dtype_an_int_gives(dtype):
    d0, d1 = _dims()
    assert type(d0) is Dimension
    a = np.arange(1, 5).astype(dtype)
    for got, want in [(a * d0, a * 3), (d0 * a, 3 * a), (a + d1, a + 4), (a - d0, a - 3),
                      (a // d0, a // 3), (a % d1, a % 4), (np.maximum(a, d0), np.maximum(a, 3))]:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    if a.dtype.kind == "f":
        got, want = a / d1, a / 4
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("scalar", [np.float16(1.5), np.float32(1.5)])
def test_numpy_scalar_with_a_dim_keeps_its_dtype(scalar):
    d0, _ = _dims()
    for got, want in [(scalar * d0, scalar * 3), (d0 * scalar, 3 * scalar),
                      (scalar + d0, scalar + 3), (d0 + scalar, 3 + scalar)]:
        assert got.dtype == want.dtype and got == want
    # a NumPy integer on the left is NumPy's arithmetic (on the right the dim's own: a
    # Dimension, TensorFlow 1's rule for sizes)
    got = np.int16(2) * d0
    assert got.dtype == np.int16 and got == 6


def test_in_place_and_comparisons_and_plain_int_results():
    d0, d1 = _dims()
    a = np.ones(3, np.float32)
    a *= d1
    assert a.dtype == np.float32 and a.tolist() == [4.0, 4.0, 4.0]
    assert (np.arange(5) < d0).tolist() == [True, True, True, False, False]
    assert np.asarray(d0).dtype == np.asarray(3).dtype and int(np.asarray(d0)) == 3
    # the dim keeps its own arithmetic with ints (TensorFlow 1's .value)
    assert (d0 * d1).value == 12 and d0 + 1 == 4


def test_a_variable_made_from_array_over_dim_stays_float32():
    x = tw.constant(np.ones((2, 5), np.float32))
    v = tw.Variable(np.full((2,), 10.0, np.float32) / x.shape[1])
    assert v.dtype is tw.float32
    np.testing.assert_array_equal(v.numpy(), np.full((2,), 2.0, np.float32))
