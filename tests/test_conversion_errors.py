"""Python values that would only become a tensor by accident (None, which NumPy turns into
NaN; a float where the other operand is an integer; a number too big for the dtype) are
errors that name the function or operator the user called, the operand, what was
expected and what came, and the user's line: never a silent NaN or rounding."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compat import v1
from tests.helpers import TARGETS

FILE = os.path.basename(__file__)


def raises_here(exc: type, fn) -> str:
    """Call `fn` (a lambda written on the caller's line); return the message of the `exc`
    it raises after checking that it names the caller's line."""
    line = sys._getframe(1).f_lineno
    with pytest.raises(exc) as err:
        fn()
    message = str(err.value)
    assert f"{FILE}:{line}" in message, message
    return message


def test_none_in_arithmetic_is_a_type_error_not_nan():
    x = tw.constant([1.0, 2.0])
    msg = raises_here(tw.errors.DTypeError, lambda: x * None)
    assert "the * operator" in msg and "operand 2" in msg and "None" in msg
    msg = raises_here(TypeError, lambda: None + x)  # a plain TypeError to except clauses
    assert "the + operator" in msg and "operand 1" in msg


def test_matmul_of_none_names_matmul_and_the_operand():
    w = tw.ones([2, 2])
    msg = raises_here(tw.errors.DTypeError, lambda: tw.matmul(None, w))
    assert msg.startswith("tw.matmul") and "operand 1" in msg and "None" in msg


@pytest.mark.parametrize("target", TARGETS)
def test_a_helper_that_forgot_return_fails_at_trace_time(target):
    def helper(x):
        x * 2.0  # forgot `return`

    line = sys._getframe().f_lineno + 1
    f = tw.compile(lambda x: tw.exp(helper(x)) + 1.0, target=target)
    with pytest.raises(tw.errors.DTypeError) as err:
        f(np.ones(2, np.float32))
    msg = str(err.value)  # names the line of the traced function that called tw.exp
    assert f"{FILE}:{line}" in msg and "tw.exp" in msg and "forget to `return`" in msg


def test_none_inside_a_list_is_refused_even_with_a_dtype():
    msg = raises_here(tw.errors.DTypeError, lambda: tw.constant([1.0, None]))
    assert "tw.constant" in msg and "contains None" in msg
    x = tw.constant([1.0, 2.0])
    msg = raises_here(tw.errors.DTypeError, lambda: x + [1.0, None])
    assert "operand 2" in msg and "contains None" in msg
    msg = raises_here(tw.errors.DTypeError, lambda: tw.constant([[1.0], [2.0, 3.0]]))
    assert "differ in length" in msg


def test_int_tensor_plus_python_float_names_operand_expected_and_got():
    i = tw.constant([1, 2])
    msg = raises_here(tw.errors.DTypeError, lambda: i + 1.5)
    assert "the + operator" in msg and "operand 2" in msg and "i32" in msg and "1.5" in msg
    assert (i + 2.0).numpy().tolist() == [3, 4]  # an exact integer value still converts


def test_values_the_dtype_cannot_hold_are_errors():
    msg = raises_here(tw.errors.DTypeError, lambda: tw.constant([1.0], tw.float16) * 1e6)
    assert "overflows to infinity" in msg
    msg = raises_here(tw.errors.DTypeError, lambda: tw.constant(np.int8(3)) + 300)
    assert "does not fit" in msg and "i8" in msg
    msg = raises_here(tw.errors.DTypeError, lambda: tw.constant([True]) & 2)
    assert "expected a bool" in msg
    msg = raises_here(tw.errors.DTypeError, lambda: tw.constant([1.0]) + "a")
    assert "str" in msg
    msg = raises_here(tw.errors.DTypeError, lambda: tw.constant(1.0) * (1 + 2j))
    assert "complex" in msg
    msg = raises_here(tw.errors.DTypeError, lambda: tw.constant(1e300))
    assert "float32" in msg and "overflows" in msg and "tw.float64" in msg
    assert tw.constant(1e300, tw.float64).numpy() == 1e300
    assert np.isinf(tw.constant(float("inf")).numpy())  # an infinity asked for is kept
    msg = raises_here(tw.errors.DTypeError, lambda: tw.constant([1, 2**70]))
    assert "does not fit in int64" in msg


def test_assigning_float64_to_a_float32_variable_names_assign():
    v = tw.Variable(np.zeros(2, np.float32))
    msg = raises_here(tw.errors.DTypeError, lambda: v.assign(np.ones(2)))
    assert "Variable.assign" in msg and "f32" in msg and "float64" in msg


def test_v1_graph_ops_on_none_name_the_operator():
    g = v1.Graph()
    with g.as_default():
        x = v1.placeholder(v1.float32, [None])
        msg = raises_here(tw.errors.DTypeError, lambda: x * None)
        assert "the * operator" in msg and "operand 2" in msg
        msg = raises_here(tw.errors.DTypeError, lambda: v1.matmul(None, x))
        assert "matmul" in msg and "operand 1" in msg
