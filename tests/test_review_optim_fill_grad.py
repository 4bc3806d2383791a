"""Adversarial review (differential against TensorFlow 2.21): ``tw.fill(dims, value)``
passes the gradient to a `value` that is a variable or a tensor a tape watches, as
TensorFlow's Fill gradient (the sum of the incoming gradient). Before, an eager tensor
or a variable as `value` was read into a constant Fill op: the tape's gradient was
None, and an optimizer silently skipped the variable (``apply_gradients`` drops pairs
without a gradient), eagerly and inside ``@tw.compile``.

Expected values: TensorFlow 2.21, ``tf.GradientTape`` (d/dv sum(fill([2, 2], v) * 2) = 8)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw


@pytest.mark.parametrize("use", ["variable", "read", "product"])
def test_fill_of_a_variable_has_its_gradient_eagerly(use):
    v = tw.Variable(1.5, name=f"review_fill_{use}")
    with tw.GradientTape() as tape:
        value = {"variable": lambda: v, "read": v.read_value, "product": lambda: v * 1.0}[use]()
        y = tw.reduce_sum(tw.fill([2, 2], value) * 2.0)
    assert float(y) == 12.0
    g = tape.gradient(y, v)
    assert g is not None
    np.testing.assert_allclose(np.asarray(g), 8.0)


def test_fill_of_a_watched_tensor_has_its_gradient():
    x = tw.constant(np.float64(1.5))
    with tw.GradientTape() as tape:
        tape.watch(x)
        y = tw.reduce_sum(tw.fill([2, 3], x) * tw.constant(np.arange(6.0).reshape(2, 3)))
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), 15.0)


def test_fill_of_a_variable_has_its_gradient_compiled():
    v = tw.Variable(np.float32(1.5), name="review_fill_compiled")

    @tw.compile
    def grad():
        with tw.GradientTape() as tape:
            y = tw.reduce_sum(tw.fill([2, 2], v) * 2.0)
        return tape.gradient(y, v)

    np.testing.assert_allclose(np.asarray(grad()), 8.0)


def test_sgd_trains_a_variable_used_through_fill():
    v = tw.Variable(np.float32(1.0), name="review_fill_sgd")
    opt = tw.optimizers.SGD(0.1)
    for _ in range(2):
        opt.minimize(lambda: tw.reduce_sum(tw.square(tw.fill([3], v) - 2.0)), [v])
    # TF 2.21: 1.0 -> 1.6 -> 1.84
    np.testing.assert_allclose(v.numpy(), 1.84, rtol=1e-6)


def test_fill_with_a_python_number_is_unchanged():
    out = tw.fill([2, 2], 3)
    assert out.dtype == tw.int32
    np.testing.assert_array_equal(np.asarray(out), np.full((2, 2), 3, np.int32))
