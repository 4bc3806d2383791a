"""Gradients of issue 14's math functions against central finite differences (float64):
the new unary ops and atan2 on their differentiable domains, cumsum/cumprod with every
flag, reduce_logsumexp/variance/std, the clipping functions away from their kinks,
einsum (random equations) and tensordot; with dims unknown at trace time; and the
analytic values where finite differences do not apply (infinite inputs, kinks)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.grads.strategies import (
    broadcastable_shapes,
    check_unknown_dims,
    n_elements,
    seeds,
    small_shapes,
    spec,
    values,
)
from tests.helpers import check_gradients
from tests.ops.test_math import reduction_axes
from tests.ops.test_math_extra import einsum_cases, tensordot_cases


def few(n: int) -> settings:
    """`n` examples under the suite's "ci" profile (25), scaled with the active profile:
    more under "thorough", at most the gpu simulator's 4 there."""
    per_ci = settings.default.max_examples / 25
    return settings(max_examples=max(1, min(settings.default.max_examples, int(n * per_ci))),
                    deadline=None)


def _ops_in(fn, *arrays):
    return {n.op for n in tw.compile(fn).get_concrete_function(*arrays).graph.nodes}


def _inside(seed, shape, bound):
    """Values uniform in (-bound, bound)."""
    return np.random.default_rng(seed).uniform(-bound, bound, tuple(shape))


# ------------------------------------------------------------------------------- unary

UNARY = [  # op, function, values for a seed and shape
    ("Tan", tw.tan, lambda s, sh: _inside(s, sh, 1.2)),
    ("Asin", tw.asin, lambda s, sh: _inside(s, sh, 0.9)),
    ("Acos", tw.acos, lambda s, sh: _inside(s, sh, 0.9)),
    ("Atan", tw.atan, lambda s, sh: values(s, sh)),
    ("Sinh", tw.sinh, lambda s, sh: values(s, sh)),
    ("Cosh", tw.cosh, lambda s, sh: values(s, sh)),
]


@pytest.mark.parametrize("op, fn, draw", UNARY, ids=[u[0] for u in UNARY])
@few(10)
@given(shape=small_shapes(), seed=seeds)
def test_unary_grad(op, fn, draw, shape, seed):
    check_gradients(fn, draw(seed, shape))


@pytest.mark.parametrize("op, fn, draw", UNARY, ids=[u[0] for u in UNARY])
def test_unary_functions_build_the_op_under_test(op, fn, draw):
    assert op in _ops_in(fn, np.ones(2))


@few(15)
@given(shapes=broadcastable_shapes(2), sy=seeds, sx=seeds)
def test_atan2_grad_with_broadcasting(shapes, sy, sx):
    y = values(sy, shapes.input_shapes[0])
    x = values(sx, shapes.input_shapes[1], "nonzero")  # away from the origin
    check_gradients(tw.atan2, y, x)
    assert "Atan2" in _ops_in(tw.atan2, y, x)


def test_round_and_predicates_pass_no_gradient():
    x = np.array([0.3, 1.7])
    g = tw.grad(lambda t: tw.reduce_sum(tw.round(t) * t))(x)
    np.testing.assert_array_equal(g, np.round(x))  # only the product's direct path
    g = tw.grad(lambda t: tw.reduce_sum(tw.where(tw.is_finite(t), t, t * 2)))(x)
    np.testing.assert_array_equal(g, [1.0, 1.0])


# ------------------------------------------------------------------------------- scans

@pytest.mark.parametrize("op, fn, domain", [("Cumsum", tw.cumsum, "any"),
                                            ("Cumprod", tw.cumprod, "nonzero")])
@few(15)
@given(shape=small_shapes(min_dims=1), seed=seeds, data=st.data())
def test_scan_grads_with_every_flag(op, fn, domain, shape, seed, data):
    x = values(seed, shape, domain)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    exclusive, reverse = data.draw(st.booleans()), data.draw(st.booleans())
    scan = lambda t: fn(t, axis=axis, exclusive=exclusive, reverse=reverse)  # noqa: E731
    check_gradients(scan, x)
    assert op in _ops_in(scan, x)


def test_scan_grads_with_unknown_dims():
    x = values(3, (4, 3), "nonzero")
    for fn in (tw.cumsum, tw.cumprod):
        check_unknown_dims(lambda t, f=fn: f(t, axis=1, exclusive=True), [spec(None, 3)], x)


# -------------------------------------------------------------------------- reductions

@pytest.mark.parametrize("fn", [tw.reduce_logsumexp, tw.reduce_variance, tw.reduce_std])
@few(15)
@given(shape=small_shapes(min_dims=1, min_side=2), seed=seeds, keepdims=st.booleans(),
       data=st.data())
