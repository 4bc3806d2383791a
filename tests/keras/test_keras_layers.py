"""tw.keras layers against tf_keras 2.21: the same weights and inputs give the same
outputs (``fixtures/layers.npz``, recorded by ``record_fixtures.py``), and the layers'
own rules: building, weights, initializers, regularizers, dropout, shape errors."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tensorweave as tw

sys.path.insert(0, os.path.dirname(__file__))
from keras_cases import LAYER_CASES, MERGE_CASES  # noqa: E402

keras = tw.keras
FIXTURES = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "layers.npz"))


def _assert_close(actual, expected, rtol=2e-5, atol=2e-6):
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", LAYER_CASES, ids=[c[0] for c in LAYER_CASES])
def test_layer_output_equals_tf_keras(case):
    cid, cls, kwargs, _shape, _dtype, train = case
    layer = getattr(keras.layers, cls)(**kwargs)
    x = FIXTURES[f"{cid}/x"]
    layer.build(x.shape)
    weights = [FIXTURES[f"{cid}/w{j}"] for j in range(len(layer.weights))]
    assert f"{cid}/w{len(weights)}" not in FIXTURES.files   # same number of weights
    layer.set_weights(weights)
    _assert_close(layer(x, training=False), FIXTURES[f"{cid}/y"])
    if train:
        _assert_close(layer(x, training=True), FIXTURES[f"{cid}/y_train"])
        for j, w in enumerate(layer.get_weights()):   # moving statistics moved as TF's
            _assert_close(w, FIXTURES[f"{cid}/after{j}"])


@pytest.mark.parametrize("case", MERGE_CASES, ids=[c[0] for c in MERGE_CASES])
def test_merge_layer_equals_tf_keras(case):
    cid, cls, kwargs, shapes = case
    xs = [FIXTURES[f"{cid}/x{j}"] for j in range(len(shapes))]
    _assert_close(getattr(keras.layers, cls)(**kwargs)(xs), FIXTURES[f"{cid}/y"])


def test_layer_compiled_equals_eager():
    """A layer traced inside tw.compile on the cpu target computes what it computes
    eagerly on the reference target."""
    cid = "conv2d_same_strided"
    cls, kwargs = next((c[1], c[2]) for c in LAYER_CASES if c[0] == cid)
    layer = getattr(keras.layers, cls)(**kwargs)
    x = FIXTURES[f"{cid}/x"]
    layer.build(x.shape)
    layer.set_weights([FIXTURES[f"{cid}/w{j}"] for j in range(2)])
    compiled = tw.compile(lambda v: layer(v), target="cpu")
    _assert_close(compiled(x), FIXTURES[f"{cid}/y"])


def test_dense_builds_on_first_call_with_keras_weight_names_and_shapes():
    keras.backend.clear_session()
    layer = keras.layers.Dense(3)
    assert not layer.built and layer.weights == []
    y = layer(np.ones((2, 5), np.float32))
    assert layer.built and tuple(y.shape) == (2, 3)
    assert [w.name for w in layer.weights] == ["dense/kernel:0", "dense/bias:0"]
    assert [tuple(w.shape) for w in layer.weights] == [(5, 3), (3,)]
    assert keras.layers.Dense(2).name == "dense_1"
    np.testing.assert_array_equal(layer.bias.numpy(), np.zeros(3, np.float32))


def test_glorot_uniform_default_and_named_initializers():
    keras.utils.set_random_seed(3)
    layer = keras.layers.Dense(300, kernel_initializer="glorot_uniform",
                               bias_initializer="ones")
    layer.build((None, 200))
    kernel = layer.kernel.numpy()
    limit = np.sqrt(6.0 / (200 + 300))
    assert kernel.min() >= -limit and kernel.max() <= limit
    # uniform on [-limit, limit]: variance limit**2 / 3 (60000 draws: within 3%)
    assert abs(kernel.var() / (limit ** 2 / 3) - 1) < 0.03
    np.testing.assert_array_equal(layer.bias.numpy(), np.ones(300, np.float32))
    he = keras.initializers.get("he_normal")((400, 300)).numpy()
    std = np.sqrt(2.0 / 400)
    assert np.abs(he).max() <= 2 * std / 0.87962566103423978 + 1e-6
    assert abs(he.std() / std - 1) < 0.03


def test_seeded_initializer_repeats_unseeded_differs():
    a = keras.initializers.GlorotUniform(seed=7)((20, 10)).numpy()
    b = keras.initializers.GlorotUniform(seed=7)((20, 10)).numpy()
    c = keras.initializers.GlorotUniform()((20, 10)).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_orthogonal_initializer_is_orthogonal():
    q = keras.initializers.Orthogonal(gain=2.0, seed=1)((6, 4)).numpy()
    np.testing.assert_allclose(q.T @ q, 4.0 * np.eye(4), atol=1e-5)
    wide = keras.initializers.Orthogonal(seed=1)((3, 5)).numpy()
    np.testing.assert_allclose(wide @ wide.T, np.eye(3), atol=1e-5)


def test_l2_kernel_regularizer_is_a_loss_of_the_layer():
    layer = keras.layers.Dense(2, kernel_regularizer="l2",
                               activity_regularizer=keras.regularizers.L1(0.5))
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    y = np.asarray(layer(x))
    kernel = layer.kernel.numpy()
    losses = [float(np.asarray(v)) for v in layer.losses]
    # the activity penalty of the call (divided by the batch size), then the weight's
    np.testing.assert_allclose(sorted(losses), sorted([0.5 * np.abs(y).sum() / 3,
                                                       0.01 * np.square(kernel).sum()]),
                               rtol=1e-5)


def test_dropout_training_and_inference():
    x = np.ones((200, 50), np.float32)
    layer = keras.layers.Dropout(0.25, seed=1)
    np.testing.assert_array_equal(np.asarray(layer(x)), x)          # inference default
    y = np.asarray(layer(x, training=True))
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.02                             # 10000 draws
    # a mask shared along the noise shape's 1 dims
    shared = np.asarray(keras.layers.Dropout(0.5, noise_shape=(None, 1))(x, training=True))
    assert all(len(set(row)) == 1 for row in shared)
    with pytest.raises(ValueError, match="rate"):
        keras.layers.Dropout(1.5)


def test_dropout_draws_a_new_mask_in_each_compiled_step():
    layer = keras.layers.Dropout(0.5)
    step = tw.compile(lambda v: layer(v, training=True))
    x = np.ones((4, 64), np.float32)
    assert not np.array_equal(step(x), step(x))


def test_training_flag_reaches_layers_inside_layers():
    """A layer called inside another layer's call without its own `training` takes the
    outer call's (Keras' call context)."""
    class Block(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.drop = keras.layers.Dropout(0.5)

        def call(self, inputs):
            return self.drop(inputs)

    x = np.ones((10, 30), np.float32)
    block = Block()
    np.testing.assert_array_equal(np.asarray(block(x, training=False)), x)
    assert (np.asarray(block(x, training=True)) == 0).any()


def test_batchnorm_frozen_runs_in_inference_mode():
    bn = keras.layers.BatchNormalization()
    x = np.random.RandomState(0).randn(8, 3).astype(np.float32) * 3 + 2
    bn(x, training=True)
    before = bn.get_weights()
    bn.trainable = False
    y = np.asarray(bn(x, training=True))
    for a, b in zip(before, bn.get_weights()):   # moving statistics unchanged
        np.testing.assert_array_equal(a, b)
    mean, var = before[2], before[3]
    expected = (x - mean) / np.sqrt(var + 1e-3) * before[0] + before[1]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    assert bn.trainable_weights == [] and len(bn.non_trainable_weights) == 4


def test_lstm_return_state_and_initial_state():
    lstm = keras.layers.LSTM(3, return_sequences=True, return_state=True)
    x = np.random.RandomState(1).randn(2, 4, 5).astype(np.float32)
    seq, h, c = lstm(x)
    assert tuple(seq.shape) == (2, 4, 3) and tuple(h.shape) == (2, 3)
    np.testing.assert_allclose(np.asarray(seq)[:, -1], np.asarray(h), rtol=1e-6)
    # continuing from the final state equals running the whole sequence at once
    first, h1, c1 = lstm(x[:, :2])
    second, _, _ = lstm(x[:, 2:], initial_state=[h1, c1])
    np.testing.assert_allclose(np.asarray(second), np.asarray(seq)[:, 2:], rtol=1e-5,
                               atol=1e-6)
    # tf_keras' unit_forget_bias: the forget gate's bias starts at 1
    np.testing.assert_array_equal(lstm.bias.numpy(), np.r_[np.zeros(3), np.ones(3),
                                                           np.zeros(6)].astype(np.float32))


def test_wrong_input_shape_errors_name_the_layer_and_both_shapes():
    dense = keras.layers.Dense(3, name="my_dense")
    dense(np.ones((2, 4), np.float32))
    with pytest.raises(ValueError) as e:
        dense(np.ones((2, 5), np.float32))
    msg = str(e.value)
    assert 'layer "my_dense"' in msg and "expected axis -1 of input shape to have value 4" in msg
    assert "(2, 5)" in msg and "test_keras_layers.py" in msg
    with pytest.raises(ValueError, match=r'"conv".*expected min_ndim=4, found ndim=3'):
        keras.layers.Conv2D(2, 3, name="conv")(np.ones((1, 5, 5), np.float32))
    with pytest.raises(ValueError, match=r"expected ndim=3, found ndim=2"):
        keras.layers.LSTM(2)(np.ones((2, 5), np.float32))
    with pytest.raises(ValueError, match=r"Inputs have incompatible shapes.*\(3,\) and \(4,\)"):
        keras.layers.Add()([np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)])
    with pytest.raises(ValueError, match="output is <= 0"):
        keras.layers.Conv2D(2, 5)(np.ones((1, 3, 3, 1), np.float32))
    with pytest.raises(ValueError, match="total size of new array must be unchanged"):
        keras.layers.Reshape((5,))(np.ones((2, 4), np.float32))


def test_set_weights_checks_count_and_shapes():
    dense = keras.layers.Dense(3, name="d")
    dense.build((None, 4))
    with pytest.raises(ValueError, match="expecting 2 weights"):
        dense.set_weights([np.zeros((4, 3))])
    with pytest.raises(ValueError, match=r"weight shape \(4, 3\) is not compatible with "
                                         r"provided weight shape \(3, 4\)"):
        dense.set_weights([np.zeros((3, 4)), np.zeros(3)])


def test_compute_output_shape_and_count_params():
    conv = keras.layers.Conv2D(8, 3, strides=2, padding="same")
    assert tuple(conv.compute_output_shape((None, 9, 9, 3))) == (None, 5, 5, 8)
    assert conv.count_params() == 3 * 3 * 3 * 8 + 8
    with pytest.raises(ValueError, match="isn't built"):
        keras.layers.Dense(2).count_params()


def test_channels_first_is_channels_last_transposed():
    """tf_keras has no channels_first convolution on the CPU to record; the layer must
    compute the channels_last result on the transposed input."""
    rng = np.random.RandomState(4)
    x = rng.randn(2, 7, 6, 3).astype(np.float32)
    last = keras.layers.Conv2D(4, 3, strides=2, padding="same")
    first = keras.layers.Conv2D(4, 3, strides=2, padding="same", data_format="channels_first")
    last.build(x.shape)
    first.build((2, 3, 7, 6))
    first.set_weights(last.get_weights())
    expected = np.asarray(last(x)).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(np.asarray(first(x.transpose(0, 3, 1, 2))), expected,
                               rtol=1e-5, atol=1e-6)
    pool = keras.layers.MaxPooling2D(data_format="channels_first")
    np.testing.assert_array_equal(np.asarray(pool(x.transpose(0, 3, 1, 2))),
                                  np.asarray(keras.layers.MaxPooling2D()(x)).transpose(0, 3, 1, 2))
    flat = keras.layers.Flatten(data_format="channels_first")
    np.testing.assert_array_equal(np.asarray(flat(x.transpose(0, 3, 1, 2))),
                                  x.reshape(2, -1))


def test_layer_config_round_trip():
    layer = keras.layers.Conv2D(4, (3, 2), strides=2, padding="same", activation="relu",
                                kernel_regularizer=keras.regularizers.L2(0.1), name="c")
    clone = keras.layers.Conv2D.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    assert clone.activation is keras.activations.relu


def test_unsupported_arguments_are_refused_not_ignored():
    with pytest.raises(NotImplementedError, match="constraints"):
        keras.layers.Dense(2, kernel_constraint=object())
    with pytest.raises(NotImplementedError, match="mask_zero"):
        keras.layers.Embedding(5, 2, mask_zero=True)
    with pytest.raises(NotImplementedError, match="dropout"):
        keras.layers.LSTM(2, dropout=0.1)
    with pytest.raises(TypeError, match="unexpected keyword"):
        keras.layers.Dense(2, unitz=3)
