"""Moments and normalization with TensorFlow's names (``tw.nn.moments``,
``batch_normalization``, ``l2_normalize``).

Each is a composition of existing ops (reductions and elementwise math), so autodiff
differentiates it and the cpu target fuses the elementwise parts. Half-precision inputs
are reduced in float32 and the results rounded back, as TensorFlow does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...compiler.dtypes import DType, float32
from ..autodiff import stop_gradient
from ..building import convert_to_tensor
from ..context import name_scope
from ..tensor import Tensor
from . import math as m

TensorLike = Any
Axes = int | Sequence[int] | None


def _axes(axis: Axes, rank: int) -> list[int]:
    if axis is None:
        return list(range(rank))
    return [int(axis)] if isinstance(axis, int) else [int(a) for a in axis]


def _is_half(dtype: DType) -> bool:
    return dtype.name in ("f16", "bf16")


def moments(x: TensorLike, axes: Axes, shift: Any = None, keepdims: bool = False,
            name: str | None = None) -> tuple[Tensor, Tensor]:
    """Mean and variance of `x` over `axes` (``tf.nn.moments``).

    The variance is ``mean((x - stop_gradient(mean))**2)``; the stop does not change the
    gradient (the derivative through the mean is zero) but saves computing it. `shift` is
    accepted for TensorFlow 1 compatibility and unused, as in TensorFlow 2."""
    with name_scope(name or "moments"):
        x = convert_to_tensor(x)
        y = m.cast(x, float32) if _is_half(x.dtype) else x
        ax = _axes(axes, len(x.shape))
        mean = m.reduce_mean(y, axis=ax, keepdims=True)
        variance = m.reduce_mean(m.squared_difference(y, stop_gradient(mean)), axis=ax,
                                 keepdims=True)
        if not keepdims:
            from .array import squeeze  # the array family, only for dropping the axes
            mean, variance = squeeze(mean, ax), squeeze(variance, ax)
        if y is not x:
            mean, variance = m.cast(mean, x.dtype), m.cast(variance, x.dtype)
        return mean, variance


def batch_normalization(x: TensorLike, mean: TensorLike, variance: TensorLike,
                        offset: TensorLike, scale: TensorLike, variance_epsilon: float,
                        name: str | None = None) -> Tensor:
    """``scale * (x - mean) / sqrt(variance + variance_epsilon) + offset``
    (``tf.nn.batch_normalization``); `offset` and `scale` may be None. The statistics
    broadcast against `x` (e.g. per channel, or from `moments` with keepdims)."""
    with name_scope(name or "batchnorm"):
        x = convert_to_tensor(x)
        mean = convert_to_tensor(mean, dtype=x.dtype)
        inv = m.rsqrt(convert_to_tensor(variance, dtype=x.dtype) + variance_epsilon)
        if scale is not None:
            inv = inv * convert_to_tensor(scale, dtype=x.dtype)
        shift = -mean * inv
        if offset is not None:
            shift = convert_to_tensor(offset, dtype=x.dtype) + shift
        return x * inv + shift


def l2_normalize(x: TensorLike, axis: Axes = None, epsilon: float = 1e-12,
                 name: str | None = None, dim: Axes = None) -> Tensor:
    """``x / sqrt(max(sum(x**2, axis), epsilon))`` (``tf.math.l2_normalize``); `dim` is
    TensorFlow 1's name for `axis`; None normalizes over every axis."""
    with name_scope(name or "l2_normalize"):
        x = convert_to_tensor(x)
        axis = dim if axis is None else axis
        square_sum = m.reduce_sum(m.square(x), axis=_axes(axis, len(x.shape)), keepdims=True)
        return x * m.rsqrt(m.maximum(square_sum, epsilon))


__all__ = ["moments", "batch_normalization", "l2_normalize"]
