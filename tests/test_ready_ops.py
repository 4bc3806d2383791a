"""`tf.report_uninitialized_variables` (what Supervisor and SyncReplicasOptimizer's
`ready_for_local_init_op` wait on) and the readiness checks of session creation."""

import numpy as np
import pytest

import tensorweave.compat.v1 as tf


def test_report_uninitialized_variables_names_exactly_the_variables_without_a_value():
    g = tf.Graph()
    with g.as_default():
        a = tf.Variable(1.0, name="a")
        b = tf.Variable([2.0, 3.0], name="b")
        local = tf.Variable(0, name="local", collections=[tf.GraphKeys.LOCAL_VARIABLES],
                            trainable=False)
        everything = tf.report_uninitialized_variables()
        only_b = tf.report_uninitialized_variables([b])
        none = tf.report_uninitialized_variables([])
        with tf.Session() as sess:
            report = sess.run(everything)
            assert report.dtype == object and list(report) == [b"a", b"b", b"local"]
            sess.run(a.initializer)
            assert list(sess.run(everything)) == [b"b", b"local"]
            got_b, got_a = sess.run([only_b, a])  # mixed with ordinary fetches
            assert list(got_b) == [b"b"] and got_a == np.float32(1.0)
            sess.run([b.initializer, local.initializer])
            assert sess.run(everything).shape == (0,)
            assert sess.run(none).shape == (0,)


def test_sync_replicas_ready_for_local_init_op_waits_for_the_global_variables():
    g = tf.Graph()
    with g.as_default():
        step = tf.train.get_or_create_global_step()
        w = tf.Variable(np.float32(1.0), name="w")
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                             replicas_to_aggregate=1)
        opt.minimize(w * w, global_step=step)
        with tf.Session() as sess:
            assert set(sess.run(opt.ready_for_local_init_op)) >= {b"w", b"global_step"}
            sess.run(tf.global_variables_initializer())
            assert len(sess.run(opt.ready_for_local_init_op)) == 0
            sess.run(opt.local_step_init_op)  # now it can run


def test_monitored_session_refuses_a_model_its_init_ops_leave_uninitialized(tmp_path):
    g = tf.Graph()
    with g.as_default():
        tf.train.get_or_create_global_step()
        forgotten = tf.Variable(np.float32(0.0), name="forgotten")
        init = tf.variables_initializer([v for v in tf.global_variables()
                                         if v is not forgotten])
        scaffold = tf.train.Scaffold(init_op=init)
        with pytest.raises(RuntimeError, match="forgotten"):
            tf.train.MonitoredTrainingSession(scaffold=scaffold)
