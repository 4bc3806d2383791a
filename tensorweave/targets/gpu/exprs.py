"""Python source for elementwise ops on scalars, as kernel code computes them.

Each emitter takes already computed operands (local variable names, typed) and returns
an expression of the op's result; emitters that need statements (integer division's
zero check) write them with the `Writer`. The caller wraps the expression in the output
type, so small integers wrap around as in NumPy and float32 stays float32.

The semantics are the reference kernels' (and the cpu target's, `cpu/elementwise.py`):
Maximum/Minimum propagate NaN, comparisons are ordered except ``!=``, integer division
and modulo by zero and integers to negative powers set the kernel's status (the step
raises InvalidArgumentError with the cpu target's message and the op's line) instead of
trapping, Div of integers truncates toward zero, FloorDiv/FloorMod of floats are
TensorFlow's (``floor(x / y)``; ``fmod`` moved to the sign of y). Status codes are the
cpu target's (`STATUS_*` + 4 * the op's index in its cluster), so
`cpu.fused.FusedKernel.status_error` decodes both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...compiler.dtypes import DType, bool_
from ..cpu.elementwise import STATUS_DIV_BY_ZERO, STATUS_NEGATIVE_POWER
from .source import Writer, numba_type


@dataclass
class Op:
    """One op as the emitters see it."""

    op: str
    attrs: dict[str, Any]
    in_dtypes: tuple[DType, ...]
    out_dtype: DType
    index: int  # position in its cluster, reported with a failing status


class Scope:
    """Emission context: the writer and the status array's name (None: the kernel cannot
    fail)."""

    def __init__(self, w: Writer, status: str | None = None) -> None:
        self.w = w
        self.status = status

    def const(self, dtype: DType, value: Any) -> str:
        if dtype is bool_:
            return "True" if value else "False"
        v = float(value) if dtype.kind == "float" else int(value)
        return f"{numba_type(dtype)}({v!r})"

    def fail_if(self, cond: str, code: int, op: Op) -> None:
        if self.status is None:
            raise ValueError(f"{op.op} can fail but its kernel has no status")
        self.w(f"if {cond}:")
        self.w(f"    {self.status}[0] = {code + 4 * op.index}")


Emitter = Callable[[Scope, Op, list[str]], str]
EMITTERS: dict[str, Emitter] = {}


def emitter(*names: str) -> Callable[[Emitter], Emitter]:
    def deco(fn: Emitter) -> Emitter:
        for n in names:
            EMITTERS[n] = fn
        return fn
    return deco


def _float(op: Op) -> bool:
    return op.in_dtypes[0].kind == "float"


# floor/ceil through math.floor would give an integer (undefined for inf and NaN); values
# at or beyond 2**mantissa bits are integers already, inf and NaN give themselves.
_INTEGRAL = {32: "8388608.0", 64: "4503599627370496.0"}


def _integral(fn: str, x: str, dtype: DType) -> str:
    """``math.floor(x)`` or ``math.ceil(x)`` as a float of `x`'s sign. libdevice's floorf
    and ceilf give that; the simulator's are Python's, which return an int (so -0.0 for
    floor(-0.0) or ceil(-0.5) is lost) and raise for inf and NaN, which are their own
    results, as every value beyond the mantissa is. The result always has x's sign."""
    limit = _INTEGRAL[dtype.bits]
    t = numba_type(dtype)
    return f"({t}(math.copysign(math.{fn}({x}), {x})) if abs({x}) < {limit} else {x})"


def _float_divmod(cx: Scope, op: Op, a: str, b: str) -> tuple[str, str]:
    """TensorFlow's float FloorDiv and FloorMod, inline (device functions would need a
    driver to compile ahead of time): ``floor(a / b)`` and ``fmod(a, b)``, plus b where
    that is nonzero with the other sign than b (a zero keeps a's sign)."""
    t = numba_type(op.out_dtype)
    w = cx.w
    quotient, mod = w.tmp("q"), w.tmp("mod")
    w(f"{quotient} = {t}({a} / {b})")
    # fmod of an infinite dividend or by zero is NaN (libdevice); the simulator's Python
    # math.fmod raises there instead
    w(f"if {b} == 0 or math.isinf({a}):")
    w(f"    {mod} = {t}(math.nan)")
    w("else:")
    w(f"    {mod} = {t}(math.fmod({a}, {b}))")
    w(f"if {mod} != 0 and (({b} < 0) != ({mod} < 0)):")
    w(f"    {mod} = {t}({mod} + {b})")
    return _integral("floor", quotient, op.out_dtype), mod


@emitter("Identity", "StopGradient", "BroadcastTo")
def _identity(cx, op, a):
    return a[0]


