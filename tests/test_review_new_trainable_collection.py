"""Review (found while checking compat.v1's variable collections against TensorFlow 2.21):
a variable whose `collections` already name ``TRAINABLE_VARIABLES`` is in that
collection once, as TensorFlow's ``if trainable and TRAINABLE_VARIABLES not in
collections`` makes it.

TensorFlow 2.21, same program: ``tf.Variable(1.0, collections=[GLOBAL_VARIABLES,
TRAINABLE_VARIABLES])`` is listed once by ``trainable_variables()``, and one
``GradientDescentOptimizer(0.1).minimize(3 * v)`` step leaves v at 0.7. tensorweave
listed it twice and minimize applied the step twice: 0.4 (a silent wrong answer)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

KEYS = [tf.GraphKeys.GLOBAL_VARIABLES, tf.GraphKeys.TRAINABLE_VARIABLES]


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_a_variable_is_trainable_once():
    v = tf.Variable(1.0, collections=KEYS, name="v")
    w = tf.get_variable("w", [1], collections=[tf.GraphKeys.MODEL_VARIABLES, *KEYS])
    u = tf.Variable(2.0, collections=[tf.GraphKeys.GLOBAL_VARIABLES] * 2, name="u")
    assert tf.trainable_variables() == [v, w, u]
    assert tf.global_variables() == [v, w, u]
    assert tf.model_variables() == [w]


def test_minimize_steps_such_a_variable_once():
    v = tf.Variable(1.0, collections=KEYS, name="v")
    step = tf.train.GradientDescentOptimizer(0.1).minimize(v * 3.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        np.testing.assert_allclose(sess.run(v), 0.7, rtol=1e-6)
