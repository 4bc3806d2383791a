"""A variable used inside ``tf.cond`` / ``tf.while_loop`` on a cluster: the body makes a
handle of its own for it, and the conditional or loop runs on one task, so it must run
on the task that holds the variable. Before, it ran on the client's task, where the
body's handle named a second, fresh variable: ``tf.cond(p, lambda: w.assign(x), ...)``
wrote 42 into a copy on the worker and the PS variable, which every other read sees,
stayed 3 (a silent lost update); ``assign_add`` failed with "uninitialized". A body
using variables of two tasks cannot run on one: a clear error, not a copy."""

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import InvalidArgumentError

from .cluster_helpers import servers


def build(spec=None):
    g = tf.Graph()
    setter = None if spec is None else tf.train.replica_device_setter(
        cluster=spec, worker_device="/job:worker/task:0")
    with g.as_default(), tf.device(setter):
        w = tf.Variable(np.float32(3.0), name="w")   # ps:0
        u = tf.Variable(np.float32(5.0), name="u")   # ps:1
        p = tf.placeholder(tf.bool, [])
        x = tf.placeholder(tf.float32, [])
        set_w = tf.cond(p, lambda: w.assign(x), lambda: tf.identity(x))
        bump_u = tf.cond(p, lambda: u.assign_add(1.0), lambda: u.assign_add(10.0))
        _, looped = tf.while_loop(lambda i, s: i < 3,
                                  lambda i, s: (i + 1, s + w.assign_add(1.0)),
                                  [tf.constant(0), tf.constant(0.0)])
        both = tf.cond(p, lambda: w.assign_add(1.0) + u.assign_add(1.0), lambda: x)
        init = tf.global_variables_initializer()
    return g, dict(w=w, u=u, p=p, x=x, set_w=set_w, bump_u=bump_u, looped=looped,
                   both=both, init=init)


def run(sess, m):
    sess.run(m["init"])
    out = [sess.run(m["set_w"], {m["p"]: True, m["x"]: 42.0})]
    out.append(sess.run(m["w"]))            # a graph of the variable alone
    out.append(sess.run(m["bump_u"], {m["p"]: False}))
    out.append(sess.run(m["u"]))
    out.append(sess.run(m["looped"]))       # 43 + 44 + 45
    out.append(sess.run(m["w"]))
    return out


def test_variables_updated_inside_cond_and_while_on_a_cluster_equal_one_process():
    g, m = build()
    with tf.Session(graph=g) as sess:
        want = run(sess, m)
    assert [float(v) for v in want] == [42.0, 42.0, 15.0, 15.0, 132.0, 45.0]
    with servers(ps=2, worker=1) as (spec, tasks):
        g, m = build(spec)
        assert [m["w"].op.device, m["u"].op.device] == ["/job:ps/task:0", "/job:ps/task:1"]
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            got = run(sess, m)
            with pytest.raises(InvalidArgumentError, match="/job:ps/task:1: u"):
                sess.run(m["both"], {m["p"]: True, m["x"]: 0.0})
        copies = sorted(tasks["worker:0"].resources.variables())
    assert [float(v) for v in got] == [float(v) for v in want]
    assert copies == []
