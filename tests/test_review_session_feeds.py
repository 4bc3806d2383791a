"""Adversarial review of v1 ``Session.run`` feeds: a fed value is used everywhere the
user would expect, or the run is a clear error; never a result computed from another
value than the one fed."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import InvalidArgumentError


def _graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        v = tf.Variable(np.float32(3.0), name="v")
        init = tf.global_variables_initializer()
    return g, x, v, init


def test_a_feed_that_loses_the_fractional_part_is_an_error():
    """Feeding [1.7, 2.5] to an int32 placeholder gave [1, 2] (NumPy's truncation); the
    ops refuse a Python float that an int tensor cannot hold, and a feed does too.
    Whole floats (labels kept as float64) still feed an int placeholder."""
    g = tf.Graph()
    with g.as_default():
        labels = tf.placeholder(tf.int32, [None], name="labels")
        small = tf.placeholder(tf.uint8, [], name="small")
        doubled = labels * 2
    with tf.Session(graph=g) as sess:
        with pytest.raises(InvalidArgumentError, match="labels:0"):
            sess.run(doubled, {labels: [1.7, 2.5]})
        with pytest.raises(InvalidArgumentError, match="labels:0"):
            sess.run(doubled, {labels: np.array([1.0, np.inf])})
        np.testing.assert_array_equal(sess.run(doubled, {labels: np.array([1.0, 3.0])}),
                                      [2, 6])
        for bad in (300, -1):  # (NumPy raised a bare OverflowError naming no tensor)
            with pytest.raises(InvalidArgumentError, match="small:0"):
                sess.run(small, {small: bad})
        with pytest.raises(InvalidArgumentError, match="small:0"):
            sess.run(small, {small: np.int64(300)})  # (NumPy's cast wraps it to 44)
        assert sess.run(small, {small: 255}) == 255
        assert sess.run(small, {small: np.float64(7.0)}) == 7
