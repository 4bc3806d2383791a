"""``tw.random``: random tensors, the global seed, stateless (seeded) functions and
`Generator`, with TensorFlow's names."""

from .frontend.ops.random import (
    Generator,
    categorical,
    get_global_generator,
    get_seed,
    normal,
    set_global_generator,
    set_seed,
    shuffle,
    stateless_categorical,
    stateless_normal,
    stateless_truncated_normal,
    stateless_uniform,
    truncated_normal,
    uniform,
)
from .frontend.ops.random_distributions import gamma, poisson, stateless_gamma, stateless_poisson
from .frontend.ops.sampled import log_uniform_candidate_sampler, uniform_candidate_sampler

__all__ = ["log_uniform_candidate_sampler", "uniform_candidate_sampler", "get_seed", "normal",
           "set_seed", "truncated_normal", "uniform", "categorical", "shuffle",
           "stateless_uniform", "stateless_normal", "stateless_truncated_normal",
           "stateless_categorical", "Generator", "get_global_generator",
           "set_global_generator", "gamma", "poisson", "stateless_gamma", "stateless_poisson"]


def __dir__() -> list[str]:
    return sorted(__all__)
