"""Errors a user can act on (issue 14): each names the op, function or argument, the
user's line, what was expected and what came."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tensorweave as tw
from tensorweave.compat import v1

FILE = os.path.basename(__file__)


def here(offset: int = 0) -> str:
    """'test_actionable_errors.py:N' for the caller's line plus `offset`."""
    return f"{FILE}:{sys._getframe(1).f_lineno + offset}"


# ------------------------------------------------------------------ v1 names that do not exist

@pytest.fixture
def graph_and_session():
    g = v1.Graph()
    with g.as_default():
        x = v1.placeholder(v1.float32, [None], name="x")
        v1.multiply(x, 2.0, name="logits")
    with v1.Session(graph=g) as sess:
        yield g, sess


def test_fetching_an_unknown_name_says_it_is_unknown(graph_and_session):
    g, sess = graph_and_session
    line = here(2)
    with pytest.raises(tw.errors.UnknownNameError) as err:
        sess.run("nope:0")
    msg = str(err.value)
    assert msg.startswith("Session.run") and line in msg
    assert "tensor 'nope:0' does not exist" in msg and "no op named 'nope'" in msg
    assert isinstance(err.value, KeyError) and isinstance(err.value, tw.errors.NotFoundError)


def test_a_near_miss_suggests_the_name_and_output_indices_are_checked(graph_and_session):
    g, sess = graph_and_session
    with pytest.raises(KeyError, match="did you mean 'logits'"):
        sess.run("logit:0")
    with pytest.raises(KeyError, match="op 'x' \\(Placeholder\\) has only x:0"):
        sess.run("x:3")
    with pytest.raises(KeyError, match="operation 'nope' does not exist"):
        sess.run("nope")
    with pytest.raises(KeyError, match="tensor 'nope:0' does not exist"):
        sess.run("logits:0", {"nope:0": [1.0]})
    np.testing.assert_array_equal(sess.run("logits:0", {"x:0": [1.0, 2.0]}), [2.0, 4.0])


# ------------------------------------------------------------------------- input signatures

def test_lists_and_python_numbers_are_converted_to_the_signature():
    double = tw.compile(lambda a: a * 2, input_signature=[tw.TensorSpec([None])])
    out = double([1.0, 2.0])
    assert out.dtype == np.float32 and out.tolist() == [2.0, 4.0]
    count = tw.compile(lambda n: n + 1, input_signature=[tw.TensorSpec([], tw.int32)])
    assert count(3) == 4 and count(3).dtype == np.int32
    pair = tw.compile(lambda ab: ab[0] + ab[1],
                      input_signature=[(tw.TensorSpec([2]), tw.TensorSpec([2]))])
    assert pair(([1.0, 2.0], [3.0, 4.0])).tolist() == [4.0, 6.0]
    assert len(double.concrete_functions) == 1


def test_a_value_the_signature_cannot_take_names_the_argument_and_line():
    double = tw.compile(lambda a: a * 2, input_signature=[tw.TensorSpec([None])])
    line = here(2)
    with pytest.raises(tw.errors.DTypeError) as err:
        double([1.0, None])
    msg = str(err.value)
    assert line in msg and "argument 'a'" in msg and "TensorSpec(shape=[?]" in msg
    assert "contains None" in msg
    count = tw.compile(lambda n: n + 1, input_signature=[tw.TensorSpec([], tw.int32)])
    with pytest.raises(tw.errors.DTypeError, match="argument 'n'.*1.5"):
        count(1.5)
    line = here(2)
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        double(np.ones(3))
    msg = str(err.value)
    assert line in msg and "argument 'a' must match" in msg and "got float64[3]" in msg
    with pytest.raises(TypeError, match="argument 'a' must match .*the Python str 'abc'"):
        double("abc")


# ---------------------------------------------------------------- variables and mixed dtypes

def test_assigning_float64_to_a_float32_variable_names_the_variable_everywhere():
    v = tw.Variable(np.zeros(2, np.float32), name="w")
    line = here(2)
    with pytest.raises(tw.errors.DTypeError) as err:
        v.assign(np.ones(2))
    msg = str(err.value)
    assert msg.startswith("Variable.assign") and line in msg
    # (by its name, which is "w:0" only if no earlier test left an eager variable "w":
    # the process-wide resource manager makes eager variable names unique)
    assert v.name.startswith("w")
    assert f"variable '{v.name}' is f32[2]" in msg and "float64" in msg

    line = here(1)
    step = tw.compile(lambda a: v.assign_add(a))
    with pytest.raises(tw.errors.DTypeError) as err:
        step(np.ones(2))
    msg = str(err.value)
    assert "Variable.assign_add" in msg and line in msg and "got a f64 tensor" in msg

    g = v1.Graph()
    with g.as_default():
        w = v1.Variable(np.ones(2, np.float32), name="W")
        with pytest.raises(tw.errors.DTypeError, match="variable 'W:0' is f32\\[2\\]"):
            w.assign(np.ones(2))


def test_int32_plus_python_float_in_a_compiled_function():
    line = here(1)
    f = tw.compile(lambda x: x + 1.5)
    with pytest.raises(tw.errors.DTypeError) as err:
        f(np.array([1, 2], np.int32))
    msg = str(err.value)
    assert msg.startswith("the + operator") and line in msg
    assert "must be i32" in msg and "1.5" in msg
