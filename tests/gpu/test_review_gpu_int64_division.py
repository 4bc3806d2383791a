"""The int64 minimum divided by -1 (FloorDiv, Div) on the gpu target: the reference
gives the wrapped quotient INT64_MIN (NumPy), numba's integer division guards the x86
trap by giving 0. The simulator computes with NumPy scalars and hides it, so the kernels
run here with numba's own lowering (`tests.gpu.native`), as a GPU would compute them."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.frontend.building import apply_op1
from tests.gpu.native import run_natively

LOW = np.iinfo(np.int64).min

OPS = {
    "floordiv": tw.floordiv,
    "floormod": tw.floormod,
    "div": lambda x, y: apply_op1("Div", [x, y]),
}


@pytest.mark.parametrize("name", list(OPS))
def test_int64_minimum_divided_by_minus_one_wraps_as_the_reference(name):
    fn = OPS[name]
    x = np.array([LOW, LOW, LOW + 1, -7, 7, LOW], np.int64)
    y = np.array([-1, 1, -1, 2, -2, 2], np.int64)
    want = np.asarray(tw.compile(fn, target="reference")(x, y))
    (got,), status = run_natively(fn, [x, y])
    assert status == 0
    np.testing.assert_array_equal(got, want)


def test_int8_minimum_divided_by_minus_one_wraps_as_the_reference():
    x = np.array([-128, -128, 5], np.int8)
    y = np.array([-1, 3, -1], np.int8)
    for fn in OPS.values():
        want = np.asarray(tw.compile(fn, target="reference")(x, y))
        (got,), _ = run_natively(fn, [x, y])
        np.testing.assert_array_equal(got, want)
