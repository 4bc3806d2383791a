"""Optimizer slots live with their variable: on a cluster, every graph that names a slot
(the initializer's, the train step's) must find it on its variable's PS task; a slot
placed anew in each graph would leave the train step reading an uninitialized copy on
another task."""

import numpy as np

import tensorweave.compat.v1 as tf

from .cluster_helpers import servers


def test_adam_slots_of_a_partitioned_embedding_live_on_each_shards_ps_task():
    with servers(ps=2, worker=1) as (spec, tasks):
        g = tf.Graph()
        with g.as_default(), tf.device(tf.train.replica_device_setter(
                cluster=spec, worker_device="/job:worker/task:0")):
            table = tf.get_variable("table", initializer=np.ones((6, 2), np.float32),
                                    partitioner=tf.fixed_size_partitioner(2))
            ids = tf.placeholder(tf.int32, [3])
            loss = tf.reduce_sum(tf.nn.embedding_lookup(table, ids, partition_strategy="div"))
            train = tf.train.AdamOptimizer(0.1).minimize(loss)
            init = tf.global_variables_initializer()
        slots = [n for n in g._ir.nodes if n.op == "VarHandle" and "/Adam/" in n.name]
        assert {n.name for n in slots} >= {f"table/part_{k}/Adam/{s}" for k in (0, 1)
                                           for s in ("m", "v")}
        for n in slots:  # colocated with their shard, whatever the device function says
            assert n.attrs.get("_colocate_with") == (n.name.split("/Adam/")[0],), n
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run(init)
            for _ in range(2):
                sess.run(train, {ids: [0, 1, 5]})
            shards = sess.run(list(table))
        for k in (0, 1):
            on_ps = tasks[f"ps:{k}"].resources.variables()
            for slot in ("m", "v"):
                assert on_ps[f"table/part_{k}/Adam/{slot}"].initialized
        assert not [n for n in tasks["worker:0"].resources.variables() if "/Adam/" in n]
    # rows 0, 1 (shard 0) and 5 (shard 1) moved by Adam's first two steps (~0.1 each)
    np.testing.assert_allclose(shards[0][:2], 0.8, atol=1e-4)
    np.testing.assert_allclose(shards[0][2], 1.0)
    np.testing.assert_allclose(shards[1][2], 0.8, atol=1e-4)
