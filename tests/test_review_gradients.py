"""Adversarial review of gradients: cases where a gradient rule gave a plausible but
wrong value, checked against central finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.frontend.building import apply_op1
from tests.helpers import TARGETS, check_gradients


@pytest.mark.parametrize("target", TARGETS)
@given(data=st.data())
def test_dynamic_stitch_gradient_with_repeated_indices(target, data):
    """Where an index repeats (in one index tensor or across several), the later slice
    wins the row and the slices it overwrote do not reach the result: their gradient is
    zero. The rule gave every slice the row's gradient (TensorFlow's issue 7397), so an
    overwritten slice got the gradient of a value it never produced."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31 - 1)))
    n = data.draw(st.integers(1, 3))
    rows = data.draw(st.integers(1, 4))
    rest = data.draw(st.sampled_from([(), (2,), (1, 3)]))
    # every row written at least once (a row nobody writes is zero whatever the data)
    lengths = [data.draw(st.integers(0, 5)) for _ in range(n)]
    flat = np.concatenate([rng.permutation(rows),
                           rng.integers(0, rows, sum(lengths))]).astype(np.int32)
    rng.shuffle(flat)
    cuts = np.cumsum([len(flat) - sum(lengths[1:])] + lengths[1:-1]) if n > 1 else []
    indices = np.split(flat, cuts)
    datas = [rng.normal(size=(len(i),) + rest) for i in indices]

    def fn(*args):
        return tw.dynamic_stitch(list(args[n:]), [d * d for d in args[:n]])

    check_gradients(fn, *datas, *indices, argnums=tuple(range(n)), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_dynamic_stitch_gradient_of_an_overwritten_slice_is_zero(target):
    grad = tw.compile(lambda a, b: tw.gradients(
        tw.reduce_sum(tw.dynamic_stitch([[0, 1], [1]], [a, b]) * [1.0, 2.0]), [a, b]),
        target=target)
    ga, gb = grad(np.ones(2), np.ones(1))
    np.testing.assert_array_equal(ga, [1.0, 0.0])  # a[1] was overwritten by b[0]
    np.testing.assert_array_equal(gb, [2.0])
    # a repeat inside one index tensor, slices of rank 1
    x = np.arange(6.0).reshape(3, 2)
    (gx,) = tw.compile(lambda x: tw.gradients(tw.reduce_sum(
        tw.dynamic_stitch([[0, 1, 0]], [x]) * [[1.0, 2.0], [3.0, 4.0]]), [x]), target=target)(x)
    np.testing.assert_array_equal(gx, [[0.0, 0.0], [3.0, 4.0], [1.0, 2.0]])


@pytest.mark.parametrize("target", TARGETS)
@given(data=st.data())
def test_tensor_scatter_update_gradient_with_repeated_indices(target, data):
    """tensor_scatter_nd_update: where a coordinate repeats, the last update wins and the
    earlier ones do not reach the result, so their gradient is zero; every update got the
    slot's gradient. Also with batch_dims (the op's attribute: one scatter per batch)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31 - 1)))
    b = data.draw(st.integers(0, 1))
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=b + 1, max_size=b + 3)))
    depth = data.draw(st.integers(1, len(shape) - b))
    count = data.draw(st.integers(1, 5))
    lead = shape[:b] + (count,)
    idx = np.stack([rng.integers(0, d, lead) for d in shape[b:b + depth]], -1)
    idx = idx.astype(data.draw(st.sampled_from([np.int32, np.int64])))
    updates = rng.normal(size=lead + shape[b + depth:])
    x = rng.normal(size=shape)

    def fn(t, i, v):
        return apply_op1("TensorScatterUpdate", [t * t, i, v * v], {"batch_dims": b})

    check_gradients(fn, x, idx, updates, argnums=(0, 2), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_scatter_update_gradient_of_an_overwritten_update_is_zero(target):
    grad = tw.compile(lambda t, v: tw.gradients(tw.reduce_sum(
        tw.tensor_scatter_nd_update(t, [[1], [1]], v) * [1.0, 2.0, 3.0]), [t, v]), target=target)
    gt, gv = grad(np.ones(3), np.ones(2))
    np.testing.assert_array_equal(gt, [1.0, 0.0, 3.0])
    np.testing.assert_array_equal(gv, [0.0, 2.0])  # v[0] was overwritten by v[1]


@pytest.mark.parametrize("target", TARGETS)
@given(data=st.data())
def test_cumprod_gradient_where_elements_are_zero(target, data):
    """cumprod's gradient divided by x (TensorFlow's formula): NaN wherever an element was
    0, though the derivative is finite (the product of the other factors); zeros are
    drawn often, several per row, with every flag and axis."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31 - 1)))
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    x = rng.integers(-4, 5, shape) / 2.0  # 0 one time in nine
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    exclusive, reverse = data.draw(st.booleans()), data.draw(st.booleans())
    check_gradients(lambda v: tw.cumprod(v, axis, exclusive=exclusive, reverse=reverse), x,
                    target=target)
