"""A step that has not run for a while (a checkpoint save, an evaluation) still runs
whole: its master registers its graphs again before a task can have dropped them as
idle (`server.GRAPH_IDLE_S`).

Before, a task that had swept the idle graph (any registration there, e.g. another
client's, sweeps) answered 'no graph' while the step's other tasks ran their parts: the
step changed the global step on ps:0 but not w on ps:1 and raised AbortedError, though
nothing had failed, and MonitoredTrainingSession "recovered" by restoring the last
checkpoint, or, with no checkpoint directory, by initializing the model again (the
global step went from 5 back to 1)."""

import time

import pytest

import tensorweave.compat.v1 as tf
from tensorweave.runtime.distributed import server

from .cluster_helpers import servers

IDLE_S = 1.0


@pytest.fixture
def short_idle(monkeypatch):
    monkeypatch.setattr(server, "GRAPH_IDLE_S", IDLE_S)


def _model(spec):
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(
            cluster=spec, worker_device="/job:worker/task:0")):
        step = tf.train.get_or_create_global_step()  # on ps:0
        w = tf.Variable(0.0, name="w")  # on ps:1
        train = tf.group(tf.assign_add(w, 1.0), tf.assign_add(step, 1))
        probe = [step.read_value(), w.read_value()]
    return g, train, probe


def _another_client_registers_on(task):
    """A graph of another client on `task` only: its registration sweeps idle graphs."""
    g = tf.Graph()
    with g.as_default(), tf.device("/job:ps/task:1"):
        other = tf.Variable(1.0, name="another_clients_variable")
    config = tf.ConfigProto(device_filters=["/job:ps/task:1"])
    with tf.Session(task.target, graph=g, config=config) as sess:
        sess.run(other.initializer)


def test_a_step_idle_past_the_graph_limit_runs_whole(short_idle):
    with servers(ps=2, worker=1) as (spec, tasks):
        g, train, probe = _model(spec)
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run([v.initializer for v in g.get_collection("variables")])
            for _ in range(3):
                sess.run(train)
            time.sleep(IDLE_S * 1.5)
            _another_client_registers_on(tasks["ps:1"])
            sess.run(train)  # AbortedError before: ps:1 had dropped its part
            assert [int(x) for x in sess.run(probe)] == [4, 4]


def test_monitored_training_keeps_its_progress_over_an_idle_step(short_idle):
    with servers(ps=2, worker=1) as (spec, tasks):
        g, train, probe = _model(spec)
        with g.as_default():
            sess = tf.train.MonitoredTrainingSession(tasks["worker:0"].target,
                                                     recovery_wait_secs=0.1,
                                                     max_wait_secs=10)
            with sess:
                for _ in range(5):
                    sess.run(train)
                time.sleep(IDLE_S * 1.5)
                _another_client_registers_on(tasks["ps:1"])
                sess.run(train)
                assert [int(x) for x in sess.run(probe)] == [6, 6]  # was [1, 1]
                assert sess.recoveries == 0
