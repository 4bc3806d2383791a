"""The cpu target's runtime errors say what the reference target's say: the op, the
user's line, what was expected and what came (an out-of-range Gather index: which one,
its value, the bound and params' shape; ArgMax/ArgMin over an axis with no elements:
the axis and the shape)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw

FILE = os.path.basename(__file__)


def here(offset: int = 0) -> str:
    """'test_cpu_error_messages.py:N' for the caller's line plus `offset`."""
    return f"{FILE}:{sys._getframe(1).f_lineno + offset}"


def error_of(fn, *args, target: str) -> str:
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        tw.compile(fn, target=target)(*args)
    return str(err.value)


def both_targets(fn, *args) -> str:
    """The cpu target's message, checked to be the reference target's."""
    cpu = error_of(fn, *args, target="cpu")
    assert cpu == error_of(fn, *args, target="reference")
    return cpu


# ------------------------------------------------------------------------------- Gather

def gather(params, indices):
    return tw.gather(params, indices) * 2.0


GATHER_LINE = f"{FILE}:{gather.__code__.co_firstlineno + 1}"
PARAMS = np.arange(6, dtype=np.float32).reshape(3, 2)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("bad", [7, 3, -1])
def test_out_of_range_gather_index_names_it_its_value_and_the_bound(dtype, bad):
    msg = both_targets(gather, PARAMS, np.array([0, bad, 1], dtype))
    assert msg.startswith("Gather 'gather'") and GATHER_LINE in msg
    assert f"indices[1] = {bad} is not in [0, 3) (dimension 0 of params, shape [3,2])" in msg


def test_gather_error_through_the_native_dispatcher_and_after_it():
    # the first call builds the step; later calls go through the native dispatcher
    f = tw.compile(gather, target="cpu")
    np.testing.assert_array_equal(f(PARAMS, np.array([2, 0], np.int32)), PARAMS[[2, 0]] * 2)
    for _ in range(2):  # (a failure leaves nothing behind for the next call)
        with pytest.raises(tw.errors.InvalidArgumentError) as err:
            f(PARAMS, np.array([4, 0], np.int32))
        assert "indices[0] = 4 is not in [0, 3)" in str(err.value)
        assert GATHER_LINE in str(err.value)
    np.testing.assert_array_equal(f(PARAMS, np.array([1, 1], np.int32)), PARAMS[[1, 1]] * 2)


@settings(max_examples=8, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3), data=st.data())
def test_gather_errors_match_the_reference_along_any_axis(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    n = shape[axis]
    indices = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4),
                                 label="indices"), np.int64)
    at = data.draw(st.integers(0, len(indices) - 1), label="at")
    indices[at] = data.draw(st.sampled_from([n, n + 5, -1, -n - 2]), label="bad")
    params = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)

    def fn(p, i):
        return tw.gather(p, i, axis=axis)

    msg = both_targets(fn, params, indices)
    assert f"indices[{at}] = {indices[at]} is not in [0, {n})" in msg


def test_gather_in_a_loop_body_names_the_bound_and_params_shape():
    # (inside a native loop the indices are not shown to the reference kernel: the
    # message says what it can from the types)
    def looped(p, idx):
        def body(i, acc):
            return i + 1, acc + tw.gather(p, idx + i)
        return tw.while_loop(lambda i, acc: i < 3, body,
                             (tw.constant(0), tw.zeros([2], tw.float32)))[1]

    line = here(-4)
    p = np.arange(4, dtype=np.float32)
    f = tw.compile(looped, target="cpu")
    np.testing.assert_array_equal(f(p, np.array([0, 1], np.int32)), [3.0, 6.0])
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        f(p, np.array([0, 2], np.int32))
    msg = str(err.value)
    assert msg.startswith("Gather 'gather'") and line in msg
    assert "not in [0, 4) (dimension 0 of params, shape [4])" in msg


def test_a_gather_compiled_on_its_own_raises_the_reference_message():
    from tensorweave.targets.cpu.lowering import compile_node
    g = tw.compile(gather).get_concrete_function(
        tw.TensorSpec([3, 2], tw.float32), tw.TensorSpec([2], tw.int32)).graph
    node = next(n for n in g.nodes if n.op == "Gather")
    kernel = compile_node(node)
    np.testing.assert_array_equal(kernel([PARAMS, np.array([2, 1], np.int32)])[0],
                                  PARAMS[[2, 1]])
    with pytest.raises(tw.errors.InvalidArgumentError) as err:
        kernel([PARAMS, np.array([2, -4], np.int32)])
    msg = str(err.value)
    assert "indices[1] = -4 is not in [0, 3) (dimension 0 of params, shape [3,2])" in msg
    assert GATHER_LINE in msg


# ----------------------------------------------------------------------- ArgMax, ArgMin

@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("shape, axis", [((3, 0), 1), ((0, 4), 0), ((2, 0, 3), -2)])
def test_arg_reduction_over_an_empty_axis_names_the_axis_and_shape(op, shape, axis):
    def fn(x):
        return getattr(tw.math, op)(x, axis=axis)

    line = here(-2)
    msg = both_targets(fn, np.zeros(shape, np.float32))
    name = "ArgMax" if op == "argmax" else "ArgMin"
    assert msg.startswith(name) and line in msg
    assert (f"{name} along axis {axis} of a tensor of shape {list(shape)}: that axis has no "
            "elements") in msg
