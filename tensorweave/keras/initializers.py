"""``tw.keras.initializers``: the initial values of Keras' weights, by class or by name
(``'glorot_uniform'``, ``'zeros'``, ...), with tf_keras 2.x's formulas and defaults.

Values are drawn with `tw.random`: an initializer without a seed follows the global seed
(``tw.random.set_seed`` / ``tw.keras.utils.set_random_seed``) like any unseeded op; one
with a `seed` is a pure function of it (stateless ops), so it gives the same values on
every call, as tf_keras' seeded initializers do."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import tensorweave as tw

from . import backend, utils

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomUniform", "RandomNormal",
           "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeUniform",
           "HeNormal", "LecunUniform", "LecunNormal", "Orthogonal", "Identity", "get",
           "serialize", "deserialize", "compute_fans"]


def _dtype(dtype: Any) -> Any:
    return tw.as_dtype(dtype if dtype is not None else backend.floatx())


def _float_dtype(dtype: Any, who: str) -> Any:
    d = _dtype(dtype)
    if not d.is_floating:
        raise ValueError(f"{who}: expected a float dtype, got {d.name}")
    return d


def _shape(shape: Sequence[int]) -> list[int]:
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise ValueError(f"initializer: shape {dims} has a negative dim")
    return dims


def compute_fans(shape: Sequence[int]) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of `shape` (Keras' rule: a kernel's receptive field
    times its input / output channels)."""
    shape = list(shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """Base class: ``init(shape, dtype=None)`` returns a tensor of initial values."""

    def __call__(self, shape: Sequence[int], dtype: Any = None, **kwargs: Any) -> Any:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments."""
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Initializer:
        """The initializer a config describes."""
        return cls(**config)


class Zeros(Initializer):
    """All zeros."""

    def __call__(self, shape, dtype=None, **kwargs):
        return tw.zeros(_shape(shape), dtype=_dtype(dtype))


class Ones(Initializer):
    """All ones."""

    def __call__(self, shape, dtype=None, **kwargs):
        return tw.ones(_shape(shape), dtype=_dtype(dtype))


class Constant(Initializer):
    """Every value `value` (a scalar, or an array of the weight's shape)."""

    def __init__(self, value: Any = 0) -> None:
        self.value = value

    def __call__(self, shape, dtype=None, **kwargs):
        d = _dtype(dtype)
        value = np.asarray(self.value, dtype=d.np)
        return tw.constant(np.broadcast_to(value, _shape(shape)).copy())

    def get_config(self):
        return {"value": np.asarray(self.value).tolist()}


class _Random(Initializer):
    """An initializer drawing from a distribution with an optional `seed`."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def _seed(self) -> list[int]:
        return [int(self.seed), 0]

    def get_config(self):
        return {"seed": self.seed}


class RandomUniform(_Random):
    """Uniform in ``[minval, maxval)`` (default -0.05, 0.05)."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05,
                 seed: int | None = None) -> None:
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape, dtype=None, **kwargs):
        d = _dtype(dtype)
        if not (d.is_floating or d.is_integer):
            raise ValueError(f"RandomUniform: expected a float or integer dtype, got {d.name}")
        if self.seed is not None:
            return tw.random.stateless_uniform(_shape(shape), self._seed(), self.minval,
                                               self.maxval, dtype=d)
        return tw.random.uniform(_shape(shape), self.minval, self.maxval, dtype=d)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class RandomNormal(_Random):
    """Normal with `mean` and `stddev` (default 0, 0.05)."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=None, **kwargs):
        d = _float_dtype(dtype, "RandomNormal")
        if self.seed is not None:
            return tw.random.stateless_normal(_shape(shape), self._seed(), self.mean,
                                              self.stddev, dtype=d)
        return tw.random.normal(_shape(shape), self.mean, self.stddev, dtype=d)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(RandomNormal):
    """Normal with `mean` and `stddev`, redrawn beyond two standard deviations."""

    def __call__(self, shape, dtype=None, **kwargs):
        d = _float_dtype(dtype, "TruncatedNormal")
        return _truncated(_shape(shape), self.mean, self.stddev, d, self.seed)


def _truncated(shape: list[int], mean: float, stddev: float, dtype: Any,
               seed: int | None) -> Any:
    if seed is not None:
        return tw.random.stateless_truncated_normal(shape, [int(seed), 0], mean, stddev,
                                                    dtype=dtype)
    return tw.random.truncated_normal(shape, mean, stddev, dtype=dtype)


class VarianceScaling(_Random):
    """Values of variance ``scale / n``, n the fan in, fan out or their mean (`mode`),
    from a truncated normal, an untruncated normal or a uniform (`distribution`)."""

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: int | None = None) -> None:
        super().__init__(seed)
        if scale <= 0.0:
            raise ValueError(f"VarianceScaling: scale must be positive, got {scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: mode must be 'fan_in', 'fan_out' or "
                             f"'fan_avg', got {mode!r}")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError(f"VarianceScaling: distribution must be 'uniform', "
                             f"'truncated_normal' or 'untruncated_normal', got "
                             f"{distribution!r}")
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def __call__(self, shape, dtype=None, **kwargs):
        d = _float_dtype(dtype, type(self).__name__)
        shape = _shape(shape)
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "truncated_normal":
            # the standard deviation of a standard normal truncated to (-2, 2)
            stddev = math.sqrt(scale) / 0.87962566103423978
            return _truncated(shape, 0.0, stddev, d, self.seed)
        if self.distribution == "untruncated_normal":
            return RandomNormal(0.0, math.sqrt(scale), self.seed)(shape, d)
        limit = math.sqrt(3.0 * scale)
        return RandomUniform(-limit, limit, self.seed)(shape, d)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


class _Preset(VarianceScaling):
    """A `VarianceScaling` with fixed arguments; its config is the seed only."""

    _preset: tuple[float, str, str] = (1.0, "fan_in", "truncated_normal")

    def __init__(self, seed: int | None = None) -> None:
        scale, mode, distribution = self._preset
        super().__init__(scale, mode, distribution, seed)

    def get_config(self):
        return {"seed": self.seed}


class GlorotUniform(_Preset):
    """Uniform in ``±sqrt(6 / (fan_in + fan_out))``: Keras' default kernel initializer."""

    _preset = (1.0, "fan_avg", "uniform")


