"""tw.custom_gradient: the user's grad_fn replaces differentiation of the function, with
tw.grad/tw.gradients in traced functions and with GradientTape eagerly and traced."""

import numpy as np
import pytest
from hypothesis import given, settings

import tensorweave as tw
from tests.grads.strategies import seeds, small_shapes, values
from tests.helpers import TARGETS, check_gradients

rng = np.random.default_rng(1)


@tw.custom_gradient
def log1pexp(x):
    """log(1 + e^x) with a gradient that stays finite for large x."""
    e = tw.exp(x)

    def grad(dy):
        return dy * (1.0 - 1.0 / (1.0 + e))

    return tw.math.log(1.0 + e), grad


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@pytest.mark.parametrize("target", TARGETS)
def test_stable_gradient_where_autodiff_overflows(target):
    x = np.array([-3.0, 0.5, 100.0], dtype=np.float32)  # e^100 overflows float32
    expected = _sigmoid(x.astype(np.float64))
    got = tw.compile(tw.grad(lambda x: tw.reduce_sum(log1pexp(x))), target=target)(x)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    plain = tw.compile(tw.grad(lambda x: tw.reduce_sum(tw.math.log(1.0 + tw.exp(x)))),
                       target=target)(x)
    assert np.isnan(plain[2])  # what the custom gradient avoids: inf / inf

    xt = tw.constant(x)
    with tw.GradientTape() as tape:
        tape.watch(xt)
        y = tw.reduce_sum(log1pexp(xt))
    np.testing.assert_allclose(tape.gradient(y, xt).numpy(), expected, rtol=1e-6)


@tw.custom_gradient
def weighted(x, y):
    """x * sin(y), two outputs in a dict, with its true gradients written by hand."""
    sy = tw.sin(y)

    def grad(d_prod, d_sum):
        return d_prod * sy + d_sum, d_prod * x * tw.cos(y) + d_sum

    return {"prod": x * sy, "sum": x + y}, grad


@settings(max_examples=6)
@given(seed=seeds, shape=small_shapes(min_dims=0, max_dims=2))
def test_hand_written_gradients_match_finite_differences(seed, shape):
    x, y = values(seed, shape), values(seed + 7, shape)

    def f(x, y):
        out = weighted(x, y)
        return out["prod"] * 2.0 + out["sum"]

    check_gradients(f, x, y)


def test_grad_fn_is_what_differentiation_uses():
    @tw.custom_gradient
    def clip_grad(x):
        def grad(dy):
            return tw.minimum(tw.maximum(dy, -1.0), 1.0)
        return tw.identity(x), grad

    x = np.array([1.0, 2.0, 3.0])
    weights = np.array([0.5, -4.0, 7.0])
    g = tw.compile(tw.grad(lambda x: tw.reduce_sum(clip_grad(x) * weights)))(x)
    np.testing.assert_allclose(g, np.clip(weights, -1.0, 1.0))


@pytest.mark.parametrize("mode", ["eager", "reference", "cpu"])
def test_variables_get_gradients_from_grad_fn(mode):
    v = tw.Variable(np.array([2.0, -1.0]))

    @tw.custom_gradient
    def scaled(x):
        out = x * v

        def grad(dy, variables=None):
            assert [u.name for u in variables] == [v.name]
            return dy * v, [tw.reduce_sum(tw.expand_dims(dy * x, 0), axis=0)]

        return out, grad

    x = np.array([3.0, 5.0])
    w = np.array([1.0, 10.0])

    def grads(x):
        with tw.GradientTape() as tape:
            tape.watch(x)
            y = tw.reduce_sum(scaled(x) * w)
        return tape.gradient(y, [x, v])

    if mode == "eager":
        gx, gv = [g.numpy() for g in grads(tw.constant(x))]
    else:
        gx, gv = tw.compile(grads, target=mode)(x)
    np.testing.assert_allclose(gx, w * v.numpy())
    np.testing.assert_allclose(gv, w * x)


def test_grad_fn_without_variables_argument_is_an_error():
    v = tw.Variable(np.array([1.0]))

    @tw.custom_gradient
    def uses_v(x):
        return x * v, lambda dy: dy

    with pytest.raises(TypeError, match="keyword argument 'variables'"):
        tw.compile(lambda x: uses_v(x))(np.array([1.0]))


def test_wrong_number_of_gradients_names_the_function():
    @tw.custom_gradient
    def two_inputs(x, y):
        return x * y, lambda dy: dy  # one gradient for two inputs

    with pytest.raises(tw.errors.CompileError, match="two_inputs returned 1 gradients for 2"):
        tw.compile(tw.grad(lambda x, y: tw.reduce_sum(two_inputs(x, y))))(
            np.array([1.0]), np.array([2.0]))
    with pytest.raises(TypeError, match=r"must return \(y, grad_fn\)"):
        tw.custom_gradient(lambda x: x)(tw.constant(1.0))


def test_second_order_through_grad_fn_that_uses_x():
    @tw.custom_gradient
    def cube(x):
        def grad(dy):
            return dy * 3.0 * x * x
        return x * x * x, grad

    x = np.array([0.5, -2.0])
    xt = tw.constant(x)
    with tw.GradientTape() as outer:
        outer.watch(xt)
        with tw.GradientTape() as inner:
            inner.watch(xt)
            y = tw.reduce_sum(cube(xt))
        g = inner.gradient(y, xt)
    np.testing.assert_allclose(g.numpy(), 3 * x * x)
    np.testing.assert_allclose(outer.gradient(g, xt).numpy(), 6 * x)
    second = tw.compile(tw.grad(lambda x: tw.reduce_sum(
        tw.grad(lambda x: tw.reduce_sum(cube(x)))(x))))(x)
    np.testing.assert_allclose(second, 6 * x)


def test_forward_value_and_no_tape_eagerly():
    x = rng.normal(size=(3,))
    out = log1pexp(tw.constant(x))  # no tape: just the function's value
    np.testing.assert_allclose(out.numpy(), np.log1p(np.exp(x)), rtol=1e-12)
