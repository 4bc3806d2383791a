"""TensorFlow 1's variable initializers (``tf.zeros_initializer()``, ...).

An initializer is called as ``init(shape, dtype=None, partition_info=None)`` and returns
the initial value of a variable (or of one shard of a partitioned variable). With
`partition_info` (the full shape and this shard's offset), Glorot scaling uses the full
variable's fans, and `constant_initializer` slices a value that has the full shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

import tensorweave as _tw

from ...compiler.dtypes import as_dtype, float32
from ...frontend.ops import random as _random
from .graph import (
    global_variables_initializer,
    local_variables_initializer,
    variables_initializer,
)


@dataclass(frozen=True)
class PartitionInfo:
    """Where a shard sits in its partitioned variable: the full shape and its offset
    (one entry per dimension)."""

    full_shape: tuple
    var_offset: tuple


class Initializer:
    """Base class: `dtype` is the default dtype of the values made."""

    dtype: Any = float32

    def __call__(self, shape: Any, dtype: Any = None, partition_info: PartitionInfo | None = None):
        raise NotImplementedError

    def _dtype(self, dtype: Any) -> Any:
        return as_dtype(dtype if dtype is not None else self.dtype)


class zeros_initializer(Initializer):  # noqa: N801 (TensorFlow's name)
    """Zeros."""

    def __init__(self, dtype: Any = float32) -> None:
        self.dtype = dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return _tw.zeros(list(shape), self._dtype(dtype))


class ones_initializer(Initializer):  # noqa: N801
    """Ones."""

    def __init__(self, dtype: Any = float32) -> None:
        self.dtype = dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return _tw.ones(list(shape), self._dtype(dtype))


class constant_initializer(Initializer):  # noqa: N801
    """A scalar broadcast to the shape, a value of the variable's shape, or (for a shard
    of a partitioned variable) a value of the full shape, sliced to the shard. Fewer
    values than the shape holds are completed with the last one, as in TensorFlow 1;
    more are an error."""

    def __init__(self, value: Any = 0, dtype: Any = float32, verify_shape: bool = False) -> None:
        self.value = np.asarray(value)
        self.dtype = dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        d = self._dtype(dtype)
        shape = tuple(shape)
        value = self.value
        if partition_info is not None and value.shape == tuple(partition_info.full_shape) \
                and value.shape != shape:
            index = tuple(slice(o, o + n) for o, n in zip(partition_info.var_offset, shape))
            value = value[index]
        if value.size == 1:
            value = np.full(shape, value.reshape(()))
        elif 0 < value.size < math.prod(shape):
            # TensorFlow 1 fills the rest with the last value ([1, 2] for [2, 2]: 1 2 2 2)
            flat = value.reshape(-1)
            value = np.concatenate([flat, np.repeat(flat[-1:], math.prod(shape) - flat.size)])
        if value.size != math.prod(shape):
            raise ValueError(f"constant_initializer: a value of shape {self.value.shape} "
                             f"cannot initialize a variable of shape {list(shape)}")
        value = value.reshape(shape)
        cast = value.astype(d.np)
        if cast.dtype.kind in "iu" and value.dtype.kind in "fc" \
                and not np.array_equal(cast, value):
            # (TensorFlow refuses any float for an integer variable; truncating is wrong)
            raise TypeError(f"constant_initializer: expected {cast.dtype.name}, got the "
                            f"non-integral value(s) {value[cast != value].ravel()[:3].tolist()}")
        return _tw.constant(cast)


class random_uniform_initializer(Initializer):  # noqa: N801
    """Uniform values in ``[minval, maxval)``."""

    def __init__(self, minval: float = 0.0, maxval: float = 1.0, seed: int | None = None,
                 dtype: Any = float32) -> None:
        self.minval, self.maxval, self.seed, self.dtype = minval, maxval, seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return _random.uniform(list(shape), self.minval, self.maxval, self._dtype(dtype),
                               seed=self.seed)


class random_normal_initializer(Initializer):  # noqa: N801
    """Normally distributed values."""

    def __init__(self, mean: float = 0.0, stddev: float = 1.0, seed: int | None = None,
                 dtype: Any = float32) -> None:
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return _random.normal(list(shape), self.mean, self.stddev, self._dtype(dtype),
                              seed=self.seed)


class truncated_normal_initializer(random_normal_initializer):  # noqa: N801
    """Normal values restricted to ``mean ± 2 * stddev``."""

    def __call__(self, shape, dtype=None, partition_info=None):
        return _random.truncated_normal(list(shape), self.mean, self.stddev,
                                        self._dtype(dtype), seed=self.seed)


def compute_fans(shape: Any) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight shape, as TensorFlow's ``_compute_fans``: a
    scalar has 1 and 1, a vector its length twice, a matrix ``[in, out]``, and a
    convolution kernel ``[..., in, out]`` both times its receptive field (the product of
    the leading dims)."""
    shape = tuple(int(d) for d in shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


# the standard deviation of a unit normal truncated to [-2, 2]
# (scipy.stats.truncnorm.std(a=-2, b=2)): a truncated normal is widened by it
_TRUNCATED_STD = 0.87962566103423978


def _float_dtype(who: str, dtype: Any) -> Any:
    d = as_dtype(dtype)
    if not d.is_floating:
        raise TypeError(f"{who}: expected a floating-point dtype, got {d.ir_name}")
    return d


class variance_scaling_initializer(Initializer):  # noqa: N801
    """Values whose variance is ``scale / n`` (``tf.variance_scaling_initializer``):
    `n` is the fan in, the fan out or their mean (`mode`) of the whole variable (of the
    full shape for a shard of a partitioned variable), at least 1. `distribution`:
    ``"truncated_normal"`` (also ``"normal"``, TensorFlow 1's alias) draws a normal
    truncated to two standard deviations with its standard deviation widened so that
    the result has that variance, ``"untruncated_normal"`` a normal, ``"uniform"``
    values in ``±sqrt(3 * scale / n)``."""

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: int | None = None,
                 dtype: Any = float32) -> None:
        if scale <= 0.0:
            raise ValueError(f"variance_scaling_initializer: scale must be a positive "
                             f"float, got {scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"variance_scaling_initializer: mode must be 'fan_in', "
                             f"'fan_out' or 'fan_avg', got {mode!r}")
        distribution = distribution.lower()
        if distribution not in ("normal", "uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError(f"variance_scaling_initializer: distribution must be "
                             f"'truncated_normal', 'untruncated_normal', 'uniform' or "
                             f"'normal', got {distribution!r}")
        self.scale, self.mode, self.distribution = scale, mode, distribution
        self.seed, self.dtype = seed, _float_dtype("variance_scaling_initializer", dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        d = _float_dtype(type(self).__name__, self._dtype(dtype))
        full = partition_info.full_shape if partition_info is not None else shape
        fan_in, fan_out = compute_fans(full)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            return _random.truncated_normal(list(shape), 0.0, math.sqrt(scale) / _TRUNCATED_STD,
                                            d, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return _random.normal(list(shape), 0.0, math.sqrt(scale), d, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return _random.uniform(list(shape), -limit, limit, d, seed=self.seed)


class glorot_uniform_initializer(variance_scaling_initializer):  # noqa: N801
    """Uniform in ``±sqrt(6 / (fan_in + fan_out))``, the fans of the whole variable
    (``tf.get_variable``'s default for floating-point variables)."""

    def __init__(self, seed: int | None = None, dtype: Any = float32) -> None:
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class glorot_normal_initializer(variance_scaling_initializer):  # noqa: N801
    """A truncated normal of variance ``2 / (fan_in + fan_out)``."""

    def __init__(self, seed: int | None = None, dtype: Any = float32) -> None:
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)


def he_normal(seed: int | None = None) -> variance_scaling_initializer:
    """A truncated normal of variance ``2 / fan_in``."""
    return variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed: int | None = None) -> variance_scaling_initializer:
    """Uniform in ``±sqrt(6 / fan_in)``."""
    return variance_scaling_initializer(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed: int | None = None) -> variance_scaling_initializer:
    """A truncated normal of variance ``1 / fan_in``."""
    return variance_scaling_initializer(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed: int | None = None) -> variance_scaling_initializer:
    """Uniform in ``±sqrt(3 / fan_in)``."""
    return variance_scaling_initializer(1.0, "fan_in", "uniform", seed)


class uniform_unit_scaling_initializer(Initializer):  # noqa: N801
    """Uniform in ``±factor * sqrt(3 / input_size)``, `input_size` the product of all
    dims but the last of the whole variable (TensorFlow 1's deprecated initializer)."""

    def __init__(self, factor: float = 1.0, seed: int | None = None,
                 dtype: Any = float32) -> None:
        self.factor, self.seed = factor, seed
        self.dtype = _float_dtype("uniform_unit_scaling_initializer", dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        d = _float_dtype(type(self).__name__, self._dtype(dtype))
        full = partition_info.full_shape if partition_info is not None else shape
        input_size = max(1.0, float(math.prod(int(x) for x in tuple(full)[:-1])))
        limit = math.sqrt(3.0 / input_size) * self.factor
        return _random.uniform(list(shape), -limit, limit, d, seed=self.seed)


class orthogonal_initializer(Initializer):  # noqa: N801
    """`gain` times a random orthogonal matrix (TensorFlow's recipe: the Q of the QR
    decomposition of a normal matrix, its columns' signs fixed by R's diagonal so that
    Q is uniform over orthogonal matrices), made for the shape flattened to
    ``[prod(shape[:-1]), shape[-1]]``: orthonormal columns, or rows when there are more
    columns than rows. Each shard of a partitioned variable is made on its own, as in
    TensorFlow."""

    def __init__(self, gain: float = 1.0, seed: int | None = None, dtype: Any = float32) -> None:
        self.gain, self.seed = gain, seed
        self.dtype = _float_dtype("orthogonal_initializer", dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        d = _float_dtype(type(self).__name__, self._dtype(dtype))
        shape = [int(x) for x in shape]
        if len(shape) < 2:
            raise ValueError(f"orthogonal_initializer: the shape must be at least "
                             f"two-dimensional, got {shape}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        flat = (cols, rows) if rows < cols else (rows, cols)
        q, r = _tw.linalg.qr(_random.normal(list(flat), 0.0, 1.0, d, seed=self.seed))
        q = q * _tw.sign(_tw.linalg.diag_part(r))
        if rows < cols:
            q = _tw.transpose(q)
        return self.gain * _tw.reshape(q, shape)


class identity_initializer(Initializer):  # noqa: N801
    """`gain` times the identity matrix (``tf.initializers.identity``; 2-D variables,
    which need not be square); a shard gets its slice of the whole variable's."""

    def __init__(self, gain: float = 1.0, dtype: Any = float32) -> None:
        self.gain, self.dtype = gain, _float_dtype("identity_initializer", dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        d = _float_dtype(type(self).__name__, self._dtype(dtype))
        full = [int(x) for x in (partition_info.full_shape if partition_info is not None
                                 else shape)]
        if len(full) != 2:
            raise ValueError(f"identity_initializer: the variable must be 2-D, got {full}")
        eye = np.eye(*full, dtype=d.np) * np.asarray(self.gain, d.np)
        if partition_info is not None:
            eye = eye[tuple(slice(o, o + int(n)) for o, n in zip(partition_info.var_offset, shape))]
        return _tw.constant(eye)


__all__ = ["Initializer", "PartitionInfo", "compute_fans", "zeros_initializer",
           "ones_initializer", "constant_initializer", "random_uniform_initializer",
           "random_normal_initializer", "truncated_normal_initializer",
           "variance_scaling_initializer", "glorot_uniform_initializer",
           "glorot_normal_initializer", "he_normal", "he_uniform", "lecun_normal",
           "lecun_uniform", "uniform_unit_scaling_initializer", "orthogonal_initializer",
           "identity_initializer"]

# ``tf.initializers.*``: TensorFlow 1's short names for the same initializers
zeros, ones, constant = zeros_initializer, ones_initializer, constant_initializer
random_uniform, random_normal = random_uniform_initializer, random_normal_initializer
truncated_normal, variance_scaling = truncated_normal_initializer, variance_scaling_initializer
glorot_uniform, glorot_normal = glorot_uniform_initializer, glorot_normal_initializer
uniform_unit_scaling, orthogonal = uniform_unit_scaling_initializer, orthogonal_initializer
identity = identity_initializer
global_variables, local_variables = global_variables_initializer, local_variables_initializer
variables = variables_initializer
