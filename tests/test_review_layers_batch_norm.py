"""``tf.layers.batch_normalization`` (TensorFlow 1's layer), checked against a NumPy
reference written from TensorFlow 2.21's ``tf.compat.v1.layers.batch_normalization``
(graph mode, ``TF_USE_LEGACY_KERAS=1``); this file also passes when
``tensorweave.compat.v1`` is TensorFlow 2.21's ``tf.compat.v1``.

TensorFlow's details that the reference encodes: epsilon 1e-3 and momentum 0.99 by
default; ``training=False`` (the default) normalizes with the moving statistics; the
updates are two ops in ``UPDATE_OPS``, ``moving -= (moving - batch) * (1 - momentum)``,
left out for ``trainable=False``; where TensorFlow's fused kernel runs (4-D or 5-D
float32 inputs, one channel axis 1 or last, ``fused`` not False) moving_variance moves
toward the Bessel-corrected batch variance, elsewhere (2-D, float64, ``fused=False``)
toward the biased one."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

R = np.random.RandomState(0)
X4 = (R.randn(4, 3, 2, 5) * 2 + 1).astype(np.float32)
X2 = (R.randn(6, 5) * 3 - 1).astype(np.float32)


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def _reference(x, axes, eps=1e-3):
    mean = x.mean(axis=axes, keepdims=True, dtype=np.float64)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps), mean, var


def _vars(prefix):
    return {v.name[len(prefix) + 1:-2]: v for v in tf.global_variables()
            if v.name.startswith(prefix + "/")}


def _run_updates(sess, feed=None):
    sess.run(tf.get_collection(tf.GraphKeys.UPDATE_OPS), feed)


def test_variables_and_collections():
    tf.layers.batch_normalization(tf.constant(X4), training=True)
    v = _vars("batch_normalization")
    assert list(v) == ["gamma", "beta", "moving_mean", "moving_variance"]
    assert all(list(t.shape) == [5] for t in v.values())
    assert [t.name for t in tf.trainable_variables()] == [
        "batch_normalization/gamma:0", "batch_normalization/beta:0"]
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2
    assert tf.moving_average_variables() == []


def test_inference_by_default_uses_the_moving_statistics():
    y = tf.layers.batch_normalization(tf.constant(X2))
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), X2 / np.sqrt(1.0 + 1e-3), rtol=1e-5)


@pytest.mark.parametrize("x, kwargs, bessel", [
    (X2, {}, False),                       # 2-D: TensorFlow's non-fused path
    (X4, {}, True),                        # 4-D float32: the fused kernel
    (X4, {"fused": False}, False),
    (X4.astype(np.float64), {}, False),    # the fused kernel takes no float64
])
def test_training_normalizes_with_the_batch_and_updates_through_update_ops(x, kwargs, bessel):
    y = tf.layers.batch_normalization(tf.constant(x), training=True, momentum=0.9, **kwargs)
    axes = tuple(range(x.ndim - 1))
    want, mean, var = _reference(x.astype(np.float64), axes)
    n = x.size // x.shape[-1]
    moved_var = var * n / (n - 1) if bessel else var
    v = _vars("batch_normalization")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), want, rtol=2e-4, atol=2e-5)
        # nothing moves until the update ops run
        np.testing.assert_array_equal(sess.run(v["moving_mean"]), np.zeros(5))
        _run_updates(sess)
        np.testing.assert_allclose(sess.run(v["moving_mean"]), 0.1 * mean.ravel(), rtol=1e-5)
        np.testing.assert_allclose(sess.run(v["moving_variance"]),
                                   0.9 + 0.1 * moved_var.ravel(), rtol=1e-5)


def test_training_placeholder():
    p = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(tf.constant(X4), training=p, momentum=0.7)
    want, mean, var = _reference(X4.astype(np.float64), (0, 1, 2))
    v = _vars("batch_normalization")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y, {p: True}), want, rtol=2e-4, atol=2e-5)
        _run_updates(sess, {p: False})  # training False: the statistics stay
        np.testing.assert_array_equal(sess.run(v["moving_variance"]), np.ones(5))
        _run_updates(sess, {p: True})
        mm, mv = sess.run([v["moving_mean"], v["moving_variance"]])
        np.testing.assert_allclose(mm, 0.3 * mean.ravel(), rtol=1e-5)
        np.testing.assert_allclose(mv, 0.7 + 0.3 * var.ravel() * 24 / 23, rtol=1e-5)
        got = sess.run(y, {p: False})
    np.testing.assert_allclose(got, (X4 - mm) / np.sqrt(mv + 1e-3), rtol=1e-4, atol=1e-5)


def test_channels_first_and_several_axes():
    a1 = tf.layers.batch_normalization(tf.constant(X4), axis=1, training=True, name="c1")
    a13 = tf.layers.batch_normalization(tf.constant(X4), axis=[1, 3], training=True, name="c13")
    assert list(_vars("c1")["gamma"].shape) == [3]
    assert list(_vars("c13")["gamma"].shape) == [1, 3, 1, 5]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got1, got13 = sess.run([a1, a13])
    np.testing.assert_allclose(got1, _reference(X4.astype(np.float64), (0, 2, 3))[0],
                               rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(got13, _reference(X4.astype(np.float64), (0, 2))[0],
                               rtol=2e-4, atol=2e-5)


def test_parameters_initializers_and_regularizer():
    y = tf.layers.batch_normalization(
        tf.constant(X2), training=True, epsilon=0.1, name="bnr",
        gamma_regularizer=lambda g: tf.reduce_sum(g) * 2.0,
        beta_initializer=tf.constant_initializer(0.5),
        gamma_initializer=tf.constant_initializer(2.0),
        moving_variance_initializer=tf.constant_initializer(4.0))
    inf = tf.layers.batch_normalization(tf.constant(X2), name="bnr", reuse=True)
    assert len(tf.global_variables()) == 4
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, got_inf, reg = sess.run([y, inf, tf.losses.get_regularization_loss()])
    np.testing.assert_allclose(got, _reference(X2.astype(np.float64), (0,), 0.1)[0] * 2 + 0.5,
                               rtol=2e-4, atol=2e-5)
    # (the second call has the default epsilon)
    np.testing.assert_allclose(got_inf, X2 / np.sqrt(4.0 + 1e-3) * 2 + 0.5, rtol=1e-5,
                               atol=1e-6)
    assert reg == pytest.approx(20.0)


def test_no_center_no_scale_and_frozen_layer():
    tf.layers.batch_normalization(tf.constant(X2), center=False, scale=False, training=True,
                                  name="plain")
    assert list(_vars("plain")) == ["moving_mean", "moving_variance"]
    tf.layers.batch_normalization(tf.constant(X2), training=True, trainable=False, name="frozen")
    # a frozen layer's updates stay out of UPDATE_OPS, its parameters out of training
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2
    assert not any(v.name.startswith("frozen/") for v in tf.trainable_variables())


def test_gradients_match_finite_differences_in_float64():
    x64 = X2[:4, :3].astype(np.float64)
    xp = tf.placeholder(tf.float64, [4, 3])
    w = np.random.RandomState(3).randn(4, 3)
    y = tf.layers.batch_normalization(xp, training=True,
                                      gamma_initializer=tf.constant_initializer([1.0, 2.0, 0.5]))
    loss = tf.reduce_sum(tf.square(y) * w + y * w[::-1])
    (grad,) = tf.gradients(loss, [xp])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(grad, {xp: x64})
        h = 1e-6
        numeric = np.zeros_like(x64)
        for i in np.ndindex(*x64.shape):
            d = np.zeros_like(x64)
            d[i] = h
            numeric[i] = (sess.run(loss, {xp: x64 + d}) - sess.run(loss, {xp: x64 - d})) / (2 * h)
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-6)


def test_under_a_partitioner_the_moving_statistics_stay_whole():
    # TensorFlow 2.21: gamma/beta split in two, moving_mean/moving_variance not
    # (tensorweave split them too and the update failed: no assign_sub on shards)
    with tf.variable_scope("q", partitioner=tf.fixed_size_partitioner(2)):
        y = tf.layers.batch_normalization(tf.constant(X2), training=True, momentum=0.5)
    assert [(v.name, list(v.shape)) for v in tf.global_variables()] == [
        ("q/batch_normalization/gamma/part_0:0", [3]),
        ("q/batch_normalization/gamma/part_1:0", [2]),
        ("q/batch_normalization/beta/part_0:0", [3]),
        ("q/batch_normalization/beta/part_1:0", [2]),
        ("q/batch_normalization/moving_mean:0", [5]),
        ("q/batch_normalization/moving_variance:0", [5])]
    want, mean, _ = _reference(X2.astype(np.float64), (0,))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), want, rtol=2e-4, atol=2e-5)
        _run_updates(sess)
        np.testing.assert_allclose(sess.run(tf.global_variables()[4]), 0.5 * mean.ravel(),
                                   rtol=1e-5)
