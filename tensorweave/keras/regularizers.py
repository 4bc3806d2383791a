"""``tw.keras.regularizers``: penalties on weights (or a layer's activity) that Keras
adds to the training loss: ``kernel_regularizer=tw.keras.regularizers.L2(1e-4)`` or
``'l2'`` (factor 0.01, tf_keras' default)."""

from __future__ import annotations

from typing import Any

import tensorweave as tw

from . import utils

__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1", "l2", "l1_l2", "get", "serialize",
           "deserialize"]


class Regularizer:
    """Base class: ``reg(weight)`` is a scalar penalty."""

    def __call__(self, x: Any) -> Any:
        return tw.constant(0.0)

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments."""
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Regularizer:
        """The regularizer a config describes."""
        return cls(**config)


def _factor(value: Any, what: str) -> float:
    if value is None:
        return 0.0
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: the factor must be a number, got {value!r}") from None
    if value != value or value < 0:
        raise ValueError(f"{what}: the factor must be a non-negative number, got {value}")
    return value


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x**2)``."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0) -> None:
        self.l1 = _factor(l1, "L1L2")
        self.l2 = _factor(l2, "L1L2")

    def __call__(self, x):
        x = tw.convert_to_tensor(x)
        total = tw.constant(0.0, x.dtype)
        if self.l1:
            total = total + self.l1 * tw.reduce_sum(tw.abs(x))
        if self.l2:
            total = total + self.l2 * tw.reduce_sum(tw.square(x))
        return total

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(Regularizer):
    """``l1 * sum(|x|)`` (default 0.01)."""

    def __init__(self, l1: float = 0.01) -> None:
        self.l1 = _factor(l1, "L1")

    def __call__(self, x):
        return self.l1 * tw.reduce_sum(tw.abs(x))

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    """``l2 * sum(x**2)`` (default 0.01)."""

    def __init__(self, l2: float = 0.01) -> None:
        self.l2 = _factor(l2, "L2")

    def __call__(self, x):
        return self.l2 * tw.reduce_sum(tw.square(x))

    def get_config(self):
        return {"l2": self.l2}


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> L1L2:
    """`L1L2` with both factors (default 0.01 each)."""
    return L1L2(l1, l2)


l1 = L1
l2 = L2

_BY_NAME = {"l1": L1, "l2": L2, "l1_l2": l1_l2, "L1": L1, "L2": L2, "L1L2": L1L2}


def get(identifier: Any) -> Any:
    """A regularizer from a name (``'l2'``), an instance, a config dict, a callable, or
    None."""
    if identifier is None or isinstance(identifier, Regularizer):
        return identifier
    if isinstance(identifier, str):
        make = _BY_NAME.get(identifier)
        if make is None:
            raise ValueError(f"Unknown regularizer: {identifier!r}; known: l1, l2, l1_l2")
        return make()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}")


def serialize(regularizer: Any) -> Any:
    """``{'class_name': ..., 'config': ...}`` of a regularizer."""
    if regularizer is None:
        return None
    return {"class_name": type(regularizer).__name__, "config": regularizer.get_config()}


def deserialize(config: Any, custom_objects: dict[str, Any] | None = None) -> Any:
    """The regularizer `serialize` described."""
    if config is None or isinstance(config, str):
        return get(config)
    return utils.object_from_config(config, custom_objects,
                                    {"L1": L1, "L2": L2, "L1L2": L1L2}, "regularizer")
