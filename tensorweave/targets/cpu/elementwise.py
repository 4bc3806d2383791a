"""LLVM IR for elementwise ops, on scalars or on vectors of `width` lanes.

Each emitter computes one op of a fused cluster from already computed operand values and
reproduces the reference (NumPy) kernel's results:
- integers wrap around; integer division and modulo by zero, and integers raised to
  negative powers, set the kernel's status (the caller raises InvalidArgumentError, as
  the reference kernel does) instead of trapping; ``MIN // -1`` gives MIN as in NumPy;
- Maximum/Minimum and the Max/Min reductions propagate NaN; comparisons are ordered
  (NaN compares false) except ``!=``;
- floats to integers truncate; a value out of the integer's range (or NaN) gives the
  integer's minimum, as x86 (and so NumPy) does, never LLVM poison;
- float ops carry only the ``contract`` fast-math flag (so ``x * a + b`` may become one
  FMA, rounding once): no reassociation, no approximate functions;
- log, sqrt, sin, cos, floor, ceil, rint, fabs, pow and copysign are LLVM intrinsics (lowered
  to libm calls or instructions), and so is exp in f64; log1p, expm1, tan, asin, acos,
  atan, atan2, sinh, cosh, and erf and tanh in f64, are libm's;
- in f32, exp is inlined Cephes code (range reduction and polynomials, 1-2 ulp), tanh and
  erf rational approximations (within TANHF_MAX_ULP and ERFF_MAX_ULP ulp), all vectorize,
  where the intrinsic would be one libm call per lane; sigmoid is the reference kernel's
  formula with exp of a non-positive argument.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import llvmlite.ir as ir

from ...compiler.dtypes import DType, bool_
from ...errors import UnimplementedError

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()

FLAGS = ("contract",)

# status codes a kernel returns (times 4, plus 4 * the index of the op that failed)
STATUS_DIV_BY_ZERO = 1
STATUS_NEGATIVE_POWER = 2
STATUS_MESSAGES = {STATUS_DIV_BY_ZERO: "integer division by zero",
                   STATUS_NEGATIVE_POWER: "integers to negative integer powers are not allowed"}


def scalar_type(dtype: DType) -> ir.Type:
    """The LLVM type of one element in registers (bool is i1)."""
    if dtype.kind == "float":
        if dtype.bits == 32:
            return F32
        if dtype.bits == 64:
            return F64
        raise UnimplementedError(f"the cpu target has no native {dtype.ir_name} arithmetic yet")
    return ir.IntType(dtype.bits)


def memory_type(dtype: DType) -> ir.Type:
    """The LLVM type of one element in memory (bool is one byte, as in NumPy)."""
    return I8 if dtype is bool_ else scalar_type(dtype)


@dataclass
class OpInfo:
    """One op of a cluster as the emitters see it."""

    op: str
    attrs: dict[str, Any]
    in_dtypes: tuple[DType, ...]
    out_dtype: DType
    index: int  # position in the cluster, reported with a failing status


class Lanes:
    """Emission context: a builder positioned in a loop body that computes `width` lanes
    at once (width 1: plain scalars)."""

    def __init__(self, module: ir.Module, builder: ir.IRBuilder, width: int,
                 status: ir.Value) -> None:
        self.module = module
        self.b = builder
        self.width = width
        self.status = status  # i32* the kernel returns

    # ---------------------------------------------------------------- types/consts
    def wrap(self, t: ir.Type) -> ir.Type:
        return t if self.width == 1 else ir.VectorType(t, self.width)

    def ty(self, dtype: DType) -> ir.Type:
        return self.wrap(scalar_type(dtype))

    def const(self, t: ir.Type, value: Any) -> ir.Constant:
        """`value` as a constant of scalar type `t`, splat over the lanes."""
        c = ir.Constant(t, value)
        return c if self.width == 1 else ir.Constant(ir.VectorType(t, self.width),
                                                     [c] * self.width)

    def dconst(self, dtype: DType, value: Any) -> ir.Constant:
        if dtype is bool_:
            return self.const(I1, int(bool(value)))
        return self.const(scalar_type(dtype), value)

    def splat(self, scalar: ir.Value) -> ir.Value:
        """A scalar repeated over the lanes."""
        if self.width == 1:
            return scalar
        vt = ir.VectorType(scalar.type, self.width)
        one = self.b.insert_element(ir.Constant(vt, ir.Undefined), scalar, I32(0))
        mask = ir.Constant(ir.VectorType(I32, self.width), [0] * self.width)
        return self.b.shuffle_vector(one, ir.Constant(vt, ir.Undefined), mask)

    # ----------------------------------------------------------------- functions
    def _function(self, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, list(args)), name)
        return fn

    def suffix(self, t: ir.Type) -> str:
        """LLVM's overload suffix: f32, v8f32, i64 ..."""
        if isinstance(t, ir.VectorType):
            return f"v{t.count}{self.suffix(t.element)}"
        if isinstance(t, ir.FloatType):
            return "f32"
        if isinstance(t, ir.DoubleType):
            return "f64"
        return f"i{t.width}"

    def intrinsic(self, name: str, *args: ir.Value, ret: ir.Type | None = None) -> ir.Value:
        """Call ``llvm.<name>.<suffix>`` overloaded on the first argument's type."""
        t = args[0].type
        fn = self._function(f"llvm.{name}.{self.suffix(t)}", ret or t, [a.type for a in args])
        return self.b.call(fn, list(args))

    def call_per_lane(self, fn: ir.Function, *args: ir.Value) -> ir.Value:
        """Call a scalar function on each lane (for functions with no vector form)."""
        if self.width == 1:
            return self.b.call(fn, list(args))
        out = ir.Constant(ir.VectorType(fn.function_type.return_type, self.width), ir.Undefined)
        for lane in range(self.width):
            scalars = [self.b.extract_element(a, I32(lane)) for a in args]
            out = self.b.insert_element(out, self.b.call(fn, scalars), I32(lane))
        return out

    def libm(self, name: str, dtype: DType, *args: ir.Value) -> ir.Value:
        """A libm function (``log1p`` -> log1pf for f32)."""
        st = scalar_type(dtype)
        fn = self._function(name + ("f" if dtype.bits == 32 else ""), st, [st] * len(args))
        return self.call_per_lane(fn, *args)

    def any_true(self, mask: ir.Value) -> ir.Value:
        if self.width == 1:
            return mask
        return self.intrinsic("vector.reduce.or", mask, ret=I1)

    def fail_if(self, bad: ir.Value, code: int, info: OpInfo) -> None:
        """Record status `code` (naming `info`'s op) when any lane of `bad` is true."""
        flag = self.any_true(bad)
        old = self.b.load(self.status)
        self.b.store(self.b.select(flag, I32(code + 4 * info.index), old), self.status)

    # ------------------------------------------------------------------ helpers
    def fcmp(self, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
        if op == "!=":
            return self.b.fcmp_unordered("!=", x, y)
        return self.b.fcmp_ordered(op, x, y)

    def icmp(self, dtype: DType, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
        if dtype.kind == "int":
            return self.b.icmp_signed(op, x, y)
        return self.b.icmp_unsigned(op, x, y)

    def cmp(self, dtype: DType, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.fcmp(op, x, y) if dtype.kind == "float" else self.icmp(dtype, op, x, y)


# ---------------------------------------------------------------------------- the ops

Emitter = Callable[[Lanes, OpInfo, list[ir.Value]], ir.Value]
EMITTERS: dict[str, Emitter] = {}


def emitter(*names: str) -> Callable[[Emitter], Emitter]:
    def deco(fn: Emitter) -> Emitter:
        for n in names:
            EMITTERS[n] = fn
        return fn
    return deco


def _is_float(info: OpInfo) -> bool:
    return info.in_dtypes[0].kind == "float"


@emitter("Identity", "StopGradient", "BroadcastTo")
def _identity(cx: Lanes, info: OpInfo, a: list[ir.Value]) -> ir.Value:
    return a[0]


@emitter("ZerosLike", "OnesLike")
def _fill_like(cx: Lanes, info: OpInfo, a: list[ir.Value]) -> ir.Value:
    value = 0 if info.op == "ZerosLike" else 1
    return cx.dconst(info.out_dtype, float(value) if info.out_dtype.kind == "float" else value)


@emitter("Neg")
def _neg(cx, info, a):
    return cx.b.fneg(a[0]) if _is_float(info) else cx.b.sub(cx.dconst(info.out_dtype, 0), a[0])


@emitter("Abs")
def _abs(cx, info, a):
    x, dt = a[0], info.out_dtype
    if dt.kind == "float":
        return cx.intrinsic("fabs", x)
    if dt.kind == "uint":
        return x
    return cx.b.select(cx.b.icmp_signed("<", x, cx.dconst(dt, 0)),
                       cx.b.sub(cx.dconst(dt, 0), x), x)


@emitter("Square")
def _square(cx, info, a):
    return cx.b.fmul(a[0], a[0], flags=FLAGS) if _is_float(info) else cx.b.mul(a[0], a[0])


@emitter("Sign")
def _sign(cx, info, a):
    x, dt, b = a[0], info.out_dtype, cx.b
    one, minus, zero = cx.dconst(dt, 1), cx.dconst(dt, -1), cx.dconst(dt, 0)
    if dt.kind == "float":  # NaN gives itself, +-0 give +0 (np.sign, TensorFlow)
        rest = b.select(b.fcmp_unordered("uno", x, x), x, zero)
        return b.select(cx.fcmp(">", x, zero), one, b.select(cx.fcmp("<", x, zero), minus, rest))
    if dt.kind == "uint":
        return b.select(b.icmp_unsigned("!=", x, zero), one, zero)
    return b.select(b.icmp_signed(">", x, zero), one,
                    b.select(b.icmp_signed("<", x, zero), minus, zero))


@emitter("Relu")
def _relu(cx, info, a):
    x, dt = a[0], info.out_dtype
    zero = cx.dconst(dt, 0)
    if dt.kind == "uint":
        return x
    # NaN stays NaN; -0.0 gives +0.0, as np.maximum(x, 0) and TensorFlow do
    return cx.b.select(cx.cmp(dt, "<=", x, zero), zero, x)


def _unary_intrinsic(name: str) -> Emitter:
    def emit(cx, info, a):
        return cx.intrinsic(name, a[0])
    return emit


for _op, _name in (("Log", "log"), ("Sqrt", "sqrt"), ("Sin", "sin"), ("Cos", "cos"),
                   ("Floor", "floor"), ("Ceil", "ceil")):
    EMITTERS[_op] = _unary_intrinsic(_name)


# ------------------------------------------------------------ vector exp and tanh (f32)
# llvm.exp.v8f32 becomes eight calls to libm's expf, tanh one call per lane: for float32
# the kernels inline Cephes' expf (1-2 ulp) and a rational tanh instead, which vectorize.

_EXPF_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
              1.6666665459e-1, 5.0000001201e-1)


def _horner(cx: Lanes, x: ir.Value, coefficients: Sequence[float]) -> ir.Value:
    acc = cx.const(F32, coefficients[0])
    for c in coefficients[1:]:
        acc = cx.b.fadd(cx.b.fmul(acc, x, flags=FLAGS), cx.const(F32, c), flags=FLAGS)
    return acc


def _pow2(cx: Lanes, n: ir.Value) -> ir.Value:
    """2**n as a float32 for integer n in [-126, 127] (built in the exponent bits)."""
    biased = cx.b.shl(cx.b.add(n, cx.const(I32, 127)), cx.const(I32, 23))
    return cx.b.bitcast(biased, cx.wrap(F32))


def _exp_reduced(cx: Lanes, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """exp(x) = p * 2**n for float32 lanes x in [-103.97, 88.73] (not NaN): Cephes'
    range reduction and polynomial; returns (p, n) with n an i32."""
    b = cx.b
    fx = cx.intrinsic("floor", b.fadd(b.fmul(x, cx.const(F32, 1.44269504088896341)),
                                      cx.const(F32, 0.5)))
    r = b.fsub(x, b.fmul(fx, cx.const(F32, 0.693359375)))
    r = b.fsub(r, b.fmul(fx, cx.const(F32, -2.12194440e-4)))
    p = b.fadd(b.fadd(b.fmul(_horner(cx, r, _EXPF_POLY), b.fmul(r, r), flags=FLAGS), r,
                      flags=FLAGS), cx.const(F32, 1.0))
    return p, b.fptosi(fx, cx.wrap(I32))


def exp_f32(cx: Lanes, x: ir.Value) -> ir.Value:
    """exp(x) for float32 lanes: Cephes' range reduction and polynomial; overflow gives
    inf, underflow gradual (denormals) then 0, NaN stays NaN."""
    b = cx.b
    hi, lo = 88.72283905206835, -103.97207708
    nan = b.fcmp_unordered("uno", x, x)
    xc = b.select(nan, cx.const(F32, 0.0), x)
    xc = b.select(cx.fcmp(">", xc, cx.const(F32, hi)), cx.const(F32, hi), xc)
    xc = b.select(cx.fcmp("<", xc, cx.const(F32, lo)), cx.const(F32, lo), xc)
    p, n = _exp_reduced(cx, xc)
    half = b.ashr(n, cx.const(I32, 1))  # two steps: 2**n alone may not be a normal float
    y = b.fmul(b.fmul(p, _pow2(cx, half)), _pow2(cx, b.sub(n, half)))
    y = b.select(cx.fcmp(">", x, cx.const(F32, hi)), cx.const(F32, float("inf")), y)
    y = b.select(cx.fcmp("<", x, cx.const(F32, lo)), cx.const(F32, 0.0), y)
    return b.select(nan, x, y)


def _exp(cx: Lanes, dtype: DType, x: ir.Value) -> ir.Value:
    return exp_f32(cx, x) if dtype.bits == 32 else cx.intrinsic("exp", x)


@emitter("Exp")
def _exp_op(cx, info, a):
    return _exp(cx, info.out_dtype, a[0])


@emitter("Log1p")
def _log1p(cx, info, a):
    return cx.libm("log1p", info.out_dtype, a[0])


@emitter("Expm1")
def _expm1(cx, info, a):
    return cx.libm("expm1", info.out_dtype, a[0])


def _libm_unary(name: str) -> Emitter:
    def emit(cx, info, a):
        return cx.libm(name, info.out_dtype, a[0])
    return emit


for _op, _name in (("Tan", "tan"), ("Asin", "asin"), ("Acos", "acos"), ("Atan", "atan"),
                   ("Sinh", "sinh"), ("Cosh", "cosh")):
    EMITTERS[_op] = _libm_unary(_name)


@emitter("Atan2")
def _atan2(cx, info, a):
    return cx.libm("atan2", info.out_dtype, a[0], a[1])  # operands are (y, x), as in C


@emitter("Round")
def _round(cx, info, a):
    if not _is_float(info):
        return a[0]
    # rint rounds in the default mode, to nearest with halves to even: NumPy's np.rint
    return cx.intrinsic("rint", a[0])


@emitter("IsNan")
def _is_nan(cx, info, a):
    return cx.b.fcmp_unordered("uno", a[0], a[0])


@emitter("IsInf", "IsFinite")
def _is_inf_finite(cx, info, a):
    ax = cx.intrinsic("fabs", a[0])
    inf = cx.dconst(info.in_dtypes[0], float("inf"))
    # ordered comparisons: NaN is neither infinite nor finite
    return cx.fcmp("==" if info.op == "IsInf" else "<", ax, inf)


@emitter("Rsqrt")
def _rsqrt(cx, info, a):
    return cx.b.fdiv(cx.dconst(info.out_dtype, 1.0), cx.intrinsic("sqrt", a[0]))


@emitter("Reciprocal")
def _reciprocal(cx, info, a):
    return cx.b.fdiv(cx.dconst(info.out_dtype, 1.0), a[0])


# float32 tanh: x * P(x^2) / Q(x^2), a rational minimax fit (our own, degree 13 over degree
# 6, Eigen's ptanh_float / XLA's EmitFastTanh shape) of tanh(x) / x on [0, 9] with
# P(0) = Q(0) = 1, so that tiny x give x exactly. Relative error of the fit 6.9e-9; the
# float32 evaluation brings it to at most TANHF_MAX_ULP (tests/test_tanh_rational.py
# samples every 997th float32): one division and nine FMAs instead of exp's range
# reduction, polynomial and 2**n, half the instructions of the Cephes version it replaced
# (2 ulp). Coefficients of t, t^2, ... (the constant terms are 1).
_TANHF_P = (1.3085718e-01, 3.1058276e-03, 1.1172878e-05, -2.0294612e-08, 5.308227e-11,
            -8.558844e-14)
_TANHF_Q = (4.6419048e-01, 2.4502732e-02, 2.548811e-04)
# Inputs are clamped here: tanh rounds to 1.0 in float32 from |x| = 9.0109 on, and the
# evaluation at the clamp is at least 1.0 (with and without FMA), so the output clamp to
# [-1, 1] below gives exactly +-1 beyond it (inf too).
_TANHF_CLAMP = 9.012003
# Measured over every float32 against float64 tanh: 4.93 ulp with FMA (JAX 0.10.2's CPU
# tanh: 4.90), 6.03 without (emulated: products and sums rounded apart).
TANHF_MAX_ULP = 5.0
TANHF_MAX_ULP_NO_FMA = 6.5


def _clamp_keep_nan(cx: Lanes, x: ir.Value, bound: float) -> ir.Value:
    """x limited to [-bound, bound]; NaN stays NaN (the comparisons are false for it),
    -0.0 stays -0.0. Selects on ordered compares: one vminps/vmaxps each on x86."""
    b, hi, lo = cx.b, cx.const(F32, bound), cx.const(F32, -bound)
    x = b.select(cx.fcmp(">", x, hi), hi, x)
    return b.select(cx.fcmp("<", x, lo), lo, x)


def tanh_f32(cx: Lanes, x: ir.Value) -> ir.Value:
    """tanh of float32 lanes (rational approximation, within TANHF_MAX_ULP ulp): odd,
    tanh(-0.0) = -0.0, exactly +-1 for |x| >= 9.012 and +-inf, never beyond +-1, NaN
    stays NaN."""
    return _odd_rational(cx, x, _TANHF_CLAMP, _TANHF_P, 1.0, _TANHF_Q)


def _odd_rational(cx: Lanes, x: ir.Value, clamp: float, p: Sequence[float], q0: float,
                  q: Sequence[float]) -> ir.Value:
    """(x + x t P(t)) / (q0 + t Q(t)) with t = x^2 for x clamped to [-clamp, clamp],
    limited to [-1, 1] (NaN stays NaN); `p` and `q` list the coefficients of t, t^2, ...
    Numerator and denominator are each finished by one FMA: for small x the last step adds
    a tiny correction to x (or q0), so its rounding is all that is left."""
    b = cx.b
    xc = _clamp_keep_nan(cx, x, clamp)
    t = b.fmul(xc, xc)
    num = b.fadd(b.fmul(b.fmul(xc, t), _horner(cx, t, p[::-1]), flags=FLAGS), xc,
                 flags=FLAGS)
    den = b.fadd(b.fmul(t, _horner(cx, t, q[::-1]), flags=FLAGS), cx.const(F32, q0),
                 flags=FLAGS)
    return _clamp_keep_nan(cx, b.fdiv(num, den), 1.0)


@emitter("Tanh")
def _tanh(cx, info, a):
    if info.out_dtype.bits != 32:
        # libm's tanh, lane by lane: from exp, (1 - e) / (1 + e) loses all relative
        # precision near 0 (tanh(1e-300) would come out 0)
        return cx.libm("tanh", info.out_dtype, a[0])
    return tanh_f32(cx, a[0])


# float32 erf: x * P(x^2) / Q(x^2), degree 9 over 12 as XLA's EmitErfF32 / Eigen's
# generic_fast_erf_float, but our own fit (iteratively reweighted least squares, weighted
# by float32 ulps of erf on [0, 3.92], coefficients rounded to float32 one at a time and
# the others refitted): P(0) = 1 and Q(0) = sqrt(pi) / 2 in float32, so the numerator is
# finished by an FMA onto x itself and tiny x give x / Q(0), within 1 ulp (denormals too).
# Fit error 0.62 ulp; the float32 evaluation (roundings in the two Horner chains) brings
# it to at most ERFF_MAX_ULP (tests/test_erf_rational.py samples every 997th float32).
# Coefficients of t, t^2, ... (P's constant term is 1, Q's _ERFF_Q0).
_ERFF_P = (0.17032948, 0.045919813, 0.0032622062, 0.000205558)
_ERFF_Q0 = 0.88622695
_ERFF_Q = (0.44635862, 0.100863904, 0.012966895, 0.00095372606, 2.043392e-05, -9.743547e-08)
# erf rounds to 1.0 in float32 from |x| = erfc^-1(2**-25) = 3.9192059 on: from there the
# result is exactly +-1 (inf too), below it never beyond +-1 (an output clamp).
_ERFF_ONE_FROM = 3.9192059
# Measured over every float32 against float64 erf: 5.54 ulp with FMA (the compiled kernel;
# 99.3% of all results, 78% of those in [0.25, 4), within 1 ulp), 7.21 without (emulated:
# products and sums rounded apart). The published coefficients (Q(0) = 1), and JAX 0.10.2's
# CPU erf, measured the same way on [0.25, 4): 6.71 ulp, 75% within 1 ulp.
ERFF_MAX_ULP = 5.6
ERFF_MAX_ULP_NO_FMA = 7.5


def erf_f32(cx: Lanes, x: ir.Value) -> ir.Value:
    """erf of float32 lanes (rational approximation, within ERFF_MAX_ULP ulp): odd,
    erf(-0.0) = -0.0, exactly +-1 for |x| >= 3.9192059 and +-inf, never beyond +-1, NaN
    stays NaN."""
    b = cx.b
    y = _odd_rational(cx, x, _ERFF_ONE_FROM, _ERFF_P, _ERFF_Q0, _ERFF_Q)
    # (the fit at the clamp may round just below 1: the lanes at or beyond it take +-1)
    one = cx.intrinsic("copysign", cx.const(F32, 1.0), x)
    return b.select(cx.fcmp(">=", cx.intrinsic("fabs", x), cx.const(F32, _ERFF_ONE_FROM)),
                    one, y)


@emitter("Erf")
def _erf(cx, info, a):
    if info.out_dtype.bits != 32:
        return cx.libm("erf", info.out_dtype, a[0])  # float64: libm's, lane by lane
    return erf_f32(cx, a[0])


@emitter("Sigmoid")
def _sigmoid(cx, info, a):
    # the reference kernel's formula: exp of a non-positive argument only
    x, dt, b = a[0], info.out_dtype, cx.b
    one = cx.dconst(dt, 1.0)
    e = _exp(cx, dt, b.fneg(cx.intrinsic("fabs", x)))
    denom = b.fadd(one, e)
    return b.select(cx.fcmp(">=", x, cx.dconst(dt, 0.0)), b.fdiv(one, denom), b.fdiv(e, denom))


@emitter("LogicalNot")
def _not(cx, info, a):
    return cx.b.xor(a[0], cx.const(I1, 1))


# Bitwise ops (compiler/ops/bitwise.py) share the logical ops' instructions (a bool is an
# i1). A shift by y outside [0, bits) is poison in LLVM: the amount is clamped first and
# the result replaced by NumPy's (0, or the sign fill).
@emitter("LogicalAnd", "BitwiseAnd")
def _and(cx, info, a):
    return cx.b.and_(a[0], a[1])


@emitter("LogicalOr", "BitwiseOr")
def _or(cx, info, a):
    return cx.b.or_(a[0], a[1])


@emitter("BitwiseXor")
def _bit_xor(cx, info, a):
    return cx.b.xor(a[0], a[1])


@emitter("Invert")
def _invert(cx, info, a):
    return cx.b.xor(a[0], cx.dconst(info.out_dtype, -1))


def _shift_in_range(cx: Lanes, dt: DType, y: ir.Value) -> ir.Value:
    # unsigned compare: a negative y is a huge unsigned number, so out of range too
    return cx.b.icmp_unsigned("<", y, cx.dconst(dt, dt.bits))


@emitter("LeftShift")
def _left_shift(cx, info, a):
    x, y, dt = a[0], a[1], info.out_dtype
    ok = _shift_in_range(cx, dt, y)
    shifted = cx.b.shl(x, cx.b.select(ok, y, cx.dconst(dt, 0)))
    return cx.b.select(ok, shifted, cx.dconst(dt, 0))


@emitter("RightShift")
def _right_shift(cx, info, a):
    x, y, dt = a[0], a[1], info.out_dtype
    ok = _shift_in_range(cx, dt, y)
    if dt.kind == "int":  # a shift by bits - 1 is the sign fill NumPy gives
        return cx.b.ashr(x, cx.b.select(ok, y, cx.dconst(dt, dt.bits - 1)))
    shifted = cx.b.lshr(x, cx.b.select(ok, y, cx.dconst(dt, 0)))
    return cx.b.select(ok, shifted, cx.dconst(dt, 0))


def _arith(float_op: str, int_op: str) -> Emitter:
    def emit(cx, info, a):
        if _is_float(info):
            return getattr(cx.b, float_op)(a[0], a[1], flags=FLAGS)
        return getattr(cx.b, int_op)(a[0], a[1])
    return emit


EMITTERS["Add"] = EMITTERS["BiasAdd"] = _arith("fadd", "add")
EMITTERS["Sub"] = _arith("fsub", "sub")
EMITTERS["Mul"] = _arith("fmul", "mul")


@emitter("AddN")
def _add_n(cx, info, a):
    total = a[0]
    for x in a[1:]:  # left to right, like the reference kernel
        total = cx.b.fadd(total, x, flags=FLAGS) if _is_float(info) else cx.b.add(total, x)
    return total


@emitter("SquaredDifference")
def _squared_difference(cx, info, a):
    if _is_float(info):
        d = cx.b.fsub(a[0], a[1], flags=FLAGS)
        return cx.b.fmul(d, d, flags=FLAGS)
    d = cx.b.sub(a[0], a[1])
    return cx.b.mul(d, d)


def nan_max(cx: Lanes, dtype: DType, x: ir.Value, y: ir.Value, op: str = ">") -> ir.Value:
    """max (op '>') or min (op '<') of x and y; NaN if either is NaN."""
    if dtype.kind != "float":
        return cx.b.select(cx.icmp(dtype, op, x, y), x, y)
    take_x = cx.b.or_(cx.fcmp(op, x, y), cx.b.fcmp_unordered("uno", x, x))
    return cx.b.select(take_x, x, y)


@emitter("Maximum")
def _maximum(cx, info, a):
    return nan_max(cx, info.out_dtype, a[0], a[1], ">")


@emitter("Minimum")
def _minimum(cx, info, a):
    return nan_max(cx, info.out_dtype, a[0], a[1], "<")


def _comparison(op: str) -> Emitter:
    def emit(cx, info, a):
        dt = info.in_dtypes[0]
        if dt is bool_:
            return cx.b.icmp_unsigned(op, a[0], a[1])
        return cx.cmp(dt, op, a[0], a[1])
    return emit


for _op, _cmp in (("Equal", "=="), ("NotEqual", "!="), ("Less", "<"), ("LessEqual", "<="),
                  ("Greater", ">"), ("GreaterEqual", ">=")):
    EMITTERS[_op] = _comparison(_cmp)


@emitter("Select")
def _select(cx, info, a):
    return cx.b.select(a[0], a[1], a[2])


# -------------------------------------------------------------------- division family

def _safe_divisor(cx: Lanes, info: OpInfo, y: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(divisor that cannot trap, mask of lanes where y is -1 for signed types); records
    a division by zero."""
    dt, b = info.out_dtype, cx.b
    zero, one = cx.dconst(dt, 0), cx.dconst(dt, 1)
    is_zero = b.icmp_unsigned("==", y, zero)
    cx.fail_if(is_zero, STATUS_DIV_BY_ZERO, info)
    if dt.kind == "uint":
        return b.select(is_zero, one, y), None
    minus_one = b.icmp_signed("==", y, cx.dconst(dt, -1))
    # x / -1 is -x (wrapping, so MIN / -1 is MIN); hardware division would trap on it
    return b.select(b.or_(is_zero, minus_one), one, y), minus_one


def _int_divmod(cx: Lanes, info: OpInfo, x: ir.Value, y: ir.Value, floor: bool
                ) -> tuple[ir.Value, ir.Value]:
    """Integer quotient and remainder, truncating or flooring (Python's // and %)."""
    b, dt = cx.b, info.out_dtype
    safe, minus_one = _safe_divisor(cx, info, y)
    if dt.kind == "uint":
        return b.udiv(x, safe), b.urem(x, safe)
    zero = cx.dconst(dt, 0)
    q = b.select(minus_one, b.sub(zero, x), b.sdiv(x, safe))
    r = b.srem(x, safe)  # 0 where y is -1 (safe is 1 there)
    if floor:
        adjust = b.and_(b.icmp_signed("!=", r, zero),
                        b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero)))
        q = b.select(adjust, b.sub(q, cx.dconst(dt, 1)), q)
        r = b.select(adjust, b.add(r, y), r)
    return q, r


def _float_divmod(cx: Lanes, info: OpInfo, x: ir.Value, y: ir.Value
                  ) -> tuple[ir.Value, ir.Value]:
    """TensorFlow's float FloorDiv and FloorMod: ``floor(x / y)`` (the rounded quotient,
    so 1.0 // 0.1 is 10) and ``fmod(x, y)``, plus y where that is nonzero with the other
    sign than y (a zero keeps x's sign)."""
    b, dt = cx.b, info.out_dtype
    zero = cx.dconst(dt, 0.0)
    mod = b.frem(x, y)
    adjust = b.and_(cx.fcmp("!=", mod, zero),
                    b.xor(cx.fcmp("<", y, zero), cx.fcmp("<", mod, zero)))
    return cx.intrinsic("floor", b.fdiv(x, y)), b.select(adjust, b.fadd(mod, y), mod)


@emitter("Div")
def _div(cx, info, a):
    if _is_float(info):
        return cx.b.fdiv(a[0], a[1])
    return _int_divmod(cx, info, a[0], a[1], floor=False)[0]


@emitter("FloorDiv")
def _floor_div(cx, info, a):
    if _is_float(info):
        return _float_divmod(cx, info, a[0], a[1])[0]
    return _int_divmod(cx, info, a[0], a[1], floor=True)[0]


@emitter("FloorMod")
def _floor_mod(cx, info, a):
    if _is_float(info):
        return _float_divmod(cx, info, a[0], a[1])[1]
    return _int_divmod(cx, info, a[0], a[1], floor=True)[1]


# ---------------------------------------------------------------------------- Pow

def _int_pow_function(cx: Lanes, dtype: DType) -> ir.Function:
    """``ipow(base, exp)`` by squaring, wrapping like NumPy (exp >= 0 is checked first)."""
    t = scalar_type(dtype)
    name = f"tw.ipow.{dtype.ir_name}"
    fn = cx.module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(cx.module, ir.FunctionType(t, [t, t]), name)
    fn.linkage = "internal"
    base, exp = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    loop, body, done = fn.append_basic_block("loop"), fn.append_basic_block("body"), \
        fn.append_basic_block("done")
    entry = b.block
    b.branch(loop)
    b.position_at_end(loop)
    acc = b.phi(t)
    cur = b.phi(t)
    e = b.phi(t)
    acc.add_incoming(ir.Constant(t, 1), entry)
    cur.add_incoming(base, entry)
    e.add_incoming(exp, entry)
    b.cbranch(b.icmp_signed(">", e, ir.Constant(t, 0)) if dtype.kind == "int"
              else b.icmp_unsigned(">", e, ir.Constant(t, 0)), body, done)
    b.position_at_end(body)
    odd = b.icmp_unsigned("!=", b.and_(e, ir.Constant(t, 1)), ir.Constant(t, 0))
    acc_next = b.select(odd, b.mul(acc, cur), acc)
    acc.add_incoming(acc_next, body)
    cur.add_incoming(b.mul(cur, cur), body)
    e.add_incoming(b.lshr(e, ir.Constant(t, 1)), body)
    b.branch(loop)
    b.position_at_end(done)
    b.ret(acc)
    return fn


@emitter("Pow")
def _pow(cx, info, a):
    dt = info.out_dtype
    if dt.kind == "float":
        return cx.intrinsic("pow", a[0], a[1])
    if dt.kind == "int":
        cx.fail_if(cx.b.icmp_signed("<", a[1], cx.dconst(dt, 0)), STATUS_NEGATIVE_POWER, info)
    return cx.call_per_lane(_int_pow_function(cx, dt), a[0], a[1])


# ---------------------------------------------------------------------------- Cast

def _float_to_int(cx: Lanes, x: ir.Value, src: DType, dst: DType) -> ir.Value:
    """Truncate toward zero; NaN or out of range gives the minimum of a 32/64-bit integer
    (x86's answer), which then wraps to narrower integers, as NumPy does on x86."""
    bits = max(dst.bits, 32)
    lo = -(2 ** (bits - 1))
    b, ft = cx.b, scalar_type(src)
    in_range = b.and_(cx.fcmp(">=", x, cx.const(ft, float(lo))),
                      cx.fcmp("<", x, cx.const(ft, float(-lo))))
    safe = b.select(in_range, x, cx.const(ft, 0.0))  # fptosi of anything else is poison
    as_int = b.select(in_range, b.fptosi(safe, cx.wrap(ir.IntType(bits))),
                      cx.const(ir.IntType(bits), lo))
    return as_int if bits == dst.bits else b.trunc(as_int, cx.ty(dst))


@emitter("Cast")
def _cast(cx, info, a):
    x, src, dst, b = a[0], info.in_dtypes[0], info.out_dtype, cx.b
    if src is dst:
        return x
    if dst is bool_:
        zero = cx.dconst(src, 0.0 if src.kind == "float" else 0)
        return cx.fcmp("!=", x, zero) if src.kind == "float" else b.icmp_unsigned("!=", x, zero)
    if src is bool_:
        return b.uitofp(x, cx.ty(dst)) if dst.kind == "float" else b.zext(x, cx.ty(dst))
    if src.kind == "float" and dst.kind == "float":
        return b.fpext(x, cx.ty(dst)) if dst.bits > src.bits else b.fptrunc(x, cx.ty(dst))
    if src.kind == "float":
        return _float_to_int(cx, x, src, dst)
    if dst.kind == "float":
        return b.sitofp(x, cx.ty(dst)) if src.kind == "int" else b.uitofp(x, cx.ty(dst))
    if dst.bits == src.bits:
        return x
    if dst.bits < src.bits:
        return b.trunc(x, cx.ty(dst))
    return b.sext(x, cx.ty(dst)) if src.kind == "int" else b.zext(x, cx.ty(dst))


def emit_op(cx: Lanes, info: OpInfo, args: list[ir.Value]) -> ir.Value:
    """The value of one elementwise op applied to `args`."""
    fn = EMITTERS.get(info.op)
    if fn is None:
        raise UnimplementedError(f"the cpu target cannot generate code for op {info.op}")
    return fn(cx, info, args)


from . import special_functions  # noqa: E402, F401  (registers Lgamma, Digamma, Erfc, Xlogy ...)
