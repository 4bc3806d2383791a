"""TensorFlow 1's partitioners, tf.get_variable with partitioned variables, variable
scopes with reuse, and tf.nn.embedding_lookup over a partitioned variable in a Session:
shard shapes and names as TensorFlow makes them, round-robin PS placement, training."""

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.compat.v1.partitioners import shard_layout
from tensorweave.distribute import replica_device_setter


def test_fixed_size_partitioner_and_shard_layout():
    p = tf.fixed_size_partitioner(3)
    assert p(shape=[10, 4], dtype=tf.float32) == [3, 1]
    assert p(shape=[2, 4], dtype=tf.float32) == [2, 1]  # no more shards than rows
    assert tf.fixed_size_partitioner(2, axis=1)(shape=[3, 5], dtype=tf.float32) == [1, 2]
    assert shard_layout([10, 4], [3, 1]) == (0, [(0, (4, 4)), (4, (3, 4)), (7, (3, 4))])
    assert shard_layout([3, 5], [1, 2]) == (1, [(0, (3, 3)), (3, (3, 2))])
    with pytest.raises(ValueError, match="one axis"):
        shard_layout([4, 4], [2, 2])


def test_variable_axis_size_partitioner_follows_tensorflow():
    # 1000 rows of 64 float32 (256 bytes a row): 4096 bytes a shard is 16 rows
    p = tf.variable_axis_size_partitioner(4096)
    assert p(shape=[1000, 64], dtype=tf.float32) == [63, 1]
    assert tf.variable_axis_size_partitioner(4096, max_shards=8)(
        shape=[1000, 64], dtype=tf.float32) == [8, 1]
    assert tf.variable_axis_size_partitioner(1)(shape=[5, 64], dtype=tf.float32) == [5, 1]
    with pytest.raises(ValueError):
        tf.variable_axis_size_partitioner(0)


def test_min_max_variable_partitioner_follows_tensorflow():
    p = tf.min_max_variable_partitioner(max_partitions=4, min_slice_size=1024)
    assert p(shape=[100, 8], dtype=tf.float32) == [4, 1]  # 3200 bytes: ceil(3.1) = 4
    assert p(shape=[40, 8], dtype=tf.float32) == [2, 1]   # 1280 bytes: 2 slices
    assert p(shape=[3, 1], dtype=tf.float32) == [1, 1]
    assert tf.min_max_variable_partitioner(8, min_slice_size=1)(
        shape=[3, 4], dtype=tf.float64) == [3, 1]   # never more shards than rows


def test_get_variable_partitioned_names_shapes_and_values():
    table = np.arange(30, dtype=np.float32).reshape(10, 3)
    g = tf.Graph()
    with g.as_default():
        with tf.variable_scope("model"):
            pv = tf.get_variable("emb", [10, 3], initializer=tf.constant_initializer(table),
                                 partitioner=tf.fixed_size_partitioner(3))
        whole = tf.convert_to_tensor(pv)
        init = tf.global_variables_initializer()
    assert isinstance(pv, tf.PartitionedVariable) and len(pv) == 3
    assert pv.shape == (10, 3) and pv.name == "model/emb"
    assert [v.shape for v in pv] == [(4, 3), (3, 3), (3, 3)]
    assert [v.name for v in pv] == [f"model/emb/part_{k}:0" for k in range(3)]
    assert list(g.get_collection("trainable_variables")) == list(pv)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(whole), table)
        np.testing.assert_array_equal(sess.run(pv[1]), table[4:7])


def test_variable_scope_reuse():
    g = tf.Graph()
    with g.as_default():
        with tf.variable_scope("a"):
            w = tf.get_variable("w", [2], initializer=tf.zeros_initializer())
            with pytest.raises(ValueError, match="already exists"):
                tf.get_variable("w", [2])
        with tf.variable_scope("a", reuse=True):
            assert tf.get_variable("w", [2]) is w
            with pytest.raises(ValueError, match="does not exist"):
                tf.get_variable("v", [2])
            with tf.variable_scope("inner", reuse=False):   # reuse is inherited
                assert tf.get_variable_scope().reuse is True
        with tf.variable_scope("a", reuse=tf.AUTO_REUSE):
            assert tf.get_variable("w") is w
            v = tf.get_variable("v", [3], dtype=tf.int32)
        with tf.variable_scope("a") as scope:
            scope.reuse_variables()
            assert tf.get_variable("v") is v
            with pytest.raises(ValueError, match="shape"):
                tf.get_variable("v", [4])
        with tf.variable_scope(None, default_name="layer") as s1:
            pass
        with tf.variable_scope(None, default_name="layer") as s2:
            pass
        with tf.variable_scope(s1, partitioner=tf.fixed_size_partitioner(2)):
            pv = tf.get_variable("t", [5, 2])
        init = tf.global_variables_initializer()
    assert (s1.name, s2.name) == ("layer", "layer_1")
    assert [x.name for x in pv] == ["layer/t/part_0:0", "layer/t/part_1:0"]
    with tf.Session(graph=g) as sess:
        sess.run(init)
        got = np.concatenate(sess.run(list(pv)))
        limit = np.sqrt(6.0 / 7)   # Glorot over the whole variable's fans
        assert got.shape == (5, 2) and np.abs(got).max() <= limit
        assert sess.run(v).dtype == np.int32 and not sess.run(v).any()


def test_shards_go_round_robin_to_the_ps_tasks():
    g = tf.Graph()
    with g.as_default(), tf.device(replica_device_setter(ps_tasks=2)):
        pv = tf.get_variable("emb", [9, 4], partitioner=tf.fixed_size_partitioner(3))
    assert [v.op.device for v in pv] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_trains_a_partitioned_variable(strategy):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((11, 4)).astype(np.float32)
    ids_value = np.array([[3, 10], [0, 3]], np.int32)
    g = tf.Graph()
    with g.as_default():
        pv = tf.get_variable("emb", [11, 4], initializer=tf.constant_initializer(table),
                             partitioner=tf.fixed_size_partitioner(3))
        ids = tf.placeholder(tf.int32, [None, 2])
        rows = tf.nn.embedding_lookup(pv, ids, partition_strategy=strategy)
        loss = tf.reduce_sum(tf.square(rows))
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        before = sess.run(rows, {ids: ids_value})
        sess.run(step, {ids: ids_value})
        after = np.concatenate(sess.run(list(pv)))
    # the stored layout is TensorFlow's contiguous blocks either way; the strategy
    # decides which id lives where
    where = _row_of_id(strategy, 11, 3)
    np.testing.assert_array_equal(before, table[[where[i] for i in ids_value.ravel()]]
                                  .reshape(2, 2, 4))
    expected = table.copy()
    for i in ids_value.ravel():
        expected[where[i]] -= 0.1 * 2 * table[where[i]]
    np.testing.assert_allclose(after, expected, rtol=1e-6)


def _row_of_id(strategy, vocab, n):
    """Where id i is stored in the concatenated shards of a [vocab, ...] partitioned
    variable (TensorFlow's shard sizes)."""
    sizes = [vocab // n + (1 if k < vocab % n else 0) for k in range(n)]
    starts = np.cumsum([0] + sizes[:-1])
    if strategy == "div":
        return list(range(vocab))
    return [starts[i % n] + i // n for i in range(vocab)]
