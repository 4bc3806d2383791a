"""Adversarial review of v1 variable sharing: a reusing get_variable returns the variable
asked for, or a clear error."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import UnimplementedError


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


def test_constraints_custom_getters_and_activity_regularizers_are_refused():
    """get_variable(constraint=...), variable_scope(constraint=...), the layers'
    kernel/bias constraints and activity regularizers, and get_variable(custom_getter=...)
    were swallowed: a max-norm constrained model trained unconstrained, an activity
    penalty was missing from the loss, a custom getter never ran. Each is an error now
    (variable_scope already refused custom_getter)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        images = tf.placeholder(tf.float32, [None, 4, 4, 2])

        def clip(v):
            return tf.clip_by_value(v, -1.0, 1.0)

        with pytest.raises(NotImplementedError, match="constraint"):
            tf.get_variable("w", [3], constraint=clip)
        # (custom getters are supported since: the getter runs)
        ran = []
        tf.get_variable("w2", [3],
                        custom_getter=lambda getter, *a, **k: ran.append(k["name"]) or
                        getter(*a, **k))
        assert ran == ["w2"]
        with pytest.raises(NotImplementedError, match="constraint"):
            with tf.variable_scope("s", constraint=clip):
                pass
        with pytest.raises(NotImplementedError, match="constraint"):
            tf.layers.dense(x, 2, kernel_constraint=clip)
        with pytest.raises(NotImplementedError, match="constraint"):
            tf.layers.conv2d(images, 2, 3, bias_constraint=clip)
        for layer in (lambda: tf.layers.dense(x, 2, activity_regularizer=tf.nn.l2_loss),
                      lambda: tf.layers.conv2d(images, 2, 3,
                                               activity_regularizer=tf.nn.l2_loss)):
            with pytest.raises(UnimplementedError, match="activity_regularizer"):
                layer()
        assert tuple(tf.layers.dense(x, 2).shape) == (None, 2)  # without them, as before
