"""Bitwise functions with TensorFlow's names (``tf.bitwise``): ``tw.bitwise.bitwise_and``,
``invert``, ``left_shift`` ... on integer tensors, and the Python operators ``& | ^ ~ << >>``
of tensors, which are bitwise on integers and logical on bools (as in TensorFlow).

Python scalars take the dtype of the tensor operand (`convert_operands`); tensors of
different dtypes are an error. Shifts by a negative amount or by at least the bit width
are defined as in NumPy (see `compiler/ops/bitwise.py`). None of these is differentiable.
"""

from __future__ import annotations

from typing import Any

from ...compiler.dtypes import bool_
from ..building import apply_op1, convert_operands, convert_to_tensor
from ..tensor import EagerTensor, Tensor

TensorLike = Any  # a tensor, variable, NumPy array or Python value
Result = Tensor | EagerTensor


def _binary(op: str, x: TensorLike, y: TensorLike, name: str | None) -> Result:
    x, y = convert_operands(x, y)
    return apply_op1(op, [x, y], name=name)


def bitwise_and(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise bitwise ``x & y`` of integer tensors, with broadcasting."""
    return _binary("BitwiseAnd", x, y, name)


def bitwise_or(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise bitwise ``x | y`` of integer tensors, with broadcasting."""
    return _binary("BitwiseOr", x, y, name)


def bitwise_xor(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise bitwise ``x ^ y`` of integer tensors, with broadcasting."""
    return _binary("BitwiseXor", x, y, name)


def invert(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise bitwise complement ``~x`` of an integer tensor (``-x - 1`` for signed
    dtypes, ``max - x`` for unsigned ones)."""
    return apply_op1("Invert", [convert_to_tensor(x)], name=name)


def left_shift(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x << y`` of integer tensors, wrapping around; 0 where ``y`` is negative
    or at least the bit width of the dtype (NumPy's rule; TensorFlow leaves it undefined)."""
    return _binary("LeftShift", x, y, name)


def right_shift(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x >> y`` of integer tensors: arithmetic (sign-filling) for signed
    dtypes, logical for unsigned ones. Where ``y`` is negative or at least the bit width:
    -1 for negative ``x``, else 0 (NumPy's rule; TensorFlow leaves it undefined)."""
    return _binary("RightShift", x, y, name)


def logical_xor(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise exclusive or of bool tensors (``x != y``), with broadcasting."""
    x, y = convert_operands(x, y)
    if x.dtype is not bool_ or y.dtype is not bool_:
        raise TypeError(f"logical_xor expects bool tensors, got {x.dtype.ir_name} and "
                        f"{y.dtype.ir_name}")
    return apply_op1("NotEqual", [x, y], name=name)


# ---------------------------------------------------------------- the Python operators

def _is_bool(*values: TensorLike) -> bool:
    """Whether the tensor operand(s) are bool: the operators are then logical."""
    return any(getattr(v, "dtype", None) is bool_ for v in values)


def and_operator(x: TensorLike, y: TensorLike) -> Result:
    """``x & y``: logical and of bools, bitwise and of integers."""
    if _is_bool(x, y):
        return _binary("LogicalAnd", x, y, None)
    return bitwise_and(x, y)


def or_operator(x: TensorLike, y: TensorLike) -> Result:
    """``x | y``: logical or of bools, bitwise or of integers."""
    if _is_bool(x, y):
        return _binary("LogicalOr", x, y, None)
    return bitwise_or(x, y)


def xor_operator(x: TensorLike, y: TensorLike) -> Result:
    """``x ^ y``: exclusive or of bools, bitwise xor of integers."""
    if _is_bool(x, y):
        return logical_xor(x, y)
    return bitwise_xor(x, y)


def invert_operator(x: TensorLike) -> Result:
    """``~x``: logical not of a bool, bitwise complement of an integer."""
    if _is_bool(x):
        return apply_op1("LogicalNot", [convert_to_tensor(x)])
    return invert(x)


__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift",
           "right_shift"]
