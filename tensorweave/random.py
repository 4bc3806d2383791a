"""``tw.random``: random tensors and the global seed, with TensorFlow's names."""

from .frontend.ops.random import (
    get_seed,
    normal,
    set_seed,
    truncated_normal,
    uniform,
)

__all__ = ["get_seed", "normal", "set_seed", "truncated_normal", "uniform"]


def __dir__() -> list[str]:
    return sorted(__all__)
