"""`tw.while_loop`, `tw.scan` and `tw.foldl` take TensorFlow's positional arguments in
TensorFlow's order. `tw.while_loop`'s fifth parameter was `maximum_iterations`, where
TensorFlow (1 and 2) has `parallel_iterations`: ``tf.while_loop(c, b, vars, None, 1)``,
TensorFlow code asking for one iteration in flight, silently stopped the loop after one
iteration. TensorFlow's `back_prop` and `swap_memory` are accepted (``back_prop=False``
stops the gradient at the results, as TensorFlow 2 does)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import assert_same

F64 = np.float64


def doubling(x, *args, **kwargs):
    """x doubled 5 times."""
    return tw.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * 2.0), (0, x),
                         *args, **kwargs)[1]


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_fifth_positional_is_parallel_iterations(target):
    # TensorFlow: (cond, body, loop_vars, shape_invariants, parallel_iterations, back_prop,
    # swap_memory, maximum_iterations, name)
    f = tw.compile(lambda x: doubling(x, None, 1), target=target)
    assert_same(f(F64(1)), F64(32))
    f = tw.compile(lambda x: doubling(x, None, 1, True, False, 3, "loop"), target=target)
    assert_same(f(F64(1)), F64(8))
    assert_same(doubling(tw.constant(F64(1)), None, 1).numpy(), F64(32))  # eager


def test_v1_positional_parallel_iterations():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [])
        y = doubling(x, None, 1)
        with tf.Session() as sess:
            assert_same(sess.run(y, {x: 1.0}), F64(32))


def test_back_prop_false_stops_the_gradient():
    def f(x):
        with tw.GradientTape() as tape:
            tape.watch(x)
            y = doubling(x, back_prop=False, swap_memory=True) + x * 3.0
        return tape.gradient(y, x)

    assert_same(tw.compile(f)(F64(1)), F64(3))
    assert_same(f(tw.constant(F64(1))).numpy(), F64(3))


def test_scan_and_foldl_positionals():
    xs = np.array([1.0, 2.0, 3.0])

    def f(x):
        with tw.GradientTape() as tape:
            tape.watch(x)
            # (fn, elems, initializer, parallel_iterations, back_prop, swap_memory, ...)
            s = tw.scan(lambda a, e: a + e * e, x, F64(0), 1, False, False, True)
            r = tw.foldl(lambda a, e: a + e * e, x, F64(0), 1, True, False, "fold")
            y = tw.reduce_sum(s) + r
        return s, r, tape.gradient(y, x)

    s, r, g = tw.compile(f)(xs)
    assert_same(s, np.cumsum(xs * xs))
    assert_same(r, F64(14))
    assert_same(g, 2 * xs)  # only the foldl's gradient: the scan has back_prop=False
    s, r, g = f(tw.constant(xs))
    assert_same(g.numpy(), 2 * xs)
