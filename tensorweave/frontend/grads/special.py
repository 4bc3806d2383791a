"""Gradients of the special functions (`compiler/ops/special.py`), after TensorFlow's
math_grad.py: each one is built from the forward ops themselves (lgamma' = digamma,
digamma' = polygamma(1, .), polygamma(n, .)' = polygamma(n + 1, .)), so gradients of
gradients work too.

The x == 0 conventions of Xlogy, Xlog1py and Xdivy carry over to the gradients without
the NaN that a ``where(x == 0, 0, x * log(y))`` would give: the partials are themselves
Xlogy/Xdivy values (TensorFlow's formulas), 0 wherever x == 0, also at y == 0.
"""

from __future__ import annotations

import math

from ...compiler.registry import register_gradient
from ..ops import math as m
from ..ops import special as s
from .common import unbroadcast

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2
_SQRT_TWO_PI = math.sqrt(2 * math.pi)


@register_gradient("Lgamma")
def _lgamma(op, g):
    return [g * s.digamma(op.inputs[0])]


@register_gradient("Digamma")
def _digamma(op, g):
    return [g * s.polygamma(m.cast(1, op.inputs[0].dtype), op.inputs[0])]


@register_gradient("Polygamma")
def _polygamma(op, g):
    # like TensorFlow: no gradient for the order (it only takes integer values)
    n, x = op.inputs
    return [None, unbroadcast(g * s.polygamma(n + 1, x), x)]


@register_gradient("Erfc")
def _erfc(op, g):
    return [-g * _TWO_OVER_SQRT_PI * m.exp(-m.square(op.inputs[0]))]


@register_gradient("Erfinv")
def _erfinv(op, g):
    # d/dx erfinv(x) = sqrt(pi) / 2 * exp(erfinv(x)^2): inf at +-1, as the function
    return [g * _SQRT_PI_OVER_TWO * m.exp(m.square(op.outputs[0]))]


@register_gradient("Ndtri")
def _ndtri(op, g):
    # d/dp ndtri(p) = sqrt(2 pi) exp(ndtri(p)^2 / 2)
    return [g * _SQRT_TWO_PI * m.exp(m.square(op.outputs[0]) * 0.5)]


@register_gradient("BesselI0e")
def _bessel_i0e(op, g):
    x, y = op.inputs[0], op.outputs[0]
    return [g * (s.bessel_i1e(x) - m.sign(x) * y)]


@register_gradient("BesselI1e")
def _bessel_i1e(op, g):
    x, y = op.inputs[0], op.outputs[0]
    # i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1 / x); 1 / x is inf at 0, where the limit is
    # 1/2 (TensorFlow imputes it the same way). The divisor is made 1 there so that no
    # inf or NaN is computed at all (it would poison a second-order gradient).
    zero = m.equal(x, 0)
    general = s.bessel_i0e(x) - y * (m.sign(x) + m.reciprocal(m.where(zero, 1.0, x)))
    return [g * m.where(zero, 0.5, general)]


def _nonzero(x):
    """1 where x != 0, else 0, in x's dtype."""
    return m.cast(m.not_equal(x, 0), x.dtype)


@register_gradient("Xlogy")
def _xlogy(op, g):
    x, y = op.inputs
    return [unbroadcast(g * s.xlogy(_nonzero(x), y), x),
            unbroadcast(g * s.xdivy(x, y), y)]


@register_gradient("Xlog1py")
def _xlog1py(op, g):
    x, y = op.inputs
    return [unbroadcast(g * s.xlog1py(_nonzero(x), y), x),
            unbroadcast(g * s.xdivy(x, y + 1), y)]


@register_gradient("Xdivy")
def _xdivy(op, g):
    x, y = op.inputs
    return [unbroadcast(g * s.xdivy(_nonzero(x), y), x),
            unbroadcast(g * s.xdivy(-x, m.square(y)), y)]
