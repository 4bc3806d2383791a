"""``tw.keras.utils``: `to_categorical` and `set_random_seed`."""

from __future__ import annotations

import random
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
