"""Adversarial review (differential against TensorFlow 2.21): TensorFlow 1's
``tf.train.FtrlOptimizer`` names its slots ``accum`` and ``linear``: TF1 code reads the
accumulator with ``opt.get_slot(var, "accum")``, which raised KeyError in tensorweave
(the slot was called ``accumulator``, Keras' name, which ``tw.optimizers.Ftrl`` keeps).
The expected values come from ``tf.compat.v1.train.FtrlOptimizer`` in a TF 2.21 Session."""

from __future__ import annotations

import numpy as np

import tensorweave as tw
import tensorweave.compat.v1 as tf


def test_v1_ftrl_slot_names_are_tensorflow_1s():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.float32([1.0, -2.0]), name="v")
        opt = tf.train.FtrlOptimizer(0.1)
        train = opt.apply_gradients([(tf.constant(np.float32([0.5, -1.0])), v)])
        assert sorted(opt.get_slot_names()) == ["accum", "linear"]
        accum, linear = opt.get_slot(v, "accum"), opt.get_slot(v, "linear")
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run(train)
        # TF 2.21: accum [0.35, 1.1], linear [-2.2538023, 13.65162], v [0.3809621, -1.301631]
        np.testing.assert_allclose(sess.run(accum), [0.35, 1.1], rtol=1e-6)
        np.testing.assert_allclose(sess.run(linear), [-2.2538023, 13.65162], rtol=1e-5)
        np.testing.assert_allclose(sess.run(v), [0.3809621, -1.301631], rtol=1e-5)


def test_keras_ftrl_keeps_the_accumulator_slot():
    v = tw.Variable(np.float32([1.0, -2.0]), name="review_ftrl_keras_v")
    opt = tw.optimizers.Ftrl(0.1)
    opt.apply_gradients([(tw.constant(np.float32([0.5, -1.0])), v)])
    assert opt.get_slot_names() == ["accumulator", "linear"]
    np.testing.assert_allclose(opt.get_slot(v, "accumulator").numpy(), [0.35, 1.1], rtol=1e-6)
