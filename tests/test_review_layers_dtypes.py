"""Review of the dtypes ``tf.layers`` and ``tf.constant_initializer`` accept, against
TensorFlow 2.21's ``tf.compat.v1`` (graph mode, ``TF_USE_LEGACY_KERAS=1``).

- ``tf.layers.dense`` on integer inputs: TensorFlow refuses ("A Dense layer can only be
  built with a floating-point dtype"); tensorweave made an int32 kernel, which
  `get_variable`'s default initializer for integers fills with zeros, and returned
  zeros (a silently dead layer).
- ``tf.constant_initializer(2.5)`` for an int32 variable: TensorFlow refuses ("Expected
  int32, but got 2.5 of type 'float'"); tensorweave truncated to 2."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_dense_refuses_integer_inputs():
    with pytest.raises(TypeError, match="floating-point"):
        tf.layers.dense(tf.ones([2, 3], tf.int32), 2)
    assert tf.global_variables() == []


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_dense_takes_floating_inputs(dtype):
    y = tf.layers.dense(tf.ones([2, 3], dtype), 2, kernel_initializer=tf.ones_initializer())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(y)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.full([2, 2], 3.0))


def test_constant_initializer_refuses_to_truncate_for_an_integer_variable():
    with pytest.raises(TypeError, match="int32"):
        v = tf.get_variable("ci", [2], dtype=tf.int32, initializer=tf.constant_initializer(2.5))
        with tf.Session() as sess:
            sess.run(v.initializer)


def test_constant_initializer_integral_values_for_an_integer_variable():
    v = tf.get_variable("ci", [3], dtype=tf.int32, initializer=tf.constant_initializer([1, 2, 3]))
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v), [1, 2, 3])


def test_constant_initializer_completes_a_short_list_with_its_last_value():
    # TensorFlow 2.21's tf.compat.v1 (tensorweave refused: "cannot initialize")
    a = tf.get_variable("a", [2, 3], initializer=tf.constant_initializer([1.0, 2.0]))
    b = tf.get_variable("b", [4], initializer=tf.constant_initializer(np.array([[1.0], [5.0]])))
    c = tf.get_variable("c", [3], dtype=tf.int32, initializer=tf.constant_initializer([7]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([a, b, c])
    np.testing.assert_array_equal(got[0], [[1, 2, 2], [2, 2, 2]])
    np.testing.assert_array_equal(got[1], [1, 5, 5, 5])
    np.testing.assert_array_equal(got[2], [7, 7, 7])
    with pytest.raises(ValueError):
        tf.get_variable("d", [2], initializer=tf.constant_initializer([1.0, 2.0, 3.0]))
