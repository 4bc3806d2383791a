"""tw.keras callbacks: the decisions of EarlyStopping, ReduceLROnPlateau and
ModelCheckpoint on scripted logs are tf_keras 2.21's (the expected values below were
recorded with tf_keras on the same sequences), and the callbacks act on a real `fit`."""

from __future__ import annotations

import csv
import os

import numpy as np
import pytest

import tensorweave as tw

keras = tw.keras


class _Stub:
    """The parts of a model EarlyStopping uses; `get_weights` returns the epoch."""

    def __init__(self) -> None:
        self.stop_training = False
        self.epoch = 0
        self.restored = None

    def get_weights(self):
        return [np.array([self.epoch], float)]

    def set_weights(self, weights):
        self.restored = weights[0][0]


def _run(cb, values, key="val_loss"):
    model = _Stub()
    cb.set_model(model)
    cb.on_train_begin()
    for epoch, value in enumerate(values):
        model.epoch = epoch
        cb.on_epoch_end(epoch, {key: value})
        if model.stop_training:
            break
    cb.on_train_end()
    return epoch, cb.stopped_epoch, cb.best_epoch, model.restored


SEQUENCE = [1.0, 0.8, 0.85, 0.79, 0.795, 0.9, 0.7]


@pytest.mark.parametrize("kwargs, values, key, expected", [
    ({"patience": 2}, SEQUENCE, "val_loss", (5, 5, 3, None)),
    ({"patience": 2, "min_delta": 0.02, "restore_best_weights": True}, SEQUENCE, "val_loss",
     (3, 3, 1, 1.0)),
    ({"patience": 1, "baseline": 0.75, "restore_best_weights": True}, SEQUENCE, "val_loss",
     (2, 2, 1, 1.0)),
    ({"monitor": "val_accuracy", "patience": 1, "start_from_epoch": 2},
     [0.5, 0.4, 0.3, 0.6, 0.55, 0.5], "val_accuracy", (4, 4, 3, None)),
    ({"patience": 0}, [1.0, 1.1, 0.5], "val_loss", (1, 1, 0, None)),
])
def test_early_stopping_decides_as_tf_keras(kwargs, values, key, expected):
    assert _run(keras.callbacks.EarlyStopping(**kwargs), values, key) == expected


def _model(lr: float = 1.0):
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    model.compile(keras.optimizers.SGD(learning_rate=lr), "mse")
    return model


def test_reduce_lr_on_plateau_as_tf_keras():
    model = _model()
    cb = keras.callbacks.ReduceLROnPlateau(factor=0.5, patience=1, cooldown=1, min_lr=0.2,
                                           min_delta=0.01)
    cb.set_model(model)
    cb.on_train_begin()
    rates = []
    for epoch, value in enumerate([1.0, 0.995, 0.99, 0.98, 0.975, 0.97, 0.969, 0.968, 0.5,
                                   0.49]):
        logs = {"val_loss": value}
        cb.on_epoch_end(epoch, logs)
        rates.append(round(float(model.optimizer.learning_rate.numpy()), 6))
    assert rates == [1.0, 0.5, 0.25, 0.25, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2]


def test_model_checkpoint_best_only_saves_as_tf_keras(tmp_path):
    model = _model()
    model(np.ones((1, 2), np.float32))
    path = str(tmp_path / "ck_{epoch}")
    cb = keras.callbacks.ModelCheckpoint(path, monitor="val_acc", save_best_only=True,
                                         save_weights_only=True)
    cb.set_model(model)
    cb.on_train_begin()
    for epoch, value in enumerate([0.5, 0.6, 0.55, 0.7]):
        cb.on_epoch_begin(epoch)
        cb.on_epoch_end(epoch, {"val_acc": value})
    assert sorted(os.listdir(tmp_path)) == ["ck_1.safetensors", "ck_2.safetensors",
                                            "ck_4.safetensors"]


