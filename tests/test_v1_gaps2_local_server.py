"""``tf.train.Server.create_local_server()``: a one-task in-process server on a free
port (job ``localhost``), which ``Session(server.target)`` runs graphs on; its variables
outlive a session, as on any task. Checked against TensorFlow 2.21's ``tf.compat.v1``
on the same program (target ``grpc://localhost:PORT``, values, a second session sees the
variable the first initialized)."""

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.runtime.distributed.cluster import parse_address

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def test_a_local_server_runs_sessions_and_keeps_variables():
    server = tf.train.Server.create_local_server()
    try:
        host, port = parse_address(server.target[len("grpc://"):])
        assert server.target.startswith("grpc://") and host == "localhost" and port > 0
        assert server.server_def["job_name"] == "localhost"
        assert server.server_def["cluster"] == {"localhost": [f"localhost:{port}"]}
        v = tf.Variable([1.0, 2.0], name="v")
        y = v * 2.0
        with tf.Session(server.target) as sess:
            sess.run(v.initializer)
            np.testing.assert_array_equal(sess.run(y), [2.0, 4.0])
            sess.run(v.assign([3.0, 5.0]))
        with tf.Session(server.target) as sess:  # the task still holds v
            np.testing.assert_array_equal(sess.run(y), [6.0, 10.0])
    finally:
        server.stop(grace=0.2)


def test_two_local_servers_get_different_ports_and_start_when_asked():
    first = tf.train.Server.create_local_server()
    second = tf.train.Server.create_local_server(start=False)
    try:
        assert first.target != second.target
        second.start()
        c = tf.constant(3.0) * 2.0
        with tf.Session(second.target) as sess:
            assert sess.run(c) == 6.0
    finally:
        first.stop(grace=0.2)
        second.stop(grace=0.2)


def test_a_cluster_spec_with_port_zero_binds_a_free_port():
    server = tf.train.Server(tf.train.ClusterSpec({"worker": ["127.0.0.1:0"]}), "worker", 0)
    try:
        assert parse_address(server.target[len("grpc://"):])[1] > 0
        with tf.Session(server.target) as sess:
            assert sess.run(tf.constant(1.5) + 1.0) == 2.5
    finally:
        server.stop(grace=0.2)
