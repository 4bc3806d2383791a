"""Sharded embedding tables whose shards embedding_lookup cannot read as rows: an error
at graph building, not rows of other ids. Before, a table partitioned along axis 1 (each
shard holds columns) was looked up as if its shards held rows (ids 0 and 9 of a 10x4
table gave [[0, 1], [18, 19]] with "mod" and [[0, 1], [36, 37]] with "div" instead of
[[0, 1, 2, 3], [36, 37, 38, 39]]), and "div" over shards not laid out as a partitioner
lays them out (3 and 7 rows: TensorFlow's formula assumes 5 and 5) gave id 5 the row
of id 3."""

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import ShapeError

from .cluster_helpers import make_cluster

TABLE = np.arange(40, dtype=np.float32).reshape(10, 4)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_a_table_partitioned_by_columns_is_refused(strategy):
    g = tf.Graph()
    spec = make_cluster(ps=2, worker=1)
    with g.as_default(), tf.device(tf.train.replica_device_setter(
            cluster=spec, worker_device="/job:worker/task:0")):
        table = tf.get_variable("t", initializer=TABLE,
                                partitioner=lambda shape, dtype=None, **_: [1, 2])
        with pytest.raises(ValueError, match=r"partitioned by rows .* \[1, 2\]"):
            tf.nn.embedding_lookup(table, [0, 9], partition_strategy=strategy)


def test_div_over_shards_of_another_layout_is_refused_and_mod_reads_any():
    g = tf.Graph()
    with g.as_default():
        shards = [tf.constant(TABLE[:3]), tf.constant(TABLE[3:])]
        with pytest.raises(ShapeError, match=r"\[5, 5\] rows .* got \[3, 7\]"):
            tf.nn.embedding_lookup(shards, [5], partition_strategy="div")
        # "mod" maps id i to row i // 2 of shard i % 2 whatever the sizes: well defined
        by_mod = tf.nn.embedding_lookup(shards, [0, 1, 4], partition_strategy="mod")
        layout = [tf.constant(TABLE[:5]), tf.constant(TABLE[5:])]
        by_div = tf.nn.embedding_lookup(layout, [0, 5, 9], partition_strategy="div")
    with tf.Session(graph=g) as sess:
        np.testing.assert_array_equal(sess.run(by_mod), TABLE[[0, 3, 2]])
        np.testing.assert_array_equal(sess.run(by_div), TABLE[[0, 5, 9]])
