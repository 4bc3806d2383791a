"""Math ops: elementwise arithmetic, comparisons and logic, AddN, Select, Cast, reductions,
ArgMax/ArgMin, MatMul and the scans Cumsum/Cumprod.

Conventions shared by every op here:
- No implicit promotion: the operands of a binary op must have the same dtype.
- Binary ops broadcast like NumPy; dims unknown at trace time (None) broadcast with
  anything and are checked by the kernel at run time.
- Results keep the input dtype (comparisons give bool). The reference kernels compute
  f16/bf16 in float32 and round once at the end, so half-precision results are as
  accurate as the format allows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np

from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ..dtypes import ALL_DTYPES, FLOAT_DTYPES, NUMERIC_DTYPES, DType, bool_, int32, int64
from ..registry import OpDef, attr, def_op
from ..types import TensorType
from .common import broadcast_shapes, expect_tensor, normalize_axes, normalize_axis, same_dtype

_FLOAT = (FLOAT_DTYPES, "a floating-point dtype (f16, bf16, f32, f64)")
_NUMERIC = (NUMERIC_DTYPES, "a numeric dtype (float or integer)")
_BOOL = ((bool_,), "bool (i1)")
_ANY = (ALL_DTYPES, "any dtype")

_HALF_FLOATS = frozenset({np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)})


# ------------------------------------------------------------------------------ helpers

def _widen(x: np.ndarray) -> np.ndarray:
    """f16/bf16 as float32 (exact), so arithmetic rounds only once, at the end."""
    return x.astype(np.float32) if x.dtype in _HALF_FLOATS else x


def _as(result: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`result` as an array of exactly `dtype` (NumPy ufuncs return scalars for 0-d)."""
    return np.asarray(result).astype(dtype, copy=False)


def _check_allowed(types: Sequence[TensorType], roles: Sequence[str],
                   allowed: tuple[tuple[DType, ...], str]) -> None:
    """DTypeError naming every operand unless the (common) dtype is in `allowed`."""
    dtypes, what = allowed
    if types[0].dtype not in dtypes:
        desc = ", ".join(f"{role} is {t}" for t, role in zip(types, roles))
        raise DTypeError(f"expects {what}, got {desc}")


def _broadcast(types: Sequence[TensorType], roles: Sequence[str]) -> tuple:
    """The broadcast shape of `types`; the error names each operand and its type."""
    try:
        return broadcast_shapes(*(t.shape for t in types))
    except ShapeError:
        desc = ", ".join(f"{role} is {t}" for t, role in zip(types, roles))
        raise ShapeError(f"shapes cannot be broadcast together: {desc}") from None


def _check_runtime_broadcast(*shapes: tuple, what: str = "shapes") -> tuple:
    """The broadcast of concrete shapes; a clear error for dims that only turned out to be
    incompatible at run time (they were unknown when the graph was built)."""
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        desc = " vs ".join(str(list(s)) for s in shapes)
        raise InvalidArgumentError(f"{what} cannot be broadcast together: {desc}") from None


# ------------------------------------------------------------------------ unary elementwise

def _declare_unary(name: str, fn: Callable[[np.ndarray], np.ndarray],
                   allowed: tuple[tuple[DType, ...], str], doc: str, *,
                   out_dtype: DType | None = None) -> OpDef:
    """Declare an elementwise op ``y = fn(x)`` whose result has the input's type (or
    `out_dtype`: bool for the IsNan family)."""
    op = def_op(name, ["x"], tags=["elementwise", "unary"], doc=doc)

    @op.infer
    def _infer(x):
        x = expect_tensor(x, "x")
        _check_allowed([x], ["x"], allowed)
        return x if out_dtype is None else x.with_dtype(out_dtype)

    @op.kernel("reference")
    def _kernel(x):
        return _as(fn(_widen(x)), x.dtype if out_dtype is None else out_dtype.np)

    return op


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp of a non-positive argument only, so nothing overflows for large |x|
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.zeros((), x.dtype))