def test_statistical_reduction_grads(fn, shape, seed, keepdims, data):
    # rank and sides >= 1 and 2: a slice of one element has variance 0, where the
    # gradient of std is infinite
    x = values(seed, shape)
    axis = data.draw(reduction_axes(len(shape)))
    assume(axis != [])
    check_gradients(lambda t: fn(t, axis=axis, keepdims=keepdims), x)


def test_logsumexp_grad_is_the_softmax_and_ignores_minus_infinity():
    x = np.array([[1.0, 2.0, 3.0], [-np.inf, 0.0, 0.0]])
    g = tw.grad(lambda t: tw.reduce_sum(tw.reduce_logsumexp(t, axis=1)))(x)
    e = np.exp(x[0] - 3)
    np.testing.assert_allclose(g[0], e / e.sum(), rtol=1e-12)
    np.testing.assert_array_equal(g[1], [0.0, 0.5, 0.5])
    big = np.array([1000.0, 1000.0])
    np.testing.assert_allclose(tw.grad(tw.reduce_logsumexp)(big), [0.5, 0.5])


def test_reduction_grads_with_unknown_dims():
    x = values(4, (3, 4))
    for fn in (tw.reduce_logsumexp, tw.reduce_variance, tw.reduce_std):
        check_unknown_dims(lambda t, f=fn: f(t, axis=1), [spec(None, 4)], x)
        check_unknown_dims(lambda t, f=fn: f(t, axis=0, keepdims=True), [spec(None, None)], x)


# ---------------------------------------------------------------------------- clipping

@few(15)
@given(shape=small_shapes(), seed=seeds)
def test_clip_by_value_grad_away_from_the_bounds(shape, seed):
    x = values(seed, shape, "distinct")  # on a grid of quarters (+-0.05)
    check_gradients(lambda t: tw.clip_by_value(t, -0.6, 0.85), x)


def test_clip_by_value_grad_passes_inside_and_stops_outside():
    x = np.array([-2.0, -0.5, 0.0, 0.5, 2.0])
    g = tw.grad(lambda t: tw.reduce_sum(tw.clip_by_value(t, -1.0, 1.0)))(x)
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 0])


@pytest.mark.parametrize("clip", [0.3, 50.0], ids=["clipped", "unclipped"])
@few(10)
@given(shape=small_shapes(min_dims=1, min_side=1), seed=seeds, data=st.data())
def test_clip_by_norm_grad(clip, shape, seed, data):
    x = values(seed, shape, "nonzero")
    axes = data.draw(reduction_axes(len(shape)))
    check_gradients(lambda t: tw.clip_by_norm(t, clip, axes=axes), x)


def test_clip_by_norm_grad_of_zero_is_finite():
    g = tw.grad(lambda t: tw.reduce_sum(tw.clip_by_norm(t, 1.0)))(np.zeros(3))
    np.testing.assert_array_equal(g, [1.0, 1.0, 1.0])


@pytest.mark.parametrize("clip", [0.5, 100.0], ids=["clipped", "unclipped"])
@few(8)
@given(sa=small_shapes(min_side=1), sb=small_shapes(min_side=1), seed=seeds)
def test_clip_by_global_norm_grad(clip, sa, sb, seed):
    a, b = values(seed, sa), values(seed + 1, sb)

    def fn(x, y):
        (cx, cy), norm = tw.clip_by_global_norm([x, y], clip)
        return tw.concat([tw.reshape(cx, [-1]), tw.reshape(cy, [-1]), tw.reshape(norm, [1])], 0)

    check_gradients(fn, a, b)


# ------------------------------------------------------------------ einsum, tensordot

@few(20)
@given(case=einsum_cases(), seed=seeds)
def test_einsum_grad(case, seed):
    equation, shapes = case
    assume(sum(n_elements(s) for s in shapes) <= 40)
    xs = [values(seed + i, s) for i, s in enumerate(shapes)]
    check_gradients(lambda *ts: tw.einsum(equation, *ts), *xs)


def test_einsum_grad_with_unknown_dims():
    a, b = values(5, (4, 2, 3)), values(6, (3, 2))
    check_unknown_dims(lambda x, y: tw.einsum("bij,jk->bik", x, y),
                       [spec(None, 2, 3), spec(3, 2)], a, b)
    check_unknown_dims(lambda x, y: tw.einsum("bij,jk->bk", x, y),
                       [spec(None, None, 3), spec(3, None)], a, b)


@few(15)
@given(case=tensordot_cases(), seed=seeds)
def test_tensordot_grad(case, seed):
    sa, sb, axes = case
    assume(n_elements(sa) + n_elements(sb) <= 40)
    check_gradients(lambda x, y: tw.tensordot(x, y, axes), values(seed, sa), values(seed + 1, sb))
