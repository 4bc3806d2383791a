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
from ...errors import DTypeError, ShapeError
from ..building import apply_op1, convert_operands, convert_to_tensor, user_location
from ..indexed_slices import IndexedSlices
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


def tan(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise tangent (floating point only)."""
    return _unary("Tan", x, name)


def asin(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise inverse sine, in [-pi/2, pi/2]; NaN outside [-1, 1] (floating point
    only)."""
    return _unary("Asin", x, name)


def acos(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise inverse cosine, in [0, pi]; NaN outside [-1, 1] (floating point only)."""
    return _unary("Acos", x, name)


def atan(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise inverse tangent, in [-pi/2, pi/2] (floating point only)."""
    return _unary("Atan", x, name)


def atan2(y: TensorLike, x: TensorLike, name: str | None = None) -> Result:
    """Elementwise arctangent of ``y / x`` in [-pi, pi], the quadrant chosen by the signs
    of both (note the order: `y` first, as in TensorFlow and C); broadcasts."""
    return _binary("Atan2", y, x, name)


def sinh(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise hyperbolic sine (floating point only)."""
    return _unary("Sinh", x, name)


def cosh(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise hyperbolic cosine (floating point only)."""
    return _unary("Cosh", x, name)


def round(x: TensorLike, name: str | None = None) -> Result:  # noqa: A001
    """Elementwise rounding to the nearest integer, halves to the even neighbour
    ("banker's rounding": 0.5 -> 0, 1.5 -> 2, -2.5 -> -2), as TensorFlow and NumPy do;
    integer tensors are returned unchanged."""
    return _unary("Round", x, name)


def is_nan(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x`` is NaN, as a bool tensor (floating point only)."""
    return _unary("IsNan", x, name)


def is_inf(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x`` is +inf or -inf, as a bool tensor (floating point only)."""
    return _unary("IsInf", x, name)


def is_finite(x: TensorLike, name: str | None = None) -> Result:
    """Elementwise ``x`` is neither infinite nor NaN, as a bool tensor (floating point
    only)."""
    return _unary("IsFinite", x, name)


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
    (TensorFlow 2's ``tf.where``).

    With `condition` alone: the coordinates of its true (nonzero) elements, an int64
    tensor of shape ``[num_true, rank]`` in row-major order (``np.argwhere``); num_true
    is known only at run time. Not differentiable (its result is integer)."""
    if x is None and y is None:
        return apply_op1("Where", [convert_to_tensor(condition)], name=name)
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

def _static_ints(value: Any, what: str, fn: str | None = None) -> tuple[int, ...]:
    """`value` (an int, list of ints, NumPy array or eager tensor) as a tuple of ints; axes
    are attributes, so they must be known while the graph is built. With `fn` (the
    function the user called) the error is a DTypeError (a TypeError) naming it and the
    user's line."""
    def fail(message: str) -> Exception:
        return TypeError(message) if fn is None else _error(DTypeError, fn, message)

    if isinstance(value, Tensor):
        raise fail(f"{what} must be known when the graph is built (a Python int or list "
                   f"of ints), got the symbolic tensor {value.name}")
    arr = np.asarray(value)
    if arr.size == 0:
        return ()
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        raise fail(f"{what} must be an int or a list of ints, got {value!r}")
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


def _error(kind: type, fn: str, message: str) -> Exception:
    """A ShapeError/DTypeError raised by a composite function (no single node to blame),
    naming the function and the user's line, as node errors do."""
    loc = user_location()
    return kind(message, op=fn, location=str(loc) if loc else None)


def _floating(x: TensorLike, fn: str, role: str) -> Result:
    """`x` as a tensor, which must be floating point (for functions built from float-only
    ops, so the error names the function the user called)."""
    t = convert_to_tensor(x)
    if not t.dtype.is_floating:
        raise _error(DTypeError, fn, f"expects {role} of a floating-point dtype (f16, bf16, "
                                     f"f32, f64), got {role} is {t.dtype.ir_name}"
                                     f"{list(t.shape)}")
    return t


def _is_half(dtype: DType) -> bool:
    """Whether `dtype` is float16 or bfloat16, which norms and normalizations compute in
    float32 (in float16 the squares of ordinary values, 300 or 1e-4, leave the format)."""
    return dtype.ir_name in ("f16", "bf16")


def _axes_of(axis: Axis, x: Result, fn: str) -> list[int] | None:
    """The non-negative axes of `x` that `axis` (None: every axis) reduces; an axis out
    of range is an error naming `fn` (the composite function the user called, not the
    Max/Mean/Sum it is built from) and the user's line. For `x` of unknown rank (a v1
    placeholder made without a shape): the axes as given, None for every axis (the
    reductions check them when the rank is known)."""
    if x.shape.rank is None:
        return None if axis is None else list(_static_ints(axis, "axis", fn))
    rank = x.ndim
    if axis is None:
        return list(range(rank))
    axes = _static_ints(axis, "axis", fn)
    for a in axes:
        if not -rank <= a < rank:
            raise _error(ShapeError, fn, f"axis {a} is out of range for input_tensor "
                                         f"{x.dtype.ir_name}{list(x.shape)} of rank {rank} "
                                         f"(valid: {-rank} to {rank - 1})")
    return [a % rank for a in axes]


def reduce_logsumexp(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
                     name: str | None = None) -> Result:
    """``log(reduce_sum(exp(input_tensor), axis))``, computed without overflow or
    underflow by subtracting each slice's maximum first (TF's formula). A slice that is
    all -inf gives -inf, one holding +inf gives +inf, a NaN gives NaN; over axes with no
    elements the result is -inf (when that is known at trace time; dims unknown then that
    turn out empty are an error of the max). The maximum is a constant to the gradient,
    which is the softmax of the slice. Floating point only; float16/bfloat16 are computed
    in float32 and rounded back (a float16 sum of exp overflows past 65504 elements)."""
    x = _floating(input_tensor, "reduce_logsumexp", "input_tensor")
    if _is_half(x.dtype):
        return cast(reduce_logsumexp(cast(x, float32), axis, keepdims), x.dtype, name=name)
    from . import array
    axes = _axes_of(axis, x, "reduce_logsumexp")  # (None: every axis of an unknown rank)
    if axes is not None and any(x.shape[a] == 0 for a in axes):
        # nothing to sum: -inf (log 0), as in TF, where the max below would be an error
        return log(reduce_sum(exp(x), axis=axis, keepdims=keepdims), name=name)
    raw_max = reduce_max(x, axis=axis, keepdims=True)
    # an infinite maximum would make x - max NaN (inf - inf); 0 keeps -inf rows at -inf
    # (log(0) + 0) and +inf rows at +inf (log(inf) + 0)
    safe_max = apply_op1("StopGradient", [where(is_finite(raw_max), raw_max,
                                                array.zeros_like(raw_max))])
    result = log(reduce_sum(exp(x - safe_max), axis=axis, keepdims=keepdims))
    if not keepdims and axes is None:  # every axis of an unknown rank: one element
        safe_max = array.reshape(safe_max, [])
    elif not keepdims and axes:
        safe_max = array.squeeze(safe_max, axis=axes)
    return add(result, safe_max, name=name)


def reduce_variance(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
                    name: str | None = None) -> Result:
    """Population variance over `axis` (divides by N, as TF does): the mean of the squared
    deviations from the mean. Floating point only (TF rejects integers too);
    float16/bfloat16 are computed in float32 and rounded back."""
    x = _floating(input_tensor, "reduce_variance", "input_tensor")
    _axes_of(axis, x, "reduce_variance")
    if _is_half(x.dtype):
        return cast(reduce_variance(cast(x, float32), axis, keepdims), x.dtype, name=name)
    mean = reduce_mean(x, axis=axis, keepdims=True)
    return reduce_mean(square(x - mean), axis=axis, keepdims=keepdims, name=name)


def reduce_std(input_tensor: TensorLike, axis: Axis = None, keepdims: bool = False,
               name: str | None = None) -> Result:
    """Population standard deviation over `axis`: ``sqrt(reduce_variance(...))``.
    Floating point only. Its gradient is infinite where the variance is 0, as in TF.
    float16/bfloat16 are computed in float32 and rounded back (std([-300, 300]) is 300,
    although the variance, 90000, has no float16 value)."""
    x = _floating(input_tensor, "reduce_std", "input_tensor")
    _axes_of(axis, x, "reduce_std")
    if _is_half(x.dtype):
        return cast(reduce_std(cast(x, float32), axis, keepdims), x.dtype, name=name)
    return sqrt(reduce_variance(x, axis=axis, keepdims=keepdims), name=name)


# ---------------------------------------------------------------------------- scans

def _scan(op: str, x: TensorLike, axis: int, exclusive: bool, reverse: bool,
          name: str | None) -> Result:
    fn = op.lower()  # cumsum / cumprod, as the user spelled it
    if not isinstance(axis, Tensor) and (isinstance(axis, (str, bytes)) or np.ndim(axis) > 0
                                         or np.asarray(axis).dtype.kind not in "iu"):
        raise _error(DTypeError, fn, f"axis must be a single int, got {axis!r}")
    axis_ints = _static_ints(axis, "axis", fn)
    return apply_op1(op, [convert_to_tensor(x)], {"axis": axis_ints[0],
                                                  "exclusive": bool(exclusive),
                                                  "reverse": bool(reverse)}, name=name)


def cumsum(x: TensorLike, axis: int = 0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> Result:
    """Cumulative sum along `axis`: ``[a, a + b, a + b + c]``. `exclusive` leaves each
    element out of its own sum (``[0, a, a + b]``), `reverse` sums from the end
    (``[a + b + c, b + c, c]``); both together give ``[b + c, c, 0]``."""
    return _scan("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x: TensorLike, axis: int = 0, exclusive: bool = False, reverse: bool = False,
            name: str | None = None) -> Result:
    """Cumulative product along `axis`: ``[a, a * b, a * b * c]``; `exclusive` gives
    ``[1, a, a * b]``, `reverse` ``[a * b * c, b * c, c]``. The gradient is finite where
    elements are 0 (TensorFlow's divides by `x`: NaN there)."""
    return _scan("Cumprod", x, axis, exclusive, reverse, name)


# ---------------------------------------------------------------------------- clipping

def _static_shape_kept(fn: str, result: Result, t: Result, what: str) -> None:
    """TF's check that clipping bounds broadcast to `t` without enlarging it."""
    if not result.shape.is_compatible_with(t.shape):  # (an unknown rank is compatible)
        raise _error(ShapeError, fn, f"{what} must broadcast to the shape of t without "
                                     f"changing it: t has shape {list(t.shape)}, the "
                                     f"clipped result would have shape {list(result.shape)}")


def clip_by_value(t: TensorLike, clip_value_min: TensorLike, clip_value_max: TensorLike,
                  name: str | None = None) -> Result | IndexedSlices:
    """`t` with every element limited to ``[clip_value_min, clip_value_max]``
    (``maximum(minimum(t, max), min)``; the bounds broadcast against `t` but must not
    enlarge it). IndexedSlices clip their values. The gradient passes through where `t`
    lies within the bounds (inclusive) and is 0 elsewhere."""
    if isinstance(t, IndexedSlices):
        return IndexedSlices(clip_by_value(t.values, clip_value_min, clip_value_max, name),
                             t.indices, t.dense_shape)
    values, hi = convert_operands(t, clip_value_max)
    values, lo = convert_operands(values, clip_value_min)
    result = maximum(minimum(values, hi), lo, name=name)
    _static_shape_kept("clip_by_value", result, values, "clip_value_min and clip_value_max")
    return result


def clip_by_norm(t: TensorLike, clip_norm: TensorLike, axes: Axis = None,
                 name: str | None = None) -> Result | IndexedSlices:
    """`t` scaled so that its L2 norm over `axes` (None: all of `t`) is at most
    `clip_norm`: ``t * clip_norm / max(norm, clip_norm)``; unchanged where the norm is
    already small enough. A zero `t` stays zero (with a finite gradient), as in TF.
    IndexedSlices clip their values (the norm is that of the values). Floating point
    only; float16/bfloat16 are computed in float32 and rounded back."""
    if isinstance(t, IndexedSlices):
        return IndexedSlices(clip_by_norm(t.values, clip_norm, axes, name), t.indices,
                             t.dense_shape)
    from . import array
    values = _floating(t, "clip_by_norm", "t")
    half = _is_half(values.dtype)
    if half and isinstance(clip_norm, (int, float, np.integer, np.floating)):
        clip = convert_to_tensor(clip_norm, dtype=float32)  # may exceed float16's range
    else:
        clip_norm = convert_to_tensor(clip_norm, dtype=values.dtype)
        clip = cast(clip_norm, float32) if half else clip_norm
    work = cast(values, float32) if half else values
    l2sum = reduce_sum(work * work, axis=axes, keepdims=True)
    # sqrt's gradient at 0 is infinite: keep 0 out of it so a zero t has gradient 1
    positive = l2sum > 0
    l2norm = where(positive, sqrt(where(positive, l2sum, array.ones_like(l2sum))), l2sum)
    if half:  # in float16, t * clip_norm alone can overflow (300 * 1000)
        result = cast(work * clip / maximum(l2norm, clip), values.dtype, name=name)
    else:
        result = divide(work * clip, maximum(l2norm, clip), name=name)
    _static_shape_kept("clip_by_norm", result, values, "clip_norm")
    return result


def _values_of(t: Any) -> Any:
    """A dense tensor itself, or the values of an IndexedSlices."""
    return convert_to_tensor(t.values if isinstance(t, IndexedSlices) else t)


def _global_norm(t_list: list, fn: str) -> Result:
    """sqrt of the sum of the squares of every element of every (non-None) tensor, in the
    widest float dtype among them (float32 when that is a half-precision dtype)."""
    tensors = []
    for i, t in enumerate(t_list):
        if t is None:
            continue
        tensors.append(_floating(_values_of(t), fn, f"t_list[{i}]"))
    if not tensors:
        # ShapeError is a ValueError, which TF raises here
        raise _error(ShapeError, fn, "t_list holds no tensors (only None entries)")
    dtype = max((t.dtype for t in tensors), key=lambda d: d.bits)
    if _is_half(dtype):
        dtype = float32
    # half-precision tensors are squared in float32, also beside wider ones
    tensors = [cast(v, float32) if _is_half(v.dtype) else v for v in tensors]
    squares = [cast(reduce_sum(v * v), dtype) for v in tensors]
    return sqrt(add_n(squares) if len(squares) > 1 else squares[0])


def clip_by_global_norm(t_list: Sequence[TensorLike | IndexedSlices | None],
                        clip_norm: TensorLike, use_norm: TensorLike | None = None,
                        name: str | None = None) -> tuple[list, Result]:
    """Scale every tensor of `t_list` by ``clip_norm / max(global_norm, clip_norm)``,
    where the global norm is the L2 norm of all their elements together (or `use_norm`),
    and return ``(list_clipped, global_norm)``. None entries stay None; IndexedSlices
    stay IndexedSlices (their values scaled). If the norm is inf or NaN every result is
    NaN, as in TF. Floating point only; tensors of different float dtypes share the norm
    in the widest of them (TF requires one dtype). Half-precision tensors are summed and
    scaled in float32 (the norm returned is rounded to their dtype): in float16 their
    squares overflow where the norm and the clipped values do not."""
    if isinstance(t_list, (Tensor, EagerTensor, IndexedSlices, np.ndarray)) or \
            not isinstance(t_list, Sequence):
        raise _error(DTypeError, "tw.clip_by_global_norm", f"t_list should be a sequence of "
                                                          f"tensors, got {type(t_list).__name__}")
    t_list = list(t_list)
    norm = _global_norm(t_list, "clip_by_global_norm") if use_norm is None else \
        convert_to_tensor(use_norm)
    # the dtype the norm is returned in: the widest of the tensors' (float32 inside)
    norm_dtype = max((_values_of(t).dtype for t in t_list if t is not None),
                     key=lambda d: d.bits) if use_norm is None else norm.dtype
    clip_norm = convert_to_tensor(clip_norm, dtype=norm.dtype)
    one = convert_to_tensor(1.0, dtype=norm.dtype)
    scale = clip_norm * minimum(one / norm, one / clip_norm)
    scale = scale + (norm - norm)  # NaN when the norm is inf or NaN (inf - inf)
    clipped: list = []
    for t in t_list:
        if t is None:
            clipped.append(None)
        elif isinstance(t, IndexedSlices):
            clipped.append(IndexedSlices(t.values * cast(scale, t.values.dtype), t.indices,
                                         t.dense_shape))
        else:
            t = convert_to_tensor(t)
            clipped.append(multiply(t, cast(scale, t.dtype), name=name))
    return clipped, cast(norm, norm_dtype)


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


def count_nonzero(input: TensorLike, axis: Axis = None, keepdims: bool = False,  # noqa: A002
                  dtype: DType | str = int64, name: str | None = None) -> Result:
    """How many elements over `axis` are not zero (True for bool; NaN counts, as it is
    not equal to zero), as `dtype` (int64 by default), as ``tf.math.count_nonzero``."""
    x = convert_to_tensor(input)
    nonzero = x if x.dtype.is_bool else not_equal(x, np.zeros((), x.dtype.np))
    # counted in int64 whatever `dtype` is, so a narrow dtype only rounds the final count
    count = reduce_sum(cast(nonzero, int64), axis=axis, keepdims=keepdims)
    return cast(count, dtype, name=name)


__all__ = ["add", "subtract", "multiply", "divide", "truediv", "floordiv", "floormod", "mod",
           "pow", "maximum", "minimum", "squared_difference", "add_n", "negative", "abs", "exp",
           "log", "log1p", "expm1", "erf", "sqrt", "rsqrt", "square", "sin", "cos", "tanh",
           "sigmoid", "relu",
           "floor", "ceil", "sign", "reciprocal", "equal", "not_equal", "less", "less_equal",
           "greater", "greater_equal", "logical_and", "logical_or", "logical_not", "where",
           "cast", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
           "reduce_all", "reduce_any", "argmax", "argmin", "matmul",
           "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "round", "is_nan", "is_inf",
           "is_finite", "reduce_logsumexp", "reduce_variance", "reduce_std", "cumsum", "cumprod",
           "clip_by_value", "clip_by_norm", "clip_by_global_norm", "count_nonzero", "einsum",
           "tensordot"]

from .einsum import einsum, tensordot  # noqa: E402  (einsum is built on the functions above)
