"""tw.sparse.SparseTensor: to_dense / from_dense / sparse_dense_matmul against NumPy (eager,
traced with the dense shape known only at run time, v1 Sessions feeding and fetching
sparse placeholders), gradients against finite differences in float64, and errors.
Expected values follow TensorFlow 2.21 (checked with it on these inputs)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.errors import InvalidArgumentError, ShapeError
from tests.helpers import check_gradients, line_of

sparse = tw.sparse


def _dense_of(indices, values, shape, default=0):
    out = np.full(shape, default, dtype=np.asarray(values).dtype)
    for i, v in zip(map(tuple, indices), values):
        out[i] = v  # (the last of a repeated index wins, as TensorFlow's kernel)
    return out


@st.composite
def sparse_inputs(draw, rank=2, sorted_=True, unique=True):
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    cells = list(np.ndindex(*shape))
    n = draw(st.integers(0, min(len(cells), 5)))
    chosen = draw(st.lists(st.sampled_from(cells), min_size=n, max_size=n, unique=unique))
    if sorted_:
        chosen = sorted(chosen)
    indices = np.asarray(chosen, np.int64).reshape(n, rank)
    values = np.asarray(draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)), np.float64)
    return indices, values, np.asarray(shape, np.int64)


@settings(max_examples=25, deadline=None)
@given(sparse_inputs(rank=2), st.sampled_from([0.0, -1.5]))
def test_to_dense_matches_numpy_eager_and_traced(inp, default):
    indices, values, shape = inp
    want = _dense_of(indices, values, tuple(shape), default)
    sp = sparse.SparseTensor(indices, values, shape)
    got = sparse.to_dense(sp, default_value=default)
    np.testing.assert_array_equal(np.asarray(got), want)
    # traced: the dense shape is an argument, known only at run time
    f = tw.compile(lambda s: sparse.to_dense(s, default_value=default))
    np.testing.assert_array_equal(f(sp), want)


@settings(max_examples=15, deadline=None)
@given(sparse_inputs(rank=3))
def test_from_dense_round_trip(inp):
    indices, values, shape = inp
    dense = _dense_of(indices, values, tuple(shape))
    sp = sparse.from_dense(dense)
    nz = np.argwhere(dense != 0)
    np.testing.assert_array_equal(np.asarray(sp.indices), nz)
    np.testing.assert_array_equal(np.asarray(sp.values), dense[tuple(nz.T)])
    np.testing.assert_array_equal(np.asarray(sp.dense_shape), shape)
    np.testing.assert_array_equal(np.asarray(sparse.to_dense(sp)), dense)


def test_to_dense_validate_indices():
    out_of_order = sparse.SparseTensor([[1, 0], [0, 1]], [1.0, 2.0], [2, 2])
    with pytest.raises(InvalidArgumentError, match="row-major order"):
        np.asarray(sparse.to_dense(out_of_order))
    repeated = sparse.SparseTensor([[1, 0], [1, 0]], [1.0, 2.0], [2, 2])
    with pytest.raises(InvalidArgumentError, match="not repeated"):
        tw.compile(lambda s: sparse.to_dense(s))(repeated)
    out_of_bounds = sparse.SparseTensor([[1, 0], [2, 0]], [1.0, 2.0], [2, 2])
    with pytest.raises(InvalidArgumentError, match="within dense_shape"):
        np.asarray(sparse.to_dense(out_of_bounds))
    # unvalidated, a repeated index takes its last value (TensorFlow: [[0, 0], [2, 0]])
    np.testing.assert_array_equal(
        np.asarray(sparse.to_dense(repeated, validate_indices=False)), [[0, 0], [2, 0]])


def test_v1_sparse_to_dense():
    g = tf.Graph()
    with g.as_default():
        d = tf.sparse_to_dense([1, 3], [5], [7.0, 8.0], default_value=-1)
        with tf.Session() as s:
            np.testing.assert_array_equal(s.run(d), [-1, 7, -1, 8, -1])


def _matmul_numpy(indices, values, shape, b, adjoint_a, adjoint_b):
    a = np.zeros(tuple(shape), b.dtype)
    for (i, j), v in zip(indices, values):
        a[i, j] += v  # repeated indices add up
    a = a.T if adjoint_a else a
    return a @ (b.T if adjoint_b else b)


@settings(max_examples=25, deadline=None)
@given(sparse_inputs(rank=2, sorted_=False, unique=False), st.booleans(), st.booleans(),
       st.integers(1, 3))
def test_sparse_dense_matmul_matches_numpy(inp, adjoint_a, adjoint_b, k):
    indices, values, shape = inp
    inner = shape[0] if adjoint_a else shape[1]
    b = np.arange(inner * k, dtype=np.float64).reshape((k, inner) if adjoint_b else (inner, k))
    want = _matmul_numpy(indices, values, shape, b, adjoint_a, adjoint_b)
    sp = sparse.SparseTensor(indices, values, shape)
    got = sparse.sparse_dense_matmul(sp, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)
    np.testing.assert_allclose(np.asarray(got), want)
    f = tw.compile(lambda s, b: sparse.sparse_dense_matmul(s, b, adjoint_a, adjoint_b))
    np.testing.assert_allclose(f(sp, b), want)


def test_sparse_dense_matmul_gradients():
    indices = np.array([[0, 1], [2, 0], [2, 0], [1, 2]], np.int64)
    shape = np.array([3, 3], np.int64)
    values = np.array([0.5, -1.0, 2.0, 1.5])
    b = np.random.default_rng(0).normal(size=(3, 2))

    def f(values, b):
        return sparse.sparse_dense_matmul(sparse.SparseTensor(indices, values, shape), b)

    check_gradients(f, values, b)

    def g(values, b):  # (the dense shape an Identity, not a constant: the scatter path)
        return sparse.sparse_dense_matmul(sparse.SparseTensor(indices, values, tw.identity(shape)),
                                          b, adjoint_a=True, adjoint_b=True)

    check_gradients(g, values, b.T.copy())


def test_to_dense_gradient_with_the_dense_shape_known_at_run_time():
    indices = np.array([[0, 1], [1, 2], [2, 0]], np.int64)

    def f(values):  # (an Identity of the shape: not a constant when traced)
        return sparse.to_dense(sparse.SparseTensor(indices, values, tw.identity(np.array([3, 3], np.int64))),
                               default_value=1.5) * 2.0

    check_gradients(f, np.array([0.5, -1.0, 2.0]))


@pytest.mark.parametrize("index", [[-1, 0], [3, 0], [0, -1], [0, 2]])
def test_sparse_dense_matmul_refuses_indices_outside(index):
    # (a negative row was dropped silently by the segment sum of a static row count)
    sp = sparse.SparseTensor([index], [1.0], [3, 2])
    b = np.ones((2, 2), np.float32)
    with pytest.raises(InvalidArgumentError):
        np.asarray(sparse.sparse_dense_matmul(sp, b))
    with pytest.raises(InvalidArgumentError):
        tw.compile(lambda s: sparse.sparse_dense_matmul(s, b))(sparse.SparseTensor(
            np.array([index]), np.array([1.0], np.float32), np.array([3, 2])))


def test_compile_returns_and_takes_sparse_tensors():
    sig = [sparse.SparseTensorSpec([None, 3], tw.float32)]

    @tw.compile(input_signature=sig)
    def double(s):
        return sparse.SparseTensor(s.indices, s.values * 2, s.dense_shape)

    sp = sparse.SparseTensor(np.array([[0, 1], [1, 2]]), np.array([1.0, 2.0], np.float32),
                             np.array([2, 3]))
    out = double(sp)
    assert isinstance(out, sparse.SparseTensor)
    np.testing.assert_array_equal(out.values, [2.0, 4.0])
    np.testing.assert_array_equal(out.indices, [[0, 1], [1, 2]])
    np.testing.assert_array_equal(out.dense_shape, [2, 3])


def test_session_feeds_and_fetches_sparse_placeholders():
    g = tf.Graph()
    with g.as_default():
        sp = tf.sparse_placeholder(tf.float32)
        sp2 = tf.sparse_placeholder(tf.float32, shape=[None, 3])
        fixed = tf.sparse_placeholder(tf.float32, shape=[4, 3])
        assert sp.shape.rank is None and tuple(sp2.shape) == (None, 3)
        assert tuple(fixed.shape) == (4, 3)
        w0 = np.arange(6, dtype=np.float32).reshape(3, 2)
        w = tf.Variable(w0)
        y = tf.sparse_tensor_dense_matmul(sp, w)
        y2 = tf.sparse_tensor_dense_matmul(sp2, w)
        assert tuple(y.shape) == (None, 2) and tuple(y2.shape) == (None, 2)
        d = tf.sparse_tensor_to_dense(sp2)
        loss = tf.reduce_sum(y2 * y2)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        v = tf.SparseTensorValue([[0, 1], [2, 0], [2, 2]], [1.0, 2.0, 3.0], [4, 3])
        a = _dense_of(np.array(v.indices), np.array(v.values, np.float32), (4, 3))
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            got_y, got_d = s.run([y, d], {sp: v, sp2: v})
            np.testing.assert_allclose(got_y, a @ w0)
            np.testing.assert_array_equal(got_d, a)
            r = s.run(sp2, {sp2: ([[0, 1]], [2.0], [2, 3])})  # a tuple feeds too
            assert isinstance(r, tf.SparseTensorValue)
            np.testing.assert_array_equal(r.indices, [[0, 1]])
            np.testing.assert_array_equal(r.values, [2.0])
            np.testing.assert_array_equal(r.dense_shape, [2, 3])
            np.testing.assert_array_equal(s.run(fixed.dense_shape, {fixed: v}), [4, 3])
            with pytest.raises(InvalidArgumentError, match="dense_shape"):
                s.run(d, {sp2: ([[0, 1]], [2.0], [2, 4])})
            s.run(train, {sp2: v})
            # d/dW sum((A W)^2) = 2 A^T A W
            np.testing.assert_allclose(s.run(w), w0 - 0.1 * 2 * a.T @ a @ w0, rtol=1e-6)


def test_errors_name_the_op_and_line():
    sp = sparse.SparseTensor([[0, 1]], [1.0], [2, 3])
    with pytest.raises(ShapeError, match="sparse_dense_matmul.*same dtype") as e:
        sparse.sparse_dense_matmul(sp, np.ones((3, 2)))  # float32 values, float64 b
    assert line_of(test_errors_name_the_op_and_line, "np.ones((3, 2)))  # float32") in str(e.value)
    with pytest.raises(ShapeError, match="inner dimensions"):
        sparse.sparse_dense_matmul(sp, np.ones((2, 2), np.float32))
    with pytest.raises(ShapeError, match="rank-2"):
        sparse.sparse_dense_matmul(sparse.SparseTensor([[0, 1, 1]], [1.0], [2, 3, 3]),
                                   np.ones((3, 2), np.float32))
    with pytest.raises(ShapeError, match="must be int64"):
        sparse.SparseTensor(np.array([[0, 1]], np.float32), [1.0], [2, 3])
    with pytest.raises(ShapeError, match="ranks 2, 1 and 1"):
        sparse.SparseTensor([0, 1], [1.0], [2, 3])


# TensorFlow 2.21's results on these inputs (params = arange(12).reshape(6, 2)): the row
# without ids is zeros, the trailing one (row 3) is not in the result
_TF_LOOKUPS = {("mean", True): [[10 / 3, 13 / 3], [0, 0], [10, 11]],
               ("mean", False): [[4, 5], [0, 0], [10, 11]],
               ("sum", True): [[10, 13], [0, 0], [30, 33]],
               ("sum", False): [[8, 10], [0, 0], [10, 11]],
               ("sqrtn", True): [[4.47213595499958, 5.813776741499453], [0, 0], [10, 11]],
               ("sqrtn", False): [[5.65685424949238, 7.071067811865475], [0, 0], [10, 11]]}


@pytest.mark.parametrize("combiner", ["mean", "sum", "sqrtn"])
@pytest.mark.parametrize("weighted", [True, False])
def test_embedding_lookup_sparse_matches_tensorflow(combiner, weighted):
    params = tw.Variable(np.arange(12.0).reshape(6, 2))
    ids = sparse.SparseTensor([[0, 0], [0, 1], [2, 0]], np.array([1, 3, 5], np.int64), [4, 2])
    w = (sparse.SparseTensor([[0, 0], [0, 1], [2, 0]], np.array([2.0, 1.0, 3.0]), [4, 2])
         if weighted else None)
    got = sparse.embedding_lookup_sparse(params, ids, w, combiner=combiner)
    np.testing.assert_allclose(np.asarray(got), _TF_LOOKUPS[combiner, weighted], rtol=1e-12)
    f = tw.compile(lambda i, w: sparse.embedding_lookup_sparse(params, i, w, combiner=combiner))
    np.testing.assert_allclose(f(ids, w), _TF_LOOKUPS[combiner, weighted], rtol=1e-12)


def test_embedding_lookup_sparse_gradient_and_sgd_on_partitioned_variable():
    ids_v = tf.SparseTensorValue([[0, 0], [0, 1], [1, 0]], np.array([1, 4, 4], np.int64), [2, 2])
    w_v = tf.SparseTensorValue([[0, 0], [0, 1], [1, 0]], [2.0, 1.0, 3.0], [2, 2])
    table = np.arange(12.0, dtype=np.float32).reshape(6, 2)
    g = tf.Graph()
    with g.as_default():
        emb = tf.get_variable("emb", [6, 2], initializer=tf.constant_initializer(table),
                              partitioner=tf.fixed_size_partitioner(2))
        sp_ids = tf.sparse_placeholder(tf.int64, shape=[None, 2])
        sp_w = tf.sparse_placeholder(tf.float32, shape=[None, 2])
        out = tf.nn.embedding_lookup_sparse(emb, sp_ids, sp_w, partition_strategy="div",
                                            combiner="sum")  # (shards hold table's rows in order)
        opt = tf.train.GradientDescentOptimizer(1.0)
        grads = opt.compute_gradients(tf.reduce_sum(out), list(emb))
        assert all(isinstance(gr, tw.IndexedSlices) for gr, _ in grads)
        step = opt.apply_gradients(grads)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            np.testing.assert_allclose(s.run(out, {sp_ids: ids_v, sp_w: w_v}),
                                       [2 * table[1] + table[4], 3 * table[4]])
            s.run(step, {sp_ids: ids_v, sp_w: w_v})
            want = table.copy()
            want[1] -= 2.0
            want[4] -= 1.0 + 3.0
            np.testing.assert_allclose(np.concatenate(s.run(list(emb))), want)
    check_gradients(lambda p, v: sparse.embedding_lookup_sparse(
        p, sparse.SparseTensor([[0, 0], [0, 1], [2, 0]], np.array([1, 3, 1], np.int64), [3, 2]),
        sparse.SparseTensor([[0, 0], [0, 1], [2, 0]], v, [3, 2]), combiner="sqrtn"),
        np.random.default_rng(1).normal(size=(4, 2)), np.array([0.5, 2.0, -1.5]))
