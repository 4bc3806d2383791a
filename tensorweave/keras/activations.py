"""``tw.keras.activations``: Keras' activation functions, by function or by name.

`softmax` and `sigmoid` remember the logits each output was computed from (as tf_keras
sets ``output._keras_logits``), so that a cross-entropy loss given those probabilities
with ``from_logits=False`` computes from the logits instead: the same numbers as
tf_keras, and no gradient lost where clipped probabilities saturate."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import tensorweave as tw

__all__ = ["relu", "sigmoid", "softmax", "log_softmax", "tanh", "linear", "elu", "selu",
           "softplus", "softsign", "swish", "silu", "gelu", "exponential", "hard_sigmoid",
           "relu6", "mish", "get", "serialize", "deserialize", "logits_of"]

# id(output) -> (weak reference to the output, the logits it was computed from)
_LOGITS: dict[int, tuple[weakref.ref, Any]] = {}
_LOGITS_LOCK = threading.Lock()


def _remember_logits(output: Any, logits: Any) -> Any:
    key = id(output)

    def forget(_ref: weakref.ref, key: int = key) -> None:
        with _LOGITS_LOCK:
            entry = _LOGITS.get(key)
            if entry is not None and entry[0] is _ref:
                del _LOGITS[key]

    with _LOGITS_LOCK:
        _LOGITS[key] = (weakref.ref(output, forget), logits)
    return output


def logits_of(output: Any) -> Any:
    """The logits `output` was computed from by `softmax` or `sigmoid`, or None."""
    with _LOGITS_LOCK:
        entry = _LOGITS.get(id(output))
    if entry is None or entry[0]() is not output:
        return None
    return entry[1]


def relu(x: Any, alpha: float = 0.0, max_value: float | None = None,
         threshold: float = 0.0) -> Any:
    """``max(x, 0)``; with `alpha`, ``alpha * (x - threshold)`` below `threshold`;
    `max_value` caps it (Keras' ``relu``)."""
    x = tw.convert_to_tensor(x)
    if alpha == 0 and max_value is None and threshold == 0:
        return tw.nn.relu(x)
    if threshold != 0:
        y = tw.where(x > threshold, x, tw.zeros_like(x))
    else:
        y = tw.nn.relu(x)
    if max_value is not None:
        y = tw.minimum(y, tw.cast(max_value, x.dtype))
    if alpha != 0:
        y = y - alpha * tw.nn.relu(threshold - x)
    return y


def sigmoid(x: Any) -> Any:
    """``1 / (1 + exp(-x))``."""
    x = tw.convert_to_tensor(x)
    return _remember_logits(tw.sigmoid(x), x)


def softmax(x: Any, axis: int = -1) -> Any:
    """``exp(x) / sum(exp(x))`` along `axis`."""
    x = tw.convert_to_tensor(x)
    if len(x.shape) <= 1:
        raise ValueError(f"tw.keras.activations.softmax: cannot apply softmax to a tensor "
                         f"that is 1D (shape {list(x.shape)})")
    return _remember_logits(tw.nn.softmax(x, axis=axis), x)


def log_softmax(x: Any, axis: int = -1) -> Any:
    """``x - log(sum(exp(x)))`` along `axis`."""
    return tw.nn.log_softmax(x, axis=axis)


def tanh(x: Any) -> Any:
    """Hyperbolic tangent."""
    return tw.tanh(x)


def linear(x: Any) -> Any:
    """`x` unchanged (``activation=None``)."""
    return x


def elu(x: Any, alpha: float = 1.0) -> Any:
    """``x`` if positive, else ``alpha * (exp(x) - 1)``."""
    y = tw.nn.elu(x)
    return y if alpha == 1.0 else tw.where(tw.convert_to_tensor(x) > 0, y, y * alpha)


def selu(x: Any) -> Any:
    """Scaled exponential linear unit."""
    return tw.nn.selu(x)


def softplus(x: Any) -> Any:
    """``log(exp(x) + 1)``."""
    return tw.nn.softplus(x)


def softsign(x: Any) -> Any:
    """``x / (|x| + 1)``."""
    return tw.nn.softsign(x)


def swish(x: Any) -> Any:
    """``x * sigmoid(x)``."""
    return tw.nn.silu(x)


silu = swish


def gelu(x: Any, approximate: bool = False) -> Any:
    """Gaussian error linear unit (exact unless `approximate`)."""
    return tw.nn.gelu(x, approximate=approximate)


def exponential(x: Any) -> Any:
    """``exp(x)``."""
    return tw.exp(x)


def hard_sigmoid(x: Any) -> Any:
    """``clip(0.2 * x + 0.5, 0, 1)`` (tf_keras 2.x's piecewise-linear sigmoid)."""
    return tw.clip_by_value(tw.convert_to_tensor(x) * 0.2 + 0.5, 0.0, 1.0)


def relu6(x: Any) -> Any:
    """``min(max(x, 0), 6)``."""
    return tw.nn.relu6(x)


def mish(x: Any) -> Any:
    """``x * tanh(softplus(x))``."""
    return x * tw.tanh(tw.nn.softplus(x))


_BY_NAME: dict[str, Callable[..., Any]] = {
    "relu": relu, "sigmoid": sigmoid, "softmax": softmax, "log_softmax": log_softmax,
    "tanh": tanh, "linear": linear, "elu": elu, "selu": selu, "softplus": softplus,
    "softsign": softsign, "swish": swish, "silu": silu, "gelu": gelu,
    "exponential": exponential, "hard_sigmoid": hard_sigmoid, "relu6": relu6, "mish": mish,
}


def get(identifier: Any) -> Callable[..., Any]:
    """The activation function for a name (``'relu'``), a function, or None (linear)."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is None:
            from .engine.saving import _custom_objects  # a model being loaded
            fn = _custom_objects.current.get(identifier)
        if fn is None:
            raise ValueError(f"Unknown activation function: {identifier!r}; known: "
                             f"{', '.join(sorted(_BY_NAME))}")
        return fn
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret activation function identifier: {identifier!r}")


def serialize(fn: Callable[..., Any]) -> Any:
    """The name of a built-in activation (for a layer's config), else the function."""
    for name, f in _BY_NAME.items():
        if f is fn:
            return name
    return getattr(fn, "__name__", fn)


def deserialize(name: Any, custom_objects: dict[str, Any] | None = None) -> Callable[..., Any]:
    """The activation a config names (`custom_objects` first)."""
    if isinstance(name, str) and custom_objects and name in custom_objects:
        return custom_objects[name]
    return get(name)