def _erf(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf  # SciPy is a dependency already (BLAS); imported late
    return erf(x)


Neg = _declare_unary("Neg", np.negative, _NUMERIC, "Elementwise -x.")
Abs = _declare_unary("Abs", np.abs, _NUMERIC, "Elementwise |x|.")
Square = _declare_unary("Square", np.square, _NUMERIC, "Elementwise x * x.")
Sign = _declare_unary("Sign", np.sign, _NUMERIC, "Elementwise sign: -1, 0 or 1.")
Relu = _declare_unary("Relu", _relu, _NUMERIC, "Elementwise max(x, 0).")
Exp = _declare_unary("Exp", np.exp, _FLOAT, "Elementwise e**x.")
Log = _declare_unary("Log", np.log, _FLOAT, "Elementwise natural logarithm.")
Log1p = _declare_unary("Log1p", np.log1p, _FLOAT, "Elementwise log(1 + x), accurate near 0.")
Expm1 = _declare_unary("Expm1", np.expm1, _FLOAT, "Elementwise e**x - 1, accurate near 0.")
Erf = _declare_unary("Erf", _erf, _FLOAT, "Elementwise error function 2/sqrt(pi) * "
                     "integral of exp(-t**2) from 0 to x.")
Sqrt = _declare_unary("Sqrt", np.sqrt, _FLOAT, "Elementwise square root.")
Rsqrt = _declare_unary("Rsqrt", lambda x: 1 / np.sqrt(x), _FLOAT,
                       "Elementwise 1 / sqrt(x).")
Sin = _declare_unary("Sin", np.sin, _FLOAT, "Elementwise sine.")
Cos = _declare_unary("Cos", np.cos, _FLOAT, "Elementwise cosine.")
Tanh = _declare_unary("Tanh", np.tanh, _FLOAT, "Elementwise hyperbolic tangent.")
Sigmoid = _declare_unary("Sigmoid", _sigmoid, _FLOAT, "Elementwise 1 / (1 + exp(-x)).")
Floor = _declare_unary("Floor", np.floor, _FLOAT, "Elementwise largest integer <= x.")
Ceil = _declare_unary("Ceil", np.ceil, _FLOAT, "Elementwise smallest integer >= x.")
Reciprocal = _declare_unary("Reciprocal", np.reciprocal, _FLOAT, "Elementwise 1 / x.")
LogicalNot = _declare_unary("LogicalNot", np.logical_not, _BOOL, "Elementwise not x.")
Tan = _declare_unary("Tan", np.tan, _FLOAT, "Elementwise tangent.")
Asin = _declare_unary("Asin", np.arcsin, _FLOAT,
                      "Elementwise inverse sine in [-pi/2, pi/2] (NaN outside [-1, 1]).")
Acos = _declare_unary("Acos", np.arccos, _FLOAT,
                      "Elementwise inverse cosine in [0, pi] (NaN outside [-1, 1]).")
Atan = _declare_unary("Atan", np.arctan, _FLOAT, "Elementwise inverse tangent.")
Sinh = _declare_unary("Sinh", np.sinh, _FLOAT, "Elementwise hyperbolic sine.")
Cosh = _declare_unary("Cosh", np.cosh, _FLOAT, "Elementwise hyperbolic cosine.")
# np.rint rounds halves to even (TF's Round, "banker's rounding"); integers are unchanged
Round = _declare_unary("Round", np.rint, _NUMERIC,
                       "Elementwise nearest integer, halves to even (integers unchanged).")
IsNan = _declare_unary("IsNan", np.isnan, _FLOAT, "Elementwise x is NaN (bool).",
                       out_dtype=bool_)
IsInf = _declare_unary("IsInf", np.isinf, _FLOAT, "Elementwise x is +inf or -inf (bool).",
                       out_dtype=bool_)
IsFinite = _declare_unary("IsFinite", np.isfinite, _FLOAT,
                          "Elementwise x is neither infinite nor NaN (bool).", out_dtype=bool_)


# ----------------------------------------------------------------------- binary elementwise

def _declare_binary(name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
                    allowed: tuple[tuple[DType, ...], str], doc: str, *,
                    out_dtype: DType | None = None, commutative: bool = False,
                    check: Callable[[np.ndarray, np.ndarray], None] | None = None,
                    inputs: tuple[str, str] = ("x", "y")) -> OpDef:
    """Declare a broadcasting elementwise op ``z = fn(x, y)``.

    The result has the operands' dtype, or `out_dtype` (bool for comparisons); `check`
    validates run-time values (e.g. integer division by zero) before `fn` runs; `inputs`
    names the operands in errors (Atan2's are y and x, in that order, as in TF).
    """
    tags = ["elementwise", "binary"] + (["commutative"] if commutative else [])
    roles = list(inputs)
    op = def_op(name, roles, tags=tags, doc=doc)

    @op.infer
    def _infer(x, y):
        x, y = expect_tensor(x, roles[0]), expect_tensor(y, roles[1])
        dtype = same_dtype([x, y], roles)
        _check_allowed([x, y], roles, allowed)
        return TensorType(out_dtype or dtype, _broadcast([x, y], roles))

    @op.kernel("reference")
    def _kernel(x, y):
        shape = _check_runtime_broadcast(x.shape, y.shape)
        if check is not None and 0 not in shape:
            check(x, y)
        result = fn(_widen(x), _widen(y))
        return _as(result, out_dtype.np if out_dtype is not None else x.dtype)

    return op


def _is_int(x: np.ndarray) -> bool:
    return x.dtype.kind in "iu"


def _check_divisor(x: np.ndarray, y: np.ndarray) -> None:
    # NumPy would quietly return 0 (and hardware division would trap): TF raises instead
    if _is_int(y) and not np.all(y):
        raise InvalidArgumentError("integer division by zero")


def _check_int_exponent(x: np.ndarray, y: np.ndarray) -> None:
    if y.dtype.kind == "i" and np.any(y < 0):
        raise InvalidArgumentError("integers to negative integer powers are not allowed")


def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x / y; for integers C's division, which truncates toward zero (TF's Div)."""
    if not _is_int(x):
        return np.true_divide(x, y)
    q = np.floor_divide(x, y)
    # floor and truncation differ by one where the division is inexact and the signs differ
    inexact = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
    return q + inexact.astype(q.dtype)


def _floor_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """TF's FloorDiv: Python's // for integers; for floats ``floor(x / y)``, the rounded
    quotient floored (1.0 // 0.1 is 10 and 0.2 // -inf is -0.0, where NumPy's divmod,
    exact in real arithmetic, gives 9 and -1)."""
    return np.floor_divide(x, y) if _is_int(x) else np.floor(np.true_divide(x, y))


def _floor_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """TF's FloorMod: Python's % for integers; for floats ``fmod(x, y)``, plus y where
    that is nonzero with the other sign than y. A zero keeps fmod's sign, x's (NumPy's
    remainder gives it y's: TF's floormod(-2.0, 1.0) is -0.0)."""
    if _is_int(x):
        return np.remainder(x, y)
    r = np.fmod(x, y)
    return np.where((r != 0) & ((r < 0) != (y < 0)), r + y, r)


def _squared_difference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    d = np.subtract(x, y)
    return d * d


Add = _declare_binary("Add", np.add, _NUMERIC, "Elementwise x + y.", commutative=True)
Sub = _declare_binary("Sub", np.subtract, _NUMERIC, "Elementwise x - y.")
Mul = _declare_binary("Mul", np.multiply, _NUMERIC, "Elementwise x * y.", commutative=True)
Div = _declare_binary("Div", _div, _NUMERIC,
                      "Elementwise x / y: true division for floats, truncating division for "
                      "integers (tw.divide casts integers to float first).",
                      check=_check_divisor)
FloorDiv = _declare_binary("FloorDiv", _floor_div, _NUMERIC,
                           "Elementwise floor(x / y) (TensorFlow's: integers as Python's //, "
                           "floats the rounded quotient floored).", check=_check_divisor)
FloorMod = _declare_binary("FloorMod", _floor_mod, _NUMERIC,
                           "Elementwise modulo with the sign of y (TensorFlow's: integers as "
                           "Python's %, floats fmod(x, y) + y where their signs differ).",
                           check=_check_divisor)
Pow = _declare_binary("Pow", np.power, _NUMERIC, "Elementwise x ** y.",
                      check=_check_int_exponent)
Maximum = _declare_binary("Maximum", np.maximum, _NUMERIC,
                          "Elementwise max(x, y) (NaN if either is NaN).", commutative=True)
Minimum = _declare_binary("Minimum", np.minimum, _NUMERIC,
                          "Elementwise min(x, y) (NaN if either is NaN).", commutative=True)
SquaredDifference = _declare_binary("SquaredDifference", _squared_difference, _NUMERIC,
                                    "Elementwise (x - y) ** 2.", commutative=True)
Equal = _declare_binary("Equal", np.equal, _ANY, "Elementwise x == y.", out_dtype=bool_,
                        commutative=True)
NotEqual = _declare_binary("NotEqual", np.not_equal, _ANY, "Elementwise x != y.",
                           out_dtype=bool_, commutative=True)
Less = _declare_binary("Less", np.less, _NUMERIC, "Elementwise x < y.", out_dtype=bool_)
LessEqual = _declare_binary("LessEqual", np.less_equal, _NUMERIC, "Elementwise x <= y.",
                            out_dtype=bool_)
Greater = _declare_binary("Greater", np.greater, _NUMERIC, "Elementwise x > y.",
                          out_dtype=bool_)
GreaterEqual = _declare_binary("GreaterEqual", np.greater_equal, _NUMERIC,
                               "Elementwise x >= y.", out_dtype=bool_)
LogicalAnd = _declare_binary("LogicalAnd", np.logical_and, _BOOL, "Elementwise x and y.",
                             commutative=True)
LogicalOr = _declare_binary("LogicalOr", np.logical_or, _BOOL, "Elementwise x or y.",
                            commutative=True)
Atan2 = _declare_binary("Atan2", np.arctan2, _FLOAT,
                        "Elementwise arctangent of y / x in [-pi, pi], using the signs of "
                        "both to pick the quadrant.", inputs=("y", "x"))


# ------------------------------------------------------------------------------- AddN

AddN = def_op("AddN", ["*inputs"], tags=["elementwise", "commutative"],
              doc="The elementwise sum of one or more tensors of one dtype and shape "
                  "(no broadcasting).")


def _merge_shapes(types: Sequence[TensorType], roles: Sequence[str]) -> tuple:
    """The most specific shape compatible with every one of `types` (same rank, and equal
    dims where both are known)."""
    merged = list(types[0].shape)
    for t in types[1:]:
        if t.rank != len(merged) or any(a is not None and b is not None and a != b
                                        for a, b in zip(merged, t.shape)):
            desc = ", ".join(f"{role} is {tt}" for tt, role in zip(types, roles))
            raise ShapeError(f"operands must have the same shape: {desc}")
        merged = [b if a is None else a for a, b in zip(merged, t.shape)]
    return tuple(merged)


@AddN.infer
def _add_n_infer(*inputs):
    if not inputs:
        raise ShapeError("needs at least one input")
    roles = [f"inputs[{i}]" for i in range(len(inputs))]
    types = [expect_tensor(t, r) for t, r in zip(inputs, roles)]
    dtype = same_dtype(types, roles)
    _check_allowed(types, roles, _NUMERIC)
    return TensorType(dtype, _merge_shapes(types, roles))


@AddN.kernel("reference")
def _add_n_kernel(*inputs):
    shapes = {a.shape for a in inputs}
    if len(shapes) > 1:
        raise InvalidArgumentError("operands must have the same shape, got "
                                   + ", ".join(str(list(a.shape)) for a in inputs))
    total = _widen(inputs[0])
    for a in inputs[1:]:
        total = total + _widen(a)
    return _as(total, inputs[0].dtype)


# ------------------------------------------------------------------------------ Select

Select = def_op("Select", ["condition", "x", "y"], tags=["elementwise"],
                doc="Elementwise `condition ? x : y`; all three broadcast together "
                    "(TensorFlow's where_v2).")


@Select.infer
def _select_infer(cond, x, y):
    roles = ["condition", "x", "y"]
    cond, x, y = (expect_tensor(t, r) for t, r in zip((cond, x, y), roles))
    if cond.dtype is not bool_:
        raise DTypeError(f"condition must be bool, got condition is {cond}")
    dtype = same_dtype([x, y], roles[1:])
    return TensorType(dtype, _broadcast([cond, x, y], roles))


@Select.kernel("reference")
def _select_kernel(cond, x, y):
    _check_runtime_broadcast(cond.shape, x.shape, y.shape)
    return _as(np.where(cond, x, y), x.dtype)


# -------------------------------------------------------------------------------- Cast

Cast = def_op("Cast", ["x"], {"dtype": attr("dtype")}, tags=["elementwise", "unary"],
              doc="Convert to `dtype`: floats to integers truncate toward zero, anything "
                  "to bool is `x != 0`, bool to numbers gives 0 or 1.")


@Cast.infer
def _cast_infer(x, *, dtype):
    t = expect_tensor(x, "x")
    if t.dtype.is_string != dtype.is_string and (t.dtype.is_string or dtype.is_string):
        # (NumPy's astype would parse b"1.5" into 1.5; TensorFlow's Cast refuses strings)
        raise DTypeError(f"Cast does not convert between strings and numbers, got {t} to "
                         f"{dtype.name}")
    return t.with_dtype(dtype)


@Cast.kernel("reference")
def _cast_kernel(x, *, dtype):
    target = dtype.np
    if dtype is bool_:
        return _as(_widen(x) != 0, target)
    if x.dtype.kind == "f" or x.dtype in _HALF_FLOATS:
        if dtype.is_integer:
            # astype already truncates, but only trunc() is defined for every float value
            return _as(np.trunc(_widen(x)), target)
    return _as(x, target)


# -------------------------------------------------------------------------- reductions

def _reduced_shape(shape: tuple, axes: tuple[int, ...], keepdims: bool) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduction_axes(x: TensorType, axes: Sequence[int] | None) -> tuple[int, ...]:
    """Normalised axes; a scalar can only be reduced over no axes (as in NumPy and TF)."""
    if x.rank == 0 and axes:
        raise ShapeError(f"cannot reduce over axes {list(axes)} of a scalar: input is {x}")
    return normalize_axes(axes, x.rank)


def _count(x: np.ndarray, axes: tuple[int, ...]) -> int:
    """How many elements each output element of a reduction over `axes` combines."""
    return int(np.prod([x.shape[a] for a in axes], dtype=np.int64))


def _float_acc(x: np.ndarray) -> np.ndarray:
    # float sums and products accumulate in float64: the oracle should be the exact answer
    # rounded once, whatever order a compiled target adds in
    return x.astype(np.float64) if x.dtype.kind == "f" or x.dtype in _HALF_FLOATS else x


def _sum(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    return np.sum(_float_acc(x), axis=axes, keepdims=keepdims)


def _prod(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    return np.prod(_float_acc(x), axis=axes, keepdims=keepdims)


def _mean(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    n = _count(x, axes)
    if not _is_int(x):
        with np.errstate(invalid="ignore", divide="ignore"):
            return _sum(x, axes, keepdims) / n  # empty: NaN, as in TF
    total = np.sum(x, axis=axes, keepdims=keepdims, dtype=np.int64)
    if n == 0:
        if total.size:
            raise InvalidArgumentError("Mean of an integer tensor over axes with no "
                                       f"elements (input shape {list(x.shape)}, axes {list(axes)})")
        return total
    # TF's integer mean divides the sum by the count in C, truncating toward zero
    return _div(total, np.int64(n))


def _extremum(np_fn: Callable, label: str) -> Callable:
    def reduce(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
        out_shape = _reduced_shape(x.shape, axes, keepdims)
        if int(np.prod(out_shape, dtype=np.int64)) == 0:
            return np.zeros(out_shape, x.dtype)
        if _count(x, axes) == 0:
            raise InvalidArgumentError(
                f"{label} over axes with no elements is undefined (input shape "
                f"{list(x.shape)}, axes {list(axes)})")
        return np_fn(_widen(x), axis=axes, keepdims=keepdims)
    return reduce


def _declare_reduction(name: str, fn: Callable, allowed: tuple[tuple[DType, ...], str],
                       doc: str) -> OpDef:
    """Declare a reduction over attribute `axes` (None: every axis), keeping reduced axes
    as size 1 when `keepdims`; the result keeps the input dtype."""
    op = def_op(name, ["input"], {"axes": attr("ints", None), "keepdims": attr("bool", False)},
                tags=["reduction"], doc=doc)

    @op.infer
    def _infer(x, *, axes, keepdims):
        x = expect_tensor(x, "input")
        _check_allowed([x], ["input"], allowed)
        return x.with_shape(_reduced_shape(x.shape, _reduction_axes(x, axes), keepdims))

    @op.kernel("reference")
    def _kernel(x, *, axes, keepdims):
        return _as(fn(x, normalize_axes(axes, x.ndim), keepdims), x.dtype)

    return op


Sum = _declare_reduction("Sum", _sum, _NUMERIC, "Sum over `axes`.")
Mean = _declare_reduction("Mean", _mean, _NUMERIC,
                          "Mean over `axes`; integer means truncate toward zero (TF).")
Max = _declare_reduction("Max", _extremum(np.max, "Max"), _NUMERIC,
                         "Maximum over `axes` (an error over axes with no elements).")
Min = _declare_reduction("Min", _extremum(np.min, "Min"), _NUMERIC,
                         "Minimum over `axes` (an error over axes with no elements).")
Prod = _declare_reduction("Prod", _prod, _NUMERIC, "Product over `axes`.")
All = _declare_reduction("All", lambda x, a, k: np.all(x, axis=a, keepdims=k), _BOOL,
                         "Logical and over `axes`.")
Any = _declare_reduction("Any", lambda x, a, k: np.any(x, axis=a, keepdims=k), _BOOL,
                         "Logical or over `axes`.")


# ------------------------------------------------------------------------ ArgMax/ArgMin

def _declare_arg_reduction(name: str, np_fn: Callable, doc: str) -> OpDef:
    """Declare ArgMax/ArgMin: the index of the first extreme element along `axis`."""
    op = def_op(name, ["input"], {"axis": attr("int", 0), "output_type": attr("dtype", int64)},
                tags=["reduction"], doc=doc)

    @op.infer
    def _infer(x, *, axis, output_type):
        x = expect_tensor(x, "input")
        _check_allowed([x], ["input"], _NUMERIC)
        if x.rank == 0:
            raise ShapeError(f"needs a tensor of rank >= 1, got input is {x}")
        if output_type not in (int32, int64):
            raise DTypeError(f"output_type must be int32 or int64, got {output_type.ir_name}")
        ax = normalize_axis(axis, x.rank)
        return TensorType(output_type, x.shape[:ax] + x.shape[ax + 1:])

    @op.kernel("reference")
    def _kernel(x, *, axis, output_type):
        ax = normalize_axis(axis, x.ndim)
        out_shape = x.shape[:ax] + x.shape[ax + 1:]
        if int(np.prod(out_shape, dtype=np.int64)) == 0:
            return np.zeros(out_shape, output_type.np)
        if x.shape[ax] == 0:
            raise InvalidArgumentError(f"{name} along axis {axis} of a tensor of shape "
                                       f"{list(x.shape)}: that axis has no elements")
        return _as(np_fn(_widen(x), axis=ax), output_type.np)

    return op


ArgMax = _declare_arg_reduction("ArgMax", np.argmax,
                                "Index of the largest element along `axis` (first on ties).")
ArgMin = _declare_arg_reduction("ArgMin", np.argmin,
                                "Index of the smallest element along `axis` (first on ties).")


# ------------------------------------------------------------------------------ MatMul

MatMul = def_op("MatMul", ["a", "b"],
                {"transpose_a": attr("bool", False), "transpose_b": attr("bool", False)},
                doc="Matrix product over the last two axes, optionally transposing either "
                    "operand; leading (batch) axes broadcast like np.matmul.")


def _matmul_dims(t: TensorType, transpose: bool) -> tuple:
    """(rows, cols) of the matrices in `t` after the optional transpose."""
    rows, cols = t.shape[-2:]
    return (cols, rows) if transpose else (rows, cols)


@MatMul.infer
def _matmul_infer(a, b, *, transpose_a, transpose_b):
    a, b = expect_tensor(a, "a"), expect_tensor(b, "b")
    for t, role in ((a, "a"), (b, "b")):
        if t.rank < 2:
            raise ShapeError(f"operands must have rank >= 2, got {role} is {t}")
    dtype = same_dtype([a, b], ["a", "b"])
    _check_allowed([a, b], ["a", "b"], _NUMERIC)
    m, ka = _matmul_dims(a, transpose_a)
    kb, n = _matmul_dims(b, transpose_b)
    if ka is not None and kb is not None and ka != kb:
        flags = "".join(f", {f}=True" for f, on in (("transpose_a", transpose_a),
                                                      ("transpose_b", transpose_b)) if on)
        raise ShapeError(f"inner dimensions differ: a is {a}, b is {b}{flags}")
    try:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ShapeError:
        raise ShapeError(f"batch dimensions cannot be broadcast together: a is {a}, "
                         f"b is {b}") from None
    return TensorType(dtype, batch + (m, n))


@MatMul.kernel("reference")
def _matmul_kernel(a, b, *, transpose_a, transpose_b):
    a2 = np.swapaxes(a, -1, -2) if transpose_a else a
    b2 = np.swapaxes(b, -1, -2) if transpose_b else b
    if a2.shape[-1] != b2.shape[-2]:
        raise InvalidArgumentError(f"inner dimensions differ: a has shape {list(a.shape)}, "
                                   f"b has shape {list(b.shape)}")
    _check_runtime_broadcast(a2.shape[:-2], b2.shape[:-2], what="batch dimensions")
    return _as(np.matmul(_widen(a2), _widen(b2)), a.dtype)


# ------------------------------------------------------------------------ Cumsum/Cumprod

def _declare_scan(name: str, np_fn: Callable, identity: int, doc: str) -> OpDef:
    """Declare a cumulative op along `axis`; `exclusive` leaves element i out of its own
    result (the first result is `identity`), `reverse` scans from the end."""
    op = def_op(name, ["x"], {"axis": attr("int", 0), "exclusive": attr("bool", False),
                              "reverse": attr("bool", False)}, doc=doc)

    @op.infer
    def _infer(x, *, axis, exclusive, reverse):
        x = expect_tensor(x, "x")
        _check_allowed([x], ["x"], _NUMERIC)
        if x.rank == 0:
            raise ShapeError(f"needs a tensor of rank >= 1 to scan along axis {axis}, "
                             f"got x is {x}")
        normalize_axis(axis, x.rank)
        return x

    @op.kernel("reference")
    def _kernel(x, *, axis, exclusive, reverse):
        ax = normalize_axis(axis, x.ndim)
        # floats accumulate in float64 and round once (the oracle's convention for sums
        # and products); integers wrap around in their own dtype, as in TF
        acc = _float_acc(x)
        y = np.flip(acc, ax) if reverse else acc
        if exclusive and y.shape[ax]:
            pad = [(0, 0)] * x.ndim
            pad[ax] = (1, 0)
            y = np.pad(np.take(y, np.arange(y.shape[ax] - 1), axis=ax), pad,
                       constant_values=identity)
        with np.errstate(over="ignore"):
            y = np_fn(y, axis=ax, dtype=acc.dtype)
        y = np.flip(y, ax) if reverse else y
        return _as(y, x.dtype)

    return op


Cumsum = _declare_scan("Cumsum", np.cumsum, 0,
                       "Cumulative sum along `axis` (optionally exclusive and/or reversed).")
Cumprod = _declare_scan("Cumprod", np.cumprod, 1,
                        "Cumulative product along `axis` (optionally exclusive and/or "
                        "reversed).")
