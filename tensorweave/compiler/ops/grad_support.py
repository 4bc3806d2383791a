"""Ops that exist for differentiation: stopping gradients and summing a gradient back
down to the (run-time) shape of a broadcast operand."""

from __future__ import annotations

import numpy as np

from ...errors import InvalidArgumentError, ShapeError
from ..registry import def_op
from ..types import TensorType
from .common import expect_tensor

StopGradient = def_op("StopGradient", ["input"], tags=["elementwise"],
                      doc="Identity in the forward pass; blocks gradients.")


@StopGradient.infer
def _stop_infer(x):
    return x


@StopGradient.kernel("reference")
def _stop_kernel(x):
    return x


ReduceToLike = def_op("ReduceToLike", ["grad", "like"],
                      doc="Sum `grad` over the axes along which `like` was broadcast to "
                          "`grad`'s shape; the result has `like`'s shape and `grad`'s dtype.")


@ReduceToLike.infer
def _reduce_like_infer(grad, like):
    grad = expect_tensor(grad, "grad")
    like = expect_tensor(like, "like")
    if like.rank > grad.rank:
        raise ShapeError(f"cannot reduce grad {grad} to the shape of {like}: rank is larger")
    return TensorType(grad.dtype, like.shape)


@ReduceToLike.kernel("reference")
def _reduce_like_kernel(grad, like):
    return reduce_to_shape(grad, like.shape)


def reduce_to_shape(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum a broadcast result `grad` back to `shape` (the inverse of broadcasting)."""
    lead = grad.ndim - len(shape)
    axes = list(range(lead))
    for i, d in enumerate(shape):
        if d == 1 and grad.shape[lead + i] != 1:
            axes.append(lead + i)
        elif d != grad.shape[lead + i]:
            raise InvalidArgumentError(f"shape {tuple(grad.shape)} is not a broadcast of "
                                       f"{tuple(shape)}")
    out = grad.sum(axis=tuple(axes), keepdims=True) if axes else grad
    return out.reshape(shape).astype(grad.dtype, copy=False)
