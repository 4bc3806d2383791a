"""Kernel source for the special-function ops (`compiler/ops/special.py`); registered in
`exprs.EMITTERS` when that module loads.

As on the cpu target (`cpu/special_functions.py`), Lgamma, Erfc and Digamma compute in
double and the caller's conversion rounds once to the output type: libdevice's lgamma
and erfc, and Cephes' psi (reflection, recurrence up to 10, asymptotic series) written
out as statements. Lgamma's poles are tested first: they are +inf (TensorFlow), where
the simulator's Python lgamma raises. Xlogy, Xlog1py and Xdivy are 0 where x == 0.

Erfinv, Ndtri, BesselI0e/I1e and Polygamma follow the cpu target's methods statement by
statement (Halley's iteration on erf/erfc, the power and asymptotic series, the Hurwitz
zeta by Euler-Maclaurin) with its constants. Results of `math` functions are wrapped in
float64(): NumPy scalars in the simulator, so a division by zero gives inf as on a GPU
instead of Python's ZeroDivisionError.
"""

from __future__ import annotations

import math

from ...compiler.dtypes import float64 as _F64

# psi's asymptotic series in z = 1 / s^2 (B_2k / 2k from the highest power down) and where
# the recurrence hands over to it: the cpu target's, so both compute the same
from ..cpu.special_functions import (
    _EM_COEFFICIENTS,
    _EPS,
    _PSI_RECURRENCE_UNTIL,
    _PSI_SERIES,
    BESSEL_SERIES_UNTIL,
    HALLEY_STEPS,
    POLYGAMMA_MIN_X,
)
from .exprs import _integral, emitter


def _as_double(x: str) -> str:
    return f"float64({x})"


@emitter("Lgamma")
def _lgamma(cx, op, a):
    x, w = cx.w.tmp("x"), cx.w
    w(f"{x} = {_as_double(a[0])}")
    floor = _integral("floor", x, _F64)
    return f"(math.inf if ({x} <= 0.0 and {floor} == {x}) else math.lgamma({x}))"


@emitter("Erfc")
def _erfc(cx, op, a):
    return f"math.erfc({_as_double(a[0])})"


@emitter("Digamma")
def _digamma(cx, op, a):
    w = cx.w
    x, r, s, acc, refl, z, poly = (w.tmp(n) for n in ("x", "r", "s", "acc", "refl", "z", "p"))
    w(f"{x} = {_as_double(a[0])}")
    w(f"{refl} = float64(0.0)")
    w(f"{s} = {x}")
    w(f"{acc} = float64(math.nan)")
    floor = _integral("floor", x, _F64)
    w(f"if {x} <= 0.0:")
    w(f"    if {floor} == {x}:")  # a pole, or -inf: NaN
    w(f"        {s} = float64(math.nan)")
    w("    else:")
    # psi(x) = psi(1 - x) - pi / tan(pi r), r = x minus its nearest integer (exact)
    w(f"        {r} = {x} - {floor}")
    w(f"        if {r} > 0.5:")
    w(f"            {r} = {x} - ({floor} + 1.0)")
    w(f"        if {r} != 0.5:")
    w(f"            {refl} = float64({math.pi!r} / math.tan({math.pi!r} * {r}))")
    w(f"        {s} = 1.0 - {x}")
    w(f"if not math.isnan({s}):")
    w(f"    {acc} = float64(0.0)")
    w(f"    while {s} < {_PSI_RECURRENCE_UNTIL!r}:")
    w(f"        {acc} = {acc} + 1.0 / {s}")
    w(f"        {s} = {s} + 1.0")
    w(f"    {z} = 1.0 / ({s} * {s})")
    w(f"    {poly} = float64({_PSI_SERIES[0]!r})")
    for c in _PSI_SERIES[1:]:
        w(f"    {poly} = {poly} * {z} + {c!r}")
    w(f"    {acc} = math.log({s}) - 0.5 / {s} - {z} * {poly} - {acc} - {refl}")
    w("else:")
    w(f"    {acc} = {s}")
    return acc


def _zero_where_x_is_zero(cx, op, x: str, value: str) -> str:
    zero = cx.const(op.out_dtype, 0.0)
    return f"({zero} if {x} == {zero} else {value})"


@emitter("Xlogy")
def _xlogy(cx, op, a):
    return _zero_where_x_is_zero(cx, op, a[0], f"{a[0]} * math.log({a[1]})")


