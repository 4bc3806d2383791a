"""Gradients of the math ops (elementwise, reductions, matmul, scans), after
TensorFlow's math_grad.py."""

from __future__ import annotations

import math

from ...compiler.registry import not_differentiable, register_gradient
from ..ops import math as m
from .common import broadcast_like, reduced_count, restore_reduced_dims, unbroadcast


def _array():
    from ..ops import array
    return array


def _zeros(x):
    return _array().zeros_like(x)


not_differentiable("LogicalNot", "LogicalAnd", "LogicalOr", "Equal", "NotEqual", "Less",
                   "LessEqual", "Greater", "GreaterEqual", "ArgMax", "ArgMin", "All", "Any",
                   "FloorDiv", "Floor", "Ceil", "Round", "IsNan", "IsInf", "IsFinite")


@register_gradient("Sign")
def _sign(op, g):
    # zeros, not None, as TensorFlow's: an optimizer still applies the (zero) gradient
    return [_zeros(op.inputs[0])]


# -- unary ---------------------------------------------------------------------------------

@register_gradient("Neg")
def _neg(op, g):
    return [-g]


@register_gradient("Abs")
def _abs(op, g):
    return [g * m.sign(op.inputs[0])]


@register_gradient("Exp")
def _exp(op, g):
    return [g * op.outputs[0]]


@register_gradient("Log")
def _log(op, g):
    return [g / op.inputs[0]]


@register_gradient("Log1p")
def _log1p(op, g):
    return [g / (1 + op.inputs[0])]


@register_gradient("Expm1")
def _expm1(op, g):
    return [g * m.exp(op.inputs[0])]


@register_gradient("Erf")
def _erf(op, g):
    x = op.inputs[0]
    return [g * (2 / math.sqrt(math.pi)) * m.exp(-m.square(x))]


def _zero_where_no_gradient(g, grad):
    """`grad` with 0 where the incoming gradient `g` is 0, as TensorFlow's SqrtGrad,
    RsqrtGrad and ReciprocalGrad kernels (``if dy == 0 return 0``): the branch that a
    ``where(d > 0, sqrt(d), 0)`` does not select gets 0, not ``0 * inf = NaN``."""
    return m.where(m.equal(g, 0), _zeros(grad), grad)


@register_gradient("Sqrt")
def _sqrt(op, g):
    return [_zero_where_no_gradient(g, g * 0.5 / op.outputs[0])]


@register_gradient("Rsqrt")
def _rsqrt(op, g):
    y = op.outputs[0]
    return [_zero_where_no_gradient(g, g * -0.5 * y * y * y)]


@register_gradient("Square")
def _square(op, g):
    return [g * 2 * op.inputs[0]]


@register_gradient("Reciprocal")
def _reciprocal(op, g):
    y = op.outputs[0]
    return [_zero_where_no_gradient(g, -g * y * y)]


@register_gradient("Sin")
def _sin(op, g):
    return [g * m.cos(op.inputs[0])]


@register_gradient("Cos")
def _cos(op, g):
    return [-g * m.sin(op.inputs[0])]


@register_gradient("Tanh")
def _tanh(op, g):
    y = op.outputs[0]
    return [g * (1 - y * y)]


@register_gradient("Sigmoid")
def _sigmoid(op, g):
    y = op.outputs[0]
    return [g * y * (1 - y)]


@register_gradient("Relu")
def _relu(op, g):
    return [m.where(op.inputs[0] > 0, g, _zeros(g))]


@register_gradient("Tan")
def _tan(op, g):
    y = op.outputs[0]
    return [g * (1 + y * y)]  # sec(x)**2


@register_gradient("Asin")
def _asin(op, g):
    x = op.inputs[0]
    return [g * m.rsqrt(1 - x * x)]


@register_gradient("Acos")
def _acos(op, g):
    x = op.inputs[0]
    return [-g * m.rsqrt(1 - x * x)]


@register_gradient("Atan")
def _atan(op, g):
    x = op.inputs[0]
    return [g / (1 + x * x)]


@register_gradient("Sinh")
def _sinh(op, g):
    return [g * m.cosh(op.inputs[0])]


@register_gradient("Cosh")
def _cosh(op, g):
    return [g * m.sinh(op.inputs[0])]


@register_gradient("Cast")
def _cast(op, g):
    x = op.inputs[0]
    if x.dtype.is_floating and g.dtype.is_floating:
        return [m.cast(g, x.dtype)]
    return [None]


