"""``tw.keras``: the Keras API of TensorFlow 2 (tf.keras / tf_keras 2.x semantics) on
tensorweave.

    import tensorweave as tw
    keras = tw.keras
    model = keras.Sequential([keras.layers.Dense(128, activation="relu", input_shape=(784,)),
                              keras.layers.Dense(10)])
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=32, epochs=5, validation_split=0.1)

Layers are `tw.Module`s holding `tw.Variable`s; `fit` runs each training step as one
``tw.compile``d function; weights save as tensorweave checkpoints. See docs/keras.md.
"""

from . import (
    activations,
    backend,
    callbacks,
    initializers,
    layers,
    losses,
    metrics,
    models,
    optimizers,
    regularizers,
    utils,
)
from .engine.input_layer import Input
from .engine.sequential import Sequential
from .engine.training import Model

__all__ = ["Model", "Sequential", "Input", "layers", "models", "losses", "metrics",
           "optimizers", "callbacks", "initializers", "regularizers", "activations",
           "backend", "utils"]


def __dir__() -> list[str]:
    return sorted(__all__)
