"""Adversarial review of gradients: cases where a gradient rule gave a plausible but
wrong value, checked against central finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
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
