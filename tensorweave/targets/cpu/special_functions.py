"""LLVM IR for the special-function ops of `compiler/ops/special.py`; registered in
`elementwise.EMITTERS` when that module loads.

Every function is computed in double: float32 lanes are widened, and the double result
rounded once, so float32 results are within about half an ulp of the exact value (the
double error is far below a float32 ulp); lanes call the scalar functions one by one.
- Lgamma and Erfc are libm's ``lgamma_r`` and ``erfc`` (``lgamma_r`` rather than
  ``lgamma``: lgamma stores the sign of gamma in the global ``signgam``, which kernel
  threads running at once would race on);
- Digamma is Cephes' method, as Eigen and so TensorFlow compute it: reflection for
  x <= 0, the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic
  series (Bernoulli numbers);
- Erfinv and Ndtri solve erf(z) = x (or erfc(z) = c in the tails, where c is exact) by
  Halley's iteration on libm's erf/erfc;
- BesselI0e/I1e sum the power series of I0/I1 for |x| <= 25 (positive terms) and the
  asymptotic series beyond;
- Polygamma is (-1)^(n+1) n! zeta(n + 1, x), the Hurwitz zeta summed directly up to
  x + N > 9 and finished by Euler-Maclaurin (Bernoulli numbers computed exactly here);
- Xlogy, Xlog1py and Xdivy are a select on ``x == 0`` around x * log(y), x * log1p(y),
  x / y in the operands' precision (two roundings at most), TensorFlow's definition: 0
  where x == 0 whatever y is, NaN where x is NaN.
Measured accuracy: tests/test_special_math_cpu.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import llvmlite.ir as ir

from ...compiler.ops.special import POLYGAMMA_MIN_X
from .elementwise import F32, F64, I32, Lanes, emitter

# Cephes' psi: the asymptotic series in z = 1 / x^2, coefficients B_2k / 2k from the
# highest power down (Eigen's digamma_impl_maybe_poly<double>).
_PSI_SERIES = (8.33333333333333333333e-2, -2.10927960927960927961e-2,
               7.57575757575757575758e-3, -4.16666666666666666667e-3,
               3.96825396825396825397e-3, -8.33333333333333333333e-3,
               8.33333333333333333333e-2)
_PSI_RECURRENCE_UNTIL = 10.0  # the series is used from here on


def _internal_function(cx: Lanes, name: str, ret: ir.Type, args: list[ir.Type]
                       ) -> tuple[ir.Function, bool]:
    """The module's function `name`, and whether it still has to be defined."""
    fn = cx.module.globals.get(name)
    if fn is not None:
        return fn, False
    fn = ir.Function(cx.module, ir.FunctionType(ret, args), name)
    fn.linkage = "internal"
    return fn, True


def _lgamma_function(cx: Lanes) -> ir.Function:
    """``double tw.lgamma.f64(double)``: libm's lgamma_r with the sign stored in a local
    (the alloca is in the entry block of its own function, so it is not a stack slot per
    loop iteration once inlined)."""
    fn, new = _internal_function(cx, "tw.lgamma.f64", F64, [F64])
    if not new:
        return fn
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    sign = b.alloca(I32)
    lgamma_r = cx.module.globals.get("lgamma_r") or ir.Function(
        cx.module, ir.FunctionType(F64, [F64, ir.PointerType(I32)]), "lgamma_r")
    b.ret(b.call(lgamma_r, [fn.args[0], sign]))
    return fn


def _libm_f64(cx: Lanes, name: str) -> ir.Function:
    return cx.module.globals.get(name) or ir.Function(cx.module, ir.FunctionType(F64, [F64]),
                                                      name)


