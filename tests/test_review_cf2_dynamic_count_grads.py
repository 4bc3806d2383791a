"""Gradients of `tw.scan`, `tw.map_fn` and `tw.foldl` whose element count is known only at
run time (a TensorFlow 1 ``[None, ...]`` placeholder, an ``input_signature`` with None):
each element is a ``Gather`` of the elements, and Gather's gradient needed the size of
its params while the graph was built (a CompileError). It now adds the rows into zeros
shaped like the params at run time. Checked against finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import assert_same

F64 = np.float64
TARGETS = ["reference", "cpu"]


def numeric_grad(fn, x, eps=1e-6):
    """Central differences of the scalar `fn` at `x` (float64)."""
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += eps
        down[k] -= eps
        g[k] = (fn(up) - fn(down)) / (2 * eps)
    return g


def scan_loss(x):
    y = tw.scan(lambda acc, e: acc * e + tw.sin(e), x, initializer=tw.ones([2], tw.float64))
    return tw.reduce_sum(y * y)


def map_loss(x):
    return tw.reduce_sum(tw.map_fn(lambda e: e * tw.reduce_sum(e * e), x))


def foldl_loss(x):
    return tw.foldl(lambda acc, e: acc * 0.5 + tw.reduce_sum(e * e * e), x,
                    initializer=tw.constant(F64(1.0)))


def np_scan_loss(x):
    acc, total = np.ones(2), 0.0
    for e in x:
        acc = acc * e + np.sin(e)
        total += float(np.sum(acc * acc))
    return total


def np_map_loss(x):
    return float(sum(np.sum(e * np.sum(e * e)) for e in x))


def np_foldl_loss(x):
    acc = 1.0
    for e in x:
        acc = acc * 0.5 + float(np.sum(e ** 3))
    return acc


CASES = [(scan_loss, np_scan_loss), (map_loss, np_map_loss), (foldl_loss, np_foldl_loss)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("loss,np_loss", CASES)
def test_gradient_with_a_run_time_count_under_an_input_signature(target, loss, np_loss):
    @tw.compile(input_signature=[tw.TensorSpec([None, 2], tw.float64)], target=target)
    def grad(x):
        with tw.GradientTape() as tape:
            tape.watch(x)
            y = loss(x)
        return y, tape.gradient(y, x)

    rng = np.random.default_rng(0)
    for n in (3, 1, 5):  # one trace serves every count
        x = rng.uniform(-1.0, 1.0, (n, 2))
        y, g = grad(x)
        assert_same(np.asarray(y), F64(np_loss(x)), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(g), numeric_grad(np_loss, x), rtol=1e-6,
                                   atol=1e-8)


@pytest.mark.parametrize("loss,np_loss", CASES)
def test_gradient_with_a_none_placeholder_in_a_session(loss, np_loss):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [None, 2])
        y = loss(x)
        gx, = tf.gradients(y, [x])
        with tf.Session() as sess:
            for n in (4, 2):
                v = np.random.default_rng(n).uniform(-1.0, 1.0, (n, 2))
                got = sess.run(gx, {x: v})
                np.testing.assert_allclose(got, numeric_grad(np_loss, v), rtol=1e-6,
                                           atol=1e-8)


@pytest.mark.parametrize("target", TARGETS)
def test_gather_gradient_along_a_run_time_sized_inner_axis(target):
    # Gather along axis 1 of params whose axis 1 is unknown; indices repeat
    @tw.compile(input_signature=[tw.TensorSpec([2, None], tw.float64)], target=target)
    def grad(p):
        with tw.GradientTape() as tape:
            tape.watch(p)
            y = tw.reduce_sum(tw.sin(tw.gather(p, [[0, 2], [2, 1]], axis=1)))
        return tape.gradient(y, p)

    p = np.random.default_rng(1).uniform(-1.0, 1.0, (2, 4))
    want = np.zeros_like(p)
    for i in (0, 2, 2, 1):
        want[:, i] += np.cos(p[:, i])
    assert_same(np.asarray(grad(p)), want, rtol=1e-12, atol=1e-12)
