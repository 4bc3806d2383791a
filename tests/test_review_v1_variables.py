"""Adversarial review of v1 variable sharing: a reusing get_variable returns the variable
asked for, or a clear error."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf


def test_reusing_a_variable_with_another_dtype_is_an_error():
    """``get_variable("w", dtype=tf.float64)`` in a reusing scope returned the existing
    float32 variable (a float64 model then computed in float32); TensorFlow says the
    dtypes differ. Without a dtype the existing variable is returned, whatever its dtype;
    partitioned variables are checked the same way."""
    g = tf.Graph()
    with g.as_default():
        with tf.variable_scope("a"):
            w = tf.get_variable("w", [2, 3], initializer=tf.zeros_initializer())
            p = tf.get_variable("p", [4, 2], dtype=tf.float64,
                                partitioner=tf.fixed_size_partitioner(2))
        with tf.variable_scope("a", reuse=True):
            with pytest.raises(ValueError, match="a/w.*float64|a/w.*f64"):
                tf.get_variable("w", [2, 3], dtype=tf.float64)
            with pytest.raises(ValueError, match="a/w"):
                tf.get_variable("w", initializer=np.zeros((2, 3), np.float64))
            with pytest.raises(ValueError, match="a/p"):
                tf.get_variable("p", [4, 2], dtype=tf.float32,
                                partitioner=tf.fixed_size_partitioner(2))
            assert tf.get_variable("w", [2, 3]) is w
            assert tf.get_variable("w", [2, 3], dtype=tf.float32) is w
            assert tf.get_variable("p", [4, 2], partitioner=tf.fixed_size_partitioner(2)) is p
        with tf.variable_scope("a", reuse=tf.AUTO_REUSE):
            with pytest.raises(ValueError, match="a/w"):
                tf.get_variable("w", [2, 3], dtype=tf.int32)


def test_grad_loss_is_the_gradient_of_the_loss():
    """v1 ``compute_gradients(loss, grad_loss=...)`` and ``minimize(..., grad_loss=...)``
    swallowed `grad_loss` (``**_``) and differentiated with ones: [2, 4] instead of
    [20, 0] for loss = w * w, grad_loss = [10, 0]."""
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable([1.0, 2.0])
        loss = w * w
        weights = tf.constant([10.0, 0.0])
        grads = tf.train.GradientDescentOptimizer(1.0).compute_gradients(loss,
                                                                          grad_loss=weights)
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss, grad_loss=weights)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(grads[0][0]), [20.0, 0.0])
        sess.run(step)
        np.testing.assert_array_equal(sess.run(w), [-9.0, 2.0])
