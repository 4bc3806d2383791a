"""Optimizer state of a PS variable (its slots, Adam's step counter) is requested on the
variable's PS task, so a graph that names only that state (a fetch, an assign, an
initializer, a Saver of some variables) finds the PS copy. Colocation alone is not
enough: a graph pruned to the slot no longer holds the variable it is colocated with, and
the slot's handle went to the client's task, where a second, fresh copy was made (an
assign or restore there changed nothing the training reads)."""

import numpy as np

import tensorweave.compat.v1 as tf

from .cluster_helpers import make_cluster, servers


def build(spec=None):
    g = tf.Graph()
    setter = None if spec is None else tf.train.replica_device_setter(
        cluster=spec, worker_device="/job:worker/task:0")
    with g.as_default(), tf.device(setter):
        table = tf.get_variable("table", initializer=np.arange(12, dtype=np.float32)
                                .reshape(6, 2), partitioner=tf.fixed_size_partitioner(2))
        ids = tf.placeholder(tf.int32, [3])
        rows = tf.nn.embedding_lookup(table, ids, partition_strategy="div")
        opt = tf.train.AdamOptimizer(0.1)
        train = opt.minimize(tf.reduce_sum(tf.square(rows)))
        init = tf.global_variables_initializer()
        slots = [opt.get_slot(shard, "m") for shard in table]
        reset = tf.variables_initializer(slots)
    return g, ids, train, init, slots, reset, opt


def test_slots_of_ps_variables_are_requested_on_their_ps_task():
    g, *_, slots, _, opt = build(make_cluster(ps=2, worker=1))
    assert [s.op.device for s in slots] == ["/job:ps/task:0", "/job:ps/task:1"]
    assert opt._iterations.op.device == "/job:ps/task:0"  # beside the first variable


def test_a_graph_naming_only_a_slot_reads_and_writes_the_ps_copy():
    g, ids, train, init, slots, reset, _ = build()
    with tf.Session(graph=g, compile_target="reference") as sess:
        sess.run(init)
        sess.run(train, {ids: [0, 1, 5]})
        want = sess.run(slots)
    assert np.abs(want[0]).sum() > 0 and np.abs(want[1]).sum() > 0
    with servers(ps=2, worker=1) as (spec, tasks):
        g, ids, train, init, slots, reset, _ = build(spec)
        with tf.Session(tasks["worker:0"].target, graph=g, compile_target="reference") as sess:
            sess.run(init)
            sess.run(train, {ids: [0, 1, 5]})
            got = sess.run(slots)  # a graph of the slots alone
            sess.run(reset)        # re-initializes the slots the training uses
            on_ps = [tasks[f"ps:{k}"].resources.variable(f"table/part_{k}/Adam/m").read()
                     for k in (0, 1)]
        on_worker = [n for n in tasks["worker:0"].resources.variables() if "Adam" in n]
    for w, x in zip(want, got):
        np.testing.assert_array_equal(x, w)
    for value in on_ps:
        np.testing.assert_array_equal(value, 0.0)
    assert on_worker == []
