"""Kernel source for the special-function ops (`compiler/ops/special.py`); registered in
`exprs.EMITTERS` when that module loads.

As on the cpu target (`cpu/special_functions.py`), Lgamma, Erfc and Digamma compute in
double and the caller's conversion rounds once to the output type: libdevice's lgamma
and erfc, and Cephes' psi (reflection, recurrence up to 10, asymptotic series) written
out as statements. Lgamma's poles are tested first: they are +inf (TensorFlow), where
the simulator's Python lgamma raises. Xlogy, Xlog1py and Xdivy are 0 where x == 0.

Polygamma, Erfinv, Ndtri and the Bessel functions have no GPU code yet: placement keeps
them on the host (`support.gpu_kernel_reason` says why).
"""

from __future__ import annotations

import math

from ...compiler.dtypes import float64 as _F64

# psi's asymptotic series in z = 1 / s^2 (B_2k / 2k from the highest power down) and where
# the recurrence hands over to it: the cpu target's, so both compute the same
from ..cpu.special_functions import _PSI_RECURRENCE_UNTIL, _PSI_SERIES
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
