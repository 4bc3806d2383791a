"""A sharded embedding on a cluster of in-process servers (2 PS tasks, 1 worker): the
table is a partitioned variable whose shards go round robin to the PS tasks, looked up
with Part -> Gather (on each shard's task) -> Stitch; one SGD step gives the same
variables as the same model in one process, and moves only the touched rows over the
network (its gradient is sparse and applied on the PS tasks)."""

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.distribute import replica_device_setter
from tensorweave.runtime.distributed import rpc

from .cluster_helpers import servers

# The table, 1,000,000 x 64 float32 (256 MB in two shards of 128 MB), for "div"
# (about 20 s on 2 cores, mostly initializing and checksumming the table in both
# models); a 10,000-row table for "mod".
DIM = 64


def ids_for(vocab):
    """Ids at both ends of each shard, a repeated one, and some in between."""
    return np.array([[0, vocab - 1, 17], [vocab // 2, 17, vocab // 2 - 1],
                     [vocab // 8 + 1, 3, vocab - vocab // 8]], np.int32)


def _rows_of_index(shape, dtype=None, partition_info=None):
    """A cheap deterministic initializer: element (i, j) of the whole table is
    ``sin(0.001 * (i * DIM + j))`` (a random one takes seconds per 64M values)."""
    first = partition_info.var_offset[0] if partition_info is not None else 0
    count = int(np.prod(shape))
    start = first * DIM
    flat = tw.range(start, start + count, dtype=tf.int32)
    return tw.reshape(tw.sin(tw.cast(flat, tf.float32) * 0.001), list(shape))


def build(vocab, strategy, cluster=None):
    """The model: mean squared error of the embeddings of `ids_for(vocab)`, one SGD
    step; with `cluster`, variables on its PS tasks and every other op on the worker."""
    g = tf.Graph()
    setter = replica_device_setter(cluster=cluster, worker_device="/job:worker/task:0") \
        if cluster is not None else None
    with g.as_default(), tf.device(setter):
        table = tf.get_variable("embedding", [vocab, DIM], initializer=_rows_of_index,
                                partitioner=tf.fixed_size_partitioner(2))
        ids = tf.placeholder(tf.int32, [None, 3], name="ids")
        rows = tf.nn.embedding_lookup(table, ids, partition_strategy=strategy)
        loss = tf.reduce_mean(tf.square(rows - 0.5))
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        touched = tf.nn.embedding_lookup(table, ids, partition_strategy=strategy)
        # checksums computed where each shard lives: nothing big crosses the network
        sums = []
        for shard in table:
            with tf.colocate_with(shard):
                sums.append(tf.reduce_sum(tf.cast(shard, tf.float64)))
        init = tf.global_variables_initializer()
    return g, table, ids, rows, step, touched, sums, init


def _step_bytes():
    """Tensor bytes sent and received by running steps (not by registering graphs)."""
    return sum(n for table in (rpc.STATS.sent, rpc.STATS.received)
               for method, n in table.items() if method in ("RunGraph", "RecvTensor"))


def train_once(target, vocab, strategy, cluster=None):
    g, table, ids, rows, step, touched, sums, init = build(vocab, strategy, cluster)
    feed = {ids: ids_for(vocab)}
    with tf.Session(target, graph=g) as sess:
        sess.run(init)
        before = sess.run(rows, feed)
        rpc.STATS.reset()
        sess.run(step, feed)
        moved = _step_bytes()
        after, checksums = sess.run([touched, sums], feed)
    return table, before, after, checksums, moved


@pytest.mark.parametrize("strategy, vocab", [("div", 1_000_000), ("mod", 10_000)])
def test_sharded_embedding_trains_like_one_process(strategy, vocab):
    table, *local, _ = train_once("", vocab, strategy)
    with servers(ps=2, worker=1) as (spec, tasks):
        dist_table, *remote, moved = train_once(tasks["worker:0"].target, vocab, strategy,
                                                spec)
        held = {k: tasks[f"ps:{k}"].resources.variable(f"embedding/part_{k}").read()
                for k in range(2)}
    assert [v.op.device for v in dist_table] == ["/job:ps/task:0", "/job:ps/task:1"]
    assert [h.shape for h in held.values()] == [(vocab // 2, DIM)] * 2
    # the step sends the ids, the 9 looked-up rows back and their 9 gradient rows to the
    # PS tasks: a few KB, not a dense gradient of 128 MB (or 1.28 MB) per shard
    assert 2 * 9 * DIM * 4 <= moved < 16 * 1024, (rpc.STATS.sent, rpc.STATS.received)
    for want, got in zip(local, remote):
        if isinstance(want, list):
            np.testing.assert_allclose(got, want, rtol=1e-12)
        else:
            np.testing.assert_array_equal(got, want)
    # the step moved the looked-up rows only, by SGD on the mean squared error
    before, after = local[0], local[1]
    ids = ids_for(vocab)
    counts = {i: int((ids == i).sum()) for i in np.unique(ids)}
    for (r, c), i in np.ndenumerate(ids):
        grad = counts[i] * 2 * (before[r, c] - 0.5) / (ids.size * DIM)
        np.testing.assert_allclose(after[r, c], before[r, c] - 0.5 * grad, rtol=1e-5, atol=1e-6)
