"""``tw.keras.backend``: Keras' global settings and small helpers: the float type, the
fuzz factor, unique layer names, the call context that carries the `training` flag
from an outer layer to the layers it calls, and `clear_session`."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..compiler.dtypes import DType, as_dtype
from ..frontend.context import building
from ..frontend.variables import Variable

__all__ = ["floatx", "set_floatx", "epsilon", "set_epsilon", "clear_session", "get_uid",
           "unique_object_name", "to_snake_case", "int_shape", "get_value", "set_value", "reshape",
           "eval_scope"]

_FLOATX = "float32"
_EPSILON = 1e-7
_lock = threading.Lock()
_uids: dict[str, int] = {}


def floatx() -> str:
    """The default float type of layers' weights and inputs (``'float32'``)."""
    return _FLOATX


def set_floatx(value: str) -> None:
    """Set the default float type: ``'float16'``, ``'bfloat16'``, ``'float32'`` or
    ``'float64'``."""
    global _FLOATX
    if value not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(f"tw.keras.backend.set_floatx: unknown float type {value!r}: "
                         f"expected 'float16', 'bfloat16', 'float32' or 'float64'")
    _FLOATX = value


def floatx_dtype() -> DType:
    """`floatx` as a tensorweave dtype."""
    return as_dtype(_FLOATX)


def epsilon() -> float:
    """The fuzz factor of Keras' losses and metrics (1e-7)."""
    return _EPSILON


def set_epsilon(value: float) -> None:
    """Set the fuzz factor."""
    global _EPSILON
    _EPSILON = float(value)


def get_uid(prefix: str = "") -> int:
    """1, 2, 3, ... per `prefix` (Keras' ``backend.get_uid``): numbers of default names."""
    with _lock:
        _uids[prefix] = _uids.get(prefix, 0) + 1
        return _uids[prefix]


def unique_object_name(base: str, zero_based: bool = True) -> str:
    """``dense``, ``dense_1``, ``dense_2``... (``zero_based``) or ``input_1``, ``input_2``
    (not): Keras' default layer names, counted since the last `clear_session`."""
    n = get_uid(base)
    if zero_based:
        return base if n == 1 else f"{base}_{n - 1}"
    return f"{base}_{n}"


def clear_session() -> None:
    """Restart the default-name counters (the next Dense is ``dense`` again)."""
    with _lock:
        _uids.clear()


def to_snake_case(name: str) -> str:
    """Keras' default name of a class: ``Conv2D`` -> ``conv2d``, ``BatchNormalization`` ->
    ``batch_normalization``, ``LSTM`` -> ``lstm`` (tf_keras' ``to_snake_case``)."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    insecure = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return insecure if insecure[0] != "_" else "private" + insecure


def int_shape(x: Any) -> tuple[int | None, ...]:
    """The static shape of a tensor, variable, Keras tensor or array, as a tuple."""
    return tuple(x.shape)


def reshape(x: Any, dims: Any, who: str) -> Any:
    """``tw.reshape(x, dims)`` for static `dims` in which one dim may be None (unknown
    until run time, e.g. the batch): it becomes -1. tensorweave's reshape takes a static
    shape; more than one unknown dim is an error naming `who`."""
    import tensorweave as tw
    dims = list(dims)
    unknown = [i for i, d in enumerate(dims) if d is None or d == -1]
    if len(unknown) > 1:
        raise ValueError(f"{who}: cannot reshape to {tuple(dims)}: tensorweave needs every "
                         f"dim but one known when the graph is built")
    return tw.reshape(x, [-1 if i in unknown else int(d) for i, d in enumerate(dims)])


def get_value(x: Any) -> Any:
    """The value of a variable or tensor as NumPy (a Python number stays one)."""
    if isinstance(x, (int, float)):
        return x
    return np.asarray(x)


def set_value(x: Variable, value: Any) -> None:
    """Assign `value` to variable `x` (e.g. an optimizer's learning rate)."""
    if not isinstance(x, Variable):
        raise TypeError(f"tw.keras.backend.set_value: expected a variable, got "
                        f"{type(x).__name__}")
    x.assign(np.asarray(value, dtype=x.dtype.np), read_value=False)


# -- the call context ------------------------------------------------------------------
# Keras passes `training` down: a layer called inside another layer's call without its
# own `training` argument takes the outer call's value.
_context = threading.local()


def _frames() -> list[dict[str, Any]]:
    frames = getattr(_context, "frames", None)
    if frames is None:
        frames = _context.frames = []
    return frames


def current_training() -> bool | None:
    """The `training` value of the innermost layer call running now (None: none set)."""
    for frame in reversed(_frames()):
        if frame["training"] is not None:
            return frame["training"]
    return None


def in_call() -> bool:
    """Whether a layer's call is running (on this thread)."""
    return bool(_frames())


@contextlib.contextmanager
def call_context(training: bool | None) -> Iterator[None]:
    """The block runs as a layer call with this `training` value."""
    frames = _frames()
    frames.append({"training": training})
    try:
        yield
    finally:
        frames.pop()


@contextlib.contextmanager
def eval_scope() -> Iterator[None]:
    """Run the block eagerly, outside any graph being traced: TensorFlow's
    ``init_scope``. Layers make their weights and metrics their state in it, so a layer
    first called while a ``tw.compile`` step is traced (Keras' "build on first call")
    makes them once, as variables that live on, not as ops of the trace."""
    with building(None):
        yield
