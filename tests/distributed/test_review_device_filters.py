"""A variable requested on a task the session does not reach is an error, not a
second variable on the client's task. Before, soft placement moved its handle to the
client's task: a session whose device_filters left out /job:ps (or a setter counting
more PS tasks than the cluster has) initialized and trained its own copy there, while
the PS variable every other worker uses stayed as it was, with no error."""

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import InvalidArgumentError

from .cluster_helpers import servers


def build(setter):
    g = tf.Graph()
    with g.as_default(), tf.device(setter):
        v = tf.Variable(np.float32(3.0), name="v")
        w = tf.Variable(np.float32(5.0), name="w")
        bump = tf.group(v.assign_add(1.0), w.assign_add(1.0))
        init = tf.global_variables_initializer()
    return g, bump, init


def test_a_session_whose_device_filters_leave_out_the_ps_cannot_make_a_private_copy():
    with servers(ps=1, worker=2) as (spec, tasks):
        setter = tf.train.replica_device_setter(cluster=spec,
                                                worker_device="/job:worker/task:0")
        g, bump, init = build(setter)
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run(init)
        g, bump, init = build(setter)
        config = tf.ConfigProto(device_filters=["/job:worker/task:0"])
        with tf.Session(tasks["worker:0"].target, graph=g, config=config) as sess:
            with pytest.raises(InvalidArgumentError, match="'v' on '/job:ps/task:0'"):
                sess.run(init)
            with pytest.raises(InvalidArgumentError, match="device_filters"):
                sess.run(bump)
        on_ps = {n: float(s.read()) for n, s in tasks["ps:0"].resources.variables().items()}
        copies = list(tasks["worker:0"].resources.variables())
    assert on_ps == {"v": 3.0, "w": 5.0}
    assert copies == []


def test_a_setter_with_more_ps_tasks_than_the_cluster_is_an_error():
    with servers(ps=1, worker=1) as (spec, tasks):
        g, bump, init = build(tf.train.replica_device_setter(
            ps_tasks=2, worker_device="/job:worker/task:0"))
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            with pytest.raises(InvalidArgumentError, match="'w' on '/job:ps/task:1'"):
                sess.run(init)
        copies = list(tasks["worker:0"].resources.variables())
    assert copies == []
