"""tw.keras saving: weights (and optimizer state) as tensorweave checkpoints, loaded into
built or not yet built models; whole models as config + weights."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tensorweave as tw

keras = tw.keras


def _mlp(name=None):
    return keras.Sequential([keras.layers.Dense(6, activation="relu", input_shape=(4,)),
                             keras.layers.BatchNormalization(),
                             keras.layers.Dense(3)], name=name)


def _data():
    rng = np.random.RandomState(0)
    return rng.randn(32, 4).astype(np.float32), rng.randint(0, 3, 32)


def _compiled(model):
    model.compile(keras.optimizers.Adam(0.01),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def test_weights_round_trip_and_training_continues_identically(tmp_path):
    x, y = _data()
    model = _compiled(_mlp())
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    path = str(tmp_path / "ckpt" / "weights")
    model.save_weights(path)
    assert os.path.exists(path + ".safetensors")
    after_save = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    final = model.get_weights()

    other = _compiled(_mlp())
    status = other.load_weights(path)
    # the Adam moments and step count land when the first step creates them
    resumed = other.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    assert status.unused == []
    np.testing.assert_allclose(resumed["loss"], after_save["loss"], rtol=1e-6)
    for a, b in zip(other.get_weights(), final):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_weights_load_into_a_model_built_later(tmp_path):
    x, _ = _data()
    model = _mlp()
    expected = model.predict(x, verbose=0)
    path = str(tmp_path / "w")
    model.save_weights(path)
    deferred = keras.Sequential([keras.layers.Dense(6, activation="relu"),
                                 keras.layers.BatchNormalization(),
                                 keras.layers.Dense(3)])
    deferred.load_weights(path)            # nothing built yet: values wait for the layers
    np.testing.assert_allclose(deferred.predict(x, verbose=0), expected, rtol=1e-6)


def test_subclassed_model_weights_by_attribute(tmp_path):
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = keras.layers.Dense(5, activation="tanh")
            self.out = keras.layers.Dense(2)

        def call(self, inputs):
            return self.out(self.hidden(inputs))

    x, _ = _data()
    net = Net()
    expected = np.asarray(net(x))
    net.save_weights(str(tmp_path / "net"))
    fresh = Net()
    fresh.load_weights(str(tmp_path / "net"))
    np.testing.assert_allclose(np.asarray(fresh(x)), expected, rtol=1e-6)


def test_loading_into_another_structure_is_an_error(tmp_path):
    model = _mlp()
    model.save_weights(str(tmp_path / "w"))
    wider = keras.Sequential([keras.layers.Dense(7, activation="relu", input_shape=(4,)),
                              keras.layers.BatchNormalization(),
                              keras.layers.Dense(3)])
    with pytest.raises(ValueError, match=r"holds .*kernel as f32\[4, ?6\]"):
        wider.load_weights(str(tmp_path / "w"))
    deeper = keras.Sequential([keras.layers.Dense(6, input_shape=(4,)),
                               keras.layers.BatchNormalization(),
                               keras.layers.Dense(3), keras.layers.Dense(2)])
    with pytest.raises(tw.errors.NotFoundError, match="lacks"):
        deeper.load_weights(str(tmp_path / "w"))


def test_hdf5_paths_are_refused(tmp_path):
    model = _mlp()
    with pytest.raises(ValueError, match="not HDF5"):
        model.save_weights(str(tmp_path / "w.h5"))
    with pytest.raises(ValueError, match="not HDF5"):
        model.save(str(tmp_path / "m.keras"))


def test_save_and_load_model(tmp_path):
    x, y = _data()
    model = _compiled(_mlp(name="saved_mlp"))
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    path = str(tmp_path / "model")
    model.save(path)
    again = model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0).history
    loaded = keras.models.load_model(path)
    assert loaded.name == "saved_mlp" and isinstance(loaded, keras.Sequential)
    assert [type(layer).__name__ for layer in loaded.layers] == [
        "Dense", "BatchNormalization", "Dense"]
    assert isinstance(loaded.optimizer, keras.optimizers.Adam)
    np.testing.assert_allclose(
        loaded.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0).history["loss"],
        again["loss"], rtol=1e-6)


def test_functional_model_config_round_trip(tmp_path):
    a = keras.Input((3,), name="a")
    b = keras.Input((2,), name="b")
    shared = keras.layers.Dense(4, name="shared")   # one layer, two calls
    h = keras.layers.Concatenate(name="cat")([shared(keras.layers.Dense(4)(a)),
                                              shared(keras.layers.Dense(4)(b))])
    out = keras.layers.Dense(1, activation="sigmoid", name="out")(h)
    model = keras.Model([a, b], out, name="two_in")
    xa = np.random.RandomState(1).randn(5, 3).astype(np.float32)
    xb = np.random.RandomState(2).randn(5, 2).astype(np.float32)
    with pytest.raises(ValueError, match='Input 0 of layer "shared"'):
        shared(keras.layers.Concatenate()([a, b]))    # 5-vectors: built for 4
    model.save(str(tmp_path / "m"))
    loaded = keras.models.load_model(str(tmp_path / "m"))
    assert [layer.name for layer in loaded.layers] == [layer.name for layer in model.layers]
    np.testing.assert_allclose(loaded.predict([xa, xb], verbose=0),
                               model.predict([xa, xb], verbose=0), rtol=1e-6)
    clone = keras.models.clone_model(model)
    assert clone.get_config() == model.get_config()
    assert not np.allclose(clone.predict([xa, xb], verbose=0),
                           model.predict([xa, xb], verbose=0))


def test_tw_checkpoint_of_a_keras_model(tmp_path):
    """A Keras model is a tw.Module: tw.train.Checkpoint saves and restores it too."""
    model = _mlp()
    x, _ = _data()
    expected = model.predict(x, verbose=0)
    ckpt = tw.train.Checkpoint(model=model)
    path = ckpt.save(str(tmp_path / "ck"))
    for w in model.weights:
        w.assign(np.zeros(w.shape, np.float32))
    ckpt.restore(path)
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-6)
