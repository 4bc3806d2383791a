"""tw.keras models: the functional API (graph order as tf_keras', dict inputs, shared
layers, errors for graphs the inputs do not determine), Sequential (add, pop, built from
an input shape or on the first call), subclassed models, summary()."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw

keras = tw.keras


def _branching():
    a = keras.Input((3,), name="a")
    b = keras.Input((2,), name="b")
    x1 = keras.layers.Dense(4, name="d1")(a)
    x2 = keras.layers.Dense(4, name="d2")(b)
    x3 = keras.layers.Dense(4, name="d3")(x1)
    c = keras.layers.Concatenate(name="cat")([x3, x2])
    o1 = keras.layers.Dense(1, name="o1")(c)
    o2 = keras.layers.Dense(2, name="o2")(x1)
    return keras.Model([a, b], [o1, o2])


def test_functional_layer_and_weight_order_is_tf_keras():
    """tf_keras 2.21 gives exactly these orders and metric names for this graph."""
    model = _branching()
    assert [layer.name for layer in model.layers] == ["a", "d1", "b", "d3", "d2", "cat",
                                                      "o1", "o2"]
    assert [w.name for w in model.weights] == [
        "d1/kernel:0", "d1/bias:0", "d3/kernel:0", "d3/bias:0", "d2/kernel:0", "d2/bias:0",
        "o1/kernel:0", "o1/bias:0", "o2/kernel:0", "o2/bias:0"]
    assert model.output_names == ["o1", "o2"]
    model.compile("sgd", ["mse", "mse"], metrics=["mae"])
    logs = model.evaluate([np.ones((2, 3)), np.ones((2, 2))],
                          [np.ones((2, 1)), np.ones((2, 2))], verbose=0, return_dict=True)
    assert list(logs) == ["loss", "o1_loss", "o2_loss", "o1_mae", "o2_mae"]


def test_functional_model_computes_its_graph():
    model = _branching()
    xa = np.random.RandomState(0).randn(5, 3).astype(np.float32)
    xb = np.random.RandomState(1).randn(5, 2).astype(np.float32)
    w = {layer.name: layer.get_weights() for layer in model.layers if layer.weights}

    def dense(name, x):
        kernel, bias = w[name]
        return x @ kernel + bias

    x1 = dense("d1", xa)
    o1 = dense("o1", np.concatenate([dense("d3", x1), dense("d2", xb)], axis=1))
    o2 = dense("o2", x1)
    out = model.predict([xa, xb], verbose=0)
    np.testing.assert_allclose(out[0], o1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1], o2, rtol=1e-5, atol=1e-6)
    # inputs by name
    by_name = model({"b": xb, "a": xa})
    np.testing.assert_allclose(np.asarray(by_name[0]), o1, rtol=1e-5, atol=1e-6)


def test_keras_tensor_shapes_come_from_the_layers():
    x = keras.Input((28, 28, 1))
    y = keras.layers.Conv2D(8, 5, strides=2)(x)
    assert tuple(y.shape) == (None, 12, 12, 8)
    z = keras.layers.Flatten()(keras.layers.MaxPooling2D()(y))
    assert tuple(z.shape) == (None, 288) and z.dtype == tw.float32
    seq = keras.layers.LSTM(5, return_sequences=True)(keras.Input((None, 3)))
    assert tuple(seq.shape) == (None, None, 5)
    with pytest.raises(TypeError, match="not supported on a KerasTensor"):
        x + 1


def test_disconnected_and_invalid_graphs_are_errors():
    a = keras.Input((3,), name="a")
    b = keras.Input((3,), name="b")
    out = keras.layers.Add()([a, b])
    with pytest.raises(ValueError, match="Graph disconnected.*'b'"):
        keras.Model(a, out)
    with pytest.raises(ValueError, match="must come from `tw.keras.Input`"):
        keras.Model(keras.layers.Dense(2)(a), out)
    dup = keras.layers.Dense(2, name="same")(keras.layers.Dense(3, name="same")(a))
    with pytest.raises(ValueError, match='"same" is used 2 times'):
        keras.Model(a, dup)


def test_sequential_deferred_build_add_pop():
    model = keras.Sequential()
    model.add(keras.layers.Dense(4, activation="relu"))
    model.add(keras.layers.Dense(2))
    assert not model.built and model.weights == []
    with pytest.raises(ValueError, match="not yet been built"):
        model.summary()
    x = np.ones((3, 5), np.float32)
    y = model(x)
    assert model.built and tuple(y.shape) == (3, 2)
    assert [tuple(w.shape) for w in model.weights] == [(5, 4), (4,), (4, 2), (2,)]
    assert tuple(model.output_shape) == (None, 2)
    model.pop()
    assert len(model.layers) == 1 and tuple(model(x).shape) == (3, 4)
    with pytest.raises(TypeError, match="instance of class Layer"):
        model.add("dense")
    with pytest.raises(ValueError, match="unique names"):
        model.add(keras.layers.Dense(1, name=model.layers[0].name))


def test_sequential_from_input_and_first_layer_shape():
    from_input = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    from_shape = keras.Sequential([keras.layers.Dense(2, input_shape=(4,))])
    for model in (from_input, from_shape):
        assert model.built and [tuple(w.shape) for w in model.weights] == [(4, 2), (2,)]
        assert len(model.layers) == 1     # the InputLayer is not listed, as in Keras


def test_subclassed_model_build_and_layers():
    class Net(keras.Model):
        def __init__(self):
            super().__init__(name="net")
            self.blocks = [keras.layers.Dense(4, activation="relu") for _ in range(2)]
            self.head = keras.layers.Dense(1)

        def call(self, inputs, training=None):
            for block in self.blocks:
                inputs = block(inputs)
            return self.head(inputs)

    net = Net()
    net.build((None, 3))
    assert net.built and len(net.layers) == 3
    assert [tuple(w.shape) for w in net.weights] == [(3, 4), (4,), (4, 4), (4,), (4, 1), (1,)]
    assert net.get_layer(index=2) is net.head
    with pytest.raises(NotImplementedError):
        net.get_config()
    with pytest.raises(NotImplementedError, match="unimplemented `call\\(\\)`"):
        keras.Model()(np.ones((1, 2), np.float32))


def test_layers_appended_to_a_list_attribute_are_trained():
    """Keras tracks layers put into a list after it was set; missing them would leave
    their weights out of training without a word."""
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.blocks = []
            for _ in range(2):
                self.blocks.append(keras.layers.Dense(3))

        def call(self, inputs):
            for block in self.blocks:
                inputs = block(inputs)
            return inputs

    net = Net()
    net.compile(keras.optimizers.SGD(0.1), "mse")
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 3), np.float32)
    net.fit(x, y, verbose=0)
    assert len(net.trainable_weights) == 4 and len(net.layers) == 2
    before = net.get_weights()
    net.fit(x, y, verbose=0)
    assert all(not np.array_equal(a, b) for a, b in zip(before, net.get_weights()))


def test_summary_text_is_tf_keras(capsys):
    """tf_keras 2.21 prints exactly this for the same model."""
    keras.backend.clear_session()
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(4,)),
                              keras.layers.BatchNormalization(), keras.layers.Dense(2)])
    lines = []
    model.summary(print_fn=lines.append)
    expected = """Model: "sequential"
