"""``tf.nn`` activations of TensorFlow 1 that tensorweave builds from several ops, named
as TensorFlow names its one op: ``tf.nn.elu(x)`` is ``Elu`` (its last op, a Select, was),
so a layer's output is ``dense/Elu:0`` as a TF1 program fetches it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ... import nn as _nn
from .graph import in_default_graph

# tf.nn function -> TensorFlow's op type, its default name (TF 2.21, graph mode)
TF_NAMES = {"elu": "Elu", "relu6": "Relu6", "leaky_relu": "LeakyRelu", "softplus": "Softplus",
            "selu": "Selu", "softsign": "Softsign"}


def _named(fn: Callable, default: str) -> Callable:
    @functools.wraps(fn)
    def activation(features: Any, *args: Any, name: str | None = None, **kwargs: Any) -> Any:
        return fn(features, *args, name=name or default, **kwargs)

    return in_default_graph(activation)


def v1_activations() -> dict[str, Callable]:
    """The ``tf.nn`` activations named as TensorFlow 1's (those tensorweave has)."""
    return {k: _named(getattr(_nn, k), v) for k, v in TF_NAMES.items() if hasattr(_nn, k)}


__all__ = ["TF_NAMES", "v1_activations"]
