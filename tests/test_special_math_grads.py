"""Gradients of the special functions against central finite differences in float64
(on their differentiable domains, random shapes and values), the analytic identities
(lgamma' = digamma, digamma' = trigamma, erfinv' = sqrt(pi)/2 exp(erfinv^2) ...), second
derivatives, and TensorFlow's conventions where finite differences do not apply: the
partials of xlogy/xlog1py/xdivy are 0, never NaN, where x == 0 (y == 0 included), and
bessel_i1e'(0) = 1/2."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings

import tensorweave as tw
from tests.grads.strategies import broadcastable_shapes, seeds, small_shapes
from tests.helpers import TARGETS, assert_same, check_gradients


def _uniform(seed, shape, lo, hi):
    return np.random.default_rng(seed).uniform(lo, hi, tuple(shape))


def _away_from_integers(seed, shape, lo, hi):
    """Values in (lo, hi) at least 0.1 from every integer (the poles of digamma & co)."""
    x = _uniform(seed, shape, lo, hi)
    frac = x - np.floor(x)
    return np.floor(x) + np.clip(frac, 0.1, 0.9)


UNARY = [  # name, function, values for (seed, shape)
    ("lgamma", tw.math.lgamma, lambda s, sh: _away_from_integers(s, sh, -4.0, 8.0)),
    ("digamma", tw.math.digamma, lambda s, sh: _away_from_integers(s, sh, -4.0, 8.0)),
    ("trigamma", lambda x: tw.math.polygamma(tw.ones_like(x), x),
     lambda s, sh: _uniform(s, sh, 0.3, 6.0)),
    ("erfc", tw.math.erfc, lambda s, sh: _uniform(s, sh, -3.0, 3.0)),
    ("erfinv", tw.math.erfinv, lambda s, sh: _uniform(s, sh, -0.95, 0.95)),
    ("ndtri", tw.math.ndtri, lambda s, sh: _uniform(s, sh, 0.03, 0.97)),
    ("erfcinv", tw.math.erfcinv, lambda s, sh: _uniform(s, sh, 0.05, 1.95)),
    ("bessel_i0e", tw.math.bessel_i0e, lambda s, sh: _uniform(s, sh, -6.0, 6.0)),
    ("bessel_i1e", tw.math.bessel_i1e, lambda s, sh: _uniform(s, sh, -6.0, 6.0)),
    ("log_sigmoid", tw.math.log_sigmoid, lambda s, sh: _uniform(s, sh, -30.0, 30.0)),
]


@pytest.mark.parametrize("name, fn, draw", UNARY, ids=[u[0] for u in UNARY])
@settings(max_examples=6, deadline=None)
@given(shape=small_shapes(max_side=3), seed=seeds)
def test_unary_grad_matches_finite_differences(name, fn, draw, shape, seed):
    check_gradients(fn, draw(seed, shape), rtol=1e-5, atol=1e-7)


BINARY = [  # name, function, x values, y values
    ("xlogy", tw.math.xlogy, (-2.0, 2.0), (0.2, 4.0)),
    ("xlog1py", tw.math.xlog1py, (-2.0, 2.0), (-0.8, 4.0)),
    ("xdivy", tw.math.xdivy, (-2.0, 2.0), (0.3, 4.0)),
]


@pytest.mark.parametrize("name, fn, xr, yr", BINARY, ids=[b[0] for b in BINARY])
@settings(max_examples=6, deadline=None)
@given(shapes=broadcastable_shapes(2), seed=seeds)
def test_binary_grad_with_broadcasting_matches_finite_differences(name, fn, xr, yr, shapes,
                                                                  seed):
    xs, ys = shapes.input_shapes
    check_gradients(fn, _uniform(seed, xs, *xr), _uniform(seed + 1, ys, *yr))


def test_lbeta_grad_matches_finite_differences():
    x = _uniform(3, (2, 3), 0.3, 5.0)
    check_gradients(tw.math.lbeta, x)


def _grad(fn, x, target=None):
    g = tw.compile(lambda v: tw.gradients(tw.reduce_sum(fn(v)), [v])[0], target=target)
    return np.asarray(g(x))


def test_analytic_derivatives():
    x = np.array([0.3, 1.0, 2.5, 7.0, -0.5, -2.7])
    for target in TARGETS:
        assert_same(_grad(tw.math.lgamma, x, target), np.asarray(tw.math.digamma(x)))
        assert_same(_grad(tw.math.digamma, x, target),
                    np.asarray(tw.math.polygamma(np.ones(6), x)))
        u = np.array([-0.99, -0.3, 0.0, 0.6, 0.999])
        assert_same(_grad(tw.math.erfinv, u, target),
                    math.sqrt(math.pi) / 2 * np.exp(np.asarray(tw.math.erfinv(u)) ** 2))
        assert_same(_grad(tw.math.log_sigmoid, x, target), 1 / (1 + np.exp(x)))
    # erfinv'(+-1) is inf, as the function's slope there
    assert_same(_grad(tw.math.erfinv, np.array([1.0, -1.0])), np.array([np.inf, np.inf]))


def test_second_derivative_of_lgamma_is_trigamma():
    x = np.array([0.4, 1.5, 3.0, 9.0])

    def second(v):
        g = tw.gradients(tw.reduce_sum(tw.math.lgamma(v)), [v])[0]
        return tw.gradients(tw.reduce_sum(g), [v])[0]

    for target in TARGETS:
        got = np.asarray(tw.compile(second, target=target)(x))
        assert_same(got, np.asarray(tw.math.polygamma(np.ones(4), x)), rtol=1e-12)


def test_xlogy_family_partials_at_x_zero_are_zero_not_nan():
    x = np.array([0.0, 0.0, 0.0, 2.0, -1.0])
    y = np.array([0.0, 3.0, -1.0, 0.5, 4.0])

    def partials(fn):
        def f(a, b):
            return tw.gradients(tw.reduce_sum(fn(a, b)), [a, b])
        return f

    for target in TARGETS:
        with np.errstate(all="ignore"):
            gx, gy = tw.compile(partials(tw.math.xlogy), target=target)(x, y)
            assert_same(np.asarray(gx), np.array([0.0, 0.0, 0.0, math.log(0.5), math.log(4.0)]))
            assert_same(np.asarray(gy), np.array([0.0, 0.0, 0.0, 4.0, -0.25]))
            gx, gy = tw.compile(partials(tw.math.xdivy), target=target)(x, y)
            assert_same(np.asarray(gx), np.array([0.0, 0.0, 0.0, 2.0, 0.25]))
            assert_same(np.asarray(gy), np.array([0.0, 0.0, 0.0, -8.0, 1 / 16]))
            gx, gy = tw.compile(partials(tw.math.xlog1py), target=target)(x, y)
            assert_same(np.asarray(gx), np.array([0.0, 0.0, 0.0, math.log1p(0.5),
                                                  math.log1p(4.0)]))
            assert_same(np.asarray(gy), np.array([0.0, 0.0, 0.0, 2 / 1.5, -1 / 5]))


def test_entropy_gradient_is_finite_where_probabilities_are_zero():
    # -sum p log p with some p == 0: the loss and its gradient stay finite at those p only
    # through xlogy's x == 0 convention (x * log(x) would give NaN)
    p = np.array([0.0, 0.25, 0.75, 0.0])
    for target in TARGETS:
        loss, grad = tw.compile(tw.value_and_grad(
            lambda q: -tw.reduce_sum(tw.math.xlogy(q, q))), target=target)(p)
        assert np.isfinite(np.asarray(loss)) and np.isfinite(np.asarray(grad)).all()
        assert_same(np.asarray(grad)[1:3], -(np.log(p[1:3]) + 1))


def test_bessel_i1e_gradient_at_zero_is_one_half():
    for target in TARGETS:
        assert_same(_grad(tw.math.bessel_i1e, np.array([0.0, -0.0, 1e-300]), target),
                    np.array([0.5, 0.5, 0.5]))
        assert_same(_grad(tw.math.bessel_i0e, np.array([0.0]), target), np.array([0.0]))