@emitter("ZerosLike", "OnesLike")
def _fill_like(cx, op, a):
    return cx.const(op.out_dtype, 0 if op.op == "ZerosLike" else 1)


@emitter("Neg")
def _neg(cx, op, a):
    return f"-{a[0]}"


@emitter("Abs")
def _abs(cx, op, a):
    return a[0] if op.out_dtype.kind == "uint" else f"abs({a[0]})"


@emitter("Square")
def _square(cx, op, a):
    return f"{a[0]} * {a[0]}"


@emitter("Sign")
def _sign(cx, op, a):
    x, dt = a[0], op.out_dtype
    one, minus, zero = cx.const(dt, 1), cx.const(dt, -1 if dt.kind != "uint" else 0), \
        cx.const(dt, 0)
    if dt.kind == "float":  # NaN gives itself, +-0 give +0 (np.sign, TensorFlow)
        rest = f"({x} if {x} != {x} else {zero})"
        return f"({one} if {x} > {zero} else ({minus} if {x} < {zero} else {rest}))"
    if dt.kind == "uint":
        return f"({one} if {x} != {zero} else {zero})"
    return f"({one} if {x} > {zero} else ({minus} if {x} < {zero} else {zero}))"


@emitter("Relu")
def _relu(cx, op, a):
    if op.out_dtype.kind == "uint":
        return a[0]
    zero = cx.const(op.out_dtype, 0)
    # NaN stays NaN; -0.0 gives +0.0, as np.maximum(x, 0) and TensorFlow do
    return f"({zero} if {a[0]} <= {zero} else {a[0]})"


def _math(name: str) -> Emitter:
    def emit(cx, op, a):
        return f"math.{name}({a[0]})"
    return emit


for _op, _fn in (("Log", "log"), ("Sqrt", "sqrt"), ("Sin", "sin"), ("Cos", "cos"),
                 ("Exp", "exp"), ("Log1p", "log1p"), ("Tanh", "tanh"), ("Expm1", "expm1"),
                 ("Erf", "erf"), ("Tan", "tan"), ("Asin", "asin"), ("Acos", "acos"),
                 ("Atan", "atan"), ("Sinh", "sinh"), ("Cosh", "cosh")):
    EMITTERS[_op] = _math(_fn)


@emitter("Atan2")
def _atan2(cx, op, a):
    return f"math.atan2({a[0]}, {a[1]})"  # operands are (y, x), as in C


@emitter("Round")
def _round(cx, op, a):
    if not _float(op):
        return a[0]
    # halves to even (np.rint). x - floor(x) is exact, so the tie test is too; copysign
    # keeps the sign of zero (-0.4 -> -0.0). Large, infinite and NaN values are their own
    # rounding (and math.floor would give an integer, undefined for them).
    x, w = a[0], cx.w
    t = numba_type(op.out_dtype)
    limit = _INTEGRAL[op.out_dtype.bits]
    r, f, d = w.tmp("r"), w.tmp("f"), w.tmp("d")
    w(f"{r} = {x}")
    w(f"if abs({x}) < {limit}:")
    w(f"    {f} = {t}(math.floor({x}))")
    w(f"    {d} = {x} - {f}")
    w(f"    if {d} > {t}(0.5) or ({d} == {t}(0.5) and math.fmod({f}, {t}(2.0)) != 0):")
    w(f"        {f} = {f} + {t}(1.0)")
    w(f"    {r} = {t}(math.copysign({f}, {x}))")
    return r


@emitter("IsNan")
def _is_nan(cx, op, a):
    return f"math.isnan({a[0]})"


@emitter("IsInf")
def _is_inf(cx, op, a):
    return f"math.isinf({a[0]})"


@emitter("IsFinite")
def _is_finite(cx, op, a):
    return f"not (math.isinf({a[0]}) or math.isnan({a[0]}))"


@emitter("Floor", "Ceil")
def _floor_ceil(cx, op, a):
    return _integral("floor" if op.op == "Floor" else "ceil", a[0], op.out_dtype)


@emitter("Rsqrt")
def _rsqrt(cx, op, a):
    return f"{cx.const(op.out_dtype, 1.0)} / math.sqrt({a[0]})"


@emitter("Reciprocal")
def _reciprocal(cx, op, a):
    return f"{cx.const(op.out_dtype, 1.0)} / {a[0]}"


@emitter("Sigmoid")
def _sigmoid(cx, op, a):
    # the reference kernel's formula: exp of a non-positive argument only
    x, dt = a[0], op.out_dtype
    e = cx.w.tmp("e")
    cx.w(f"{e} = {numba_type(dt)}(math.exp(-abs({x})))")
    one = cx.const(dt, 1.0)
    return f"({one} / ({one} + {e}) if {x} >= {cx.const(dt, 0.0)} else {e} / ({one} + {e}))"


