"""``tf.layers.dense(..., activation="relu")``: TensorFlow's layers take Keras' activation
names as well as functions; tensorweave raised ``TypeError: 'str' object is not
callable``. Each name gives the function TensorFlow 2.21 gives (values below from the
differential harness; this file passes under TF 2.21's ``tf.compat.v1`` too), and an
unknown name is an error before any variable is made."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

X = np.linspace(-3, 3, 12, dtype=np.float32).reshape(2, 6)
Z = X * 1.5 + 0.1  # the dense layer below: kernel 1.5 * I, bias 0.1


def _erf(v):
    return np.vectorize(math.erf)(v)


REFERENCE = {
    "linear": lambda z: z,
    "relu": lambda z: np.maximum(z, 0),
    "relu6": lambda z: np.clip(z, 0, 6),
    "elu": lambda z: np.where(z > 0, z, np.expm1(z)),
    "selu": lambda z: 1.0507009873554805 * np.where(z > 0, z, 1.6732632423543772 * np.expm1(z)),
    "sigmoid": lambda z: 1 / (1 + np.exp(-z)),
    "tanh": np.tanh,
    "softmax": lambda z: np.exp(z) / np.exp(z).sum(-1, keepdims=True),
    "softplus": lambda z: np.log1p(np.exp(z)),
    "softsign": lambda z: z / (1 + np.abs(z)),
    "swish": lambda z: z / (1 + np.exp(-z)),
    "silu": lambda z: z / (1 + np.exp(-z)),
    "gelu": lambda z: 0.5 * z * (1 + _erf(z / np.sqrt(2))),
    "exponential": np.exp,
    "log_softmax": lambda z: z - np.log(np.exp(z).sum(-1, keepdims=True)),
}


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_activation_by_name(name):
    y = tf.layers.dense(tf.constant(X), 6, activation=name,
                        kernel_initializer=tf.constant_initializer(np.eye(6) * 1.5),
                        bias_initializer=tf.constant_initializer(0.1))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(y)
    np.testing.assert_allclose(got, REFERENCE[name](Z.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_conv2d_takes_a_name_too():
    y = tf.layers.conv2d(tf.constant(X.reshape(1, 2, 6, 1)), 1, 1, activation="relu",
                         kernel_initializer=tf.ones_initializer())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(y).reshape(2, 6), np.maximum(X, 0))


def test_unknown_name_is_an_error_before_any_variable():
    with pytest.raises(ValueError):
        tf.layers.dense(tf.constant(X), 2, activation="bogus")
    assert tf.global_variables() == []