def _digamma_function(cx: Lanes) -> ir.Function:
    """``double tw.digamma.f64(double)``: psi(x); NaN at 0, the negative integers, -inf
    and NaN; +inf at +inf."""
    fn, new = _internal_function(cx, "tw.digamma.f64", F64, [F64])
    if not new:
        return fn
    x = fn.args[0]
    blocks = {n: fn.append_basic_block(n) for n in
              ("entry", "negative", "pole", "reflect", "positive", "head", "step", "series")}
    b = ir.IRBuilder(blocks["entry"])
    one, zero, half = (ir.Constant(F64, v) for v in (1.0, 0.0, 0.5))

    def intrinsic(name: str, v: ir.Value) -> ir.Value:
        f = cx.module.globals.get(f"llvm.{name}.f64") or ir.Function(
            cx.module, ir.FunctionType(F64, [F64]), f"llvm.{name}.f64")
        return b.call(f, [v])

    # ordered compare: NaN goes the positive way and comes out of the series as NaN
    b.cbranch(b.fcmp_ordered("<=", x, zero), blocks["negative"], blocks["positive"])

    b.position_at_end(blocks["negative"])
    p = intrinsic("floor", x)
    b.cbranch(b.fcmp_ordered("==", p, x), blocks["pole"], blocks["reflect"])  # -inf too

    b.position_at_end(blocks["pole"])
    b.ret(ir.Constant(F64, math.nan))

    # psi(x) = psi(1 - x) - pi / tan(pi x); tan's argument is first reduced to
    # (-1/2, 1/2] by the nearest integer, where pi * r loses nothing
    b.position_at_end(blocks["reflect"])
    r = b.fsub(x, p)
    # x - (p + 1), not r - 1: for tiny negative x, r = x + 1 has rounded x away
    r = b.select(b.fcmp_ordered(">", r, half), b.fsub(x, b.fadd(p, one)), r)
    pi = ir.Constant(F64, math.pi)
    cot = b.fdiv(pi, _call(cx, b, "tan", b.fmul(pi, r)))
    reflection = b.select(b.fcmp_ordered("==", r, half), zero, cot)
    reflected = b.fsub(one, x)
    b.branch(blocks["head"])

    b.position_at_end(blocks["positive"])
    b.branch(blocks["head"])

    # recurrence: psi(s) = psi(s + 1) - 1/s until s >= 10 (at most 10 steps)
    b.position_at_end(blocks["head"])
    s = b.phi(F64)
    w = b.phi(F64)  # sum of the 1/s taken
    c = b.phi(F64)  # the reflection term (0 for x > 0)
    s.add_incoming(reflected, blocks["reflect"])
    s.add_incoming(x, blocks["positive"])
    w.add_incoming(zero, blocks["reflect"])
    w.add_incoming(zero, blocks["positive"])
    c.add_incoming(reflection, blocks["reflect"])
    c.add_incoming(zero, blocks["positive"])
    b.cbranch(b.fcmp_ordered("<", s, ir.Constant(F64, _PSI_RECURRENCE_UNTIL)),
              blocks["step"], blocks["series"])

    b.position_at_end(blocks["step"])
    s.add_incoming(b.fadd(s, one), blocks["step"])
    w.add_incoming(b.fadd(w, b.fdiv(one, s)), blocks["step"])
    c.add_incoming(c, blocks["step"])
    b.branch(blocks["head"])

    # psi(s) = log(s) - 1/(2s) - sum B_2k / (2k s^2k)
    b.position_at_end(blocks["series"])
    z = b.fdiv(one, b.fmul(s, s))
    poly = ir.Constant(F64, _PSI_SERIES[0])
    for coefficient in _PSI_SERIES[1:]:
        poly = b.fadd(b.fmul(poly, z), ir.Constant(F64, coefficient))
    y = b.fmul(z, poly)
    result = b.fsub(b.fsub(b.fsub(intrinsic("log", s), b.fdiv(half, s)), y), w)
    b.ret(b.fsub(result, c))
    return fn


def _call(cx: Lanes, b: ir.IRBuilder, name: str, v: ir.Value) -> ir.Value:
    return b.call(_libm_f64(cx, name), [v])


