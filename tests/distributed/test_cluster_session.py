"""v1 Sessions on a cluster of in-process servers: placement across tasks, results equal
to one process, errors with op, task and line, tokens, deadlines, transfers."""

import threading
import time

import grpc
import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.compiler.dtypes import ALL_DTYPES
from tensorweave.distribute import (
    GreedyLoadBalancingStrategy,
    Server,
    replica_device_setter,
)
from tensorweave.errors import (
    DeadlineExceededError,
    InvalidArgumentError,
    UnauthenticatedError,
    UnavailableError,
)
from tensorweave.runtime.distributed import rpc, wire

from .cluster_helpers import TOKEN, servers


def three_task_model():
    """A graph with ops on /job:ps/task:0, /job:worker/task:0 and /job:worker/task:1."""
    g = tf.Graph()
    rng = np.random.default_rng(0)
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(rng.normal(size=(6, 5)).astype(np.float32), name="w")
            b = tf.Variable(rng.normal(size=(5,)).astype(np.float32), name="b")
        with tf.device("/job:worker/task:1"):
            h = tf.tanh(tf.matmul(x, w) + b)
            s = tf.reduce_sum(h * h, axis=1)
        with tf.device("/job:worker/task:0"):
            out = tf.nn.softmax(tf.matmul(h, tf.transpose(w)[:5, :]))
            total = tf.reduce_mean(s) + tf.reduce_sum(out)
        loss = tf.reduce_sum(tf.square(h))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    return g, x, [h, s, out, total], train, init


def run_model(target, compile_target):
    g, x, fetches, train, init = three_task_model()
    feed = {x: np.random.default_rng(1).normal(size=(4, 6)).astype(np.float32)}
    with tf.Session(target, graph=g, compile_target=compile_target) as sess:
        sess.run(init)
        before = sess.run(fetches, feed)
        sess.run(train, feed)
        after = sess.run(fetches, feed)
        tasks = {t for step in sess._steps.values() for t in getattr(step, "tasks", [])}
    return before, after, tasks


@pytest.mark.parametrize("compile_target, direct", [("reference", False), ("cpu", False),
                                                     ("reference", True)])
