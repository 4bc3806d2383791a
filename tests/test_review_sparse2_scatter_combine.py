"""tf.compat.v1.scatter_mul / scatter_div / scatter_min / scatter_max (ResourceScatterMul/
Div/Min/Max): only the named rows change, repeated indices apply every update, integer
division truncates towards zero as TensorFlow's C++ kernel, and the functions return the
updated value; the same ops inside @tw.compile on every target. They raised before
(no such functions)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.frontend.ops import scatter
from tests.helpers import TARGETS
from tests.ops.test_array import seeds

RULES = {
    "scatter_mul": lambda row, u: row * u,
    "scatter_div": lambda row, u: row / u,
    "scatter_min": np.minimum,
    "scatter_max": np.maximum,
}


def np_scatter(name, table, indices, updates):
    out = table.copy()
    for k, row in enumerate(indices):  # in order: repeated indices apply every update
        out[row] = RULES[name](out[row], updates[k])
    return out


@settings(max_examples=10)
@given(seeds, st.sampled_from(sorted(RULES)), st.integers(0, 5))
def test_compiled_scatter_matches_numpy(seed, name, n):
    rng = np.random.default_rng(seed)
    table = rng.uniform(0.5, 2.0, (4, 3)).astype(np.float64)
    indices = rng.integers(0, 4, n).astype(np.int32)
    updates = rng.uniform(0.5, 2.0, (n, 3))
    want = np_scatter(name, table, indices, updates)
    for target in TARGETS:
        v = tw.Variable(table.copy(), name=f"{name}_{target}")

        @tw.compile(target=target)
        def step(i, u):
            getattr(scatter, name)(v, i, u)
            return v.read_value()

        np.testing.assert_allclose(step(indices, updates), want, rtol=1e-12)
        np.testing.assert_allclose(v.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(RULES))
def test_v1_session_returns_the_updated_value(name):
    table = np.array([[2.0, -3.0], [4.0, 5.0], [6.0, 8.0]], np.float32)
    updates = np.array([[2.0, 4.0], [0.5, -1.0]], np.float32)
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(table)
        out = getattr(tf, name)(v, [2, 2], updates)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        np.testing.assert_allclose(sess.run(out), np_scatter(name, table, [2, 2], updates))


def test_integer_division_truncates_and_refuses_zero():
    v = tw.Variable(np.array([[-7, 7], [9, -9]], np.int32))
    scatter.scatter_div(v, [0, 1], np.array([[2, -2], [4, 4]], np.int32))
    np.testing.assert_array_equal(v.numpy(), [[-3, -3], [2, -2]])
    with pytest.raises(tw.errors.InvalidArgumentError, match="division by zero"):
        scatter.scatter_div(v, [1], np.array([[1, 0]], np.int32))
    np.testing.assert_array_equal(v.numpy(), [[-3, -3], [2, -2]])  # unchanged
    with pytest.raises(tw.errors.InvalidArgumentError, match="not in"):
        scatter.scatter_mul(v, [2], np.array([[1, 1]], np.int32))
    b = tw.Variable(np.array([True, False]))
    with pytest.raises(tw.errors.DTypeError):
        scatter.scatter_max(b, [0], np.array([False]))
