"""Review of ``tf.layers.flatten(data_format=...)`` against TensorFlow 2.21's
``tf.compat.v1.layers.flatten`` (graph mode, ``TF_USE_LEGACY_KERAS=1``).

With ``data_format="channels_first"`` TensorFlow moves the channels last before
flattening (Keras' Flatten: permutation ``[0, 2, ..., n-1, 1]``), so the features come out
in the order a ``channels_last`` model expects. tensorweave ignored `data_format` and
flattened NCHW as it is: for a [2, 3, 4, 5] input TensorFlow's row 0 begins
``x[0, 0, 0, 0], x[0, 1, 0, 0], x[0, 2, 0, 0], x[0, 0, 0, 1]`` and ours began
``x[0, 0, 0, 0], x[0, 0, 0, 1], ...`` (the same numbers, silently in another order)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

X = np.random.RandomState(0).randn(2, 3, 4, 5).astype(np.float32)


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def _run(t):
    with tf.Session() as sess:
        return sess.run(t)


def test_channels_first_moves_channels_last_before_flattening():
    got = _run(tf.layers.flatten(tf.constant(X), data_format="channels_first"))
    np.testing.assert_array_equal(got, X.transpose(0, 2, 3, 1).reshape(2, 60))
    # TensorFlow 2.21's first four features of row 0
    np.testing.assert_array_equal(got[0, :4], [X[0, 0, 0, 0], X[0, 1, 0, 0], X[0, 2, 0, 0],
                                               X[0, 0, 0, 1]])


def test_channels_first_rank_3():
    x3 = X[:, :, :, 0]
    got = _run(tf.layers.flatten(tf.constant(x3), data_format="channels_first"))
    np.testing.assert_array_equal(got, x3.transpose(0, 2, 1).reshape(2, 12))


def test_channels_first_unknown_batch():
    p = tf.placeholder(tf.float32, [None, 3, 4, 5])
    out = tf.layers.flatten(p, data_format="channels_first")
    with tf.Session() as sess:
        got = sess.run(out, {p: X})
    np.testing.assert_array_equal(got, X.transpose(0, 2, 3, 1).reshape(2, 60))


def test_channels_last_and_rank_2_unchanged():
    np.testing.assert_array_equal(_run(tf.layers.flatten(tf.constant(X))), X.reshape(2, 60))
    x2 = X[:, :, 0, 0]
    np.testing.assert_array_equal(
        _run(tf.layers.flatten(tf.constant(x2), data_format="channels_first")), x2)


def test_unknown_data_format_is_an_error():
    with pytest.raises(ValueError, match="data_format"):
        tf.layers.flatten(tf.constant(X), data_format="NCHW")