@emitter("Xlog1py")
def _xlog1py(cx, op, a):
    return _zero_where_x_is_zero(cx, op, a[0], f"{a[0]} * math.log1p({a[1]})")


@emitter("Xdivy")
def _xdivy(cx, op, a):
    return _zero_where_x_is_zero(cx, op, a[0], f"{a[0]} / {a[1]}")


def _lines(cx, text: str) -> None:
    """Write the statements of `text` (one per line, indentation kept)."""
    for line in text.strip("\n").splitlines():
        cx.w(line)


def _halley_statements(z: str, residual: str, sign: float, r: str) -> str:
    """HALLEY_STEPS steps z -= r / (1 + z r), r = f / f', f' = sign 2/sqrt(pi) e^-z^2;
    `residual` is f as an expression of `z`."""
    step = (f"{r} = float64({residual}) / float64({sign * 2 / math.sqrt(math.pi)!r} * "
            f"math.exp(-{z} * {z}))\n{z} = {z} - {r} / (1.0 + {z} * {r})\n")
    return step * HALLEY_STEPS


def _erfinv_central(cx, x: str, out: str) -> None:
    """`out` = erfinv(x) for |x| <= 1/2 (statements)."""
    r = cx.w.tmp("r")
    _lines(cx, f"""
{out} = {x} * {math.sqrt(math.pi) / 2!r} * (1.0 + {math.pi / 12!r} * {x} * {x})
{_halley_statements(out, f"math.erf({out}) - {x}", 1.0, r)}""")


def _erfcinv_tail(cx, c: str, out: str) -> None:
    """`out` = z with erfc(z) = c for 0 <= c <= 1/2; +inf at 0, NaN below."""
    L, z2, r = cx.w.tmp("L"), cx.w.tmp("z2"), cx.w.tmp("r")
    halley = "\n".join("    " + line for line in
                       _halley_statements(out, f"math.erfc({out}) - {c}", -1.0, r).splitlines())
    _lines(cx, f"""
if {c} > 0.0:
    {L} = -float64(math.log({c}))
    {z2} = {L} - float64(math.log(math.sqrt({math.pi!r} * {L})))
    if {z2} < 0.09:
        {z2} = float64(0.09)
    {out} = float64(math.sqrt({z2}))
{halley}
elif {c} == 0.0:
    {out} = float64(math.inf)
else:
    {out} = float64(math.nan)""")


@emitter("Erfinv")
def _erfinv(cx, op, a):
    x, ax, z = cx.w.tmp("x"), cx.w.tmp("ax"), cx.w.tmp("z")
    cx.w(f"{x} = {_as_double(a[0])}")
    cx.w(f"{ax} = abs({x})")
    cx.w(f"{z} = float64(math.nan)")
    cx.w(f"if {ax} <= 0.5:")
    cx.w.depth += 1
    _erfinv_central(cx, x, z)
    cx.w.depth -= 1
    cx.w("else:")
    cx.w.depth += 1
    _erfcinv_tail(cx, f"(1.0 - {ax})", z)
    cx.w(f"{z} = float64(math.copysign({z}, {x}))")
    cx.w.depth -= 1
    # erfinv(-0.0) is +0.0 on the reference target and in TensorFlow (ndtri((x + 1) / 2))
    return f"({x} if math.isnan({x}) else (0.0 if {x} == 0.0 else {z}))"


@emitter("Ndtri")
def _ndtri(cx, op, a):
    p, z = cx.w.tmp("p"), cx.w.tmp("z")
    cx.w(f"{p} = {_as_double(a[0])}")
    cx.w(f"{z} = float64(math.nan)")
    cx.w(f"if 0.25 <= {p} <= 0.75:")
    cx.w.depth += 1
    t = cx.w.tmp("t")
    cx.w(f"{t} = 2.0 * {p} - 1.0")
    _erfinv_central(cx, t, z)
    cx.w.depth -= 1
    cx.w(f"elif {p} < 0.25:")
    cx.w.depth += 1
    _erfcinv_tail(cx, f"(2.0 * {p})", z)
    cx.w(f"{z} = -{z}")
    cx.w.depth -= 1
    cx.w(f"elif {p} > 0.75:")
    cx.w.depth += 1
    _erfcinv_tail(cx, f"(2.0 * (1.0 - {p}))", z)
    cx.w.depth -= 1
    return f"({p} if math.isnan({p}) else {z} * {math.sqrt(2.0)!r})"


