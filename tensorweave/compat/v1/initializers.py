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
    of a partitioned variable) a value of the full shape, sliced to the shard."""

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


class glorot_uniform_initializer(Initializer):  # noqa: N801
    """Uniform in ``±sqrt(6 / (fan_in + fan_out))``, the fans of the whole variable
    (``tf.get_variable``'s default for floating-point variables)."""

    def __init__(self, seed: int | None = None, dtype: Any = float32) -> None:
        self.seed, self.dtype = seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        full = tuple(partition_info.full_shape) if partition_info is not None else tuple(shape)
        if len(full) < 1:
            fan_in = fan_out = 1
        elif len(full) == 1:
            fan_in = fan_out = full[0]
        else:
            receptive = math.prod(full[:-2])
            fan_in, fan_out = full[-2] * receptive, full[-1] * receptive
        limit = math.sqrt(6.0 / max(1.0, (fan_in + fan_out)))
        return _random.uniform(list(shape), -limit, limit, self._dtype(dtype), seed=self.seed)


__all__ = ["Initializer", "PartitionInfo", "zeros_initializer", "ones_initializer",
           "constant_initializer", "random_uniform_initializer", "random_normal_initializer",
           "truncated_normal_initializer", "glorot_uniform_initializer"]
