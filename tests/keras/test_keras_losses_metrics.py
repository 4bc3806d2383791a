"""tw.keras losses and metrics against tf_keras 2.21 (``fixtures/losses.npz``) and NumPy."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw

sys.path.insert(0, os.path.dirname(__file__))
from keras_cases import LOSS_CASES, METRIC_CASES  # noqa: E402

keras = tw.keras
FIXTURES = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "losses.npz"))


@pytest.mark.parametrize("case", LOSS_CASES, ids=[c[0] for c in LOSS_CASES])
def test_loss_equals_tf_keras(case):
    cid, build, _, _ = case
    loss = build(keras)
    y_true, y_pred, sw = (FIXTURES[f"{cid}/{k}"] for k in ("y_true", "y_pred", "sw"))
    for args, key in (({}, "loss"), ({"sample_weight": sw}, "weighted")):
        value = np.asarray(loss(y_true, y_pred, **args))
        assert value.shape == FIXTURES[f"{cid}/{key}"].shape
        np.testing.assert_allclose(value, FIXTURES[f"{cid}/{key}"], rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("case", METRIC_CASES, ids=[c[0] for c in METRIC_CASES])
def test_metric_equals_tf_keras(case):
    cid, build, _, _ = case
    metric = build(keras)
    results = []
    for b in range(2):
        sw = FIXTURES[f"{cid}/sw{b}"] if f"{cid}/sw{b}" in FIXTURES.files else None
        metric.update_state(FIXTURES[f"{cid}/y_true{b}"], FIXTURES[f"{cid}/y_pred{b}"],
                            sample_weight=sw)
        results.append(float(np.asarray(metric.result())))
    np.testing.assert_allclose(results, FIXTURES[f"{cid}/results"], rtol=2e-6, atol=1e-7)
    metric.reset_state()
    assert float(np.asarray(metric.result())) == 0.0


def test_saturated_softmax_loss_uses_the_logits():
    """A cross entropy of a softmax's probabilities is computed from its logits (as
    tf_keras): -log(softmax) of a logit 50 below the top is 50, not -log(1e-7) = 16.1,
    and its gradient does not vanish where the probability is clipped."""
    logits = tw.constant(np.array([[50.0, 0.0, 0.0]], np.float32))
    y = np.array([1])
    probs = keras.activations.softmax(logits)
    np.testing.assert_allclose(
        np.asarray(keras.losses.sparse_categorical_crossentropy(y, probs)), [50.0],
        rtol=1e-6)
    dense = keras.layers.Dense(3, activation="softmax", use_bias=False)
    dense.build((None, 1))
    dense.set_weights([np.array([[2.0, 0.0, 0.0]], np.float32)])
    x = np.array([[25.0]], np.float32)            # logits [50, 0, 0], label 1
    with tw.GradientTape() as tape:
        loss = keras.losses.SparseCategoricalCrossentropy()(y, dense(x))
    np.testing.assert_allclose(np.asarray(loss), 50.0, rtol=1e-6)
    # through the logits: x * (softmax - onehot) = 25 * [1, -1, 0]; through clipped
    # probabilities it would be 0 (the label's probability is below the clip)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, dense.kernel)),
                               [[25.0, -25.0, 0.0]], atol=1e-5)
    # inside a compiled function the producing op is recognized too
    compiled = tw.compile(lambda z: keras.losses.categorical_crossentropy(
        np.array([[0.0, 1.0, 0.0]], np.float32), tw.nn.softmax(z)))
    np.testing.assert_allclose(compiled(np.array([[50.0, 0.0, 0.0]], np.float32)), [50.0],
                               rtol=1e-6)


@given(st.integers(1, 6), st.integers(2, 5), st.integers(0, 2 ** 31 - 1))
def test_crossentropies_equal_numpy(n, k, seed):
    rng = np.random.RandomState(seed)
    logits = (3 * rng.randn(n, k)).astype(np.float32)
    labels = rng.randint(0, k, size=n)
    log_p = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1,
                            keepdims=True)) - logits.max(1, keepdims=True)
    expected = -log_p[np.arange(n), labels]
    sparse = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    np.testing.assert_allclose(np.asarray(sparse(labels, logits)), expected, rtol=1e-5,
                               atol=1e-5)
    onehot = np.eye(k, dtype=np.float32)[labels]
    cce = keras.losses.CategoricalCrossentropy(from_logits=True)
    np.testing.assert_allclose(np.asarray(cce(onehot, logits)), expected.mean(), rtol=1e-5,
                               atol=1e-5)
    probs = np.exp(log_p)
    clipped = np.clip(probs, 1e-7, 1 - 1e-7)
    np.testing.assert_allclose(
        np.asarray(keras.losses.sparse_categorical_crossentropy(labels, probs)),
        -np.log(clipped[np.arange(n), labels]), rtol=1e-5, atol=1e-5)


def test_compile_accuracy_picks_the_kind_from_shapes():
    """'accuracy' is binary for one output unit, sparse for integer labels, categorical
    for one-hot labels (tf_keras' rule)."""
    def accuracy_fn(units, y):
        model = keras.Sequential([keras.layers.Dense(units, input_shape=(2,))])
        model.compile("sgd", "mse" if units == 1 or y.ndim == 2 and y.shape[1] > 1 else
                      "sparse_categorical_crossentropy", metrics=["accuracy"])
        model.evaluate(np.ones((4, 2), np.float32), y, verbose=0)
        (metric,) = model.compiled_metrics.metrics
        return metric._fn

    assert accuracy_fn(1, np.ones((4, 1), np.float32)) is keras.metrics.binary_accuracy
    assert accuracy_fn(3, np.zeros(4, np.int64)) is keras.metrics.sparse_categorical_accuracy
    assert accuracy_fn(3, np.eye(3, dtype=np.float32)[[0, 1, 2, 0]]) is \
        keras.metrics.categorical_accuracy


def test_metric_objects_accumulate_over_batches():
    mean = keras.metrics.Mean()
    mean.update_state([1.0, 2.0, 3.0])
    mean.update_state([10.0], sample_weight=[2.0])
    assert float(np.asarray(mean.result())) == pytest.approx((6 + 20) / 5)
    acc = keras.metrics.SparseCategoricalAccuracy()
    assert float(np.asarray(acc([[1], [2]], [[0.1, 0.9, 0.0], [0.8, 0.1, 0.1]]))) == 0.5


def test_unknown_names_are_errors():
    with pytest.raises(ValueError, match="Unknown loss function"):
        keras.losses.get("mean_sqared_error")
    with pytest.raises(ValueError, match="Unknown metric function"):
        keras.metrics.get("acuracy")
    with pytest.raises(ValueError, match="Unknown activation"):
        keras.activations.get("rellu")
    with pytest.raises(ValueError, match="Could not interpret optimizer"):
        keras.optimizers.get("adamm")
    with pytest.raises(ValueError, match="Unknown initializer"):
        keras.initializers.get("glorot")
