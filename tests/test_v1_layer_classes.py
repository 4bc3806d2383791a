"""tf.layers' classes (compat.v1): Dense, Conv2D, MaxPooling2D, AveragePooling2D, Flatten,
Dropout. Names marked "TF" were printed by TensorFlow 2.21 (tf.compat.v1,
TF_USE_LEGACY_KERAS=1) for the same programs."""

import numpy as np
import pytest

import tensorweave.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def test_names_follow_the_first_call_as_in_tensorflow():
    x = tf.placeholder(tf.float32, [2, 3])
    d1, d2 = tf.layers.Dense(3), tf.layers.Dense(3)
    d2(x)
    d1(x)
    tf.layers.dense(x, 2)
    tf.layers.Dense(2, name="n")(x)
    tf.layers.Dense(2, name="n")(x)
    with tf.variable_scope("m"):
        tf.layers.Dense(2)(x)
    # TF: variables named by the order of the first calls; the objects' own names count
    # from 1 at construction
    assert [v.name for v in tf.global_variables()] == [
        "dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0",
        "dense_2/kernel:0", "dense_2/bias:0", "n/kernel:0", "n/bias:0", "n_1/kernel:0",
        "n_1/bias:0", "m/dense/kernel:0", "m/dense/bias:0"]
    assert (d1.name, d2.name) == ("dense_1", "dense_2")
    assert d1.kernel.name == "dense_1/kernel:0" and d2.kernel.name == "dense/kernel:0"
    assert [v.name for v in d1.variables] == ["dense_1/kernel:0", "dense_1/bias:0"]
    assert d1.trainable_weights == d1.variables and d1.built


def test_a_layer_called_again_reuses_its_variables():
    x = tf.placeholder(tf.float64, [None, 2, 3])
    dense = tf.layers.Dense(4, activation=tf.nn.relu)
    y1, y2 = dense(x), dense.apply(x * 2)
    assert len(tf.global_variables()) == 2 and tuple(y1.shape) == (None, 2, 4)
    xs = np.random.default_rng(0).normal(size=(3, 2, 3))
    a, b, kernel, bias = run([y1, y2, dense.kernel, dense.bias], {x: xs})
    np.testing.assert_allclose(a, np.maximum(xs @ kernel + bias, 0), rtol=1e-12)
    np.testing.assert_allclose(b, np.maximum(2 * xs @ kernel + bias, 0), rtol=1e-12)
    with pytest.raises(ValueError, match="shape"):
        dense(tf.placeholder(tf.float64, [None, 5]))   # another input depth


def np_conv_valid(x, k):
    kh, kw = k.shape[:2]
    n, h, w, _ = x.shape
    out = np.zeros((n, h - kh + 1, w - kw + 1, k.shape[3]))
    for i in range(out.shape[1]):
        for j in range(out.shape[2]):
            out[:, i, j] = np.tensordot(x[:, i:i + kh, j:j + kw], k, axes=3)
    return out


def test_conv_pool_flatten_dropout_pipeline_against_numpy():
    x = tf.placeholder(tf.float64, [None, 5, 5, 2])
    conv = tf.layers.Conv2D(3, (2, 2), use_bias=False)
    pool = tf.layers.MaxPooling2D(2, 2)
    avg = tf.layers.AveragePooling2D(2, 2)
    flat = tf.layers.Flatten()
    drop = tf.layers.Dropout(0.5)
    h = conv(x)
    y = flat(drop(pool(h), training=False))
    z = flat(avg(h))
    assert [v.name for v in tf.global_variables()] == ["conv2d/kernel:0"]
    assert conv.bias is None and tuple(conv.kernel.shape) == (2, 2, 2, 3)
    xs = np.random.default_rng(1).normal(size=(2, 5, 5, 2))
    got_y, got_z, k = run([y, z, conv.kernel], {x: xs})
    c = np_conv_valid(xs, k)[:, :4, :4]
    blocks = c.reshape(2, 2, 2, 2, 2, 3)
    np.testing.assert_allclose(got_y, blocks.max(axis=(2, 4)).reshape(2, -1), rtol=1e-12)
    np.testing.assert_allclose(got_z, blocks.mean(axis=(2, 4)).reshape(2, -1), rtol=1e-12)


def test_dropout_layer_with_a_training_placeholder():
    x = tf.constant(np.ones((40, 10), np.float32))
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.Dropout(0.5, seed=3)(x, training=training)
    with tf.Session() as sess:
        off = sess.run(y, {training: False})
        on = sess.run(y, {training: True})
    np.testing.assert_array_equal(off, 1)
    assert set(np.unique(on)) <= {0.0, 2.0} and 0.3 < (on == 0).mean() < 0.7


def test_an_unknown_keyword_is_an_error_and_shape_hints_are_accepted():
    with pytest.raises(TypeError, match="use_bais"):
        tf.layers.Dense(3, use_bais=False)
    tf.layers.Dense(3, input_shape=(4,))
