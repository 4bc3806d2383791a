"""assign_add / assign_sub on a bool variable are refused when traced (TensorFlow has no
kernel for them either). The cpu target's native step added the bytes, so a bool
variable held 2, 3, ... (printed True, but wrapping to False after 255 additions), and
its guard against that (`dtype.name == "bool"`, compared with the IR spelling 'i1')
never fired; the reference target ORed on add and raised NumPy's TypeError on sub."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.errors import DTypeError


@pytest.mark.parametrize("target", ["cpu", "reference"])
@pytest.mark.parametrize("update", ["assign_add", "assign_sub"])
def test_arithmetic_update_of_a_bool_variable_is_refused(target, update):
    v = tw.Variable(np.array([True, False, True]))

    @tw.compile(target=target)
    def f(x):
        getattr(v, update)(x)
        return v.read_value()

    with pytest.raises(DTypeError, match="bool variable"):
        f(np.array([True, True, False]))
    np.testing.assert_array_equal(v.numpy().view(np.uint8), [1, 0, 1])


def test_eager_update_of_a_bool_variable_is_refused():
    v = tw.Variable(np.array([True]))
    with pytest.raises(DTypeError, match="bool variable"):
        v.assign_add(np.array([True]))


@pytest.mark.parametrize("target", ["cpu", "reference"])
def test_assigning_a_bool_variable_stays_canonical(target):
    v = tw.Variable(np.array([True, False, True]))

    @tw.compile(target=target)
    def f(x):
        v.assign(tw.logical_or(v.read_value(), x))
        return v.read_value()

    for _ in range(3):
        got = f(np.array([True, True, False]))
    np.testing.assert_array_equal(got.view(np.uint8), [1, 1, 1])
    np.testing.assert_array_equal(v.numpy().view(np.uint8), [1, 1, 1])