@register_gradient("StopGradient")
def _stop(op, g):
    return [None]


# -- binary --------------------------------------------------------------------------------

@register_gradient("Add")
def _add(op, g):
    x, y = op.inputs
    return [unbroadcast(g, x), unbroadcast(g, y)]


@register_gradient("Sub")
def _sub(op, g):
    x, y = op.inputs
    return [unbroadcast(g, x), unbroadcast(-g, y)]


@register_gradient("Mul")
def _mul(op, g):
    x, y = op.inputs
    return [unbroadcast(g * y, x), unbroadcast(g * x, y)]


@register_gradient("Div")
def _div(op, g):
    x, y = op.inputs
    return [unbroadcast(g / y, x), unbroadcast(-g * x / y / y, y)]


@register_gradient("FloorMod")
def _floormod(op, g):
    x, y = op.inputs
    return [unbroadcast(g, x), unbroadcast(-g * m.floor(x / y), y)]


@register_gradient("Pow")
def _pow(op, g):
    x, y = op.inputs
    z = op.outputs[0]
    gx = g * y * m.pow(x, y - 1)
    safe_log = m.where(x > 0, m.log(m.where(x > 0, x, _array().ones_like(x))), _zeros(x))
    gy = g * z * safe_log
    return [unbroadcast(gx, x), unbroadcast(gy, y)]


@register_gradient("Atan2")
def _atan2(op, g):
    y, x = op.inputs
    scaled = g / (x * x + y * y)
    return [unbroadcast(scaled * x, y), unbroadcast(-scaled * y, x)]


def _select_grad(mask, g, x, y):
    zeros = _zeros(g)
    return [unbroadcast(m.where(mask, g, zeros), x), unbroadcast(m.where(mask, zeros, g), y)]


@register_gradient("Maximum")
def _maximum(op, g):
    x, y = op.inputs
    return _select_grad(x >= y, g, x, y)


@register_gradient("Minimum")
def _minimum(op, g):
    x, y = op.inputs
    return _select_grad(x <= y, g, x, y)


@register_gradient("SquaredDifference")
def _squared_difference(op, g):
    x, y = op.inputs
    d = g * 2 * (x - y)
    return [unbroadcast(d, x), unbroadcast(-d, y)]


@register_gradient("AddN")
def _add_n(op, g):
    return [g] * len(op.inputs)


@register_gradient("Select")
def _select(op, g):
    c, x, y = op.inputs
    zeros = _zeros(g)
    return [None, unbroadcast(m.where(c, g, zeros), x), unbroadcast(m.where(c, zeros, g), y)]


# -- reductions ----------------------------------------------------------------------------

@register_gradient("Sum")
def _sum(op, g):
    x = op.inputs[0]
    g = restore_reduced_dims(g, x, op.attrs["axes"], op.attrs["keepdims"])
    return [broadcast_like(g, x)]


@register_gradient("Mean")
def _mean(op, g):
    x = op.inputs[0]
    axes = op.attrs["axes"]
    g = restore_reduced_dims(g, x, axes, op.attrs["keepdims"])
    if m._is_half(g.dtype):
        # a count of 65520 or more has no float16 value (1/count has): divide in float32
        share = m.cast(m.cast(g, "float32") / reduced_count(x, axes, "float32"), g.dtype)
        return [broadcast_like(share, x)]
    return [broadcast_like(g / reduced_count(x, axes, g.dtype), x)]


def _extremum_grad(op, g):
    x, y = op.inputs[0], op.outputs[0]
    axes, keep = op.attrs["axes"], op.attrs["keepdims"]
    y = restore_reduced_dims(y, x, axes, keep)
    g = restore_reduced_dims(g, x, axes, keep)
    # Ties share the gradient equally, as in TensorFlow.
    hits = m.cast(m.equal(x, y), g.dtype)
    count = m.reduce_sum(hits, axis=axes, keepdims=True)
    return [hits / count * g]


register_gradient("Max")(_extremum_grad)
register_gradient("Min")(_extremum_grad)