_________________________________________________________________
 Layer (type)                Output Shape              Param #
=================================================================
 dense (Dense)               (None, 3)                 15

 batch_normalization (Batch  (None, 3)                 12
 Normalization)

 dense_1 (Dense)             (None, 2)                 8

=================================================================
Total params: 35 (140.00 Byte)
Trainable params: 29 (116.00 Byte)
Non-trainable params: 6 (24.00 Byte)
_________________________________________________________________"""
    # (tf_keras pads the table's rows with spaces to the line length, 65)
    assert [line.rstrip() for line in lines] == expected.split("\n")
    assert all(len(line) == 65 for line in lines[1:-4])


def test_model_weights_order_and_set_weights():
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(4,)),
                              keras.layers.BatchNormalization(), keras.layers.Dense(2)])
    names = [w.name.split("/")[1] for w in model.weights]
    assert names == ["kernel:0", "bias:0", "gamma:0", "beta:0", "moving_mean:0",
                     "moving_variance:0", "kernel:0", "bias:0"]
    assert len(model.trainable_weights) == 6 and len(model.non_trainable_weights) == 2
    new = [np.full(w.shape, i, np.float32) for i, w in enumerate(model.weights)]
    model.set_weights(new)
    for a, b in zip(model.get_weights(), new):
        np.testing.assert_array_equal(a, b)
    model.trainable = False
    assert model.trainable_weights == [] and len(model.non_trainable_weights) == 8


def test_float64_model_gradient_matches_finite_differences():
    """The gradient a training step uses, in float64, against central differences."""
    keras.backend.set_floatx("float64")
    try:
        model = keras.Sequential([keras.layers.Dense(3, activation="tanh", input_shape=(2,)),
                                  keras.layers.Dense(2, activation="softmax")])
    finally:
        keras.backend.set_floatx("float32")
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    x = np.array([[0.3, -1.2], [1.5, 0.4], [-0.7, 0.9]])
    y = np.array([0, 1, 1])

    def loss():
        return float(np.asarray(loss_fn(y, model(x))))

    with tw.GradientTape() as tape:
        value = loss_fn(y, model(x))
    grads = tape.gradient(value, model.trainable_variables)
    eps = 1e-6
    for var, grad in zip(model.trainable_variables, grads):
        base = var.numpy()
        numeric = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sign in (1, -1):
                shifted = base.copy()
                shifted[idx] += sign * eps
                var.assign(shifted)
                numeric[idx] += sign * loss() / (2 * eps)
            var.assign(base)
        assert var.dtype == tw.float64
        np.testing.assert_allclose(np.asarray(grad), numeric, rtol=1e-6, atol=1e-9)
