"""The name and config lookups that `tw.keras.losses`, `metrics`, `initializers` and
`regularizers` share (`tw.keras.utils`): round trips, custom objects and errors."""

import pytest

import tensorweave as tw

K = tw.keras


@pytest.mark.parametrize("module, obj", [
    (K.losses, K.losses.Huber(delta=2.0)),
    (K.metrics, K.metrics.Precision(thresholds=0.3)),
    (K.initializers, K.initializers.RandomNormal(0.5, 2.0, seed=3)),
    (K.regularizers, K.regularizers.L1L2(0.1, 0.2)),
])
def test_config_round_trip(module, obj):
    config = module.serialize(obj)
    assert config["class_name"] == type(obj).__name__
    again = module.deserialize(config)
    assert type(again) is type(obj) and again.get_config() == obj.get_config()


@pytest.mark.parametrize("module, name", [(K.losses, "mse"), (K.metrics, "accuracy")])
def test_function_names(module, name):
    fn = module.get(name)
    assert callable(fn) and module.deserialize(module.serialize(fn)) is fn


def test_custom_objects_come_first():
    class MyLoss(K.losses.Loss):
        def call(self, y_true, y_pred):
            return y_pred

    got = K.losses.deserialize({"class_name": "MyLoss", "config": {"name": "mine"}},
                               custom_objects={"MyLoss": MyLoss})
    assert isinstance(got, MyLoss) and got.name == "mine"
    sentinel = object()
    assert K.metrics.deserialize("accuracy", custom_objects={"accuracy": sentinel}) is sentinel


@pytest.mark.parametrize("module, config, message", [
    (K.losses, {"class_name": "Reduction"}, "Unknown loss class 'Reduction'"),
    (K.losses, {"class_name": "mse"}, "Unknown loss class 'mse'"),
    (K.metrics, {"class_name": "Nope"}, "Unknown metric class 'Nope'"),
    (K.initializers, {"class_name": "compute_fans"}, "Unknown initializer class"),
    (K.regularizers, {"class_name": "l2"}, "Unknown regularizer class 'l2'"),
])
def test_unknown_classes(module, config, message):
    with pytest.raises(ValueError, match=message):
        module.deserialize(config)


def test_custom_initializer_must_be_an_initializer():
    with pytest.raises(ValueError, match="Unknown initializer class 'X'"):
        K.initializers.deserialize({"class_name": "X"}, custom_objects={"X": dict})


@pytest.mark.parametrize("module, kind", [(K.losses, "loss function"),
                                          (K.metrics, "metric function")])
def test_unknown_names(module, kind):
    with pytest.raises(ValueError, match=f"Unknown {kind}: 'nope'"):
        module.get("nope")