def _in_double(cx: Lanes, info, fn: ir.Function, x: ir.Value) -> ir.Value:
    """`fn` (double -> double) on each lane of x; float32 lanes are widened first and the
    result rounded once."""
    if info.out_dtype.bits == 64:
        return cx.call_per_lane(fn, x)
    wide = cx.b.fpext(x, cx.wrap(F64))
    return cx.b.fptrunc(cx.call_per_lane(fn, wide), cx.wrap(F32))


@emitter("Lgamma")
def _lgamma(cx, info, a):
    return _in_double(cx, info, _lgamma_function(cx), a[0])


@emitter("Erfc")
def _erfc(cx, info, a):
    return _in_double(cx, info, _libm_f64(cx, "erfc"), a[0])


@emitter("Digamma")
def _digamma(cx, info, a):
    return _in_double(cx, info, _digamma_function(cx), a[0])


def _zero_where_x_is_zero(cx: Lanes, info, x: ir.Value, value: ir.Value) -> ir.Value:
    zero = cx.dconst(info.out_dtype, 0.0)
    return cx.b.select(cx.fcmp("==", x, zero), zero, value)


@emitter("Xlogy")
def _xlogy(cx, info, a):
    x, y = a
    return _zero_where_x_is_zero(cx, info, x, cx.b.fmul(x, cx.intrinsic("log", y)))


@emitter("Xlog1py")
def _xlog1py(cx, info, a):
    x, y = a
    return _zero_where_x_is_zero(cx, info, x,
                                 cx.b.fmul(x, cx.libm("log1p", info.out_dtype, y)))


@emitter("Xdivy")
def _xdivy(cx, info, a):
    x, y = a
    return _zero_where_x_is_zero(cx, info, x, cx.b.fdiv(x, y))



# ------------------------------------------------ scalar double functions with control flow

class _Scalar:
    """Builds the body of one internal ``double f(double...)``: constants, libm calls,
    if/else and while loops as values (phis), so the numerical code reads as formulas."""

    def __init__(self, cx: Lanes, fn: ir.Function) -> None:
        self.cx, self.fn = cx, fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))

    def c(self, v: float) -> ir.Constant:
        return ir.Constant(F64, v)

    def libm(self, name: str, *args: ir.Value) -> ir.Value:
        f = self.cx.module.globals.get(name) or ir.Function(
            self.cx.module, ir.FunctionType(F64, [F64] * len(args)), name)
        return self.b.call(f, list(args))

    def intrinsic(self, name: str, *args: ir.Value) -> ir.Value:
        f = self.cx.module.globals.get(f"llvm.{name}.f64") or ir.Function(
            self.cx.module, ir.FunctionType(F64, [F64] * len(args)), f"llvm.{name}.f64")
        return self.b.call(f, list(args))

    def lt(self, x, y): return self.b.fcmp_ordered("<", x, y)
    def le(self, x, y): return self.b.fcmp_ordered("<=", x, y)
    def eq(self, x, y): return self.b.fcmp_ordered("==", x, y)
    def add(self, x, y): return self.b.fadd(x, y)
    def sub(self, x, y): return self.b.fsub(x, y)
    def mul(self, x, y): return self.b.fmul(x, y)
    def div(self, x, y): return self.b.fdiv(x, y)
    def sel(self, c, x, y): return self.b.select(c, x, y)
    def abs(self, x): return self.intrinsic("fabs", x)
    def is_nan(self, x): return self.b.fcmp_unordered("uno", x, x)

    def branch(self, cond: ir.Value, then: Callable[[], ir.Value],
               otherwise: Callable[[], ir.Value]) -> ir.Value:
        """`then()` if cond else `otherwise()`, each computed only on its own path."""
        b = self.b
        t_bb, e_bb, done = (self.fn.append_basic_block() for _ in range(3))
        b.cbranch(cond, t_bb, e_bb)
        b.position_at_end(t_bb)
        tv = then()
        t_end = b.block
        b.branch(done)
        b.position_at_end(e_bb)
        ev = otherwise()
        e_end = b.block
        b.branch(done)
        b.position_at_end(done)
        phi = b.phi(F64)
        phi.add_incoming(tv, t_end)
        phi.add_incoming(ev, e_end)
        return phi

    def loop(self, state: list[ir.Value], cond: Callable[[list], ir.Value],
             body: Callable[[list], list]) -> list[ir.Value]:
        """``while cond(state): state = body(state)``; the final state."""
        b = self.b
        pre = b.block
        head, body_bb, done = (self.fn.append_basic_block() for _ in range(3))
        b.branch(head)
        b.position_at_end(head)
        phis = [b.phi(v.type) for v in state]
        for phi, v in zip(phis, state):
            phi.add_incoming(v, pre)
        b.cbranch(cond(phis), body_bb, done)
        b.position_at_end(body_bb)
        new = body(phis)
        for phi, v in zip(phis, new):
            phi.add_incoming(v, b.block)
        b.branch(head)
        b.position_at_end(done)
        return phis


