"""Math functions with TensorFlow's names and conventions: ``tw.add``, ``tw.reduce_sum``,
``tw.matmul`` ... Each one builds a node while tracing and runs it at once outside any
graph. Python scalars and lists take the dtype of the other operand; tensors of different
dtypes are an error (use `tw.cast`), as in TensorFlow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...compiler.dtypes import DType, as_dtype, float32, float64, int8, int16, int32, int64, uint8
from ...errors import UnimplementedError
from ..building import apply_op1, convert_operands, convert_to_tensor
from ..tensor import EagerTensor, Tensor

TensorLike = Any  # a tensor, variable, NumPy array or Python value
Result = Tensor | EagerTensor
Axis = int | Sequence[int] | None


def _unary(op: str, x: TensorLike, name: str | None) -> Result:
    return apply_op1(op, [convert_to_tensor(x)], name=name)


def _binary(op: str, x: TensorLike, y: TensorLike, name: str | None) -> Result:
    x, y = convert_operands(x, y)
    return apply_op1(op, [x, y], name=name)


# --------------------------------------------------------------------------- arithmetic

def add(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x + y`` with broadcasting."""
    return _binary("Add", x, y, name)


def subtract(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x - y`` with broadcasting."""
    return _binary("Sub", x, y, name)


def multiply(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x * y`` with broadcasting."""
    return _binary("Mul", x, y, name)


# TensorFlow's truediv: integers become floats wide enough to hold them exactly
_TRUEDIV_FLOAT: dict[DType, DType] = {int8: float32, int16: float32, uint8: float32,
                                      int32: float64, int64: float64}


def truediv(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise true division ``x / y``. Integer operands are converted first (int8,
    int16, uint8 to float32; int32, int64 to float64), as in TensorFlow."""
    x, y = convert_operands(x, y)
    target = _TRUEDIV_FLOAT.get(x.dtype)
    if target is not None and x.dtype is y.dtype:  # a dtype mismatch is Div's error to report
        x, y = cast(x, target), cast(y, target)
    return apply_op1("Div", [x, y], name=name)


def divide(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x / y`` (`truediv`: integers are divided as floats)."""
    return truediv(x, y, name=name)


def floordiv(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x // y``: the floor of the quotient (integer division by zero is an
    InvalidArgumentError)."""
    return _binary("FloorDiv", x, y, name)


def floormod(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x % y`` with Python's sign rule (the result has the sign of `y`)."""
    return _binary("FloorMod", x, y, name)


mod = floormod


def pow(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:  # noqa: A001
    """Elementwise ``x ** y`` (for integers `y` must be >= 0)."""
    return _binary("Pow", x, y, name)


def maximum(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise maximum with broadcasting."""
    return _binary("Maximum", x, y, name)


def minimum(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise minimum with broadcasting."""
    return _binary("Minimum", x, y, name)


def squared_difference(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``(x - y) ** 2`` with broadcasting."""
    return _binary("SquaredDifference", x, y, name)


def add_n(inputs: Sequence[TensorLike], name: str | None = None) -> Result:
    """The elementwise sum of a list of tensors of one shape and dtype."""
    if isinstance(inputs, (Tensor, EagerTensor)) or not isinstance(inputs, (list, tuple)) \
            or not inputs:
        raise ValueError("tw.add_n expects a non-empty list of tensors")
    return apply_op1("AddN", convert_operands(*inputs), name=name)


# -------------------------------------------------------------------------- unary math

def negative(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``-x``."""
    return _unary("Neg", x, name)


def abs(x: TensorLike, name: str | None = None) -> Result:  # noqa: A001
    """Elementwise absolute value."""
    return _unary("Abs", x, name)


def exp(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``e ** x`` (floating point only)."""
    return _unary("Exp", x, name)


def log(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise natural logarithm (floating point only)."""
    return _unary("Log", x, name)


def log1p(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``log(1 + x)``, accurate for small `x` (floating point only)."""
    return _unary("Log1p", x, name)


def expm1(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``exp(x) - 1``, accurate for small `x` (floating point only)."""
    return _unary("Expm1", x, name)


def erf(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise Gauss error function (floating point only)."""
    return _unary("Erf", x, name)


def sqrt(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise square root (floating point only)."""
    return _unary("Sqrt", x, name)


def rsqrt(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``1 / sqrt(x)`` (floating point only)."""
    return _unary("Rsqrt", x, name)


def square(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x * x``."""
    return _unary("Square", x, name)


def sin(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise sine (floating point only)."""
    return _unary("Sin", x, name)


def cos(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise cosine (floating point only)."""
    return _unary("Cos", x, name)


def tanh(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise hyperbolic tangent (floating point only)."""
    return _unary("Tanh", x, name)


def sigmoid(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise logistic function ``1 / (1 + exp(-x))`` (floating point only)."""
    return _unary("Sigmoid", x, name)


def relu(features: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``max(features, 0)``."""
    return _unary("Relu", features, name)


def floor(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise floor (floating point only)."""
    return _unary("Floor", x, name)


def ceil(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ceiling (floating point only)."""
    return _unary("Ceil", x, name)


def sign(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise sign: -1, 0 or 1."""
    return _unary("Sign", x, name)


def reciprocal(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``1 / x`` (floating point only)."""
    return _unary("Reciprocal", x, name)


# ------------------------------------------------------------------ comparisons and logic

def equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x == y`` as a bool tensor."""
    return _binary("Equal", x, y, name)


def not_equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x != y`` as a bool tensor."""
    return _binary("NotEqual", x, y, name)


def less(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x < y`` as a bool tensor."""
    return _binary("Less", x, y, name)


def less_equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x <= y`` as a bool tensor."""
    return _binary("LessEqual", x, y, name)


def greater(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x > y`` as a bool tensor."""
    return _binary("Greater", x, y, name)


def greater_equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x >= y`` as a bool tensor."""
    return _binary("GreaterEqual", x, y, name)


def logical_and(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x and y`` of bool tensors."""
    return _binary("LogicalAnd", x, y, name)


def logical_or(x: TensorLike, y: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x or y`` of bool tensors."""
    return _binary("LogicalOr", x, y, name)


def logical_not(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``not x`` of a bool tensor."""
    return _unary("LogicalNot", x, name)


def where(condition: TensorLike, x: TensorLike = None, y: TensorLike = None,
          name: str | None = None) -> Result:
    """Elementwise ``x if condition else y``; `condition`, `x` and `y` broadcast together
    (TensorFlow 2's ``tf.where``). Only the three-argument form is supported."""
    if x is None and y is None:
        raise UnimplementedError("tw.where(condition) without x and y (the coordinates of "
                                 "true elements) is not supported; pass x and y")
    if x is None or y is None:
        raise ValueError("tw.where needs both x and y, or neither")
    cond = convert_to_tensor(condition)
    x, y = convert_operands(x, y)
    return apply_op1("Select", [cond, x, y], name=name)


def cast(x: TensorLike, dtype: DType | str, name: str | None = None) -> Result:
    """`x` converted to `dtype`. Floats become integers by truncation toward zero; any
    nonzero value becomes True. Returns `x` itself when it already has that dtype."""
    dtype = as_dtype(dtype)
    if isinstance(x, (bool, int, float)) and not dtype.is_bool:
        # A Python number goes straight to `dtype` (through float32 it would lose bits).
        x = convert_to_tensor(x, dtype_hint=dtype if not (
            isinstance(x, float) and dtype.is_integer) else None)
    else:
        x = convert_to_tensor(x)
    if x.dtype is dtype:
        return x
    return apply_op1("Cast", [x], {"dtype": dtype}, name=name)


# ---------------------------------------------------------------------------- reductions

def _static_ints(value: Any, what: str) -> tuple[int, ...]:
    """`value` (an int, list of ints, NumPy array or eager tensor) as a tuple of ints; axes
    are attributes, so they must be known while the graph is built."""
    if isinstance(value, Tensor):
        raise TypeError(f"{what} must be known when the graph is built (a Python int or list "
                        f"of ints), got the symbolic tensor {value.name}")
    arr = np.asarray(value)
    if arr.size == 0:
        return ()
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        raise TypeError(f"{what} must be an int or a list of ints, got {value!r}")
    return tuple(int(a) for a in arr.reshape(-1))


def _reduce(op: str, input_tensor: TensorLike, axis: Axis, keepdims: bool,
            name: str | None) -> Result:
    axes = None if axis is None else _static_ints(axis, "axis")
    return apply_op1(op, [convert_to_tensor(input_tensor)],
                     {"axes": axes, "keepdims": bool(keepdims)}, name=name)


def reduce_sum(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
               name: str | None = None) -> Result:
    """Sum over `axis` (an int, a list, or None for every axis)."""
    return _reduce("Sum", input_tensor, axis, keepdims, name)


def reduce_mean(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
                name: str | None = None) -> Result:
    """Mean over `axis`; the mean of integers is an integer (truncated), as in TensorFlow."""
    return _reduce("Mean", input_tensor, axis, keepdims, name)


def reduce_max(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
               name: str | None = None) -> Result:
    """Maximum over `axis`."""
    return _reduce("Max", input_tensor, axis, keepdims, name)


def reduce_min(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
               name: str | None = None) -> Result:
    """Minimum over `axis`."""
    return _reduce("Min", input_tensor, axis, keepdims, name)


def reduce_prod(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
                name: str | None = None) -> Result:
    """Product over `axis`."""
    return _reduce("Prod", input_tensor, axis, keepdims, name)


def reduce_all(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
               name: str | None = None) -> Result:
    """Logical and over `axis` of a bool tensor."""
    return _reduce("All", input_tensor, axis, keepdims, name)


def reduce_any(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
               name: str | None = None) -> Result:
    """Logical or over `axis` of a bool tensor."""
    return _reduce("Any", input_tensor, axis, keepdims, name)


def _arg_reduce(op: str, input: TensorLike, axis: int | None, output_type: DType | str,
                name: str | None) -> Result:
    axis_ints = (0,) if axis is None else _static_ints(axis, "axis")
    if len(axis_ints) != 1 or np.ndim(axis) > 0:
        raise TypeError(f"axis must be a single int, got {axis!r}")
    return apply_op1(op, [convert_to_tensor(input)],
                     {"axis": axis_ints[0], "output_type": as_dtype(output_type)}, name=name)


def argmax(input: TensorLike, axis: int | None = None, output_type: DType | str = int64,  # noqa: A002
           name: str | None = None) -> Result:
    """Index of the largest value along `axis` (default 0; the first one on ties)."""
    return _arg_reduce("ArgMax", input, axis, output_type, name)


def argmin(input: TensorLike, axis: int | None = None, output_type: DType | str = int64,  # noqa: A002
           name: str | None = None) -> Result:
    """Index of the smallest value along `axis` (default 0; the first one on ties)."""
    return _arg_reduce("ArgMin", input, axis, output_type, name)


# ---------------------------------------------------------------------- matrix product

def matmul(a: TensorLike, b: TensorLike, transpose_a: bool = False, transpose_b: bool = False,
           adjoint_a: bool = False, adjoint_b: bool = False, name: str | None = None) -> Result:
    """Matrix product over the last two axes (``a @ b``); leading axes are batch axes and
    broadcast. `adjoint_a`/`adjoint_b` equal the transposes for real dtypes."""
    if (transpose_a and adjoint_a) or (transpose_b and adjoint_b):
        raise ValueError("only one of transpose_X and adjoint_X may be True")
    a, b = convert_operands(a, b)
    return apply_op1("MatMul", [a, b], {"transpose_a": bool(transpose_a or adjoint_a),
                                        "transpose_b": bool(transpose_b or adjoint_b)},
                     name=name)


__all__ = ["add", "subtract", "multiply", "divide", "truediv", "floordiv", "floormod", "mod",
           "pow", "maximum", "minimum", "squared_difference", "add_n", "negative", "abs", "exp",
           "log", "log1p", "expm1", "erf", "sqrt", "rsqrt", "square", "sin", "cos", "tanh",
           "sigmoid", "relu",
           "floor", "ceil", "sign", "reciprocal", "equal", "not_equal", "less", "less_equal",
           "greater", "greater_equal", "logical_and", "logical_or", "logical_not", "where",
           "cast", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
           "reduce_all", "reduce_any", "argmax", "argmin", "matmul"]
