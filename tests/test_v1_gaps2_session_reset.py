"""``tf.Session.reset(target, containers=None, config=None)``: every task of the
target's cluster drops its resources (variables become uninitialized, queues and other
state are made anew, empty), and this process's sessions on `target` are closed (their
next run is an AbortedError). Checked against TensorFlow 2.21's ``tf.compat.v1`` on the
same program with ``create_local_server`` (the old session's AbortedError, the
FailedPreconditionError reading a reset variable, ``is_variable_initialized`` False, an
empty queue, a reset to ``""`` doing nothing). tensorweave has no ``tf.container``:
every resource is in the default container ``""``, so ``containers=["other"]`` resets
nothing, as TensorFlow resets nothing of the default container then."""

import contextlib

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.distribute import ClusterSpec, Server
from tensorweave.distribute.launch import free_ports

TARGETS = ["reference", "cpu"]


pytestmark = pytest.mark.usefixtures("fresh_default_graph")


@pytest.fixture
def server():
    s = tf.train.Server.create_local_server()
    yield s
    s.stop(grace=0.2)


def _program():
    v = tf.Variable([1.0, 2.0], name="v")
    q = tf.FIFOQueue(10, tf.float32, shared_name="q")
    return v, q.enqueue(1.0), q.size(), tf.is_variable_initialized(v)


@pytest.mark.parametrize("target", TARGETS)
def test_reset_uninitializes_variables_empties_queues_and_closes_sessions(server, target):
    v, enqueue, size, initialized = _program()
    sess = tf.Session(server.target, compile_target=target)
    sess.run(tf.global_variables_initializer())
    sess.run(enqueue)
    assert sess.run(size) == 1
    tf.Session.reset(server.target)
    with pytest.raises(tw.errors.AbortedError, match="Session.reset"):
        sess.run(v)
    with tf.Session(server.target, compile_target=target) as fresh:
        with pytest.raises(tw.errors.FailedPreconditionError, match="uninitialized.*'v'"):
            fresh.run(v)
        assert not fresh.run(initialized)
        assert fresh.run(size) == 0
        fresh.run(v.initializer)
        np.testing.assert_array_equal(fresh.run(v), [1.0, 2.0])


def test_containers_other_than_the_default_hold_nothing_here(server):
    v, enqueue, size, _ = _program()
    with tf.Session(server.target) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(enqueue)
    tf.Session.reset(server.target, ["experiment"])
    with tf.Session(server.target) as sess:
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        assert sess.run(size) == 1
    tf.Session.reset(server.target, [""])  # the default container: everything
    with tf.Session(server.target) as sess:
        with pytest.raises(tw.errors.FailedPreconditionError, match="uninitialized"):
            sess.run(v)


@contextlib.contextmanager
def _ps_and_worker():
    ports = free_ports(2)
    spec = ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    servers = [Server(spec, "ps", 0), Server(spec, "worker", 0)]
    try:
        yield servers
    finally:
        for s in servers:
            s.stop(grace=0.2)


@pytest.mark.parametrize("target", TARGETS)
def test_reset_reaches_every_task_and_graphs_registered_before_see_it(target):
    with _ps_and_worker() as (ps, worker):
        with tf.device("/job:ps/task:0"):
            v = tf.Variable([3.0], name="v")
        y = v * 2.0
        on_ps = tf.Session(ps.target, compile_target=target)
        on_ps.run(v.initializer)
        np.testing.assert_array_equal(on_ps.run(y), [6.0])
        # reset through the worker: the ps task's variable goes too; the session on the
        # ps's target stays open (TensorFlow closes the sessions on `target` only), and
        # its step, compiled and registered before, finds the variable uninitialized
        tf.Session.reset(worker.target)
        with pytest.raises(tw.errors.FailedPreconditionError, match="uninitialized"):
            on_ps.run(y)
        on_ps.run(v.initializer)
        np.testing.assert_array_equal(on_ps.run(y), [6.0])
        on_ps.close()


def test_reset_of_a_local_target_does_nothing():
    v = tf.Variable(1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert tf.Session.reset("") is None
        assert sess.run(v) == 1.0
