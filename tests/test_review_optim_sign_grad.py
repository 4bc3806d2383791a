"""Adversarial review (differential against TensorFlow 2.21): the gradient of
``tw.sign`` is zeros, as TensorFlow's (its Sign gradient is ``zeros_like(x)``; only
Floor, Ceil and Round have no gradient). Before, Sign was not differentiable: a tape gave
None, so a variable whose loss only reaches it through sign (a binarized layer) was
skipped by ``apply_gradients``, where TensorFlow applies a zero gradient and momentum
keeps moving the variable."""

from __future__ import annotations

import numpy as np

import tensorweave as tw


def test_sign_gradient_is_zeros():
    x = tw.constant(np.float32([[0.0, -1.5, 2.0], [3.0, 0.0, -0.25]]))
    with tw.GradientTape() as tape:
        tape.watch(x)
        y = tw.reduce_sum(tw.sign(x) * 3.0)
    g = tape.gradient(y, x)
    assert g is not None
    np.testing.assert_array_equal(np.asarray(g), np.zeros((2, 3), np.float32))


def test_floor_still_has_no_gradient():
    x = tw.constant(np.float32([1.5]))
    with tw.GradientTape() as tape:
        tape.watch(x)
        y = tw.floor(x)
    assert tape.gradient(y, x) is None


def test_momentum_keeps_moving_a_variable_seen_only_through_sign():
    v = tw.Variable(np.float32([1.0, -2.0]), name="review_sign_momentum")
    opt = tw.optimizers.Momentum(0.1, 0.9)
    g0 = np.float32([0.5, -1.0])
    opt.apply_gradients([(tw.constant(g0), v)])
    with tw.GradientTape() as tape:
        loss = tw.reduce_sum(tw.sign(v))
    opt.apply_gradients(zip(tape.gradient(loss, [v]), [v]))
    # TF 2.21, tf.keras.optimizers.SGD(0.1, momentum=0.9): [0.905, -1.81]
    np.testing.assert_allclose(v.numpy(), [0.905, -1.81], rtol=1e-6)
