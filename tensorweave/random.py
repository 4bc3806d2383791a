"""``tw.random``: random tensors and the global seed, with TensorFlow's names."""

from .frontend.ops.random import (
    get_seed,
    normal,
    set_seed,
    truncated_normal,
    uniform,
)
from .frontend.ops.sampled import log_uniform_candidate_sampler, uniform_candidate_sampler

__all__ = ["log_uniform_candidate_sampler", "uniform_candidate_sampler", "get_seed", "normal",
           "set_seed", "truncated_normal", "uniform"]


def __dir__() -> list[str]:
    return sorted(__all__)
