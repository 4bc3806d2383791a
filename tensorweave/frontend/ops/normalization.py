"""Moments and normalization with TensorFlow's names (``tw.nn.moments``,
``batch_normalization``, ``fused_batch_norm``, ``l2_normalize``) and Keras's layer
normalization (``tw.nn.layer_normalization``).

Each is a composition of existing ops (reductions and elementwise math), so autodiff
differentiates it and the cpu target fuses the elementwise parts. Half-precision inputs
are reduced in float32 and the results rounded back, as TensorFlow does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...compiler.dtypes import DType, float32
from ...compiler.ops.common import broadcast_shapes
from ...compiler.types import format_shape
from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ..autodiff import stop_gradient
from ..building import convert_to_tensor, user_location
from ..context import name_scope
from ..tensor import Tensor
from . import array as a
from . import math as m
from .math import _is_half

TensorLike = Any
Axes = int | Sequence[int] | None


def _axes(axis: Axes, rank: int) -> list[int]:
    if axis is None:
        return list(range(rank))
    return [int(axis)] if isinstance(axis, int) else [int(a) for a in axis]


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
    TensorFlow 1's name for `axis`; None normalizes over every axis. Half-precision `x`
    is normalized in float32 and rounded back: in float16 the squares of ordinary values
    overflow (300) or underflow (1e-4) and epsilon is 0."""
    with name_scope(name or "l2_normalize"):
        x = convert_to_tensor(x)
        axis = dim if axis is None else axis
        xc = m.cast(x, float32) if _is_half(x.dtype) else x
        square_sum = m.reduce_sum(m.square(xc), axis=_axes(axis, len(x.shape)), keepdims=True)
        y = xc * m.rsqrt(m.maximum(square_sum, epsilon))
        return m.cast(y, x.dtype) if xc is not x else y


_CHANNEL_AXIS = {"NHWC": -1, "NDHWC": -1, "NCHW": 1, "NCDHW": 1}
_FORMAT_RANK = {"NHWC": 4, "NCHW": 4, "NDHWC": 5, "NCDHW": 5}
# TensorFlow raises a smaller epsilon to this (a cuDNN requirement it applies everywhere)
_MIN_EPSILON = 1.001e-5


def fused_batch_norm(x: TensorLike, scale: TensorLike, offset: TensorLike,
                     mean: TensorLike | None = None, variance: TensorLike | None = None,
                     epsilon: float = 0.001, data_format: str = "NHWC", is_training: bool = True,
                     name: str | None = None,
                     exponential_avg_factor: float = 1.0) -> tuple[Tensor, Tensor, Tensor]:
    """Batch normalization of a 4-D (or 5-D) `x` per channel (``tf.nn.fused_batch_norm``):
    returns ``(y, batch_mean, batch_variance)``.

    Training: ``y`` is normalized with the batch's mean and biased variance over every
    axis but the channel axis; the returned variance is Bessel-corrected (``n / (n - 1)``
    with ``n`` the elements per channel), and with ``exponential_avg_factor`` f != 1 both
    statistics are running averages ``(1 - f) * old + f * batch`` of `mean`/`variance`.
    Inference (``is_training=False``): ``y`` uses `mean` and `variance`, which are
    returned unchanged. `epsilon` below 1.001e-5 is raised to it, and half-precision `x`
    is computed in float32 with float32 statistics, as in TensorFlow. `data_format` is
    NHWC, NCHW, NDHWC or NCDHW. Built from reductions and elementwise ops, so autodiff
    differentiates every output and the cpu target fuses the elementwise parts."""
    where = str(user_location())
    if data_format not in _CHANNEL_AXIS:
        raise InvalidArgumentError(f"data_format must be one of {', '.join(_CHANNEL_AXIS)}, "
                                   f"got {data_format!r}", op="fused_batch_norm",
                                   location=where)
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or variance is None):
        raise InvalidArgumentError("mean and variance must be given (1-D, one per channel) "
                                   "when is_training is False or exponential_avg_factor != 1",
                                   op="fused_batch_norm", location=where)
    with name_scope(name or "FusedBatchNorm"):
        x = convert_to_tensor(x)
        rank = _FORMAT_RANK[data_format]
        if len(x.shape) != rank:
            raise ShapeError(f"x must have rank {rank} ({data_format}), got {x.type}",
                             op="fused_batch_norm", location=where)
        if not x.dtype.is_floating:
            raise DTypeError(f"x must be floating-point, got {x.type}", op="fused_batch_norm",
                             location=where)
        stat_dtype = float32 if _is_half(x.dtype) else x.dtype
        xc = m.cast(x, stat_dtype) if _is_half(x.dtype) else x
        channel = _CHANNEL_AXIS[data_format] % rank
        params = [_channel_vector(v, stat_dtype, role, x, channel, where)
                  for v, role in ((scale, "scale"), (offset, "offset"))]
        # statistics broadcast along the channel axis: [C] for channels-last, [C, 1, ...] else
        bshape = [-1] + [1] * (rank - 1 - channel)

        def along_channel(v):
            return v if channel == rank - 1 else a.reshape(v, bshape)

        scale_t, offset_t = params
        eps = max(float(epsilon), _MIN_EPSILON)
        if not is_training:
            mean_t = _channel_vector(mean, stat_dtype, "mean", x, channel, where)
            var_t = _channel_vector(variance, stat_dtype, "variance", x, channel, where)
            y = batch_normalization(xc, along_channel(mean_t), along_channel(var_t),
                                    along_channel(offset_t), along_channel(scale_t), eps)
            return (m.cast(y, x.dtype) if xc is not x else y), a.identity(mean_t), \
                a.identity(var_t)
        axes = [i for i in range(rank) if i != channel]
        batch_mean, batch_var = moments(xc, axes)
        y = batch_normalization(xc, along_channel(batch_mean), along_channel(batch_var),
                                along_channel(offset_t), along_channel(scale_t), eps)
        # elements per channel, at run time when the batch or spatial dims are unknown
        count = m.cast(a.size(xc), stat_dtype) / m.cast(a.shape(xc)[channel], stat_dtype)
        unbiased = batch_var * (count / m.maximum(count - 1, 1))
        if exponential_avg_factor != 1.0:
            f = float(exponential_avg_factor)
            old_mean = _channel_vector(mean, stat_dtype, "mean", x, channel, where)
            old_var = _channel_vector(variance, stat_dtype, "variance", x, channel, where)
            batch_mean = (1 - f) * old_mean + f * batch_mean
            unbiased = (1 - f) * old_var + f * unbiased
        return (m.cast(y, x.dtype) if xc is not x else y), batch_mean, unbiased


