"""An embedding table on a PS task: a lookup moves only the rows it touches (counted on
the wire), because the Gather runs next to its variable."""


import tensorweave.compat.v1 as tf
from tensorweave.runtime.distributed import rpc

from .cluster_helpers import servers

ROWS, DIM = 100_000, 64  # a 25.6 MB table


def test_a_lookup_moves_only_the_touched_rows():
    with servers(ps=2, worker=1) as (spec, tasks):
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:ps/task:1"):
                table = tf.Variable(tf.zeros([ROWS, DIM]), name="table")
            ids = tf.placeholder(tf.int32, [None])
            with tf.device("/job:worker/task:0"):
                rows = tf.nn.embedding_lookup(table, ids)
                total = tf.reduce_sum(rows, axis=1)
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run(table.initializer)
            sess.run(total, {ids: [1, 2]})  # compile and register
            rpc.STATS.reset()
            out = sess.run(total, {ids: [5, 7, 99_999]})
        assert out.shape == (3,)
        moved = rpc.STATS.total()
        # the worker pulls 3 rows (768 bytes) and the ids and results travel: far from the
        # 25.6 MB a worker-side gather would pull
        assert 3 * DIM * 4 <= moved < 8 * 1024, rpc.STATS.received


def test_an_sgd_step_on_the_table_moves_only_the_touched_rows():
    """Gather's gradient is an IndexedSlices; SGD applies it with a scatter next to the
    variable: the update sends the touched rows' gradients to the PS, not the table."""
    with servers(ps=1, worker=1) as (spec, tasks):
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:ps/task:0"):
                table = tf.Variable(tf.zeros([ROWS, DIM]), name="table")
            ids = tf.placeholder(tf.int32, [None])
            with tf.device("/job:worker/task:0"):
                loss = tf.reduce_sum(tf.nn.embedding_lookup(table, ids))
            train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
            probe = tf.nn.embedding_lookup(table, [5, 7, 8])
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run(table.initializer)
            sess.run(train, {ids: [1, 2]})  # compile and register
            rpc.STATS.reset()
            sess.run(train, {ids: [5, 7, 7]})
            moved = rpc.STATS.total()
            rows = sess.run(probe)
        # rows 5 and 7 (twice) moved by -0.5 per use; row 8 untouched
        assert rows[0, 0] == -0.5 and rows[1, 0] == -1.0 and rows[2, 0] == 0.0
        assert moved < 16 * 1024, rpc.STATS.sent  # vs 25.6 MB for a dense gradient