@emitter("LogicalNot")
def _not(cx, op, a):
    return f"not {a[0]}"


@emitter("LogicalAnd")
def _and(cx, op, a):
    return f"({a[0]} and {a[1]})"


@emitter("LogicalOr")
def _or(cx, op, a):
    return f"({a[0]} or {a[1]})"


# Bitwise ops of integers (compiler/ops/bitwise.py). numba shifts in 64 bits (the wider
# of the operand's type and int64/uint64: sign- or zero-extended), so a shift by y in
# [0, bits) of the dtype, converted back, is the dtype's shift. A shift by y outside
# that range is poison in LLVM (and PTX clamps it at the register's width, not the
# dtype's), so the amount is replaced by one in range and the result by NumPy's: 0, or
# for a right shift of a signed value the sign fill, which a shift by bits - 1 gives (the
# cpu target's emitters do the same in LLVM IR).
@emitter("BitwiseAnd")
def _bit_and(cx, op, a):
    return f"{a[0]} & {a[1]}"


@emitter("BitwiseOr")
def _bit_or(cx, op, a):
    return f"{a[0]} | {a[1]}"


@emitter("BitwiseXor")
def _bit_xor(cx, op, a):
    return f"{a[0]} ^ {a[1]}"


@emitter("Invert")
def _invert(cx, op, a):
    return f"~{a[0]}"


def _shift_in_range(op: Op, y: str) -> str:
    bits = op.out_dtype.bits
    return f"{y} < {bits}" if op.in_dtypes[1].kind == "uint" else f"0 <= {y} < {bits}"


@emitter("LeftShift")
def _left_shift(cx, op, a):
    x, y = a
    ok = cx.w.tmp("ok")
    cx.w(f"{ok} = {_shift_in_range(op, y)}")
    zero = cx.const(op.out_dtype, 0)
    return f"(({x} << ({y} if {ok} else {cx.const(op.in_dtypes[1], 0)})) if {ok} else {zero})"


@emitter("RightShift")
def _right_shift(cx, op, a):
    x, y = a
    ok = cx.w.tmp("ok")
    cx.w(f"{ok} = {_shift_in_range(op, y)}")
    if op.out_dtype.kind == "int":
        fill = cx.const(op.in_dtypes[1], op.out_dtype.bits - 1)
        return f"({x} >> ({y} if {ok} else {fill}))"
    amount = f"({y} if {ok} else {cx.const(op.in_dtypes[1], 0)})"
    return f"(({x} >> {amount}) if {ok} else {cx.const(op.out_dtype, 0)})"


def _binary(symbol: str) -> Emitter:
    def emit(cx, op, a):
        return f"{a[0]} {symbol} {a[1]}"
    return emit


EMITTERS["Add"] = EMITTERS["BiasAdd"] = _binary("+")
EMITTERS["Sub"] = _binary("-")
EMITTERS["Mul"] = _binary("*")
for _op, _sym in (("Equal", "=="), ("NotEqual", "!="), ("Less", "<"), ("LessEqual", "<="),
                  ("Greater", ">"), ("GreaterEqual", ">=")):
    EMITTERS[_op] = _binary(_sym)


@emitter("AddN")
def _add_n(cx, op, a):
    # left to right, like the reference kernel; each partial sum rounded to the dtype
    total = a[0]
    t = numba_type(op.out_dtype)
    for x in a[1:]:
        total = f"{t}({total} + {x})"
    return total


@emitter("SquaredDifference")
def _squared_difference(cx, op, a):
    d = cx.w.tmp("d")
    cx.w(f"{d} = {numba_type(op.out_dtype)}({a[0]} - {a[1]})")
    return f"{d} * {d}"


@emitter("Maximum", "Minimum")
def _extremum(cx, op, a):
    x, y = a
    cmp = ">" if op.op == "Maximum" else "<"
    if op.out_dtype.kind == "float":  # NaN in either operand wins
        return f"({x} if ({x} {cmp} {y} or {x} != {x}) else {y})"
    return f"({x} if {x} {cmp} {y} else {y})"


@emitter("Select")
def _select(cx, op, a):
    return f"({a[1]} if {a[0]} else {a[2]})"


def _safe_divisor(cx: Scope, op: Op, y: str) -> str:
    """For an integer divisor: record division by zero, return a divisor that is never 0."""
    cx.fail_if(f"{y} == 0", STATUS_DIV_BY_ZERO, op)
    safe = cx.w.tmp("q")
    cx.w(f"{safe} = {y} if {y} != 0 else {cx.const(op.in_dtypes[1], 1)}")
    return safe


