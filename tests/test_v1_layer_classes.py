"""tf.layers' classes (compat.v1): Dense, Conv2D, MaxPooling2D, AveragePooling2D, Flatten,
Dropout. Names marked "TF" were printed by TensorFlow 2.21 (tf.compat.v1,
TF_USE_LEGACY_KERAS=1) for the same programs."""

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


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


# TF: BatchNormalization(momentum=0.9, epsilon=0.01) on xs = arange(12).reshape(4, 3)**1.5/10
# (float64), the moving statistics after one run of UPDATE_OPS with training=True.
# TensorFlow's decay is the float32 constant 1 - 0.9 = 0.10000000149, tensorweave's
# tf.layers.batch_normalization uses 0.1: a relative difference of 1.5e-8 in float64.
TF_MOVING_MEAN = [0.11723272894541802, 0.14785759165108958, 0.18279764448420727]
TF_MOVING_VARIANCE = [1.0055648768189105, 1.033381332924161, 1.059850222560531]


def test_batch_normalization_class_training_updates_and_inference():
    xs = np.arange(12, dtype=np.float64).reshape(4, 3) ** 1.5 / 10
    x = tf.placeholder(tf.float64, [4, 3])
    training = tf.placeholder(tf.bool, [])
    bn = tf.layers.BatchNormalization(momentum=0.9, epsilon=0.01)
    y = bn(x, training=training)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2 and bn.updates == updates
    assert [v.name for v in bn.trainable_weights] == ["batch_normalization/gamma:0",
                                                     "batch_normalization/beta:0"]
    assert [v.name for v in bn.variables] == [v.name for v in tf.global_variables()] == [
        "batch_normalization/gamma:0", "batch_normalization/beta:0",
        "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(updates, {x: xs, training: False})          # no change
        frozen = sess.run(y, {x: xs, training: False})
        np.testing.assert_allclose(frozen, xs / np.sqrt(1.01), rtol=1e-12)
        train = sess.run([y] + updates, {x: xs, training: True})[0]
        mean, var = sess.run([bn.moving_mean, bn.moving_variance])
        infer = sess.run(y, {x: xs, training: False})
    m, v = xs.mean(0), xs.var(0)
    np.testing.assert_allclose(train, (xs - m) / np.sqrt(v + 0.01), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(mean, TF_MOVING_MEAN, rtol=1e-7)
    np.testing.assert_allclose(var, TF_MOVING_VARIANCE, rtol=1e-7)
    np.testing.assert_allclose(infer, (xs - mean) / np.sqrt(var + 0.01), rtol=1e-12)


def test_batch_normalization_class_called_twice_shares_variables_fused_float32():
    # TF: float32 NHWC takes the fused kernel, whose moving variance moves toward the
    # Bessel-corrected batch variance: [2.1050315, 2.2377024, 2.3661573] for
    # xs = arange(24).reshape(2, 2, 2, 3)**1.5/10, momentum 0.9, after one update
    xs = (np.arange(24, dtype=np.float32).reshape(2, 2, 2, 3) ** 1.5 / 10)
    x = tf.placeholder(tf.float32, [2, 2, 2, 3])
    bn = tf.layers.BatchNormalization(momentum=0.9, epsilon=0.01)
    bn(x, training=True)
    y2 = bn(x * 2, training=False)
    assert len(tf.global_variables()) == 4 and len(bn.updates) == 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(bn.updates, {x: xs})
        var = sess.run(bn.moving_variance)
        out = sess.run(y2, {x: xs})
    np.testing.assert_allclose(var, [2.1050314903259277, 2.2377023696899414,
                                     2.366157293319702], rtol=1e-6)
    mean = 0.1 * xs.mean(axis=(0, 1, 2))
    np.testing.assert_allclose(out, (2 * xs - mean) / np.sqrt(var + 0.01), rtol=1e-5,
                               atol=1e-6)