def _scalar_function(cx: Lanes, name: str, arity: int,
                     build: Callable[[_Scalar, list[ir.Value]], ir.Value]) -> ir.Function:
    """The internal double function `name`, its body written by `build` on first use."""
    fn, new = _internal_function(cx, name, F64, [F64] * arity)
    if new:
        s = _Scalar(cx, fn)
        s.b.ret(build(s, list(fn.args)))
    return fn


# -- erfinv and ndtri: Halley's iteration on libm's erf / erfc ---------------------------
# z = erfinv(x) solves erf(z) = x; in the tails erfc(z) = 1 - |x| instead (1 - |x| is
# exact for |x| >= 1/2, so nothing is lost to the cancellation). Halley's step for
# f(z) = erf(z) - x (or erfc(z) - c), whose f'' = -2 z f': z -= r / (1 + z r), r = f / f'.
# The starting points are within 15% (a series at 0, the tail's asymptotic form), so
# HALLEY_STEPS cubically convergent steps (15% -> ~1e-3 -> ~1e-8 -> below 1e-16) leave
# only the rounding of erf/erfc (1 ulp): the result is within a few ulp of the exact
# value (tests/test_special_math_cpu.py; 4 steps measured the same). Each step costs an
# exp and an erf/erfc: about 0.5 us per element, 3x SciPy's erfinv (cost, not accuracy,
# is what a better start would buy).
HALLEY_STEPS = 3
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _halley(s: _Scalar, z: ir.Value, residual: Callable[[ir.Value], ir.Value],
            slope_sign: float) -> ir.Value:
    for _ in range(HALLEY_STEPS):
        slope = s.mul(s.c(slope_sign * _TWO_OVER_SQRT_PI), s.libm("exp", s.b.fneg(s.mul(z, z))))
        r = s.div(residual(z), slope)
        z = s.sub(z, s.div(r, s.add(s.c(1.0), s.mul(z, r))))
    return z


def _erfinv_central(s: _Scalar, x: ir.Value) -> ir.Value:
    """erfinv(x) for |x| <= 1/2 (erf(z) = x; the series x sqrt(pi)/2 (1 + pi x^2 / 12) to
    start)."""
    start = s.mul(s.mul(x, s.c(math.sqrt(math.pi) / 2)),
                  s.add(s.c(1.0), s.mul(s.c(math.pi / 12), s.mul(x, x))))
    return _halley(s, start, lambda z: s.sub(s.libm("erf", z), x), 1.0)


