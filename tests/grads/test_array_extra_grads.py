"""Gradients of issue 14's array ops against central finite differences (float64): sort,
gather_nd, scatter_nd, tensor_scatter_nd_*, boolean_mask, reverse, roll, linspace,
meshgrid and the segment max/min/prod/mean/sqrt_n reductions; gradients of the gradient
ops (each is the adjoint of its forward op); gradients traced with unknown dims; and the
ops that have none."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorweave as tw
from tensorweave.compiler.registry import get_op
from tensorweave.frontend.building import apply_op1
from tests.grads.strategies import check_unknown_dims, n_elements, seeds, small_shapes, spec, values
from tests.helpers import check_gradients

# finite differences run the forward function twice per element: few, small examples
few = settings(max_examples=10)


def nonempty_shapes(min_dims=1, max_dims=3):
    return small_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1)


# ---------------------------------------------------------------------------- sorting

@few
@given(nonempty_shapes(), st.booleans(), st.data())
def test_sort_grad(shape, descending, data):
    x = values(data.draw(seeds), shape, "distinct")  # ties would move under a step
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    direction = "DESCENDING" if descending else "ASCENDING"
    check_gradients(lambda t: tw.sort(t, axis=axis, direction=direction), x)


def test_sort_grad_with_unknown_dims():
    check_unknown_dims(lambda t: tw.sort(t, axis=0, direction="DESCENDING"),
                       [spec(None, None)], values(0, (4, 3), "distinct"))


@few
@given(nonempty_shapes(), st.data())
def test_take_along_axis_and_its_gradient_are_adjoint(shape, data):
    # repeated indices: the gradient adds them up; its own gradient gathers again
    axis = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(data.draw(seeds))
    idx = rng.integers(0, shape[axis], shape).astype(np.int32)
    x = values(data.draw(seeds), shape)
    check_gradients(lambda t, i: apply_op1("TakeAlongAxis", [t, i], {"axis": axis}), x, idx)
    like = np.zeros(shape)
    check_gradients(lambda g, i, lk: apply_op1("TakeAlongAxisGrad", [g * g, i, lk],
                                               {"axis": axis}), x, idx, like, argnums=(0,))


# ----------------------------------------------------------------- gather/scatter nd

@st.composite
def nd_case(draw, batch=True):
    """A small params shape, batch_dims, depth and valid indices (repeats likely)."""
    b = draw(st.integers(0, 1)) if batch else 0
    shape = draw(small_shapes(min_dims=b + 1, max_dims=b + 3, min_side=1))
    depth = draw(st.integers(1, len(shape) - b))
    grid = draw(small_shapes(min_dims=0, max_dims=2, min_side=1))
    rng = np.random.default_rng(draw(seeds))
    lead = tuple(shape[:b]) + tuple(grid)
    idx = np.stack([rng.integers(0, d, lead) for d in shape[b:b + depth]], -1)
    return tuple(shape), b, idx.astype(draw(st.sampled_from([np.int32, np.int64])))


@few
@given(nd_case(), seeds)
def test_gather_nd_grad_with_repeated_indices(case, seed):
    shape, b, idx = case
    check_gradients(lambda p, i: tw.gather_nd(p, i, batch_dims=b), values(seed, shape), idx)


@few
@given(nd_case(batch=False), seeds)
def test_scatter_nd_grad(case, seed):
    shape, _, idx = case
    u = values(seed, idx.shape[:-1] + shape[idx.shape[-1]:])
    check_gradients(lambda i, v: tw.scatter_nd(i, v, shape), idx, u)


def _unique_rows(idx):
    """`idx` with repeated coordinates dropped (an overwritten update has no gradient)."""
    flat = idx.reshape(-1, idx.shape[-1])
    _, first = np.unique(flat, axis=0, return_index=True)
    return flat[np.sort(first)]


@few
@given(nd_case(batch=False), st.sampled_from(["update", "add", "sub", "max", "min"]), seeds)
def test_tensor_scatter_nd_grads(case, mode, seed):
    shape, _, idx = case
    if mode in ("update", "max", "min"):
        idx = _unique_rows(idx)
    u_shape = idx.shape[:-1] + shape[idx.shape[-1]:]
    # distinct values: max/min keep their winners under a finite-difference step
    both = values(seed, (n_elements(shape) + n_elements(u_shape),), "distinct")
    x, u = both[:n_elements(shape)].reshape(shape), both[n_elements(shape):].reshape(u_shape)
    fn = getattr(tw, f"tensor_scatter_nd_{mode}")
    check_gradients(lambda t, i, v: fn(t, i, v), x, idx, u)


@few
@given(nd_case(), seeds)
def test_batched_tensor_scatter_add_grad(case, seed):
    # the gradient of gather_nd with batch_dims, and its gradient in turn
    shape, b, idx = case
    u = values(seed, idx.shape[:-1] + shape[b + idx.shape[-1]:])
    x = values(seed + 1, shape)
    check_gradients(lambda t, i, v: apply_op1("TensorScatterAdd", [t, i, v * v],
                                              {"batch_dims": b}), x, idx, u)


def test_tensor_scatter_max_shares_the_gradient_of_ties():
    # TensorFlow's rule: the tensor entry and an update equal to the result split it
    grads = tw.grad(lambda t, v: tw.reduce_sum(tw.tensor_scatter_nd_max(t, [[0], [1]], v)),
                    argnums=(0, 1))(np.array([2.0, 5.0, 1.0]), np.array([2.0, 3.0]))
    np.testing.assert_array_equal(grads[0], [0.5, 1.0, 1.0])
    np.testing.assert_array_equal(grads[1], [0.5, 0.0])


def test_gather_nd_grad_with_unknown_dims():
    idx = np.array([[1, 0], [1, 0], [0, 2]], np.int32)
    check_unknown_dims(lambda p, i: tw.gather_nd(p, i), [spec(None, None),
                                                         tw.TensorSpec([None, 2], tw.int32)],
                       values(0, (2, 3)), idx)


# ------------------------------------------------------------------ masking, reversing

@few
@given(nonempty_shapes(), st.data())
def test_boolean_mask_grad(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    k = data.draw(st.integers(1, len(shape) - axis))
    mask = np.random.default_rng(data.draw(seeds)).random(shape[axis:axis + k]) > 0.4
    check_gradients(lambda t, mk: tw.boolean_mask(t, mk, axis=axis),
                    values(data.draw(seeds), shape), mask)


def test_boolean_mask_grad_of_grad_and_unknown_dims():
    mask = np.array([True, False, True])
    x = values(0, (3, 2))
    check_gradients(lambda g, mk: apply_op1("BooleanMaskGrad", [g * g, mk], {"axis": 0}),
                    values(1, (2, 2)), mask)
    check_unknown_dims(lambda t, mk: tw.boolean_mask(t, mk),
                       [spec(None, 2), tw.TensorSpec([None], tw.bool_)], x, mask)


@few
@given(nonempty_shapes(), st.data())
def test_reverse_and_roll_grads(shape, data):
    x = values(data.draw(seeds), shape)
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True))
    check_gradients(lambda t: tw.reverse(t, axes), x)
    roll_axes = [data.draw(st.integers(-len(shape), len(shape) - 1)) for _ in range(2)]
    shifts = [data.draw(st.integers(-4, 4)) for _ in range(2)]
    check_gradients(lambda t: tw.roll(t, shifts, roll_axes), x)


def test_roll_op_grad_with_unknown_dims():
    check_unknown_dims(lambda t: tw.roll(t * t, [2, -1], [0, 1]), [spec(None, None)],
                       values(0, (3, 4)))
    check_gradients(lambda t: apply_op1("Roll", [t], {"shift": [2, -1], "axis": [0, 1]}),
                    values(1, (3, 4)))


# ------------------------------------------------------------------ creation functions

@few
@given(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=2), st.integers(0, 5),
       seeds)
def test_linspace_and_meshgrid_grads(shape, num, seed):
    start, stop = values(seed, shape), values(seed + 1, shape)
    check_gradients(lambda a, b: tw.linspace(a, b, num, axis=-1), start, stop)
    x, y = values(seed, (3,)), values(seed + 1, (2,))
    check_gradients(lambda a, b: tw.stack(tw.meshgrid(a * a, b)), x, y)


# ------------------------------------------------------------------ segment reductions

@few
@given(small_shapes(min_dims=1, max_side=4), st.integers(0, 4),
       st.sampled_from(["max", "min", "mean", "sqrt_n", "prod"]), st.data())
def test_unsorted_segment_grads(shape, n, how, data):
    x = values(data.draw(seeds), shape, "distinct" if how in ("max", "min") else "any")
    k = data.draw(st.integers(0, len(shape)))
    ids = np.random.default_rng(data.draw(seeds)).integers(-1, n, shape[:k]).astype(np.int32)
    fn = getattr(tw.math, f"unsorted_segment_{how}")

    def finite(d, i):
        # empty max/min segments hold -+1.8e308, whose weighted sum would swamp the
        # finite differences: zero them (their gradient is 0 either way)
        out = fn(d, i, n)
        return tw.where(tw.abs(out) < 1e300, out, tw.zeros_like(out))

    check_gradients(finite, x, ids)


@pytest.mark.parametrize("zeros", [[1], [1, 3]])
def test_unsorted_segment_prod_grad_with_zeros(zeros):
    x = values(0, (5, 2))
    x[zeros, 0] = 0.0  # one zero: d/dzero is the product of the others; two: all 0
    check_gradients(lambda d, i: tw.math.unsorted_segment_prod(d, i, 2), x,
                    np.array([0, 0, 1, 0, 1], np.int32))


def test_unsorted_segment_max_shares_ties():
    g = tw.grad(lambda d: tw.reduce_sum(tw.math.unsorted_segment_max(d, [0, 0, 0, 1], 2)))(
        np.array([1.0, 3.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5, 1.0])


def test_ops_without_gradients_are_marked():
    for name in ("ArgSort", "SearchSorted", "SequenceMask"):
        assert get_op(name).not_differentiable, name
