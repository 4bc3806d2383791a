"""Compatibility layers; ``tensorweave.compat.v1`` is TensorFlow 1's API."""

import importlib as _importlib

__all__ = ["v1"]


def __getattr__(name: str):
    if name == "v1":  # imported on first use, like tf.compat.v1
        return _importlib.import_module(".v1", __name__)
    raise AttributeError(f"module 'tensorweave.compat' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(__all__)
