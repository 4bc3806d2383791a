"""Gradients of the math ops against central finite differences (float64): unary ops on
their differentiable domains, broadcasting binary ops, reductions with axes and keepdims,
MatMul in every transpose combination with broadcast batch dims; where finite differences
are not valid (ties, zeros of |x|) the analytic gradient is checked directly."""

import numpy as np
import pytest
from hypothesis import assume, given
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

# ------------------------------------------------------------------------------- unary

UNARY = [
    ("Neg", tw.negative, "any"),
    ("Abs", tw.abs, "nonzero"),
    ("Exp", tw.exp, "any"),
    ("Log", tw.log, "positive"),
    ("Log1p", tw.log1p, "positive"),
    ("Sqrt", tw.sqrt, "positive"),
    ("Rsqrt", tw.rsqrt, "positive"),
    ("Square", tw.square, "any"),
    ("Reciprocal", tw.reciprocal, "nonzero"),
    ("Sin", tw.sin, "any"),
    ("Cos", tw.cos, "any"),
    ("Tanh", tw.tanh, "any"),
    ("Sigmoid", tw.sigmoid, "any"),
    ("Relu", tw.relu, "nonzero"),
]


def _ops_in(fn, *arrays):
    return {n.op for n in tw.compile(fn).get_concrete_function(*arrays).graph.nodes}


@pytest.mark.parametrize("op, fn, domain", UNARY, ids=[u[0] for u in UNARY])
@given(shape=small_shapes(), seed=seeds)
def test_unary_grad(op, fn, domain, shape, seed):
    x = values(seed, shape, domain)
    check_gradients(fn, x)


@pytest.mark.parametrize("op, fn, domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_functions_build_the_op_under_test(op, fn, domain):
    assert op in _ops_in(fn, np.ones(2))


def test_abs_and_relu_at_zero_give_zero_gradient():
    x = np.array([-1.5, 0.0, 2.0])
    np.testing.assert_array_equal(tw.grad(lambda t: tw.reduce_sum(tw.abs(t)))(x), [-1, 0, 1])
    np.testing.assert_array_equal(tw.grad(lambda t: tw.reduce_sum(tw.relu(t)))(x), [0, 0, 1])


def test_cast_between_floats_passes_the_gradient_back():
    x = values(0, (2, 3))
    # float32 rounding needs a wide finite-difference step; the function is linear
    check_gradients(lambda t: tw.cast(tw.cast(t, tw.float32) * 3.0, tw.float64), x,
                    eps=1e-2, rtol=1e-4, atol=1e-5)
    assert "Cast" in _ops_in(lambda t: tw.cast(t, tw.float32), x)
    g = tw.grad(lambda t: tw.reduce_sum(tw.cast(t, tw.float16) * np.float16(2)))(x)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, np.full((2, 3), 2.0))


def test_cast_to_integer_carries_no_gradient():
    x = values(0, (4,))
    g = tw.grad(lambda t: tw.reduce_sum(tw.cast(tw.cast(t * 10.0, tw.int32), tw.float64) + t))(x)
    np.testing.assert_array_equal(g, np.ones(4))


# ------------------------------------------------------------------------------ binary

BINARY = [
    ("Add", tw.add, "any", "any"),
    ("Sub", tw.subtract, "any", "any"),
    ("Mul", tw.multiply, "any", "any"),
    ("Div", tw.divide, "any", "nonzero"),
    ("SquaredDifference", tw.squared_difference, "any", "any"),
    ("Pow", tw.pow, "positive", "any"),
]


@pytest.mark.parametrize("op, fn, dx, dy", BINARY, ids=[b[0] for b in BINARY])
@given(shapes=broadcastable_shapes(2), sx=seeds, sy=seeds)
def test_binary_grad_with_broadcasting(op, fn, dx, dy, shapes, sx, sy):
    x = values(sx, shapes.input_shapes[0], dx)
    y = values(sy, shapes.input_shapes[1], dy)
    check_gradients(fn, x, y)


@pytest.mark.parametrize("op, fn, dx, dy", BINARY, ids=[b[0] for b in BINARY])
def test_binary_functions_build_the_op_under_test(op, fn, dx, dy):
    assert op in _ops_in(fn, np.ones(2), np.ones(2))