def _floor_quotient(op: Op, x: str, y: str) -> str:
    """``x // y`` of integers (y nonzero). numba's division gives 0 for the int64 minimum
    divided by -1 (its guard against the x86 trap), NumPy the wrapped quotient, the
    minimum itself: so a divisor of -1 negates, wrapping. Narrower ints are divided in
    int64 by numba, where the quotient is exact and the output conversion wraps it."""
    if op.in_dtypes[0].kind == "int" and op.in_dtypes[0].bits == 64:
        return f"(-{x} if {y} == -1 else {x} // {y})"
    return f"{x} // {y}"


@emitter("Div")
def _div(cx, op, a):
    x, y = a
    if _float(op):
        return f"{x} / {y}"
    y = _safe_divisor(cx, op, y)
    q = cx.w.tmp("q")
    cx.w(f"{q} = {_floor_quotient(op, x, y)}")
    # floor and truncation differ by one where the division is inexact and signs differ
    cx.w(f"if {x} % {y} != 0 and (({x} < 0) != ({y} < 0)):")
    cx.w(f"    {q} += 1")
    return q


@emitter("FloorDiv", "FloorMod")
def _floor_div_mod(cx, op, a):
    x, y = a
    if _float(op):
        div, mod = _float_divmod(cx, op, x, y)
        return div if op.op == "FloorDiv" else mod
    y = _safe_divisor(cx, op, y)
    return _floor_quotient(op, x, y) if op.op == "FloorDiv" else f"{x} % {y}"


@emitter("Pow")
def _pow(cx, op, a):
    x, y = a
    if _float(op):
        return f"{x} ** {y}"
    if op.in_dtypes[1].kind == "int":
        cx.fail_if(f"{y} < 0", STATUS_NEGATIVE_POWER, op)
        y_ok = cx.w.tmp("p")
        cx.w(f"{y_ok} = {y} if {y} >= 0 else {cx.const(op.in_dtypes[1], 0)}")
        y = y_ok
    # integer power by squaring, wrapping in the output type at every step
    t = numba_type(op.out_dtype)
    r, b, e = cx.w.tmp("r"), cx.w.tmp("b"), cx.w.tmp("n")
    cx.w(f"{r} = {t}(1)")
    cx.w(f"{b} = {t}({x})")
    cx.w(f"{e} = {y}")
    cx.w(f"while {e} > 0:")
    cx.w(f"    if {e} & 1:")
    cx.w(f"        {r} = {t}({r} * {b})")
    cx.w(f"    {b} = {t}({b} * {b})")
    cx.w(f"    {e} = {e} >> 1")
    return r


def _float_to_int(cx: Scope, x: str, src: DType, dst: DType) -> str:
    """Truncation toward zero, with the reference's (NumPy's on x86, the cpu target's)
    answer where C leaves it undefined: NaN and values outside a 32-bit (64-bit for
    int64) integer give that integer's minimum, and narrower integers wrap the 32-bit
    value. PTX's conversions saturate instead (NaN gives 0), and numba converts to int8
    and uint8 through 16 bits (cvt.rzi.s16/u16): uint8(-1.0) would be 0, not 255. So only
    in-range values are converted; the caller's conversion to `dst` is integer
    truncation."""
    bits = max(dst.bits, 32)
    lo = -(2 ** (bits - 1))
    ft, it = numba_type(src), f"int{bits}"
    ok, v = cx.w.tmp("ok"), cx.w.tmp("i")
    cx.w(f"{ok} = {ft}({float(lo)!r}) <= {x} < {ft}({float(-lo)!r})")  # NaN: False
    cx.w(f"{v} = {it}({x} if {ok} else {ft}(0.0)) if {ok} else {it}({lo})")
    return v


@emitter("Cast")
def _cast(cx, op, a):
    x, src, dst = a[0], op.in_dtypes[0], op.out_dtype
    if dst is bool_:
        return f"{x} != 0"
    if src.kind == "float" and dst.kind != "float":
        return _float_to_int(cx, x, src, dst)
    return x  # the caller's conversion to the output type does the rest


def emit_op(cx: Scope, op: Op, args: list[str]) -> str:
    """The expression of `op`'s result from `args`, converted to its output dtype."""
    fn = EMITTERS.get(op.op)
    if fn is None:
        raise NotImplementedError(f"the gpu target has no code for op {op.op}")
    return f"{numba_type(op.out_dtype)}({fn(cx, op, args)})"


def supports(op: str) -> bool:
    """Whether elementwise op `op` has GPU code."""
    return op in EMITTERS


__all__ = ["EMITTERS", "Op", "Scope", "emit_op", "supports"]


from . import special_exprs  # noqa: E402, F401  (registers Lgamma, Digamma, Erfc, Xlogy ...)
