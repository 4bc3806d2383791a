"""``replica_device_setter`` places variables in TensorFlow's sequence: a variable
pinned to another job uses up no round-robin slot, the request's fields win over the
setter's (merged, not replaced whole), and the device stack applies innermost first, so
the setter sees the request of the scopes inside it. Every expected device below is what
TensorFlow 2.21's ``tf.compat.v1`` gave on the same program."""

import tensorweave.compat.v1 as tf


def _devices(*tensors):
    return [t.op.device or "" for t in tensors]


def test_a_variable_pinned_to_another_job_takes_no_round_robin_slot():
    g = tf.Graph()
    setter = tf.train.replica_device_setter(ps_tasks=3, worker_device="/job:worker/task:0")
    with g.as_default(), tf.device(setter):
        v0 = tf.Variable(1.0, name="v0")
        with tf.device("/job:worker"):
            v1 = tf.Variable(1.0, name="v1_worker")
        v2 = tf.Variable(1.0, name="v2")
        with tf.device("/job:ps/task:2"):
            v3 = tf.Variable(1.0, name="v3_ps2")
        v4 = tf.Variable(1.0, name="v4")
        with tf.device("/job:chief/task:0"):
            v5 = tf.Variable(1.0, name="v5_chief")
        with tf.device("/task:1"):
            v6 = tf.Variable(1.0, name="v6_task1")
        v7 = tf.Variable(1.0, name="v7")
        with tf.device("/job:ps"):
            c = tf.constant(2.0, name="c_ps")
        with tf.device("/device:CPU:0"):
            d = tf.constant(2.0, name="d_cpu")
    assert _devices(v0, v1, v2, v3, v4, v5, v6, v7, c, d) == [
        "/job:ps/task:0", "/job:worker", "/job:ps/task:1", "/job:ps/task:2",
        "/job:ps/task:0", "/job:chief/task:0", "/job:ps/task:1", "/job:ps/task:2",
        "/job:ps/task:0", "/job:worker/task:0/device:CPU:0"]


def test_the_ps_device_fields_merge_into_a_request_for_another_job():
    g = tf.Graph()
    setter = tf.train.replica_device_setter(ps_tasks=3, worker_device="/job:worker",
                                            ps_device="/job:ps/device:CPU:0")
    with g.as_default(), tf.device(setter):
        v0 = tf.Variable(1.0, name="v0")
        with tf.device("/job:worker"):
            v1 = tf.Variable(1.0, name="v1")
        with tf.device("/job:chief/task:0"):
            v2 = tf.Variable(1.0, name="v2")
        v3 = tf.Variable(1.0, name="v3")
        with tf.device("/job:ps"):
            c = tf.constant(2.0, name="c")
    assert _devices(v0, v1, v2, v3, c) == [
        "/job:ps/task:0/device:CPU:0", "/job:worker/device:CPU:0",
        "/job:chief/task:0/device:CPU:0", "/job:ps/task:1/device:CPU:0", "/job:ps"]


def test_scopes_around_and_inside_the_setter_apply_innermost_first():
    g = tf.Graph()
    with g.as_default(), tf.device("/job:worker/task:3"):
        with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
            a = tf.Variable(1.0, name="a")
            b = tf.Variable(1.0, name="b")
            c = tf.constant(1.0, name="c")
            with tf.device("/job:worker"):
                d = tf.Variable(1.0, name="d")
            e = tf.Variable(1.0, name="e")
            with tf.device(None):
                f = tf.Variable(1.0, name="f")
            h = tf.Variable(1.0, name="h")
            with tf.device("/device:CPU:0"):
                k = tf.Variable(1.0, name="k")
                q = tf.constant(1.0, name="q")
    assert _devices(a, b, d, e, f, h, k, c, q) == [
        "/job:ps/task:0", "/job:ps/task:1", "/job:worker/task:3", "/job:ps/task:0", "",
        "/job:ps/task:1", "/job:ps/task:0/device:CPU:0", "/job:worker/task:3",
        "/job:worker/task:3/device:CPU:0"]
