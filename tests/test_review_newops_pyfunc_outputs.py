"""tf.py_func with an output nobody gives a shape (nor uses): the op runs, as in TensorFlow.

tensorweave's graphs need ranks, so each py_func output starts with a placeholder scalar
type until ``set_shape``; the kernel checked every result against it, so a py_func whose
second output was unused failed with "1-th value returned by pyfunc_0 has shape [2, 2],
but its output was given the shape [] (set_shape)", a shape the program never gave.
TensorFlow 2.21 runs it ([3, 5]) and still checks that output's dtype."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import InvalidArgumentError

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_an_output_never_shaped_nor_used_does_not_stop_the_op(target):
    x = tf.placeholder(tf.float32, [2])
    a, b = tf.py_func(lambda v: (v * 2, np.stack([v, v])), [x], [tf.float32, tf.float32])
    a.set_shape([2])
    with tf.Session(compile_target=target) as sess:
        np.testing.assert_array_equal(sess.run(a + 1, {x: [1.0, 2.0]}), [3.0, 5.0])
    b.set_shape([None, 2])  # shaped later: then it is checked and can be fetched
    with tf.Session(compile_target=target) as sess:
        got_a, got_b = sess.run([a, b], {x: [1.0, 2.0]})
    np.testing.assert_array_equal(got_b, [[1.0, 2.0], [1.0, 2.0]])


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_an_unshaped_output_still_has_its_dtype_checked(target):
    x = tf.placeholder(tf.float32, [2])
    c, _ = tf.py_func(lambda v: (v * 2, np.float64(1)), [x], [tf.float32, tf.float32])
    c.set_shape([2])
    with tf.Session(compile_target=target) as sess:
        # TF 2.21: 1-th value returned by pyfunc_1 is double, but expects float
        with pytest.raises(InvalidArgumentError, match="1-th value returned by pyfunc_"
                                                       r"\d+ is double, but expects float"):
            sess.run(c, {x: [1.0, 2.0]})


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_a_scalar_given_by_set_shape_is_still_checked(target):
    x = tf.placeholder(tf.float32, [2])
    y = tf.py_func(lambda v: v * 2, [x], tf.float32)
    y.set_shape([])  # a real scalar shape, not the placeholder
    with tf.Session(compile_target=target) as sess:
        with pytest.raises(InvalidArgumentError, match=r"has shape \[2\], but its output"):
            sess.run(y + 1, {x: [1.0, 2.0]})
