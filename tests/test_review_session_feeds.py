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


def test_feeding_a_variable_feeds_the_ops_that_read_it():
    """As in TensorFlow 1, ``run(v * 2, {v: 100})`` computes with 100: the feed replaced
    only the read that fetching ``v`` uses, so ops reading the variable saw its value
    in the session (6.0 instead of 200.0), and ``run([v, v * 2], {v: 100})`` gave
    100 and 6, two values for one variable in one step."""
    g, x, v, init = _graph()
    with g.as_default():
        doubled = v * 2.0
        later = tf.identity(v) + x  # a read made after `doubled`'s
        branch = tf.cond(x[0] > 0, lambda: v * 1.0, lambda: v * 0.0)
        loop = tf.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, a + v), [0, 0.0])[1]
    with tf.Session(graph=g) as sess:
        sess.run(init)
        assert sess.run(doubled, {v: 100.0}) == 200.0
        assert sess.run([branch, loop], {v: 100.0, x: [1.0]}) == [100.0, 200.0]
        got_v, got_doubled = sess.run([v, doubled], {v: np.float32(100.0)})
        assert (got_v, got_doubled) == (100.0, 200.0)
        np.testing.assert_array_equal(sess.run(later, {v: 10.0, x: [1.0, 2.0]}), [11.0, 12.0])
        assert sess.run(doubled) == 6.0  # the feed changed nothing in the session
        assert sess.run(v) == 3.0


def test_feeding_a_variable_that_an_op_updates_is_an_error():
    """Ops that use the variable itself (an assignment, one inside a tf.while_loop body,
    the initializer) cannot see a fed value: a clear error naming the variable, not a
    step that reads the session's value or silently skips the assignment."""
    g, x, v, init = _graph()
    with g.as_default():
        bumped = v.assign_add(1.0)
        loop = tf.while_loop(lambda i: i < 2, lambda i: _bump_then(v, i), [0])
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for fetch in (bumped, loop, init):
            with pytest.raises(InvalidArgumentError, match="variable 'v'"):
                sess.run(fetch, {v: 100.0})
        assert sess.run(v) == 3.0


def _bump_then(v, i):
    with tf.control_dependencies([v.assign_add(1.0, read_value=False)]):
        return i + 1


def test_one_tensor_fed_twice_is_an_error():
    """``{x: a, "x:0": b}`` names one tensor twice: the last value was used silently."""
    g, x, v, init = _graph()
    with g.as_default():
        y = x + 1.0
    with tf.Session(graph=g) as sess, pytest.raises(InvalidArgumentError, match="x:0"):
        sess.run(y, {x: [1.0], "x:0": [5.0]})


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


def test_placeholder_with_default_takes_values_of_its_declared_shape():
    """``placeholder_with_default(default, [None])`` took the default's shape [2] as its
    own, so feeding [3.0] failed and ops built on it were specialized to 2 elements;
    the declared shape is the tensor's (TensorFlow's), and a default it does not allow
    is an error."""
    g = tf.Graph()
    with g.as_default():
        d = tf.placeholder_with_default(tf.constant([1.0, 2.0]), [None])
        m = tf.placeholder_with_default(np.zeros((2, 3), np.float32), [None, 3])
        y = d * 2.0
        rows = tf.reduce_sum(m, axis=1)
        with pytest.raises(ValueError, match=r"\[3\]"):
            tf.placeholder_with_default(tf.constant([1.0, 2.0]), [3])
        with pytest.raises(ValueError, match="rank|shape"):
            tf.placeholder_with_default(tf.constant([1.0, 2.0]), [None, None])
    assert tuple(d.shape) == (None,) and tuple(m.shape) == (None, 3)
    with tf.Session(graph=g) as sess:
        np.testing.assert_array_equal(sess.run(y), [2.0, 4.0])
        np.testing.assert_array_equal(sess.run(y, {d: [3.0]}), [6.0])
        np.testing.assert_array_equal(sess.run(y, {d: [1.0, 2.0, 3.0]}), [2.0, 4.0, 6.0])
        np.testing.assert_array_equal(sess.run(rows), [0.0, 0.0])
        np.testing.assert_array_equal(sess.run(rows, {m: np.ones((4, 3))}), [3.0] * 4)
        with pytest.raises(InvalidArgumentError, match="shape"):
            sess.run(rows, {m: np.ones((4, 2))})