@register_gradient("Prod")
def _prod(op, g):
    # d prod / d x_i is the product of the other elements of x_i's slice: as TensorFlow,
    # products of the elements before and after it (exclusive cumprods), never prod / x_i,
    # which is inf / inf = NaN at an infinite x_i and wrong where the whole product
    # overflows or underflows but the product of the others does not; zeros need no care.
    x = op.inputs[0]
    axes, keep = op.attrs["axes"], op.attrs["keepdims"]
    g = restore_reduced_dims(g, x, axes, keep)
    if x.shape.rank is None:  # (a v1 graph's tensor of unknown rank): divide by x_i
        return [_prod_by_division(x, axes) * g]
    rank = len(x.shape)
    axes = list(range(rank)) if axes is None else sorted({a % rank for a in axes})
    if not axes:
        return [broadcast_like(g, x)]
    return [_product_of_others(x, axes) * g]


def _product_of_others(x, axes: list[int]):
    """For each element, the product of the other elements of its slice over `axes`. Over
    axes (a, rest...): the product of the other a-slices (each reduced over rest), times
    the product of the others within its own a-slice."""
    def excluding_self(t, axis):
        return (m.cumprod(t, axis=axis, exclusive=True)
                * m.cumprod(t, axis=axis, exclusive=True, reverse=True))

    first, rest = axes[0], axes[1:]
    if not rest:
        return excluding_self(x, first)
    across = excluding_self(m.reduce_prod(x, axis=rest, keepdims=True), first)
    return across * _product_of_others(x, rest)


def _prod_by_division(x, axes):
    """prod / x_i with zeros counted per slice: with none, prod / x_i; with exactly one,
    only the zero element gets the product of the non-zeros; with more, all get 0."""
    is_zero = m.equal(x, 0)
    ones = _array().ones_like(x)
    nonzero = m.where(is_zero, ones, x)
    prod_nz = m.reduce_prod(nonzero, axis=axes, keepdims=True)
    zeros_in_slice = m.reduce_sum(m.cast(is_zero, x.dtype), axis=axes, keepdims=True)
    one_zero = m.equal(zeros_in_slice, 1) & is_zero
    return m.where(m.equal(zeros_in_slice, 0), prod_nz / nonzero,
                   m.where(one_zero, prod_nz * ones, _zeros(x)))


# -- scans ---------------------------------------------------------------------------------

@register_gradient("Cumsum")
def _cumsum(op, g):
    # each x_i feeds the outputs after it (before it, reversed): a scan the other way
    a = op.attrs
    return [m.cumsum(g, axis=a["axis"], exclusive=a["exclusive"], reverse=not a["reverse"])]


@register_gradient("Cumprod")
def _cumprod(op, g):
    # d y_j / d x_k is the product of the other factors of y_j. TensorFlow's formula,
    # (sum over j of y_j g_j) / x_k, divides by x (NaN where x_k is 0); it holds before the
    # first zero along the scan. At the first zero z, the products of the other factors
    # are those of x with x_z set to 1; after it, every y_j that has x_k also has x_z: 0.
    x = op.inputs[0]
    a = op.attrs
    scan = {"axis": a["axis"], "exclusive": a["exclusive"], "reverse": a["reverse"]}
    back = dict(scan, reverse=not a["reverse"])
    is_zero = m.equal(x, 0)
    count = m.cast(is_zero, x.dtype)
    ones = _array().ones_like(x)
    before_any = m.equal(m.cumsum(count, axis=a["axis"], reverse=a["reverse"]), 0)
    first = is_zero & m.equal(m.cumsum(count, axis=a["axis"], exclusive=True,
                                       reverse=a["reverse"]), 0)
    plain = m.cumsum(op.outputs[0] * g, **back) / m.where(is_zero, ones, x)
    at_first = m.cumsum(m.cumprod(m.where(first, ones, x), **scan) * g, **back)
    return [m.where(before_any, plain, m.where(first, at_first, _zeros(x)))]


# -- matrix products -----------------------------------------------------------------------

@register_gradient("MatMul")
def _matmul(op, g):
    a, b = op.inputs
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    if not ta and not tb:
        ga, gb = m.matmul(g, b, transpose_b=True), m.matmul(a, g, transpose_a=True)
    elif not ta and tb:
        ga, gb = m.matmul(g, b), m.matmul(g, a, transpose_a=True)
    elif ta and not tb:
        ga, gb = m.matmul(b, g, transpose_b=True), m.matmul(a, g)
    else:
        ga = m.matmul(b, g, transpose_a=True, transpose_b=True)
        gb = m.matmul(g, a, transpose_a=True, transpose_b=True)
    return [unbroadcast(ga, a), unbroadcast(gb, b)]