def _channel_vector(v: TensorLike, dtype: DType, role: str, x: Tensor, channel: int,
                    where: str) -> Tensor:
    """A per-channel parameter of fused_batch_norm as a [C] tensor of `dtype`."""
    t = convert_to_tensor(v, dtype=dtype) if not isinstance(v, Tensor) else v
    c = x.shape[channel]
    if len(t.shape) != 1 or (c is not None and t.shape[0] is not None and t.shape[0] != c):
        raise ShapeError(f"{role} must be a vector of the {c} channels of x {x.type}, got "
                         f"{t.type}", op="fused_batch_norm", location=where)
    if t.dtype is not dtype:
        raise DTypeError(f"{role} must be {dtype.ir_name} for x {x.type}, got {t.type}",
                         op="fused_batch_norm", location=where)
    return t


def layer_normalization(x: TensorLike, gamma: TensorLike | None = None,
                        beta: TensorLike | None = None, axis: Axes = -1,
                        epsilon: float = 1e-3, name: str | None = None) -> Tensor:
    """Layer normalization (Keras's ``LayerNormalization``): each example is normalized
    by the mean and variance of `x` over `axis` (an int or ints; default the last),
    ``y = (x - mean) / sqrt(var + epsilon) * gamma + beta``.

    `gamma` and `beta` (optional) have the shape of `x` along `axis` (``x.shape[axis]``
    for one axis) or broadcast against `x`. Half-precision `x` is normalized in float32
    and rounded back. A composition of `moments` and `batch_normalization`."""
    where = str(user_location())
    with name_scope(name or "layer_normalization"):
        x = convert_to_tensor(x)
        rank = len(x.shape)
        axes = sorted({a_ % rank for a_ in _axes(axis, rank)}) if rank else []
        if rank == 0 or any(not -rank <= a_ < rank for a_ in _axes(axis, rank)):
            raise ShapeError(f"axis {axis} is out of range for x {x.type}",
                             op="layer_normalization", location=where)
        xc = m.cast(x, float32) if _is_half(x.dtype) else x
        mean, variance = moments(xc, axes, keepdims=True)
        params = [None if p is None else _norm_param(p, xc, axes, role, where)
                  for p, role in ((gamma, "gamma"), (beta, "beta"))]
        y = batch_normalization(xc, mean, variance, params[1], params[0], epsilon)
        return m.cast(y, x.dtype) if xc is not x else y


def _norm_param(p: TensorLike, x: Tensor, axes: list[int], role: str, where: str) -> Tensor:
    """gamma/beta shaped like x along `axes`, reshaped to broadcast against x."""
    t = convert_to_tensor(p)
    if _is_half(t.dtype) and x.dtype is float32:
        t = m.cast(t, float32)  # half-precision x is normalized in float32
    elif t.dtype is not x.dtype:
        t = convert_to_tensor(p, dtype=x.dtype)
    want = tuple(x.shape[i] for i in axes)
    if len(t.shape) == len(axes) and len(axes) < len(x.shape) and \
            axes != list(range(len(x.shape) - len(axes), len(x.shape))):
        # the normalized axes are not trailing: put the parameter's dims at them
        if any(a_ is not None and b is not None and a_ != b for a_, b in zip(t.shape, want)):
            raise ShapeError(f"{role} must have shape {format_shape(want)} (x along axis "
                             f"{axes}), got {t.type}", op="layer_normalization", location=where)
        shape = [1] * len(x.shape)
        for i, d in zip(axes, t.shape):
            shape[i] = -1 if d is None else d
        return a.reshape(t, shape)
    try:
        broadcast_shapes(x.shape, t.shape)
    except ShapeError:
        raise ShapeError(f"{role} must have shape {format_shape(want)} (x along axis {axes}) "
                         f"or broadcast against x {x.type}, got {t.type}",
                         op="layer_normalization", location=where) from None
    return t


__all__ = ["moments", "batch_normalization", "l2_normalize", "fused_batch_norm",
           "layer_normalization"]