def _bessel(cx, op, a, nu: int) -> str:
    w = cx.w
    x, ax, total, term, k, q, odd = (w.tmp(n) for n in ("x", "ax", "tot", "term", "k", "q",
                                                       "odd"))
    w(f"{x} = {_as_double(a[0])}")
    w(f"{ax} = abs({x})")
    _lines(cx, f"""
{total} = float64(1.0)
{term} = float64(1.0)
{k} = float64(1.0)
if {ax} <= {BESSEL_SERIES_UNTIL!r}:
    {q} = {ax} * {ax} * 0.25
    while {_EPS!r} * {total} < {term} and {k} < 500.0:
        {term} = {term} * {q} / ({k} * ({k} + {float(nu)!r}))
        {total} = {total} + {term}
        {k} = {k} + 1.0
    {total} = {total} * float64(math.exp(-{ax})){f" * {ax} * 0.5" if nu == 1 else ""}
else:
    while {_EPS!r} * abs({total}) < abs({term}) and {k} < 60.0:
        {odd} = 2.0 * {k} - 1.0
        {term} = {term} * ({odd} * {odd} - {float(4 * nu * nu)!r}) / (8.0 * {k} * {ax})
        {total} = {total} + {term}
        {k} = {k} + 1.0
    {total} = {total} / float64(math.sqrt({2 * math.pi!r} * {ax}))""")
    if nu == 1:
        w(f"if {x} < 0.0:")
        w(f"    {total} = -{total}")
    return f"({x} if math.isnan({x}) else {total})"


@emitter("BesselI0e")
def _bessel_i0e(cx, op, a):
    return _bessel(cx, op, a, 0)


@emitter("BesselI1e")
def _bessel_i1e(cx, op, a):
    return _bessel(cx, op, a, 1)


@emitter("Polygamma")
def _polygamma(cx, op, a):
    w = cx.w
    n, x, out = w.tmp("n"), w.tmp("x"), w.tmp("out")
    w(f"{n} = {_as_double(a[0])}")
    w(f"{x} = {_as_double(a[1])}")
    nfloor = _integral("floor", n, _F64)
    xfloor = _integral("floor", x, _F64)
    # order 0: the digamma emitter's statements on x
    w(f"{out} = float64(math.nan)")
    w(f"if {n} == 0.0:")
    w.depth += 1
    psi = _digamma(cx, op, [x])
    w(f"{out} = {psi}")
    w.depth -= 1
    s_, tot, aa, k, done, term, first, rising, power, fact, j = (
        w.tmp(t) for t in ("s", "tot", "a", "k", "done", "term", "first", "rise", "pw",
                           "fact", "j"))
    em = "\n".join(
        f"            {tot} = {tot} + {c!r} * {rising} * {power}\n"
        f"            {rising} = {rising} * ({s_} + {2.0 * i - 1!r}) * ({s_} + {2.0 * i!r})\n"
        f"            {power} = {power} / ({aa} * {aa})"
        for i, c in enumerate(_EM_COEFFICIENTS, start=1))
    _lines(cx, f"""
elif {n} > 0.0 and {nfloor} == {n} and not math.isnan({x}):
    if {x} < {POLYGAMMA_MIN_X!r}:
        {out} = float64(math.nan)
    elif {x} <= 0.0 and {xfloor} == {x}:
        {out} = float64(math.inf) if math.fmod({n}, 2.0) == 1.0 else float64(math.nan)
    else:
        {s_} = {n} + 1.0
        {tot} = float64(0.0)
        {aa} = {x}
        {k} = float64(0.0)
        {done} = False
        while ({k} < 9.0 or {aa} <= 9.0) and not {done}:
            {term} = float64(math.pow({aa}, -{s_}))
            {tot} = {tot} + {term}
            {done} = abs({term}) <= {_EPS!r} * abs({tot}) and abs({tot}) > 0.0
            {aa} = {aa} + 1.0
            {k} = {k} + 1.0
        if not {done}:
            {first} = float64(math.pow({aa}, -{s_}))
            {tot} = {tot} + float64(math.pow({aa}, 1.0 - {s_})) / ({s_} - 1.0) + 0.5 * {first}
            {rising} = {s_}
            {power} = {first} / {aa}
{em}
        {fact} = float64(1.0)
        {j} = float64(1.0)
        while {j} <= {n} and {j} <= 171.0:
            {fact} = {fact} * {j}
            {j} = {j} + 1.0
        {out} = {fact} * {tot} if math.fmod({n}, 2.0) == 1.0 else -({fact} * {tot})
elif math.isnan({x}):
    {out} = {x}""")
    return out