def test_early_stopping_restores_best_weights_in_fit():
    model = _model(lr=0.1)
    model.set_weights([np.zeros((2, 1), np.float32), np.zeros(1, np.float32)])
    x = np.ones((4, 2), np.float32)
    y = np.ones((4, 1), np.float32)
    snapshots = []
    record = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: snapshots.append(model.get_weights()))
    # trained toward 1 from 0, validated against -1: the validation loss only grows, so
    # training stops after epoch 1 and the weights of epoch 0 come back
    cb = keras.callbacks.EarlyStopping(monitor="val_loss", patience=1,
                                       restore_best_weights=True)
    history = model.fit(x, y, epochs=10, verbose=0, callbacks=[record, cb],
                        validation_data=(x, -y))
    val = history.history["val_loss"]
    assert len(val) == 2 and val[1] > val[0] and model.history is history
    assert cb.stopped_epoch == 1 and cb.best_epoch == 0
    best = 0
    assert not np.array_equal(snapshots[1][1], snapshots[0][1])
    for a, b in zip(model.get_weights(), snapshots[best]):
        np.testing.assert_array_equal(a, b)


def test_learning_rate_scheduler_changes_the_rate_without_retracing():
    model = _model(lr=0.5)
    x, y = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
    seen = []
    cb = keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 * (epoch + 1))
    probe = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: seen.append(
            float(model.optimizer.learning_rate.numpy())))
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[cb, probe])
    np.testing.assert_allclose(seen, [0.1, 0.2, 0.3], rtol=1e-6)
    np.testing.assert_allclose(history.history["lr"], [0.1, 0.2, 0.3], rtol=1e-6)
    (fn,) = model._step_function("train").functions.values()
    assert fn.experimental_get_tracing_count() == 1


def test_the_new_learning_rate_is_the_one_applied():
    model = _model(lr=0.0)
    model.set_weights([np.zeros((2, 1), np.float32), np.zeros(1, np.float32)])
    x, y = np.ones((1, 2), np.float32), np.ones((1, 1), np.float32)
    model.fit(x, y, verbose=0)
    np.testing.assert_array_equal(model.get_weights()[1], [0.0])
    model.optimizer.learning_rate = 0.25
    model.fit(x, y, verbose=0)
    # mse gradient wrt the bias: 2 * (0 - 1) = -2; step 0.25 * 2
    np.testing.assert_allclose(model.get_weights()[1], [0.5])


def test_terminate_on_nan_and_csv_logger(tmp_path):
    model = _model(lr=1e30)   # diverges to inf, then NaN
    x = np.full((8, 2), 1e10, np.float32)
    y = np.ones((8, 1), np.float32)
    log = str(tmp_path / "log.csv")
    history = model.fit(x, y, batch_size=2, epochs=5, verbose=0,
                        callbacks=[keras.callbacks.TerminateOnNaN(),
                                   keras.callbacks.CSVLogger(log)])
    assert len(history.history["loss"]) == 1
    with open(log) as f:
        rows = list(csv.DictReader(f))
    assert [r["epoch"] for r in rows] == ["0"] and "loss" in rows[0]


def test_progress_output(capsys):
    model = _model(lr=0.01)
    model.fit(np.ones((8, 2), np.float32), np.ones((8, 1), np.float32), batch_size=4,
              epochs=2, verbose=2)
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "Epoch 2/2" in out and "2/2 - " in out and "loss: " in out
    model.fit(np.ones((8, 2), np.float32), np.ones((8, 1), np.float32), verbose=0)
    assert capsys.readouterr().out == ""


def test_callback_hooks_are_called_in_keras_order():
    calls = []

    class Recorder(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            calls.append("train_begin")

        def on_epoch_begin(self, epoch, logs=None):
            calls.append(f"epoch_begin {epoch}")

        def on_train_batch_end(self, batch, logs=None):
            calls.append(f"batch_end {batch}")

        def on_test_begin(self, logs=None):
            calls.append("test_begin")

        def on_epoch_end(self, epoch, logs=None):
            calls.append(f"epoch_end {epoch} {sorted(logs)}")

        def on_train_end(self, logs=None):
            calls.append("train_end")

    model = _model(lr=0.01)
    x, y = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
    model.fit(x, y, batch_size=2, epochs=2, verbose=0, callbacks=[Recorder()],
              validation_data=(x, y))
    assert calls == ["train_begin", "epoch_begin 0", "batch_end 0", "batch_end 1",
                     "test_begin", "epoch_end 0 ['loss', 'val_loss']", "epoch_begin 1",
                     "batch_end 0", "batch_end 1", "test_begin",
                     "epoch_end 1 ['loss', 'val_loss']", "train_end"]
