"""Shape plumbing shared by gradient functions: undoing broadcasting and reductions."""

from __future__ import annotations

from typing import Any

from ..building import apply_op1


def _array():
    from ..ops import array
    return array


def _math():
    from ..ops import math
    return math


def unbroadcast(grad: Any, x: Any) -> Any:
    """Sum `grad` (shaped like a broadcast result) back to the shape of operand `x`.

    Static shapes give a plain reduction; dims (or a rank, in a v1 graph) unknown until
    run time give a ``ReduceToLike`` node that decides at run time."""
    if grad.shape.rank is None or x.shape.rank is None:
        return apply_op1("ReduceToLike", [grad, x])
    gs, xs = tuple(grad.shape), tuple(x.shape)
    if any(d is None for d in xs):
        # even equal static shapes may differ at run time: an unknown dim of x may be 1
        # where grad's is larger
        return apply_op1("ReduceToLike", [grad, x])
    if gs == xs:
        return grad
    lead = len(gs) - len(xs)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(xs) if d == 1 and gs[lead + i] != 1]
    out = _math().reduce_sum(grad, axis=axes, keepdims=True) if axes else grad
    return _array().reshape(out, list(xs)) if tuple(out.shape) != xs else out


def broadcast_like(t: Any, x: Any) -> Any:
    """`t` broadcast to the shape of `x` (whose dims, or rank, may be unknown)."""
    if x.shape.is_fully_defined():
        return t if tuple(t.shape) == tuple(x.shape) else _array().broadcast_to(t, list(x.shape))
    return t + _array().zeros_like(x)


def restore_reduced_dims(grad: Any, x: Any, axes: Any, keepdims: bool) -> Any:
    """Give the gradient of a reduction back the reduced axes (as size 1), so it
    broadcasts against the reduction's input `x`."""
    if x.shape.rank is None:  # (a v1 graph's tensor of unknown rank)
        if keepdims or axes is None:
            return grad  # the reduced dims are there (size 1), or grad is a scalar
        # the shape of x with the reduced axes made 1, known at run time (a sum: defined
        # over empty axes too)
        kept = _math().reduce_sum(x, axis=list(axes), keepdims=True)
        return apply_op1("ReshapeLike", [grad, kept])
    rank = len(x.shape)
    axes = list(range(rank)) if axes is None else sorted(a % rank for a in axes)
    if keepdims or not axes:
        return grad
    if all(d is not None for d in x.shape):
        return _array().reshape(grad, [1 if i in axes else d for i, d in enumerate(x.shape)])
    for a in axes:
        grad = _array().expand_dims(grad, a)
    return grad


def reduced_count(x: Any, axes: Any, dtype: Any) -> Any:
    """How many elements each reduction over `axes` combined, as a tensor of `dtype`."""
    if x.shape.rank is None:  # (a v1 graph's tensor of unknown rank)
        if axes is None:
            return _math().cast(_array().size(x), dtype)
        return _math().reduce_sum(_array().ones_like(x, dtype=dtype), axis=list(axes),
                                  keepdims=True)
    rank = len(x.shape)
    axes = list(range(rank)) if axes is None else [a % rank for a in axes]
    dims = [x.shape[a] for a in axes]
    if all(d is not None for d in dims):
        n = 1
        for d in dims:
            n *= d
        return _math().cast(n, dtype)
    ones = _array().ones_like(x)
    return _math().reduce_sum(ones, axis=axes, keepdims=True)
