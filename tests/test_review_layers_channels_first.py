"""``tf.layers.conv2d`` / ``max_pooling2d`` / ``average_pooling2d`` with
``data_format="channels_first"`` (NCHW), which tensorweave refused. TensorFlow's CPU
kernels refuse NCHW too, so the reference is TensorFlow's definition, checked against
TF 2.21 through transposes (the channels_last layer on the NHWC input, transposed back):
the same kernel ``[kh, kw, in, out]`` and bias, the same numbers and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

X = np.random.RandomState(0).randn(2, 3, 7, 6).astype(np.float32)


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def _both(fn, *args, **kwargs):
    """(channels_first on X, channels_last on X as NHWC transposed back to NCHW), with
    the same variables (the second layer reuses the first's)."""
    x = tf.constant(X)
    first = fn(x, *args, data_format="channels_first", name="l", **kwargs)
    last = fn(tf.transpose(x, [0, 2, 3, 1]), *args, name="l", reuse=True, **kwargs) \
        if fn is tf.layers.conv2d else fn(tf.transpose(x, [0, 2, 3, 1]), *args, **kwargs)
    return x, first, tf.transpose(last, [0, 3, 1, 2])


@pytest.mark.parametrize("kwargs", [
    {"filters": 4, "kernel_size": 3, "activation": tf.nn.relu},
    {"filters": 2, "kernel_size": (2, 3), "strides": (2, 1), "padding": "same"},
    {"filters": 2, "kernel_size": 2, "dilation_rate": (2, 1), "use_bias": False},
])
def test_conv2d(kwargs):
    init = tf.random_normal_initializer(seed=1)
    x, first, last = _both(tf.layers.conv2d, kernel_initializer=init, bias_initializer=init,
                           **kwargs)
    kernel = tf.global_variables()[0]
    assert kernel.name == "l/kernel:0"
    assert list(kernel.shape)[2:] == [3, kwargs["filters"]]
    (g_first,) = tf.gradients(tf.reduce_sum(first * first), [x])
    (g_last,) = tf.gradients(tf.reduce_sum(last * last), [x])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b, ga, gb = sess.run([first, last, g_first, g_last])
    assert a.shape[1] == kwargs["filters"]
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ga, gb, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pool, args", [
    (tf.layers.max_pooling2d, (2, (2, 1))),
    (tf.layers.average_pooling2d, (3, 2, "same")),
])
def test_pooling(pool, args):
    _, first, last = _both(pool, *args)
    with tf.Session() as sess:
        a, b = sess.run([first, last])
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_unknown_data_format_is_an_error():
    with pytest.raises(ValueError, match="data_format"):
        tf.layers.conv2d(tf.constant(X), 2, 2, data_format="NCHW")
