"""Adversarial review (differential against TensorFlow 2.21): ``tf.gradients(ys, xs,
stop_gradients=...)`` treats the stopped tensors as constants for the *other* xs, but a
stopped tensor that is itself one of the xs still gets its gradient (TensorFlow stops
backpropagation *through* it, not into it). Before, tensorweave returned None for it.

Expected values: ``tf.compat.v1.gradients`` in a TF 2.21 graph."""

from __future__ import annotations

import numpy as np

import tensorweave.compat.v1 as tf


def _run(build):
    g = tf.Graph()
    with g.as_default():
        fetches = build()
    with tf.Session(graph=g) as sess:
        return sess.run(fetches)


def _graph():
    a = tf.constant(np.float32(2.0))
    b = a * 3.0
    return a, b, a * b + b * b


def test_a_stopped_x_gets_its_gradient():
    def build():
        a, b, c = _graph()
        return tf.gradients(c, [a, b], stop_gradients=[b])
    # TF 2.21: [6.0, 14.0] (dc/da with b held = b; dc/db = a + 2b)
    np.testing.assert_allclose(_run(build), [6.0, 14.0])


def test_only_the_stopped_x():
    def build():
        _, b, c = _graph()
        return tf.gradients(c, [b], stop_gradients=[b])
    np.testing.assert_allclose(_run(build), [14.0])  # TF 2.21: [14.0]


def test_stopping_still_cuts_the_path_for_the_other_xs():
    def build():
        a, b, c = _graph()
        return tf.gradients(c, [a], stop_gradients=[b])
    np.testing.assert_allclose(_run(build), [6.0])  # TF 2.21: [6.0] (not 2b + 6a + ...)
