"""tf.layers (compat.v1): variable names, shapes and default initializers, reuse, values
against NumPy, unknown batch sizes and dropout's `training` switch."""

import math

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def run(fetches, feed):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def test_dense_names_initializers_and_values():
    x = tf.placeholder(tf.float32, [None, 5])
    y = tf.layers.dense(x, 4, activation=tf.nn.relu)
    z = tf.layers.dense(y, 3, use_bias=False)
    names = [v.name for v in tf.trainable_variables()]
    assert names == ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0"]
    xs = np.random.default_rng(0).normal(size=(6, 5)).astype(np.float32)
    kernel, bias, k2, out = run(tf.trainable_variables() + [z], {x: xs})
    assert kernel.shape == (5, 4) and bias.shape == (4,) and k2.shape == (4, 3)
    np.testing.assert_array_equal(bias, 0)
    limit = math.sqrt(6 / (5 + 4))  # glorot uniform
    assert np.all(np.abs(kernel) <= limit) and np.std(kernel) > 0
    np.testing.assert_allclose(out, np.maximum(xs @ kernel + bias, 0) @ k2, rtol=1e-5,
                               atol=1e-6)


def test_dense_on_rank_3_inputs_and_named_reuse():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    y1 = tf.layers.dense(x, 4, name="proj")
    y2 = tf.layers.dense(x, 4, name="proj", reuse=True)
    assert [v.name for v in tf.trainable_variables()] == ["proj/kernel:0", "proj/bias:0"]
    assert y1.shape == (None, 2, 4)
    xs = np.ones((3, 2, 3), np.float32)
    a, b, kernel = run([y1, y2, tf.trainable_variables()[0]], {x: xs})
    np.testing.assert_allclose(a, xs @ kernel, rtol=1e-6)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="already exists"):
        tf.layers.dense(x, 4, name="proj")


def np_conv_same(x, k):
    kh, kw = k.shape[:2]
    pt, pl = (kh - 1) // 2, (kw - 1) // 2
    xp = np.pad(x, [(0, 0), (pt, kh - 1 - pt), (pl, kw - 1 - pl), (0, 0)])
    n, h, w, _ = x.shape
    out = np.zeros((n, h, w, k.shape[3]), np.float64)
    for i in range(h):
        for j in range(w):
            out[:, i, j] = np.einsum("nhwc,hwco->no", xp[:, i:i + kh, j:j + kw], k)
    return out


def test_conv2d_max_pooling2d_and_flatten():
    x = tf.placeholder(tf.float32, [None, 6, 6, 2])
    c = tf.layers.conv2d(x, 3, 3, padding="same", bias_initializer=tf.constant_initializer(0.5))
    p = tf.layers.max_pooling2d(c, pool_size=2, strides=2)
    f = tf.layers.flatten(p)
    v = tf.layers.conv2d(x, 4, (3, 2), strides=(1, 2), name="valid")
    assert [t.name for t in tf.trainable_variables()] == [
        "conv2d/kernel:0", "conv2d/bias:0", "valid/kernel:0", "valid/bias:0"]
    assert c.shape == (None, 6, 6, 3) and p.shape == (None, 3, 3, 3) and f.shape == (None, 27)
    assert v.shape == (None, 4, 3, 4)
    xs = np.random.default_rng(1).normal(size=(2, 6, 6, 2)).astype(np.float32)
    kernel, bias, cv, pv, fv = run([tf.trainable_variables()[0], tf.trainable_variables()[1],
                                    c, p, f], {x: xs})
    assert kernel.shape == (3, 3, 2, 3)
    np.testing.assert_array_equal(bias, 0.5)
    np.testing.assert_allclose(cv, np_conv_same(xs, kernel) + 0.5, rtol=1e-4, atol=1e-5)
    want_pool = cv.reshape(2, 3, 2, 3, 2, 3).max(axis=(2, 4))
    np.testing.assert_array_equal(pv, want_pool)
    np.testing.assert_array_equal(fv, want_pool.reshape(2, 27))


def test_dropout_training_switch():
    x = tf.placeholder(tf.float32, [None, 50])
    training = tf.placeholder(tf.bool, [])
    off = tf.layers.dropout(x, 0.5)  # training=False by default: the identity
    switched = tf.layers.dropout(x, rate=0.25, training=training, seed=3)
    on = tf.layers.dropout(x, rate=0.25, training=True, seed=3)
    xs = np.ones((40, 50), np.float32)
    with tf.Session() as sess:
        a, b = sess.run([off, switched], {x: xs, training: False})
        np.testing.assert_array_equal(a, xs)
        np.testing.assert_array_equal(b, xs)
        c, d = sess.run([switched, on], {x: xs, training: True})
    for out in (c, d):
        assert set(np.unique(out)) == {0.0, np.float32(1 / 0.75)}
        assert abs(np.mean(out == 0) - 0.25) < 0.03


def test_a_small_cnn_trains():
    tw.random.set_seed(0)
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(64, 8, 8, 1)).astype(np.float32)
    labels = (xs[:, :4].sum(axis=(1, 2, 3)) > xs[:, 4:].sum(axis=(1, 2, 3))).astype(np.int64)
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    y = tf.placeholder(tf.int64, [None])
    h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.flatten(tf.layers.max_pooling2d(h, 2, 2))
    logits = tf.layers.dense(tf.layers.dropout(h, 0.1, training=True), 2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    train = tf.train.AdamOptimizer(0.01).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: xs, y: labels})
        for _ in range(60):
            sess.run(train, {x: xs, y: labels})
        assert sess.run(loss, {x: xs, y: labels}) < 0.5 * first


def test_errors():
    x = tf.placeholder(tf.float32, [None, 4, 4, 1])
    with pytest.raises(tw.errors.InvalidArgumentError, match="padding"):
        tf.layers.conv2d(x, 2, 3, padding="full")
    with pytest.raises(tw.errors.InvalidArgumentError, match="channels_last"):
        tf.layers.max_pooling2d(x, 2, 2, data_format="NCHW")
    with pytest.raises(tw.errors.ShapeError, match="known"):
        tf.layers.flatten(tf.placeholder(tf.float32, [None, None, 3]))
