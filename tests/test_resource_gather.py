"""The resource_gather pass: lookups read only their rows of a variable."""

import numpy as np

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.compiler.pipeline import run_pipeline
from tensorweave.passes.prune import extract_subgraph


def optimized_ops(g, fetches):
    sub = extract_subgraph(g.ir, [f.value for f in fetches], [], [])
    return [n.op for n in run_pipeline(sub, "optimized").nodes]


def test_a_gather_of_a_variable_read_becomes_a_resource_gather():
    g = tf.Graph()
    with g.as_default():
        table = tf.Variable(np.arange(12, dtype=np.float32).reshape(6, 2), name="table")
        rows = tf.gather(table.read_value(), [4, 1])
    ops = optimized_ops(g, [rows])
    assert "ResourceGather" in ops and "Gather" not in ops and "ReadVariable" not in ops
    with tf.Session(graph=g) as sess:
        sess.run(table.initializer)
        np.testing.assert_array_equal(sess.run(rows), [[8, 9], [2, 3]])


def test_a_read_used_elsewhere_is_kept():
    g = tf.Graph()
    with g.as_default():
        table = tf.Variable(np.ones((6, 2), np.float32), name="table")
        value = table.read_value()
        both = tf.gather(value, [0]) + tf.reduce_sum(value)
    ops = optimized_ops(g, [both])
    assert "Gather" in ops and "ReadVariable" in ops and "ResourceGather" not in ops


def test_embedding_training_reads_and_updates_only_the_looked_up_rows():
    g = tf.Graph()
    with g.as_default():
        table = tf.Variable(np.zeros((1000, 4), np.float32), name="emb")
        ids = tf.placeholder(tf.int32, [None])
        loss = tf.reduce_sum(tf.nn.embedding_lookup(table, ids))
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session(graph=g) as sess:
        sess.run(table.initializer)
        sess.run(train, {ids: [3, 3, 7]})
        value = sess.run(table.read_value())
    want = np.zeros((1000, 4), np.float32)
    want[3], want[7] = -1.0, -0.5
    np.testing.assert_array_equal(value, want)


def test_compiled_functions_get_the_rewrite_too():
    v = tw.Variable(np.arange(10, dtype=np.float32).reshape(5, 2), name="rg_table")

    @tw.compile
    def lookup(ids):
        return tw.gather(v.read_value(), ids)

    np.testing.assert_array_equal(lookup(np.array([4, 0])), [[8, 9], [0, 1]])
    assert "ResourceGather" in lookup.get_concrete_function(np.array([4, 0])).ir("optimized")
