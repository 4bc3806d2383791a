"""tw.sparse.reduce_sum, add, reorder, retain, slice, reshape and
safe_embedding_lookup_sparse against NumPy (hypothesis) and TensorFlow 2.21's results on
the same inputs; gradients against finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.errors import ShapeError
from tests.helpers import check_gradients

sparse = tw.sparse
S = sparse.SparseTensor


@st.composite
def sparse_inputs(draw, max_rank=3, unique=True, sorted_=True):
    rank = draw(st.integers(1, max_rank))
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    cells = list(np.ndindex(*shape))
    n = draw(st.integers(0, min(len(cells), 6)))
    chosen = draw(st.lists(st.sampled_from(cells), min_size=n, max_size=n, unique=unique))
    if sorted_:
        chosen = sorted(chosen)
    indices = np.asarray(chosen, np.int64).reshape(n, rank)
    values = np.asarray(draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)), np.float64)
    return indices, values, np.asarray(shape, np.int64)


def _dense(indices, values, shape):
    out = np.zeros(tuple(shape), np.float64)
    for i, v in zip(map(tuple, indices), values):
        out[i] += v
    return out


def _arrays(sp):
    return np.asarray(sp.indices), np.asarray(sp.values), np.asarray(sp.dense_shape)


@settings(max_examples=30, deadline=None)
@given(sparse_inputs(unique=False, sorted_=False), st.data(), st.booleans())
def test_reduce_sum_matches_numpy(inp, data, keepdims):
    indices, values, shape = inp
    rank = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-rank, rank - 1),
                               st.lists(st.integers(0, rank - 1), min_size=1, unique=True)))
    want = np.sum(_dense(indices, values, shape),
                  axis=None if axis is None else tuple(np.atleast_1d(axis)), keepdims=keepdims)
    sp = S(indices, values, shape)
    np.testing.assert_allclose(np.asarray(sparse.reduce_sum(sp, axis, keepdims)), want)
    f = tw.compile(lambda s: sparse.reduce_sum(s, axis, keepdims))
    np.testing.assert_allclose(f(sp), want)


@settings(max_examples=25, deadline=None)
@given(sparse_inputs(unique=False, sorted_=False))
def test_add_dense_and_reorder(inp):
    indices, values, shape = inp
    dense = np.arange(np.prod(shape), dtype=np.float64).reshape(tuple(shape))
    sp = S(indices, values, shape)
    want = dense + _dense(indices, values, shape)
    np.testing.assert_allclose(np.asarray(sparse.add(sp, dense)), want)
    np.testing.assert_allclose(np.asarray(sparse.add(dense, sp)), want)
    r_idx, r_val, r_shape = _arrays(sparse.reorder(sp))
    order = sorted(range(len(indices)), key=lambda k: tuple(indices[k]))  # (stable)
    np.testing.assert_array_equal(r_idx, indices[order].reshape(-1, len(shape)))
    np.testing.assert_array_equal(r_val, values[order])
    np.testing.assert_array_equal(r_shape, shape)


def test_add_sparse_sparse_as_tensorflow():
    a = S([[0, 1], [2, 0], [2, 2]], [1.0, 2.0, 3.0], [4, 3])
    idx, val, shape = _arrays(sparse.add(a, S([[0, 1], [1, 1]], [5.0, 1.0], [4, 3])))
    np.testing.assert_array_equal(idx, [[0, 1], [1, 1], [2, 0], [2, 2]])
    np.testing.assert_array_equal(val, [6, 1, 2, 3])
    np.testing.assert_array_equal(shape, [4, 3])
    # TensorFlow's threshold drops small sums of two entries only: 1 - 1 goes, 0.5 stays
    idx, val, _ = _arrays(sparse.add(a, S([[0, 1], [1, 1]], [-1.0, 0.5], [4, 3]), 0.6))
    np.testing.assert_array_equal(idx, [[1, 1], [2, 0], [2, 2]])
    np.testing.assert_array_equal(val, [0.5, 2, 3])


@settings(max_examples=25, deadline=None)
@given(sparse_inputs(), st.data())
def test_retain_slice_reshape_match_numpy(inp, data):
    indices, values, shape = inp
    rank, n = len(shape), len(indices)
    sp = S(indices, values, shape)
    keep = np.asarray(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    idx, val, _ = _arrays(sparse.retain(sp, keep))
    np.testing.assert_array_equal(idx, indices[keep].reshape(-1, rank))
    np.testing.assert_array_equal(val, values[keep])

    start = [data.draw(st.integers(0, d)) for d in shape]
    size = [data.draw(st.integers(0, 4)) for _ in shape]
    idx, val, new_shape = _arrays(sparse.slice(sp, start, size))
    box = tuple(np.s_[s:s + z] for s, z in zip(start, size))
    want = _dense(indices, values, shape)[box]
    np.testing.assert_array_equal(new_shape, want.shape)
    np.testing.assert_array_equal(_dense(idx, val, new_shape), want)

    total = int(np.prod(shape))
    target = data.draw(st.sampled_from([[total], [-1], [1, total], [total, -1]]))
    idx, val, new_shape = _arrays(sparse.reshape(sp, target))
    want = _dense(indices, values, shape).reshape(target)
    np.testing.assert_array_equal(new_shape, want.shape)
    np.testing.assert_array_equal(_dense(idx, val, new_shape), want)


def test_reshape_of_another_size_is_an_error():
    from tensorweave.errors import InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match="same number of elements"):
        np.asarray(sparse.reshape(S([[0, 1]], [1.0], [2, 3]), [4, 2]).indices)


# TensorFlow 2.21 on these inputs: params arange(12).reshape(6, 2); ids [[1, -1], [], [5],
# [2], []] with weights [[2, 1], [], [3], [0], []]; default_id 4
_TF_SAFE = {("mean", True): [[2, 3], [8, 9], [10, 11], [8, 9], [8, 9]],
            ("sum", True): [[4, 6], [8, 9], [30, 33], [0, 0], [8, 9]],
            ("sqrtn", True): [[2, 3], [8, 9], [10, 11], [8, 9], [8, 9]],
            ("mean", False): [[2, 3], [0, 0], [10, 11], [4, 5], [0, 0]]}


@pytest.mark.parametrize("combiner, weighted", list(_TF_SAFE))
def test_safe_embedding_lookup_sparse_as_tensorflow(combiner, weighted):
    params = tw.Variable(np.arange(12.0).reshape(6, 2))
    where = [[0, 0], [0, 1], [2, 0], [3, 0]]
    ids = S(where, np.array([1, -1, 5, 2], np.int64), [5, 2])
    w = S(where, np.array([2.0, 1.0, 3.0, 0.0]), [5, 2])
    kwargs = {"combiner": combiner, "default_id": 4 if weighted else None}
    got = sparse.safe_embedding_lookup_sparse(params, ids, w if weighted else None, **kwargs)
    np.testing.assert_allclose(np.asarray(got), _TF_SAFE[combiner, weighted])
    f = tw.compile(lambda i, w: sparse.safe_embedding_lookup_sparse(params, i, w, **kwargs))
    np.testing.assert_allclose(f(ids, w if weighted else None), _TF_SAFE[combiner, weighted])


def test_v1_names_in_a_session():
    g = tf.Graph()
    with g.as_default():
        sp = tf.sparse_placeholder(tf.float32, shape=[None, 3])
        total = tf.sparse_reduce_sum(sp, 1)
        plus = tf.sparse_add(sp, tf.ones([2, 3]))
        table = tf.Variable(np.arange(8.0, dtype=np.float32).reshape(4, 2))
        ids = tf.sparse_placeholder(tf.int64, shape=[None, 2])
        looked = tf.nn.safe_embedding_lookup_sparse(table, ids, None, "sum", 0)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            v = tf.SparseTensorValue([[0, 2], [1, 0], [1, 1]], [1.0, 2.0, 3.0], [2, 3])
            got_total, got_plus = s.run([total, plus], {sp: v})
            np.testing.assert_array_equal(got_total, [1, 5])
            np.testing.assert_array_equal(got_plus, [[1, 1, 2], [3, 4, 1]])
            got = s.run(looked, {ids: ([[0, 0], [2, 1]], [3, 1], [3, 2])})
            np.testing.assert_array_equal(got, [[6, 7], [0, 1], [2, 3]])  # row 1: id 0


def test_gradients():
    indices = np.array([[0, 1], [2, 0], [2, 0], [1, 2]], np.int64)
    shape = np.array([3, 3], np.int64)
    values = np.array([0.5, -1.0, 2.0, 1.5])
    check_gradients(lambda v: sparse.reduce_sum(S(indices, v, shape), 0), values)
    check_gradients(lambda v, d: sparse.add(S(indices, v, shape), d), values,
                    np.random.default_rng(0).normal(size=(3, 3)))
    ids = S([[0, 0], [0, 1], [2, 0]], np.array([1, 3, 1], np.int64), [4, 2])
    check_gradients(lambda p, v: sparse.safe_embedding_lookup_sparse(
        p, ids, S([[0, 0], [0, 1], [2, 0]], v, [4, 2]), combiner="sqrtn", default_id=0),
        np.random.default_rng(1).normal(size=(4, 2)), np.array([0.5, 2.0, 1.5]))


def test_errors():
    sp = S([[0, 1]], [1.0], [2, 3])
    with pytest.raises(ShapeError, match="tw.sparse.reduce_sum.*out of range"):
        sparse.reduce_sum(sp, 2)
    with pytest.raises(ShapeError, match="tw.sparse.slice.*2 entries"):
        sparse.slice(sp, [0], [1])
    with pytest.raises(ShapeError, match="tw.sparse.add.*same rank"):
        sparse.add(sp, np.ones(3, np.float32))
    with pytest.raises(ShapeError, match="bool vector"):
        sparse.retain(sp, [1])


def test_names():
    import inspect
    assert tw.SparseTensor is sparse.SparseTensor is tf.SparseTensor
    assert tw.nn.embedding_lookup_sparse is sparse.embedding_lookup_sparse
    assert tw.nn.safe_embedding_lookup_sparse is sparse.safe_embedding_lookup_sparse
    # TensorFlow 1's lookups: partition_strategy in its place, "mod" by default
    params = inspect.signature(tf.nn.embedding_lookup_sparse).parameters
    assert list(params)[3] == "partition_strategy"
    assert params["partition_strategy"].default == "mod"
    assert list(inspect.signature(tf.nn.safe_embedding_lookup_sparse).parameters)[5] == "name"
