"""``tf.layers.dropout`` with a rate outside [0, 1): TensorFlow 2.21 refuses it when the
layer is built (``ValueError``), also when `training` is a placeholder. tensorweave
took ``rate=1.0`` with a ``training`` placeholder and returned NaN everywhere when fed
True (the kept fraction 0 scaled by 1 / 0), a silent wrong answer."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


@pytest.mark.parametrize("rate", [1.0, 1.5, -0.1])
def test_bad_rate_with_a_training_placeholder(rate):
    p = tf.placeholder(tf.bool, [])
    with pytest.raises(ValueError, match="rate"):
        tf.layers.dropout(tf.ones([3, 4]), rate, training=p)


@pytest.mark.parametrize("rate", [1.0, 1.5, -0.1])
def test_bad_rate_while_training(rate):
    with pytest.raises(ValueError):
        tf.layers.dropout(tf.ones([3, 4]), rate, training=True)


def test_good_rates_with_a_placeholder():
    p = tf.placeholder(tf.bool, [])
    x = np.ones([50, 40], np.float32)
    y0 = tf.layers.dropout(x, 0.0, training=p)
    y = tf.layers.dropout(x, 0.25, training=p, seed=3)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y0, {p: True}), x)
        got = sess.run(y, {p: True})
        np.testing.assert_array_equal(sess.run(y, {p: False}), x)
    assert set(np.unique(got)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.15 < np.mean(got == 0) < 0.35
