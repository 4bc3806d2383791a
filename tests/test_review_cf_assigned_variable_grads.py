"""The gradient with respect to a variable that a ``tw.cond`` branch or ``tw.while_loop``
body both assigns and reads (such reads stay inside the region, so each sees the
assignment before it, and carry no gradient): a clear CompileError naming the variable
and the node, not a silent None. Compiled, ``tape.gradient(y, v)`` was None (an
optimizer then skipped v) where eager code (and TensorFlow) gives the derivative: 18
for ``y = x * v**3`` computed in a loop that also assigns v, 1.5 for the cond.

Gradients that do not go through such a read keep working."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import assert_same

F64 = np.float64


def loop_that_assigns(x, v):
    def body(i, a):
        v.assign_add(0.0)
        return i + 1, a * v
    return tw.while_loop(lambda i, a: i < 3, body, (0, x))[1]


def cond_that_assigns(x, v):
    def then():
        v.assign_add(0.0)
        return x * v
    return tw.cond(x > 0, then, lambda: x)


@pytest.mark.parametrize("build", [loop_that_assigns, cond_that_assigns])
def test_tape_gradient_through_an_assigning_region_is_an_error(build):
    v = tw.Variable(F64(2.0))

    def f(x):
        with tw.GradientTape() as tape:
            y = build(x, v)
        return tape.gradient(y, v)

    with pytest.raises(tw.errors.CompileError, match=r"variable '.*' .*(While|If)"):
        tw.compile(f)(F64(1.5))


@pytest.mark.parametrize("build", [loop_that_assigns, cond_that_assigns])
def test_tw_gradients_through_an_assigning_region_is_an_error(build):
    v = tw.Variable(F64(2.0))
    with pytest.raises(tw.errors.CompileError, match=r"variable '.*' .*(While|If)"):
        tw.compile(lambda x: tw.gradients(build(x, v), [v]))(F64(1.5))


def test_v1_gradients_through_an_assigning_region_is_an_error():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [])
        v = tf.Variable(F64(2.0))
        with pytest.raises(tw.errors.CompileError, match=r"variable '.*' .*While"):
            tf.gradients(loop_that_assigns(x, v), [v])


def test_eager_still_differentiates():
    v = tw.Variable(F64(2.0))
    with tw.GradientTape() as tape:
        y = loop_that_assigns(tw.constant(F64(1.5)), v)
    assert_same(tape.gradient(y, v).numpy(), F64(18.0))


def test_gradients_that_avoid_those_reads_still_work():
    v = tw.Variable(F64(2.0))
    counter = tw.Variable(F64(0.0))

    def f(x):
        with tw.GradientTape() as tape:
            tape.watch(x)

            def body(i, a, b):
                counter.assign_add(counter.read_value() * 0.0 + 1.0)  # read and assigned
                return i + 1, a * v, b + counter.read_value()  # v: read only
            _, a, b = tw.while_loop(lambda i, a, b: i < 3, body, (0, x, F64(0)))
            y = a + tw.stop_gradient(b)
        return tape.gradient(y, [x, v])

    gx, gv = tw.compile(f)(F64(1.5))
    assert_same(gx, F64(8.0))   # v**3
    assert_same(gv, F64(18.0))  # 3 x v**2


def test_a_cond_that_only_updates_a_statistic_still_differentiates():
    # (batch-norm style: the branch assigns and reads `moving`, the result does not use it)
    w = tw.Variable(F64(3.0))
    moving = tw.Variable(F64(0.0))

    def f(x, training):
        with tw.GradientTape() as tape:
            def train():
                moving.assign(moving.read_value() * 0.9 + x * 0.1)
                return x * w
            y = tw.cond(training, train, lambda: x * w * 2.0)
        return tape.gradient(y, [w, moving])

    gw, gm = tw.compile(f)(F64(1.5), np.bool_(True))
    assert_same(gw, F64(1.5))
    assert gm is None
