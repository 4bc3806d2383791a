"""Record what tf_keras 2.x computes for `keras_cases.py` into ``fixtures/*.npz`` (the tests
compare tw.keras with them; CI has no TensorFlow). Run where tf_keras is installed:

    TF_USE_LEGACY_KERAS=1 python tests/keras/record_fixtures.py

Recorded with TensorFlow 2.21.0 and tf_keras 2.21.0 on x86-64 (the versions are stored
in each file under ``versions``)."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from keras_cases import (  # noqa: E402
    LAYER_CASES,
    LOSS_CASES,
    MERGE_CASES,
    METRIC_CASES,
    TRAIN_CASES,
    make_data,
    make_values,
)

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
VERSIONS = f"tensorflow {tf.__version__}, tf_keras {keras.__version__}"


def _input(rng: np.random.RandomState, shape: tuple, dtype: str) -> np.ndarray:
    if dtype.startswith("int"):
        return rng.randint(0, 10, size=shape).astype(dtype)
    return rng.randn(*shape).astype(dtype)


def record_layers() -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {"versions": np.array(VERSIONS)}
    for i, (cid, cls, kwargs, shape, dtype, train) in enumerate(LAYER_CASES):
        keras.utils.set_random_seed(100 + i)
        rng = np.random.RandomState(i)
        layer = getattr(keras.layers, cls)(**kwargs)
        x = _input(rng, shape, dtype)
        layer.build(x.shape)
        # random, not initial, values for every weight (biases, moving statistics too)
        weights = [rng.uniform(0.5, 1.5, w.shape).astype(w.dtype.as_numpy_dtype)
                   if "variance" in w.name else
                   rng.randn(*w.shape).astype(w.dtype.as_numpy_dtype) * 0.5
                   for w in layer.weights]
        layer.set_weights(weights)
        out[f"{cid}/x"] = x
        for j, w in enumerate(weights):
            out[f"{cid}/w{j}"] = w
        out[f"{cid}/y"] = np.asarray(layer(x, training=False))
        if train:
            out[f"{cid}/y_train"] = np.asarray(layer(x, training=True))
            for j, w in enumerate(layer.get_weights()):
                out[f"{cid}/after{j}"] = w
    for i, (cid, cls, kwargs, shapes) in enumerate(MERGE_CASES):
        rng = np.random.RandomState(1000 + i)
        xs = [rng.randn(*s).astype("float32") for s in shapes]
        layer = getattr(keras.layers, cls)(**kwargs)
        for j, x in enumerate(xs):
            out[f"{cid}/x{j}"] = x
        out[f"{cid}/y"] = np.asarray(layer(xs))
    return out


def record_training() -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {"versions": np.array(VERSIONS)}
    for i, (cid, (build, data, fit_args)) in enumerate(TRAIN_CASES.items()):
        keras.utils.set_random_seed(200 + i)
        model, compile_args = build(keras)
        model.compile(**compile_args)
        x, y, sw = make_data(np, data, 300 + i)
        for j, w in enumerate(model.get_weights()):
            out[f"{cid}/init{j}"] = w
        history = model.fit(x, y, sample_weight=sw, shuffle=False, verbose=0, **fit_args)
        for key, values in history.history.items():
            out[f"{cid}/history/{key}"] = np.asarray(values, dtype=np.float64)
        for j, w in enumerate(model.get_weights()):
            out[f"{cid}/final{j}"] = w
        results = model.evaluate(x, y, sample_weight=sw, batch_size=16, verbose=0,
                                 return_dict=True)
        for key, value in results.items():
            out[f"{cid}/evaluate/{key}"] = np.asarray(value, dtype=np.float64)
        first = [a[:7] for a in x] if isinstance(x, list) else x[:7]
        out[f"{cid}/predict"] = model.predict(first, verbose=0)
    return out


def record_losses() -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {"versions": np.array(VERSIONS)}
    for i, (cid, build, true_kind, pred_kind) in enumerate(LOSS_CASES):
        rng = np.random.RandomState(500 + i)
        y_true = make_values(np, true_kind, rng)
        y_pred = make_values(np, pred_kind, rng)
        sw = rng.uniform(0, 2, size=len(y_pred)).astype("float32")
        loss = build(keras)
        out[f"{cid}/y_true"], out[f"{cid}/y_pred"], out[f"{cid}/sw"] = y_true, y_pred, sw
        out[f"{cid}/loss"] = np.asarray(loss(y_true, y_pred))
        out[f"{cid}/weighted"] = np.asarray(loss(y_true, y_pred, sample_weight=sw))
    for i, (cid, build, true_kind, pred_kind) in enumerate(METRIC_CASES):
        rng = np.random.RandomState(700 + i)
        metric = build(keras)
        batches = []
        for b in range(2):   # two updates, the second weighted
            y_true = make_values(np, true_kind, rng)
            y_pred = (make_values(np, pred_kind, rng) if pred_kind != "classes"
                      else make_values(np, "classes", rng))
            sw = rng.uniform(0, 2, size=len(y_pred)).astype("float32") if b else None
            out[f"{cid}/y_true{b}"], out[f"{cid}/y_pred{b}"] = y_true, y_pred
            if sw is not None:
                out[f"{cid}/sw{b}"] = sw
            metric.update_state(y_true, y_pred, sample_weight=sw)
            batches.append(float(metric.result()))
        out[f"{cid}/results"] = np.asarray(batches)
    return out


def main() -> None:
    os.makedirs(HERE, exist_ok=True)
    np.savez_compressed(os.path.join(HERE, "layers.npz"), **record_layers())
    np.savez_compressed(os.path.join(HERE, "training.npz"), **record_training())
    np.savez_compressed(os.path.join(HERE, "losses.npz"), **record_losses())
    print("wrote", HERE, "with", VERSIONS)


if __name__ == "__main__":
    main()