def test_a_graph_split_across_three_tasks_equals_one_process(compile_target, direct, request):
    if direct:  # the client's own task is called without gRPC; the others through it
        request.getfixturevalue("local_calls")
    local = run_model("", compile_target)
    with servers(ps=1, worker=2) as (spec, tasks):
        remote = run_model(tasks["worker:0"].target, compile_target)
    assert remote[2] == {"/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0",
                         "/job:worker/replica:0/task:1"}
    for want, got in zip(local[0] + local[1], remote[0] + remote[1]):
        if compile_target == "reference":  # the same kernels everywhere: bitwise
            assert want.tobytes() == got.tobytes() and want.shape == got.shape
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_variables_on_a_ps_task_are_shared_by_every_client():
    with servers(ps=1, worker=2) as (spec, tasks):
        def client(target, steps):
            g = tf.Graph()
            with g.as_default(), tf.device(replica_device_setter(cluster=spec)):
                counter = tf.Variable(0, name="counter")
                bump = counter.assign_add(1)
                init = tf.variables_initializer([counter])
            sess = tf.Session(target, graph=g)
            return sess, counter, bump, init

        s0, counter, bump0, init = client(tasks["worker:0"].target, 5)
        s0.run(init)
        s1, _, bump1, _ = client(tasks["worker:1"].target, 5)
        threads = [threading.Thread(target=lambda s=s, b=b: [s.run(b) for _ in range(50)])
                   for s, b in ((s0, bump0), (s1, bump1))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert s0.run(counter) == 100  # every increment of both clients, none lost
        assert tasks["ps:0"].resources.variable("counter").read() == 100
        s0.close()
        s1.close()


def test_an_op_failing_on_another_task_names_the_op_the_task_and_the_line():
    with servers(ps=1, worker=1) as (spec, tasks):
        g = tf.Graph()
        with g.as_default():
            ids = tf.placeholder(tf.int32, [None])
            with tf.device("/job:ps/task:0"):
                table = tf.Variable(np.zeros((4, 2), np.float32), name="table")
                rows = tf.gather(table, ids)  # the line the error must name
            total = tf.reduce_sum(rows)
            init = tf.variables_initializer([table])
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run(init)
            assert sess.run(total, {ids: [0, 3]}) == 0
            with pytest.raises(InvalidArgumentError) as info:
                sess.run(total, {ids: [0, 7]})
            text = str(info.value)
            assert "Gather" in text and "/job:ps/replica:0/task:0" in text
            assert "test_cluster_session.py" in (info.value.location or "")
            assert sess.run(total, {ids: [1]}) == 0  # the cluster keeps working


def test_run_options_timeout_bounds_a_distributed_step():
    with servers(ps=1, worker=1) as (spec, tasks):
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:ps/task:0"):
                q = tf.FIFOQueue(2, [tf.float32], shapes=[[]], shared_name="q")
                item = q.dequeue()
            enqueue = q.enqueue([tf.constant(3.0)])
            twice = item * 2.0
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            start = time.monotonic()
            with pytest.raises(DeadlineExceededError):
                sess.run(twice, options=tf.RunOptions(timeout_in_ms=300))
            assert time.monotonic() - start < 10
            sess.run(enqueue)
            assert sess.run(twice) == 6.0  # the aborted step left nothing behind


@pytest.mark.parametrize("shape", [(0,), (1,), (3, 0, 2), (2, 3)])
def test_tensors_of_every_dtype_and_size_cross_tasks(shape):
    with servers(ps=1, worker=1) as (spec, tasks):
        g = tf.Graph()
        feeds, outs = {}, []
        rng = np.random.default_rng(0)
        with g.as_default():
            for d in ALL_DTYPES:
                x = tf.placeholder(d, shape)
                with tf.device("/job:ps/task:0"):
                    y = tf.identity(x)
                outs.append(tf.identity(y))  # back on the worker
                raw = rng.integers(0, 256, size=int(np.prod(shape)) * d.itemsize, dtype=np.uint8)
                value = raw.view(d.np).reshape(shape) if d.np != np.bool_ else raw.reshape(
                    shape).astype(bool)
                feeds[x] = value
        with tf.Session(tasks["worker:0"].target, graph=g, compile_target="reference") as sess:
            got = sess.run(outs, feeds)
        for value, result in zip(feeds.values(), got):
            assert result.dtype == value.dtype and result.shape == value.shape
            assert result.tobytes() == value.tobytes()


def test_calls_without_the_token_or_with_garbage_are_refused_and_the_server_serves_on():
    with servers(ps=1) as (spec, tasks):
        address = spec.task_address("ps", 0)
        with pytest.raises(UnauthenticatedError, match="token"):
            rpc.WorkerClient(address, None).call("GetStatus", {})
        with pytest.raises(UnauthenticatedError):
            rpc.WorkerClient(address, "wrong").call("GetStatus", {})
        good = rpc.WorkerClient(address, TOKEN)
        channel = grpc.insecure_channel(address)
        raw = channel.unary_unary(rpc.method_path("RegisterGraph"))
        answer = raw(b"\x00garbage bytes", metadata=((rpc.TOKEN_KEY, TOKEN),), timeout=10)
        assert type(wire.error_from_header(wire.unpack(answer)[0])).__name__ == "DataLossError"
        def text(t):
            return [np.frombuffer(t.encode(), np.uint8)]

        with pytest.raises(Exception, match="expected"):
            good.call("RegisterGraph", {}, text("this is not IR"))
        forged = 'func.func @g() { "tw.PyFunc"() : () -> () }'
        with pytest.raises(Exception, match="PyFunc"):
            good.call("RegisterGraph", {}, text(forged))
        with pytest.raises(InvalidArgumentError, match="u8 tensor"):
            good.call("RegisterGraph", {"graph": "old style"})
        channel.close()
        assert good.call("GetStatus", {})[0]["task"] == "/job:ps/replica:0/task:0"


def test_a_server_binds_exactly_its_address_once():
    with servers(ps=1) as (spec, tasks):
        with pytest.raises(UnavailableError, match="cannot listen"):
            Server(spec, "ps", 0)
        assert tasks["ps:0"].target == f"grpc://{spec.task_address('ps', 0)}"


def test_a_session_on_an_unreachable_target_is_unavailable_in_bounded_time(monkeypatch):
    from tensorweave.distribute import master
    from tensorweave.distribute.launch import free_ports
    start = time.monotonic()
    monkeypatch.setattr(master, "CONNECT_TIMEOUT_S", 1.0)
    with pytest.raises(UnavailableError, match="did not answer"):
        master.Cluster(f"grpc://127.0.0.1:{free_ports(1)[0]}", connect_timeout=1.0)
    assert time.monotonic() - start < 10


def test_replica_device_setter_round_robin_and_greedy_by_bytes():
    spec = {"ps": ["127.0.0.1:1", "127.0.0.1:2"], "worker": ["127.0.0.1:3"]}
    g = tf.Graph()
    with g.as_default(), tf.device(replica_device_setter(cluster=spec)):
        a, b, c = (tf.Variable(np.zeros(n, np.float32)) for n in (10, 1, 1))
        s = a[0] + b[0]
    assert [v.op.device for v in (a, b, c)] == ["/job:ps/task:0", "/job:ps/task:1",
                                                "/job:ps/task:0"]
    assert s.op.device == "/job:worker"
    greedy = GreedyLoadBalancingStrategy(2)
    g = tf.Graph()
    with g.as_default(), tf.device(replica_device_setter(ps_tasks=2, ps_strategy=greedy)):
        big, small1, small2 = (tf.Variable(np.zeros(n, np.float32)) for n in (100, 1, 1))
        with tf.device("/job:worker/task:0/cpu:0"):
            local = tf.identity(big)
    assert [v.op.device for v in (big, small1, small2)] == ["/job:ps/task:0",
                                                            "/job:ps/task:1", "/job:ps/task:1"]
    assert greedy.loads == [400, 8]
    assert local.op.device == "/job:worker/task:0/device:CPU:0"
    assert replica_device_setter(cluster={"worker": ["127.0.0.1:3"]}) is None
