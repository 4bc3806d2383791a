"""Sparse gradients: tw.IndexedSlices from the gradient of a Gather of a variable, the
ResourceScatter*/ResourceGather/DeduplicateSlices ops, SGD, Momentum, Adagrad, RMSProp
and Ftrl applying them row by row (only touched rows change), Adam and mixed uses dense,
and dense conversion with a warning over the size threshold."""

import warnings

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.frontend import indexed_slices
from tensorweave.frontend.ops.scatter import (
    deduplicate,
    gather_rows,
    scatter_add,
    scatter_sub,
    scatter_update,
)
from tensorweave.frontend.optimizers import SGD, Adagrad, Adam, Ftrl, Momentum, RMSProp


def _table(rows=6, dim=3, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal((rows, dim)).astype(dtype)


IDS = np.array([[4, 1], [4, 0]], np.int32)   # row 4 twice: its gradients add up


def _dense_grad(table, ids, weights):
    """d/dtable of sum(table[ids] * weights)."""
    g = np.zeros_like(table, dtype=np.float64)
    np.add.at(g, ids.reshape(-1), weights.reshape(-1, table.shape[1]))
    return g


# ----------------------------------------------------------------------- the ops

def test_scatter_ops_update_only_the_named_rows():
    table = _table()
    v = tw.Variable(table.copy(), name="scatter_t")
    updates = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    scatter_add(v, IDS, updates)
    want = table.copy()
    np.add.at(want, IDS.reshape(-1), updates.reshape(-1, 3))
    np.testing.assert_allclose(v.numpy(), want, rtol=1e-6)
    scatter_sub(v, np.array([5], np.int64), np.ones((1, 3), np.float32))
    want[5] -= 1
    np.testing.assert_allclose(v.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(v.numpy()[[2, 3]], table[[2, 3]])  # untouched, bitwise


def test_scatter_ops_in_a_compiled_function_and_errors():
    v = tw.Variable(np.zeros((4, 2), tw.bfloat16.np), name="scatter_bf16")

    @tw.compile
    def bump(i, u):
        scatter_add(v, i, u)

    bump(np.array([3, 3], np.int32), np.ones((2, 2), tw.bfloat16.np))
    np.testing.assert_array_equal(v.numpy().astype(np.float32), [[0, 0], [0, 0], [0, 0], [2, 2]])
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"indices\[1\] = 4 is not in"):
        bump(np.array([0, 4], np.int32), np.ones((2, 2), tw.bfloat16.np))
    with pytest.raises(tw.errors.ShapeError, match="indices.shape"):
        scatter_add(v, np.array([0]), np.ones((1, 3), tw.bfloat16.np))
    with pytest.raises(tw.errors.DTypeError, match="bf16"):
        scatter_sub(v, np.array([0]), np.ones((1, 2), np.float32))


# ---------------------------------------------------------------- the gradients

def test_the_gradient_of_a_gathered_variable_is_indexed_slices():
    v = tw.Variable(_table(), name="emb_slices")
    seen = {}

    @tw.compile
    def grads(ids):
        def loss():
            return tw.reduce_sum(tw.gather(v, ids) * 2.0)
        ((g, _),) = SGD(0.1).compute_gradients(loss, [v])
        seen["g"] = g
        return g.values, g.indices, tw.convert_to_tensor(g)

    values, indices, dense = grads(IDS)
    g = seen["g"]
    assert isinstance(g, tw.IndexedSlices) and g.dense_shape == (6, 3) and g.dtype == tw.float32
    np.testing.assert_array_equal(indices, IDS.reshape(-1))
    np.testing.assert_array_equal(values, np.full((4, 3), 2.0))
    np.testing.assert_array_equal(dense, _dense_grad(_table(), IDS, np.full((2, 2, 3), 2.0)))
    # the public gradient functions stay dense
    dense_again = tw.compile(lambda i: tw.gradients(tw.reduce_sum(tw.gather(v, i)), v)[0])(IDS)
    np.testing.assert_array_equal(dense_again, _dense_grad(_table(), IDS, np.ones((2, 2, 3))))


def test_two_gathers_of_one_variable_concatenate_their_slices():
    v = tw.Variable(_table(), name="emb_two")
    seen = {}

    @tw.compile
    def grads():
        def loss():
            return tw.reduce_sum(tw.gather(v, [1, 2])) + tw.reduce_sum(tw.gather(v, [2]) * 3.0)
        seen["g"] = SGD(0.1).compute_gradients(loss, [v])[0][0]
        return tw.convert_to_tensor(seen["g"])

    dense = grads()
    assert isinstance(seen["g"], tw.IndexedSlices) and seen["g"].values.shape == (3, 3)
    np.testing.assert_array_equal(dense[:, 0], [0, 1, 4, 0, 0, 0])


@pytest.mark.parametrize("mixed", [False, True])
def test_sgd_applies_sparse_gradients_row_by_row(mixed):
    table = _table()
    weights = np.random.default_rng(1).standard_normal((2, 2, 3)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(table, name="emb")
        ids = tf.placeholder(tf.int32, [None, 2])
        loss = tf.reduce_sum(tf.nn.embedding_lookup(v, ids) * weights)
        if mixed:  # a dense use of the whole table too: the gradient is dense
            loss = loss + tf.reduce_sum(v * v) * 0.5
        opt = tf.train.GradientDescentOptimizer(0.5)
        (grad, _), = opt.compute_gradients(loss, [v])
        step = opt.apply_gradients([(grad, v)])
        init = tf.global_variables_initializer()
    assert isinstance(grad, tw.IndexedSlices) != mixed
    assert any(n.op == "ResourceScatterSub" for n in g.ir.nodes) != mixed
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run(step, {ids: IDS})
        after = sess.run(v)
    want_grad = _dense_grad(table, IDS, weights) + (table if mixed else 0)
    np.testing.assert_allclose(after, table - 0.5 * want_grad, rtol=1e-5, atol=1e-6)
    if not mixed:
        untouched = [2, 3, 5]
        assert after[untouched].tobytes() == table[untouched].tobytes()


UPDATE = "ResourceScatterUpdate"


@pytest.mark.parametrize("name, make, sparse_op", [
    ("momentum", lambda: Momentum(0.1, 0.9), UPDATE),
    ("nesterov", lambda: Momentum(0.1, 0.9, nesterov=True), UPDATE),
    ("adagrad", lambda: Adagrad(0.1), UPDATE),
    ("rmsprop", lambda: RMSProp(0.1, momentum=0.5), UPDATE),
    ("centered", lambda: RMSProp(0.1, momentum=0.5, centered=True), UPDATE),
    ("ftrl", lambda: Ftrl(0.1, l1_regularization_strength=0.01), UPDATE),
    ("adam", lambda: Adam(0.1), None)])   # TensorFlow's sparse Adam updates every row too
def test_other_optimizers_match_their_dense_rule(name, make, sparse_op):
    table = _table(dtype=np.float64)

    def train(sparse):
        v = tw.Variable(table.copy(), name=f"emb_{name}_{sparse}")
        opt = make()

        @tw.compile
        def step(ids):
            def loss():
                rows = tw.gather(v, ids) if sparse else tw.gather(v.read_value() * 1.0, ids)
                return tw.reduce_sum(tw.square(rows))
            opt.minimize(loss, [v])

        step(IDS)
        step(IDS)  # the same rows each step: the sparse rules equal the dense ones
        ops = {n.op for n in step.get_concrete_function(IDS).graph.nodes}
        return v.numpy(), ops

    got, ops = train(True)
    want, _ = train(False)
    touched = np.unique(IDS)
    np.testing.assert_allclose(got[touched], want[touched], rtol=1e-12, atol=1e-15)
    if name == "ftrl":  # the dense rule also moves rows without gradient; the sparse one not
        untouched = np.setdiff1d(np.arange(len(table)), touched)
        np.testing.assert_array_equal(got[untouched], table[untouched])
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert (sparse_op in ops) if sparse_op else UPDATE not in ops


def test_sparse_momentum_moves_only_touched_rows_as_tensorflow_does():
    table = _table(dtype=np.float64)
    v = tw.Variable(table.copy(), name="emb_tf_momentum")
    opt = Momentum(0.1, 0.9)

    @tw.compile
    def step(ids):
        opt.minimize(lambda: tw.reduce_sum(tw.gather(v, ids)), [v])

    want, acc = table.copy(), np.zeros_like(table)
    for ids in (np.array([1, 4, 1]), np.array([0])):
        step(ids.astype(np.int32))
        grad = np.zeros_like(table)
        np.add.at(grad, ids, 1.0)
        touched = np.unique(ids)
        acc[touched] = acc[touched] * 0.9 + grad[touched]   # the others keep their momentum
        want[touched] -= 0.1 * acc[touched]
    np.testing.assert_allclose(v.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(opt.get_slot(v, "momentum").numpy(), acc, rtol=1e-12)


def test_resource_gather_and_deduplicate():
    v = tw.Variable(_table(), name="emb_rows")
    np.testing.assert_array_equal(gather_rows(v, [[5, 0]]).numpy(), _table()[[[5, 0]]])
    values, rows = deduplicate(np.arange(8.0).reshape(4, 2), np.array([5, 2, 5, 0]))
    np.testing.assert_array_equal(values.numpy(), [[4, 6], [2, 3], [6, 7]])
    np.testing.assert_array_equal(rows.numpy(), [5, 2, 0])
    scatter_update(v, [1, 1], np.array([[1.0] * 3, [2.0] * 3], np.float32))
    np.testing.assert_array_equal(v.numpy()[1], [2, 2, 2])
    with pytest.raises(tw.errors.InvalidArgumentError, match="not in"):
        gather_rows(v, [6])


def test_dense_conversion_warns_over_the_threshold(monkeypatch):
    monkeypatch.setattr(indexed_slices, "LARGE_SPARSE_NUM_ELEMENTS", 10)
    slices = tw.IndexedSlices(tw.constant(np.ones((2, 3), np.float32)),
                              tw.constant(np.array([0, 3], np.int32)), (4, 3))
    with pytest.warns(indexed_slices.SparseToDenseWarning, match="12 elements"):
        dense = tw.convert_to_tensor(slices)
    np.testing.assert_array_equal(dense.numpy()[:, 0], [1, 0, 0, 1])
    small = tw.IndexedSlices(slices.values, slices.indices, (4, 2 + 1))
    monkeypatch.setattr(indexed_slices, "LARGE_SPARSE_NUM_ELEMENTS", 12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tw.convert_to_tensor(small)
    assert "IndexedSlices" in repr(small) and tf.IndexedSlices is tw.IndexedSlices


def test_tf_scatter_ops_build_into_the_default_graph():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(np.zeros((3, 2), np.float32), name="v")
        init = tf.global_variables_initializer()
    with g.as_default():
        add = tf.scatter_add(v, [2, 2], np.ones((2, 2), np.float32))
        sub = tf.scatter_sub(v, [0], np.ones((1, 2), np.float32))
        put = tf.scatter_update(v, [1], np.full((1, 2), 7.0, np.float32))
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run([add, sub, put])
        np.testing.assert_array_equal(sess.run(v), [[-1, -1], [7, 7], [2, 2]])