def _erfcinv_tail(s: _Scalar, c: ir.Value) -> ir.Value:
    """z with erfc(z) = c for 0 <= c <= 1/2 (+inf at 0, NaN for c < 0 or NaN); starts from
    erfc(z) ~ exp(-z^2) / (z sqrt(pi)), i.e. z^2 = L - log(sqrt(pi L)), L = -log(c)."""
    def solve():
        L = s.b.fneg(s.libm("log", c))
        z2 = s.sub(L, s.libm("log", s.intrinsic("sqrt", s.mul(s.c(math.pi), L))))
        z2 = s.sel(s.lt(z2, s.c(0.09)), s.c(0.09), z2)  # c near 1/2: z ~ 0.48
        start = s.intrinsic("sqrt", z2)
        return _halley(s, start, lambda z: s.sub(s.libm("erfc", z), c), -1.0)

    inf, nan = s.c(math.inf), s.c(math.nan)
    value = s.branch(s.lt(s.c(0.0), c), solve, lambda: s.sel(s.eq(c, s.c(0.0)), inf, nan))
    return value


def _erfinv_body(s: _Scalar, args: list) -> ir.Value:
    x = args[0]
    ax = s.abs(x)
    tail = s.branch(s.le(ax, s.c(0.5)), lambda: _erfinv_central(s, x),
                    lambda: _erfcinv_tail(s, s.sub(s.c(1.0), ax)))
    signed = s.intrinsic("copysign", tail, x)
    # erfinv(-0.0) is +0.0 on the reference target and in TensorFlow (ndtri((x + 1) / 2))
    signed = s.sel(s.eq(x, s.c(0.0)), s.c(0.0), signed)
    return s.sel(s.is_nan(x), x, signed)


def _ndtri_body(s: _Scalar, args: list) -> ir.Value:
    # ndtri(p) = sqrt(2) erfinv(2p - 1) = -sqrt(2) erfcinv(2p); 2p - 1 is exact on
    # [1/4, 3/4], 2p and 2(1 - p) exact in the tails
    p = args[0]
    sqrt2 = s.c(math.sqrt(2.0))
    central = s.b.and_(s.le(s.c(0.25), p), s.le(p, s.c(0.75)))
    value = s.branch(
        central, lambda: _erfinv_central(s, s.sub(s.mul(s.c(2.0), p), s.c(1.0))),
        lambda: s.branch(s.lt(p, s.c(0.25)),
                         lambda: s.b.fneg(_erfcinv_tail(s, s.mul(s.c(2.0), p))),
                         lambda: _erfcinv_tail(s, s.mul(s.c(2.0), s.sub(s.c(1.0), p)))))
    return s.sel(s.is_nan(p), p, s.mul(sqrt2, value))


@emitter("Erfinv")
def _erfinv(cx, info, a):
    return _in_double(cx, info, _scalar_function(cx, "tw.erfinv.f64", 1, _erfinv_body), a[0])


@emitter("Ndtri")
def _ndtri(cx, info, a):
    return _in_double(cx, info, _scalar_function(cx, "tw.ndtri.f64", 1, _ndtri_body), a[0])


# -- exponentially scaled Bessel functions I0e, I1e -------------------------------------
# |x| <= BESSEL_SERIES_UNTIL: the power series of I_nu (positive terms, no cancellation)
# times exp(-|x|); beyond, the asymptotic series exp(-x) I_nu(x) ~ (2 pi x)^-1/2 sum t_k,
# t_k = t_{k-1} ((2k-1)^2 - 4 nu^2) / (8 k x), whose smallest term there is below 1e-20.
BESSEL_SERIES_UNTIL = 25.0
_EPS = 2.0 ** -56