def _untied_pair(seed, x_shape, y_shape):
    """x on multiples of 0.5, y halfway between: no element of x comes near one of y."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 4, x_shape) * 0.5 + rng.uniform(-0.1, 0.1, x_shape)
    y = rng.integers(-4, 4, y_shape) * 0.5 + 0.25 + rng.uniform(-0.1, 0.1, y_shape)
    return x, y


@pytest.mark.parametrize("op, fn", [("Maximum", tw.maximum), ("Minimum", tw.minimum)])
@given(shapes=broadcastable_shapes(2), seed=seeds, swap=st.booleans())
def test_maximum_minimum_grad_away_from_ties(op, fn, shapes, seed, swap):
    x, y = _untied_pair(seed, *shapes.input_shapes)
    if swap:
        x, y = y, x
    check_gradients(fn, x, y)
    assert op in _ops_in(fn, x, y)


@pytest.mark.parametrize("fn", [tw.maximum, tw.minimum])
def test_maximum_minimum_ties_send_the_gradient_to_x(fn):
    x, y = np.array([1.0, 2.0]), np.array([1.0, 0.0])
    gx, gy = tw.grad(lambda a, b: tw.reduce_sum(fn(a, b)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx[0] + gy[0], 1.0)  # a tie passes the gradient on once
    np.testing.assert_array_equal(gx[0], 1.0)


@given(shapes=broadcastable_shapes(2), seed=seeds)
def test_floormod_grad_away_from_jumps(shapes, seed):
    # x / y stays at least 0.15 away from an integer, where floor(x / y) jumps
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.5, 2.0)
    xs, ys = shapes.input_shapes
    y = c * rng.choice([-1.0, 1.0], ys)
    x = c * (rng.integers(-3, 4, xs) + rng.uniform(0.15, 0.85, xs))
    check_gradients(tw.floormod, x, y)
    assert "FloorMod" in _ops_in(tw.floormod, x, y)


def test_pow_with_negative_or_zero_base_and_integer_exponent():
    x = np.array([-1.5, -0.5, 0.0, 0.7])
    check_gradients(lambda t: tw.pow(t, 3.0), x)
    check_gradients(lambda t: tw.pow(t, 2.0), x)
    # d/dy x**y = x**y log x is taken as 0 where x <= 0 (TensorFlow's convention)
    gy = tw.grad(lambda y: tw.reduce_sum(tw.pow(x, y)))(np.full(4, 2.0))
    np.testing.assert_allclose(gy, [0, 0, 0, 0.7 ** 2 * np.log(0.7)])


@given(shape=small_shapes(), n=st.integers(1, 4), seed=seeds)
def test_add_n_grad(shape, n, seed):
    arrays = [values(seed + i, shape) for i in range(n)]
    check_gradients(lambda *ts: tw.add_n(list(ts)) * ts[0], *arrays)


@given(shapes=broadcastable_shapes(3), seed=seeds)
def test_select_grad_with_broadcasting(shapes, seed):
    cs, xs, ys = shapes.input_shapes
    rng = np.random.default_rng(seed)
    cond = rng.random(cs) > 0.5
    check_gradients(lambda c, x, y: tw.where(c, x, y), cond, values(seed, xs),
                    values(seed + 1, ys))


# -------------------------------------------------------------------------- reductions

@st.composite
def reduction_axes(draw, rank):
    """None, an int, or a list of distinct axes (some negative, maybe empty)."""
    kind = draw(st.sampled_from(["none", "int", "list"]))
    if kind == "none" or (kind == "int" and rank == 0):
        return None
    if kind == "int":
        return draw(st.integers(-rank, rank - 1))
    axes = draw(st.lists(st.integers(0, rank - 1), unique=True)) if rank else []
    return [a - rank if draw(st.booleans()) else a for a in axes]


REDUCTIONS = [("Sum", tw.reduce_sum, "any", 0), ("Mean", tw.reduce_mean, "any", 0),
              ("Max", tw.reduce_max, "distinct", 1), ("Min", tw.reduce_min, "distinct", 1),
              ("Prod", tw.reduce_prod, "any", 0)]


@pytest.mark.parametrize("op, fn, domain, min_side", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@given(data=st.data(), keepdims=st.booleans(), seed=seeds)
def test_reduction_grad(op, fn, domain, min_side, data, keepdims, seed):
    x = values(seed, data.draw(small_shapes(min_side=min_side)), domain)
    axis = data.draw(reduction_axes(x.ndim))
    f = lambda t: fn(t, axis=axis, keepdims=keepdims)
    check_gradients(f, x)
    assert op in _ops_in(f, x)


def test_max_min_ties_share_the_gradient():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    g = tw.grad(lambda t: tw.reduce_sum(tw.reduce_max(t, axis=1)))(x)
    np.testing.assert_allclose(g, [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    g = tw.grad(lambda t: tw.reduce_sum(tw.reduce_min(t, axis=0, keepdims=True)))(x)
    np.testing.assert_allclose(g, [[1, 0, 0], [0, 1, 1]])


def product_of_others(x, axes):
    """d prod(x over axes) / dx computed directly: the product of the other elements of
    each slice (no division, so zeros are exact)."""
    axes = tuple(range(x.ndim)) if axes is None else tuple(sorted(a % x.ndim for a in axes))
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, rest + list(axes))
    flat = moved.reshape(moved.shape[:len(rest)] + (-1,))
    out = np.empty_like(flat)
    for idx in np.ndindex(flat.shape):
        *head, j = idx
        row = flat[tuple(head)]
        out[idx] = np.prod(np.delete(row, j))
    return np.transpose(out.reshape(moved.shape), np.argsort(rest + list(axes)))


@given(data=st.data(), keepdims=st.booleans(), seed=seeds)
def test_prod_grad_with_zeros(data, keepdims, seed):
    x = values(seed, data.draw(small_shapes(min_dims=1, min_side=1)))
    # zero out a random subset so that slices hold 0, 1 or several zeros
    x[np.random.default_rng(seed).random(x.shape) < data.draw(st.sampled_from([0.2, 0.4, 0.7]))] = 0
    axis = data.draw(reduction_axes(x.ndim))
    g = tw.grad(lambda t: tw.reduce_sum(tw.reduce_prod(t, axis=axis, keepdims=keepdims)))(x)
    axes = None if axis is None else np.atleast_1d(axis).tolist()
    np.testing.assert_allclose(g, product_of_others(x, axes), rtol=1e-12, atol=1e-12)
    # a product is linear in each element, so central differences are exact even at 0
    check_gradients(lambda t: tw.reduce_prod(t, axis=axis, keepdims=keepdims), x)


def test_prod_grad_with_zero_one_and_two_zeros_per_row():
    x = np.array([[2.0, 3.0, 4.0], [2.0, 0.0, 4.0], [0.0, 3.0, 0.0]])
    g = tw.grad(lambda t: tw.reduce_sum(tw.reduce_prod(t, axis=1)))(x)
    np.testing.assert_array_equal(g, [[12, 8, 6], [0, 8, 0], [0, 0, 0]])


# ------------------------------------------------------------------------------ MatMul

@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@given(batch=broadcastable_shapes(2, max_dims=2, min_side=1), mkn=st.tuples(*[st.integers(0, 3)] * 3),
       seed=seeds)
def test_matmul_grad(transpose_a, transpose_b, batch, mkn, seed):
    m, k, n = mkn
    a_shape = list(batch.input_shapes[0]) + ([k, m] if transpose_a else [m, k])
    b_shape = list(batch.input_shapes[1]) + ([n, k] if transpose_b else [k, n])
    assume(n_elements(a_shape) <= 24 and n_elements(b_shape) <= 24)
    a, b = values(seed, a_shape), values(seed + 1, b_shape)
    check_gradients(lambda x, y: tw.matmul(x, y, transpose_a=transpose_a,
                                           transpose_b=transpose_b), a, b)


# -------------------------------------------------------------------------- unknown dims

def test_elementwise_grads_with_unknown_dims():
    x, y, col = values(0, (4, 3)), values(1, (3,), "nonzero"), values(2, (4, 1), "positive")
    check_unknown_dims(lambda a, b: a * b + a / b, [spec(None, 3), spec(3)], x, y)
    # equal static shapes, different run-time shapes: the row of `a` is broadcast
    check_unknown_dims(lambda a, b: a * b - b, [spec(None, 3), spec(None, 3)], x[:1], x)
    check_unknown_dims(lambda a, b: a - b * b, [spec(None, 3), spec(None, 1)], x, col)
    check_unknown_dims(lambda a, b: tw.pow(b, a), [spec(None, None), spec(None, 1)], x, col)
    check_unknown_dims(lambda a, b: tw.maximum(a, b) + tw.squared_difference(a, b),
                       [spec(None, 3), spec(None, None)], x, col + 5.0)
    check_unknown_dims(lambda a, b: tw.where(a > 0, a, b) + tw.add_n([a, a, a * b]),
                       [spec(None, 3), spec(3)], x, y)
    check_unknown_dims(lambda a: tw.sigmoid(a) * tw.relu(a) + tw.abs(a), [spec(None, None)], x)


@pytest.mark.parametrize("fn", [tw.reduce_sum, tw.reduce_mean, tw.reduce_max, tw.reduce_min,
                                tw.reduce_prod])
def test_reduction_grads_with_unknown_dims(fn):
    x = values(0, (4, 3), "distinct")
    for axis in (None, 0, [-1], [0, 1]):
        for keepdims in (False, True):
            check_unknown_dims(lambda t: fn(t, axis=axis, keepdims=keepdims), [spec(None, 3)], x)
            check_unknown_dims(lambda t: fn(t, axis=axis, keepdims=keepdims),
                               [spec(None, None)], x)


def test_matmul_grads_with_unknown_dims():
    a, b = values(0, (4, 3)), values(1, (3, 2))
    check_unknown_dims(lambda x, y: x @ y, [spec(None, 3), spec(3, 2)], a, b)
    check_unknown_dims(lambda x, y: tw.matmul(y, x, transpose_a=True, transpose_b=True),
                       [spec(None, 3), spec(3, None)], a, b)
    batched = values(2, (2, 4, 3))
    check_unknown_dims(lambda x, y: x @ y, [spec(None, 4, 3), spec(3, 2)], batched, b)
    check_unknown_dims(lambda x, y: x @ y, [spec(None, None, 3), spec(None, 3, 2)],
                       batched, values(3, (1, 3, 2)))
