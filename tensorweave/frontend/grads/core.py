"""Gradients of the core ops (identity, stop_gradient, broadcasting support)."""

from __future__ import annotations

from ...compiler.registry import not_differentiable, register_gradient
from ..building import apply_op1

not_differentiable("StopGradient", "Const", "Placeholder", "VarHandle", "Restore")


@register_gradient("Identity")
def _identity_grad(op, grad):
    return [grad]


@register_gradient("ReduceToLike")
def _reduce_to_like_grad(op, grad):
    # The inverse of summing over broadcast axes is broadcasting back: add zeros of the
    # original shape (the shape is known only at run time).
    return [apply_op1("Add", [grad, apply_op1("ZerosLike", [op.inputs[0]])]), None]
