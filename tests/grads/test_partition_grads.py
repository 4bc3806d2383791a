"""Gradients of DynamicPartition and DynamicStitch against central finite differences
(float64): partitions of every rank, empty partitions, indices spread over several stitch
inputs; and with dims unknown until run time."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import tensorweave as tw
from tests.grads.strategies import check_unknown_dims, seeds, small_shapes, spec, values
from tests.helpers import check_gradients


def _weighted(parts):
    """One tensor from every output, each weighted differently."""
    return tw.concat([tw.reshape(p, [-1]) * float(i + 1) for i, p in enumerate(parts)], 0)


@given(small_shapes(max_side=4), st.integers(1, 3), st.data())
def test_dynamic_partition_grad(shape, n, data):
    x = values(data.draw(seeds), shape)
    k = data.draw(st.integers(0, len(shape)))
    parts = np.random.default_rng(data.draw(seeds)).integers(0, n, shape[:k]).astype(np.int32)
    check_gradients(lambda d, p: _weighted(tw.dynamic_partition(d * d, p, n)), x, parts)


@given(small_shapes(max_dims=2), st.integers(1, 3), st.data())
def test_dynamic_stitch_grad(rest, n, data):
    rng = np.random.default_rng(data.draw(seeds))
    total = data.draw(st.integers(0, 6))
    # a permutation of the rows split over n index tensors: every row is written once
    perm = rng.permutation(total).astype(np.int32)
    cuts = np.sort(rng.integers(0, total + 1, n - 1))
    indices = np.split(perm, cuts)
    datas = [values(data.draw(seeds), (len(i),) + rest) for i in indices]

    def fn(*args):
        return tw.dynamic_stitch(list(args[n:]), [d * d for d in args[:n]])

    check_gradients(fn, *datas, *indices, argnums=tuple(range(n)))


def test_dynamic_stitch_grad_of_repeated_index():
    # the overwritten slice a[1] does not reach the result: no gradient (TensorFlow gave
    # it the row's until its fix of issue 7397; tests/test_review_gradients.py)
    grad = tw.grad(lambda a, b: tw.reduce_sum(tw.dynamic_stitch([[0, 1], [1]], [a, b]) *
                                              [1.0, 2.0]), argnums=(0, 1))
    ga, gb = grad(np.ones(2), np.ones(1))
    np.testing.assert_array_equal(ga, [1.0, 0.0])
    np.testing.assert_array_equal(gb, [2.0])


def test_partition_grads_with_unknown_dims():
    x = values(0, (5, 2))
    p = np.array([1, 0, 1, 1, 0], np.int32)
    check_unknown_dims(lambda d, q: _weighted(tw.dynamic_partition(d * d, q, 3)),
                       [spec(None, 2), tw.TensorSpec([None], tw.int32)], x, p, argnums=(0,))
    idx = np.array([2, 0, 1], np.int32)
    check_unknown_dims(lambda d, i: tw.dynamic_stitch([i], [d * d]),
                       [spec(None, 2), tw.TensorSpec([None], tw.int32)], x[:3], idx, argnums=(0,))
