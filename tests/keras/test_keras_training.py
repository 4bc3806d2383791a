"""tw.keras training against tf_keras 2.21: the same initial weights and data give the same
epoch losses and metrics, final weights, evaluation and predictions
(``fixtures/training.npz``); and the training loop's own rules: compiled steps, batches,
validation, sample and class weights, datasets, eager mode, MNIST."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tensorweave as tw

sys.path.insert(0, os.path.dirname(__file__))
from keras_cases import TRAIN_CASES, make_data  # noqa: E402

keras = tw.keras
FIXTURES = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "training.npz"))
# float32 over a few dozen steps: both sides round differently (summation order, fused
# multiply-adds); measured differences are below 5e-7
RTOL, ATOL = 1e-4, 1e-5


def _run_case(cid: str, target: str | None = None):
    index = list(TRAIN_CASES).index(cid)
    build, data, fit_args = TRAIN_CASES[cid]
    model, compile_args = build(keras)
    model.compile(**compile_args, target=target)
    x, y, sw = make_data(np, data, 300 + index)
    n = len(model.get_weights())
    assert f"{cid}/init{n}" not in FIXTURES.files and f"{cid}/init{n - 1}" in FIXTURES.files
    model.set_weights([FIXTURES[f"{cid}/init{j}"] for j in range(n)])
    history = model.fit(x, y, sample_weight=sw, shuffle=False, verbose=0, **fit_args)
    return model, history, (x, y, sw)


def _check_against_tf_keras(cid: str, model, history, data) -> None:
    x, y, sw = data
    recorded = {k.split("/", 2)[2]: FIXTURES[k] for k in FIXTURES.files
                if k.startswith(f"{cid}/history/")}
    assert list(history.history) == list(recorded) or sorted(history.history) == sorted(
        recorded)
    for key, values in recorded.items():
        np.testing.assert_allclose(history.history[key], values, rtol=RTOL, atol=ATOL,
                                   err_msg=f"{cid}: {key}")
    for j, w in enumerate(model.get_weights()):
        np.testing.assert_allclose(w, FIXTURES[f"{cid}/final{j}"], rtol=RTOL, atol=ATOL,
                                   err_msg=f"{cid}: weight {j}")
    results = model.evaluate(x, y, sample_weight=sw, batch_size=16, verbose=0,
                             return_dict=True)
    for key, value in results.items():
        np.testing.assert_allclose(value, FIXTURES[f"{cid}/evaluate/{key}"], rtol=RTOL,
                                   atol=ATOL, err_msg=f"{cid}: evaluate {key}")
    first = [a[:7] for a in x] if isinstance(x, list) else x[:7]
    np.testing.assert_allclose(model.predict(first, verbose=0), FIXTURES[f"{cid}/predict"],
                               rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("cid", list(TRAIN_CASES))
def test_fit_matches_tf_keras(cid):
    model, history, data = _run_case(cid)
    _check_against_tf_keras(cid, model, history, data)


def test_fit_on_the_cpu_target_matches_tf_keras():
    """The same run with the steps compiled to native code."""
    model, history, data = _run_case("mlp_adam_logits", target="cpu")
    _check_against_tf_keras("mlp_adam_logits", model, history, data)


def test_fit_runs_one_compiled_step_per_signature():
    model, history, _ = _run_case("mlp_sgd_softmax")
    steps = model._step_function("train").functions
    assert len(steps) == 1          # 64 samples, batches of 16: one input signature
    (fn,) = steps.values()
    assert isinstance(fn, tw.Function) and fn.experimental_get_tracing_count() == 1
    # a last batch of another size reuses the trace (the batch dim is free)
    model.fit(np.ones((10, 8), np.float32), np.zeros(10, np.int64), batch_size=4, verbose=0)
    assert fn.experimental_get_tracing_count() == 1


def test_eager_mode_equals_compiled_steps():
    runs = []
    for eager in (False, True):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.layers.Dense(4, activation="relu", input_shape=(3,)),
                                  keras.layers.Dense(2)])
        model.set_weights([np.full(w.shape, 0.1 * (i + 1), np.float32)
                           for i, w in enumerate(model.weights)])
        model.compile(keras.optimizers.Adam(0.05),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"], run_eagerly=eager)
        x = np.random.RandomState(2).randn(20, 3).astype(np.float32)
        y = np.arange(20) % 2
        runs.append((model.fit(x, y, batch_size=8, epochs=2, shuffle=False,
                               verbose=0).history, model.get_weights()))
    np.testing.assert_allclose(runs[0][0]["loss"], runs[1][0]["loss"], rtol=1e-5)
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_validation_split_takes_the_last_samples_and_adds_val_logs():
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    model.compile(keras.optimizers.SGD(0.0), "mse")   # no learning: losses are exact
    model.set_weights([np.array([[1.0], [2.0]], np.float32), np.zeros(1, np.float32)])
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.zeros((10, 1), np.float32)
    history = model.fit(x, y, batch_size=4, epochs=1, validation_split=0.3, verbose=0)
    pred = x @ np.array([1.0, 2.0])
    np.testing.assert_allclose(history.history["loss"], [np.mean(pred[:7] ** 2)], rtol=1e-6)
    np.testing.assert_allclose(history.history["val_loss"], [np.mean(pred[7:] ** 2)],
                               rtol=1e-6)
    with pytest.raises(ValueError, match="not sufficient to split"):
        model.fit(x[:1], y[:1], validation_split=0.5, verbose=0)


def test_sample_weights_class_weights_and_weighted_metrics():
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(2,))])
    model.compile(keras.optimizers.SGD(0.0),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], weighted_metrics=["accuracy"])
    model.set_weights([np.eye(2, dtype=np.float32), np.zeros(2, np.float32)])
    x = np.array([[2, 0], [0, 2], [2, 0], [0, 3]], np.float32)
    y = np.array([0, 1, 1, 1])
    logits = x
    per_sample = np.log(np.exp(logits).sum(1)) - logits[np.arange(4), y]
    sw = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
    logs = model.evaluate(x, y, sample_weight=sw, verbose=0, return_dict=True)
    np.testing.assert_allclose(logs["loss"], np.sum(per_sample * sw) / 4, rtol=1e-6)
    correct = (np.argmax(logits, 1) == y).astype(np.float64)
    np.testing.assert_allclose(logs["accuracy"], correct.mean(), rtol=1e-6)
    np.testing.assert_allclose(logs["weighted_accuracy"], np.sum(correct * sw) / sw.sum(),
                               rtol=1e-6)
    history = model.fit(x, y, class_weight={0: 3.0, 1: 0.5}, batch_size=4, verbose=0)
    cw = np.array([3.0, 0.5, 0.5, 0.5])
    np.testing.assert_allclose(history.history["loss"], [np.sum(per_sample * cw) / 4],
                               rtol=1e-6)
    with pytest.raises(ValueError, match="must contain all classes"):
        model.fit(x, y, class_weight={0: 1.0}, verbose=0)


def test_fit_on_a_dataset_equals_fit_on_arrays():
    x = np.random.RandomState(0).randn(30, 3).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    results = []
    for use_dataset in (False, True):
        model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
        model.set_weights([np.full((3, 2), 0.2, np.float32), np.zeros(2, np.float32)])
        model.compile(keras.optimizers.SGD(0.1),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        if use_dataset:
            ds = tw.data.Dataset.from_tensor_slices((x, y)).batch(8)
            history = model.fit(ds, epochs=2, verbose=0, validation_data=ds)
        else:
            history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0,
                                validation_data=(x, y))
        results.append(history.history)
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(results[0][key], results[1][key], rtol=1e-6)
    with pytest.raises(ValueError, match="batch_size"):
        model.fit(tw.data.Dataset.from_tensor_slices((x, y)).batch(8), batch_size=4,
                  verbose=0)


def test_steps_per_epoch_continues_through_the_data():
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(1,))])
    model.compile(keras.optimizers.SGD(0.0), "mae")
    model.set_weights([np.ones((1, 1), np.float32), np.zeros(1, np.float32)])
    x = np.arange(6, dtype=np.float32).reshape(6, 1)
    seen = []
    cb = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: seen.append(logs["loss"]))
    model.fit(x, np.zeros((6, 1), np.float32), batch_size=2, steps_per_epoch=2, epochs=2,
              shuffle=False, verbose=0, callbacks=[cb])
    # epoch 1: batches [0,1], [2,3]; epoch 2 continues: [4,5], then [0,1] (running means)
    np.testing.assert_allclose(seen, [0.5, 1.5, 4.5, 2.5], rtol=1e-6)


def test_train_test_predict_on_batch():
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    model.compile(keras.optimizers.SGD(0.5), "mse", metrics=["mae"])
    model.set_weights([np.zeros((2, 1), np.float32), np.zeros(1, np.float32)])
    x = np.array([[1.0, 0.0]], np.float32)
    y = np.array([[2.0]], np.float32)
    loss, mae = model.train_on_batch(x, y)
    assert (loss, mae) == (4.0, 2.0)
    # d(loss)/dw0 = -2 * (y - 0) * x0 = -4; SGD(0.5): w0 = 2, bias = 2
    np.testing.assert_allclose(model.predict_on_batch(x), [[4.0]])
    assert model.test_on_batch(x, y, return_dict=True) == {"loss": 4.0, "mae": 2.0}
    assert model.metrics_names == ["loss", "mae"]


def test_uncompiled_or_target_less_model_errors():
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    with pytest.raises(RuntimeError, match="must compile your model"):
        model.fit(np.ones((2, 2)), np.ones((2, 1)), verbose=0)
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="Target data is missing"):
        model.fit(np.ones((2, 2), np.float32), verbose=0)
    with pytest.raises(ValueError, match="Data cardinality is ambiguous"):
        model.fit(np.ones((3, 2), np.float32), np.ones((2, 1), np.float32), verbose=0)


def test_wrong_data_shape_in_fit_names_the_model_and_shapes():
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(4,))], name="net")
    model.compile("sgd", "mse")
    with pytest.raises(ValueError) as e:
        model.fit(np.ones((8, 5), np.float32), np.ones((8, 3), np.float32), verbose=0)
    msg = str(e.value)
    assert 'layer "net"' in msg and "expected shape=(None, 4)" in msg
    assert "found shape=(None, 5)" in msg and "test_keras_training.py" in msg


def test_trainable_changes_take_effect_at_compile():
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(2,)),
                              keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    first = model.layers[0]
    first.trainable = False      # after compile: ignored until the next compile (Keras)
    before = first.get_weights()
    x, y = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
    model.fit(x, y, verbose=0)
    assert not all(np.array_equal(a, b) for a, b in zip(before, first.get_weights()))
    model.compile(keras.optimizers.SGD(0.1), "mse")
    before = first.get_weights()
    model.fit(x, y, verbose=0)
    for a, b in zip(before, first.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert len(model.trainable_weights) == 2 and len(model.non_trainable_weights) == 2


def test_add_loss_and_regularization_join_the_training_loss():
    class Penalized(keras.layers.Layer):
        def call(self, inputs):
            self.add_loss(tw.reduce_sum(inputs) * 0.0 + 3.0)
            return inputs

    model = keras.Sequential([keras.layers.Dense(1, input_shape=(1,),
                                                 kernel_regularizer=keras.regularizers.L2(0.5)),
                              Penalized()])
    model.compile(keras.optimizers.SGD(0.0), "mse")
    model.set_weights([np.full((1, 1), 2.0, np.float32), np.zeros(1, np.float32)])
    logs = model.evaluate(np.ones((4, 1), np.float32), np.ones((4, 1), np.float32),
                          verbose=0, return_dict=True)
    # mse (2 - 1)**2 = 1, plus 0.5 * 2**2 = 2, plus 3
    np.testing.assert_allclose(logs["loss"], 6.0, rtol=1e-6)


def test_multi_output_model_losses_and_metric_names():
    inp = keras.Input((3,))
    a = keras.layers.Dense(1, name="a")(inp)
    b = keras.layers.Dense(2, name="b")(inp)
    model = keras.Model(inp, [a, b])
    model.compile(keras.optimizers.SGD(0.0), loss={"a": "mse", "b": "mae"},
                  loss_weights={"a": 2.0, "b": 1.0}, metrics={"b": ["mse"]})
    model.set_weights([np.ones((3, 1), np.float32), np.zeros(1, np.float32),
                       np.ones((3, 2), np.float32), np.zeros(2, np.float32)])
    x = np.ones((4, 3), np.float32)
    ya, yb = np.zeros((4, 1), np.float32), np.ones((4, 2), np.float32)
    logs = model.evaluate(x, [ya, yb], verbose=0, return_dict=True)
    assert list(logs) == ["loss", "a_loss", "b_loss", "b_mse"]
    np.testing.assert_allclose([logs["a_loss"], logs["b_loss"], logs["b_mse"]], [9.0, 2.0, 4.0])
    np.testing.assert_allclose(logs["loss"], 2 * 9.0 + 2.0)


def test_mnist_mlp_trains_to_the_examples_accuracy():
    """The Keras version of examples/mnist_mlp.py reaches what the example does (>= 0.9
    test accuracy, tests/test_examples.py)."""
    from tensorweave.datasets import mnist
    data = mnist.read_data_sets(None, one_hot=False)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Dense(128, activation="relu", input_shape=(784,)),
                              keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(data.train.images, data.train.labels, batch_size=100, epochs=5,
                        validation_split=0.1, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    loss, accuracy = model.evaluate(data.test.images, data.test.labels, verbose=0)
    assert accuracy >= 0.9, (loss, accuracy)