class GlorotNormal(_Preset):
    """Truncated normal of stddev ``sqrt(2 / (fan_in + fan_out))``."""

    _preset = (1.0, "fan_avg", "truncated_normal")


class HeUniform(_Preset):
    """Uniform in ``±sqrt(6 / fan_in)``."""

    _preset = (2.0, "fan_in", "uniform")


class HeNormal(_Preset):
    """Truncated normal of stddev ``sqrt(2 / fan_in)``."""

    _preset = (2.0, "fan_in", "truncated_normal")


class LecunUniform(_Preset):
    """Uniform in ``±sqrt(3 / fan_in)``."""

    _preset = (1.0, "fan_in", "uniform")


class LecunNormal(_Preset):
    """Truncated normal of stddev ``sqrt(1 / fan_in)``."""

    _preset = (1.0, "fan_in", "truncated_normal")


class Orthogonal(_Random):
    """An orthogonal matrix (of the weight flattened to 2-D), times `gain`: the Q of the
    QR decomposition of a normal matrix, signs fixed by R's diagonal (Keras' recurrent
    kernel default)."""

    def __init__(self, gain: float = 1.0, seed: int | None = None) -> None:
        super().__init__(seed)
        self.gain = gain

    def __call__(self, shape, dtype=None, **kwargs):
        d = _float_dtype(dtype, "Orthogonal")
        shape = _shape(shape)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: the shape must have at least 2 dims, got {shape}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        flat = (max(rows, cols), min(rows, cols))
        a = np.asarray(RandomNormal(0.0, 1.0, self.seed)(flat, "float64"))
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return tw.constant((self.gain * q).reshape(shape).astype(d.np))

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """`gain` times the identity matrix (2-D weights only)."""

    def __init__(self, gain: float = 1.0) -> None:
        self.gain = gain

    def __call__(self, shape, dtype=None, **kwargs):
        shape = _shape(shape)
        if len(shape) != 2:
            raise ValueError(f"Identity: the shape must be 2-D, got {shape}")
        return tw.constant((self.gain * np.eye(*shape)).astype(_dtype(dtype).np))

    def get_config(self):
        return {"gain": self.gain}


_BY_NAME: dict[str, type[Initializer]] = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "uniform": RandomUniform,
    "random_uniform": RandomUniform, "normal": RandomNormal, "random_normal": RandomNormal,
    "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
    "he_uniform": HeUniform, "he_normal": HeNormal, "lecun_uniform": LecunUniform,
    "lecun_normal": LecunNormal, "orthogonal": Orthogonal, "identity": Identity,
}

# the public Initializer classes, by name (`deserialize`)
_CLASSES: dict[str, type[Initializer]] = {
    name: cls for name, cls in globals().items()
    if name in __all__ and isinstance(cls, type) and issubclass(cls, Initializer)}


def get(identifier: Any) -> Initializer | None:
    """An initializer from a name (``'glorot_uniform'``), a class, an instance, a config
    dict, a callable ``f(shape, dtype)``, or None."""
    if identifier is None or isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, str):
        key = identifier if identifier in _BY_NAME else backend.to_snake_case(identifier)
        cls = _BY_NAME.get(key)
        if cls is None:
            raise ValueError(f"Unknown initializer: {identifier!r}; known: "
                             f"{', '.join(sorted(_BY_NAME))}")
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")


def serialize(initializer: Any) -> Any:
    """``{'class_name': ..., 'config': ...}`` of an initializer."""
    if initializer is None:
        return None
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}


def deserialize(config: Any, custom_objects: dict[str, Any] | None = None) -> Any:
    """The initializer `serialize` described."""
    if config is None or isinstance(config, str):
        return get(config)
    return utils.object_from_config(config, custom_objects, _CLASSES, "initializer",
                                    base=Initializer)
