"""``tw.keras.utils``: `to_categorical` and `set_random_seed`; and the name and config
lookups that `tw.keras.losses`, `metrics`, `initializers`, `regularizers` and
`optimizers` share (`object_from_name`, `serialize_object`, `deserialize_object`,
`object_from_config`)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

import tensorweave as tw

__all__ = ["to_categorical", "set_random_seed"]


def to_categorical(y: Any, num_classes: int | None = None, dtype: str = "float32") -> np.ndarray:
    """Integer class labels as one-hot rows (a trailing dim of 1 is dropped first)."""
    y = np.asarray(y, dtype="int64")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.reshape(-1)
    if y.size and y.min() < 0:
        raise ValueError(f"to_categorical: class labels must be non-negative, got {y.min()}")
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    elif y.size and y.max() >= num_classes:
        raise ValueError(f"to_categorical: label {int(y.max())} is not below num_classes="
                         f"{num_classes}")
    out = np.zeros((y.shape[0], num_classes), dtype=dtype)
    out[np.arange(y.shape[0]), y] = 1
    return out.reshape(shape + (num_classes,))


def set_random_seed(seed: int) -> None:
    """Seed Python's `random`, NumPy's global generator (shuffling in `fit`) and
    tensorweave's global seed (initializers, dropout)."""
    if not isinstance(seed, int):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed} "
                         f"(of type {type(seed)})")
    random.seed(seed)
    np.random.seed(seed)
    tw.random.set_seed(seed)


def object_from_name(name: str, functions: dict[str, Callable[..., Any]],
                     classes: dict[str, type], kind: str, module: str) -> Any:
    """The function `name` in `functions`, else a new instance of the class `name` in
    `classes` (made with no arguments); `kind` and `module` name them in the error."""
    if name in functions:
        return functions[name]
    if name in classes:
        return classes[name]()
    raise ValueError(f"Unknown {kind}: {name!r}. Please ensure you are using a "
                     f"`tw.keras.{module}` name or a callable.")


def serialize_object(obj: Any, base: type, functions: dict[str, Callable[..., Any]]) -> Any:
    """``{'class_name', 'config'}`` of a `base` instance; the name a built-in function
    has in `functions` (the first of its aliases); else the callable's ``__name__``."""
    if isinstance(obj, base):
        return {"class_name": type(obj).__name__, "config": obj.get_config()}
    for name, fn in functions.items():
        if fn is obj:
            return name
    return getattr(obj, "__name__", obj)


def deserialize_object(config: Any, custom_objects: dict[str, Any] | None,
                       get: Callable[[Any], Any], classes: dict[str, Any], kind: str) -> Any:
    """What `serialize_object` gave back: a name (from `custom_objects` first, else
    `get`'s lookup) or a config dict (`object_from_config`)."""
    if isinstance(config, str):
        if custom_objects and config in custom_objects:
            return custom_objects[config]
        return get(config)
    return object_from_config(config, custom_objects, classes, kind)


def object_from_config(config: dict[str, Any], custom_objects: dict[str, Any] | None,
                       classes: dict[str, Any], kind: str, base: type | None = None) -> Any:
    """The object a ``{'class_name', 'config'}`` dict describes: its class from
    `custom_objects` first, then `classes`, made by its ``from_config`` (a class without
    one: called with the config's entries). With `base`, the class must subclass it."""
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or classes.get(name)
    if cls is None or (base is not None and not (isinstance(cls, type) and
                                                 issubclass(cls, base))):
        raise ValueError(f"Unknown {kind} class {name!r}")
    from_config = getattr(cls, "from_config", None)
    args = config.get("config", {})
    return from_config(args) if from_config is not None else cls(**args)
