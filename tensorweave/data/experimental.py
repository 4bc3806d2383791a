"""``tf.data.experimental``: the names TensorFlow 2.0-2.3 programs use from it."""

from __future__ import annotations

from typing import Any

from .dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset


def cardinality(dataset: Dataset) -> Any:
    """``dataset.cardinality()`` (an int64 tensor; -1 infinite, -2 unknown)."""
    return dataset.cardinality()


__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality"]


def __dir__() -> list[str]:
    return sorted(__all__)
