"""The failure modes a review found: pulls of aborted steps, graphs a task lost, big
constants, oversized headers, servers without a token, sync-replica token counts."""

import time

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.distribute import Server
from tensorweave.errors import DataLossError, InvalidArgumentError
from tensorweave.runtime.distributed import rpc, server, wire

from .cluster_helpers import TOKEN, make_cluster, servers


def test_a_worker_step_whose_ps_never_hears_of_it_ends_when_aborted(monkeypatch):
    """Only the worker's part of a step runs (its client died before reaching the PS):
    aborting it there releases its Recv and the PS's pull handler within seconds."""
    monkeypatch.setattr(server, "PULL_WAIT_S", 0.3)
    with servers(ps=1, worker=1) as (spec, tasks):
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.ones(3, np.float32), name="v")
            with tf.device("/job:worker/task:0"):
                out = v.read_value() * 2.0
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run(v.initializer)
            sess.run(out)
            exe = [s for s in sess._steps.values() if len(s.partitions) == 2][0]
            k = [p.device for p in exe.partitions].index("/job:worker/replica:0/task:0")
            worker = tasks["worker:0"].service
            client = rpc.WorkerClient(worker.address, TOKEN)
            step_id = 12345
            call = client.start("RunGraph", {"step": step_id, "handle": exe.handles[k]},
                                [])  # the PS is never told about this step
            time.sleep(0.5)
            assert step_id in worker.steps._steps
            worker.steps.abort(step_id, tf.errors.CancelledError("client gone"))
            with pytest.raises(tf.errors.CancelledError):
                client.finish(call)
            deadline = time.monotonic() + 5
            ps = tasks["ps:0"].service
            while (step_id in ps.steps._steps or step_id in worker.steps._steps) and \
                    time.monotonic() < deadline:
                time.sleep(0.05)
            assert step_id not in ps.steps._steps and step_id not in worker.steps._steps


def test_a_task_that_lost_the_graph_gets_it_again():
    with servers(ps=1, worker=1) as (spec, tasks):
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:ps/task:0"):
                x = tf.constant(np.arange(3, dtype=np.float32)) + 1.0
            y = x * 2.0
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            np.testing.assert_array_equal(sess.run(y), [2, 4, 6])
            tasks["ps:0"].service._graphs.clear()  # a restart, or an idle graph dropped
            np.testing.assert_array_equal(sess.run(y), [2, 4, 6])


def test_graphs_with_big_random_constants_register():
    with servers(ps=1, worker=1) as (spec, tasks):
        big = np.random.default_rng(0).random(5_000_000).astype(np.float32)  # 20 MB
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:ps/task:0"):
                total = tf.reduce_sum(tf.constant(big))
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            assert sess.run(total) == pytest.approx(big.sum(dtype=np.float64), rel=1e-4)


def test_declared_sizes_are_checked_before_allocating():
    header = b'{"tensors": [{"dtype": "f32", "shape": [17179869184], "nbytes": 68719476736}]}'
    with pytest.raises(DataLossError, match="declares"):
        wire.unpack(len(header).to_bytes(4, "little") + header)
    with pytest.raises(DataLossError, match="over the limit"):
        wire.decode([header])


def test_a_server_without_a_token_only_serves_loopback(monkeypatch):
    monkeypatch.delenv("TW_TOKEN", raising=False)
    spec = make_cluster(ps=1)
    with pytest.raises(InvalidArgumentError, match="without a cluster token"):
        server._check_unauthenticated("10.1.2.3:2222", insecure=False)
    server._check_unauthenticated("10.1.2.3:2222", insecure=True)  # the user insists
    s = Server(spec, "ps", 0)  # loopback: allowed, with a warning
    s.stop(grace=0.1)


def test_sync_replicas_init_token_count_follows_tensorflow():
    g = tf.Graph()
    with g.as_default():
        step = tf.Variable(0, name="global_step", trainable=False)
        w = tf.Variable(1.0)
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                             replicas_to_aggregate=2, total_num_replicas=3)
        opt.minimize(w * 2.0, global_step=step)
        opt.get_init_tokens_op(0)  # backup workers: no extra tokens needed
    g = tf.Graph()
    with g.as_default():
        step = tf.Variable(0, name="global_step", trainable=False)
        w = tf.Variable(1.0)
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                             replicas_to_aggregate=3, total_num_replicas=2)
        opt.minimize(w * 2.0, global_step=step)
        with pytest.raises(InvalidArgumentError, match="too few tokens"):
            opt.get_init_tokens_op(0)