def _bessel_scaled(s: _Scalar, x: ir.Value, nu: int) -> ir.Value:
    ax = s.abs(x)

    def series():
        q = s.mul(s.mul(ax, ax), s.c(0.25))

        def body(st):
            total, term, k = st
            term = s.div(s.mul(term, q), s.mul(k, s.add(k, s.c(float(nu)))))
            return [s.add(total, term), term, s.add(k, s.c(1.0))]

        total, _, _ = s.loop([s.c(1.0), s.c(1.0), s.c(1.0)],
                             lambda st: s.b.and_(s.lt(s.mul(s.c(_EPS), st[0]), st[1]),
                                                 s.lt(st[2], s.c(500.0))), body)
        scaled = s.mul(total, s.libm("exp", s.b.fneg(ax)))
        return s.mul(scaled, s.mul(ax, s.c(0.5))) if nu == 1 else scaled

    def asymptotic():
        four_nu2 = float(4 * nu * nu)

        def body(st):
            total, term, k = st
            odd = s.sub(s.mul(s.c(2.0), k), s.c(1.0))
            term = s.div(s.mul(term, s.sub(s.mul(odd, odd), s.c(four_nu2))),
                         s.mul(s.mul(s.c(8.0), k), ax))
            return [s.add(total, term), term, s.add(k, s.c(1.0))]

        total, _, _ = s.loop([s.c(1.0), s.c(1.0), s.c(1.0)],
                             lambda st: s.b.and_(s.lt(s.mul(s.c(_EPS), s.abs(st[0])),
                                                      s.abs(st[1])),
                                                 s.lt(st[2], s.c(60.0))), body)
        return s.div(total, s.intrinsic("sqrt", s.mul(s.c(2 * math.pi), ax)))

    value = s.branch(s.le(ax, s.c(BESSEL_SERIES_UNTIL)), series, asymptotic)
    if nu == 1:  # odd; -0.0 gives +0.0 (TensorFlow's i1e tests x < 0)
        value = s.sel(s.lt(x, s.c(0.0)), s.b.fneg(value), value)
    return s.sel(s.is_nan(x), x, value)


@emitter("BesselI0e")
def _bessel_i0e(cx, info, a):
    fn = _scalar_function(cx, "tw.bessel_i0e.f64", 1, lambda s, v: _bessel_scaled(s, v[0], 0))
    return _in_double(cx, info, fn, a[0])


@emitter("BesselI1e")
def _bessel_i1e(cx, info, a):
    fn = _scalar_function(cx, "tw.bessel_i1e.f64", 1, lambda s, v: _bessel_scaled(s, v[0], 1))
    return _in_double(cx, info, fn, a[0])


# -- polygamma: (-1)^(n+1) n! zeta(n + 1, x), the Hurwitz zeta by Euler-Maclaurin -------

def _bernoulli_even(count: int) -> list[Fraction]:
    """B_2, B_4, ..., B_2count (exact), from the recurrence sum_k C(m+1, k) B_k = 0."""
    b = [Fraction(1)]
    for m in range(1, 2 * count + 1):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return [b[2 * j] for j in range(1, count + 1)]


# Euler-Maclaurin correction terms B_2j / (2j)!, j = 1..12
_EM_COEFFICIENTS = tuple(float(bj / math.factorial(2 * j))
                         for j, bj in enumerate(_bernoulli_even(12), start=1))
_ZETA_DIRECT_MIN = 9.0  # direct terms until q + N > 9 (and at least 9 of them)


