"""Host arrays with a zero stride on a size-1 axis (``np.ones(6)[:, None]``: strides
(8, 0)) go to the device. NumPy calls them contiguous, so they were handed to numba's
copy as they were, which drops stride-0 axes and then failed on the shapes (6,) and
(6, 1), for arguments, variables and results uploaded to stay on the device."""

from __future__ import annotations

import numpy as np

import tensorweave as tw


def _column(n: int, value: float) -> np.ndarray:
    col = np.full(n, value)[:, None]
    assert col.strides[1] == 0 and col.flags.c_contiguous
    return col


def test_arguments_with_a_zero_stride_axis():
    f = tw.compile(lambda a, b: a * 2.0 + b, target="gpu")
    got = f(_column(6, 1.5), np.arange(6.0).reshape(6, 1))
    np.testing.assert_array_equal(got, 3.0 + np.arange(6.0).reshape(6, 1))


def test_a_variable_initialised_and_updated_from_a_zero_stride_array():
    v = tw.Variable(_column(3, 1.0))
    step = tw.compile(lambda a: v.assign_add(a), target="gpu")
    np.testing.assert_array_equal(step(_column(3, 2.0)), np.full((3, 1), 3.0))
    v.assign(_column(3, -1.0))
    np.testing.assert_array_equal(step(_column(3, 2.0)), np.full((3, 1), 1.0))
    np.testing.assert_array_equal(v.numpy(), np.full((3, 1), 1.0))


def test_results_kept_on_the_device():
    f = tw.compile(lambda a: a + 1.0, target="gpu", keep_on_device=True)
    out = f(_column(4, 0.5))
    np.testing.assert_array_equal(out.numpy(), np.full((4, 1), 1.5))
    # and a device result fed back as an argument
    np.testing.assert_array_equal(f(out).numpy(), np.full((4, 1), 2.5))