def _hurwitz_zeta(s: _Scalar, order: ir.Value, q: ir.Value) -> ir.Value:
    """zeta(order, q) = sum_k (q + k)^-order for order >= 2 (an integer here)."""
    neg_order = s.b.fneg(order)

    def body(st):
        total, a, k, _ = st
        term = s.libm("pow", a, neg_order)
        total = s.add(total, term)
        # (a term that underflowed to 0 ends nothing: the tail's integral still counts)
        done = s.b.and_(s.le(s.abs(term), s.mul(s.c(_EPS), s.abs(total))),
                        s.lt(s.c(0.0), s.abs(total)))
        return [total, s.add(a, s.c(1.0)), s.add(k, s.c(1.0)), s.sel(done, s.c(1.0), s.c(0.0))]

    def more(st):
        total, a, k, done = st
        small = s.b.or_(s.lt(k, s.c(_ZETA_DIRECT_MIN)), s.le(a, s.c(_ZETA_DIRECT_MIN)))
        return s.b.and_(small, s.eq(done, s.c(0.0)))

    total, a, _, done = s.loop([s.c(0.0), q, s.c(0.0), s.c(0.0)], more, body)

    def tail():
        # the rest, sum_{k >= N} (a + k)^-order with a = q + N >= 9: the integral, half
        # the first term, and the Bernoulli corrections
        first = s.libm("pow", a, neg_order)
        integral = s.div(s.libm("pow", a, s.sub(s.c(1.0), order)), s.sub(order, s.c(1.0)))
        result = s.add(total, integral)
        result = s.add(result, s.mul(s.c(0.5), first))
        rising = order  # order (order + 1) ... (order + 2j - 2)
        power = s.div(first, a)  # a^(-order - 2j + 1)
        inv_a2 = s.div(s.c(1.0), s.mul(a, a))
        for j, coefficient in enumerate(_EM_COEFFICIENTS, start=1):
            result = s.add(result, s.mul(s.c(coefficient), s.mul(rising, power)))
            rising = s.mul(rising, s.mul(s.add(order, s.c(2.0 * j - 1)),
                                         s.add(order, s.c(2.0 * j))))
            power = s.mul(power, inv_a2)
        return result

    return s.branch(s.eq(done, s.c(1.0)), lambda: total, tail)


def _polygamma_body(cx: Lanes) -> Callable[[_Scalar, list], ir.Value]:
    def build(s: _Scalar, args: list) -> ir.Value:
        n, x = args
        nan = s.c(math.nan)
        valid = s.b.and_(s.le(s.c(0.0), n), s.eq(s.intrinsic("floor", n), n))

        def higher():
            pole = s.b.and_(s.le(x, s.c(0.0)), s.eq(s.intrinsic("floor", x), x))

            def regular():
                zeta = _hurwitz_zeta(s, s.add(n, s.c(1.0)), x)
                factorial, _ = s.loop(  # n! (inf from 171 on; the loop stops there)
                    [s.c(1.0), s.c(1.0)],
                    lambda st: s.b.and_(s.le(st[1], n), s.le(st[1], s.c(171.0))),
                    lambda st: [s.mul(st[0], st[1]), s.add(st[1], s.c(1.0))])
                odd = s.eq(s.libm("fmod", n, s.c(2.0)), s.c(1.0))
                value = s.mul(factorial, zeta)
                return s.sel(odd, value, s.b.fneg(value))

            # at the poles: +inf for odd n; even n change sign across them: NaN (TensorFlow)
            at_pole = s.sel(s.eq(s.libm("fmod", n, s.c(2.0)), s.c(1.0)), s.c(math.inf), nan)
            too_negative = s.lt(x, s.c(POLYGAMMA_MIN_X))  # -inf too
            return s.branch(too_negative, lambda: nan,
                            lambda: s.branch(pole, lambda: at_pole, regular))

        def order_zero_or_more():
            return s.branch(s.eq(n, s.c(0.0)),
                            lambda: s.b.call(_digamma_function(cx), [x]), higher)

        value = s.branch(valid, order_zero_or_more, lambda: nan)
        return s.sel(s.is_nan(x), x, value)
    return build


@emitter("Polygamma")
def _polygamma(cx, info, a):
    fn = _scalar_function(cx, "tw.polygamma.f64", 2, _polygamma_body(cx))
    n, x = a
    if info.out_dtype.bits == 64:
        return cx.call_per_lane(fn, n, x)
    wide = [cx.b.fpext(v, cx.wrap(F64)) for v in (n, x)]
    return cx.b.fptrunc(cx.call_per_lane(fn, *wide), cx.wrap(F32))
