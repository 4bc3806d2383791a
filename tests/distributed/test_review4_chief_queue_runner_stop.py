"""The sync-replicas chief's queue runner, when it stops (its coordinator stops, or its
aggregating step fails), leaves the token queue open, as TensorFlow's does (its queue
runner closes a dummy queue).

It was a queue runner of the token queue itself, so stopping closed the token queue
(`cancel_op` from the coordinator's stop, `close_op` after a failed step): a worker
waiting for a token got OutOfRangeError, which a MonitoredTrainingSession takes for the
end of the input and stops on cleanly, as if training had finished, while the chief
was recovering; a worker that had not yet come for its token ended the same way later."""

import threading

import numpy as np
import pytest

import tensorweave.compat.v1 as tf


def test_stopping_the_chief_queue_runner_leaves_waiting_workers_waiting():
    g = tf.Graph()
    with g.as_default():
        step = tf.train.get_or_create_global_step()
        w = tf.Variable(np.float32(0.0), name="w")
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0),
                                             replicas_to_aggregate=2, total_num_replicas=2)
        train = opt.minimize(w * 3.0, global_step=step)
        init_tokens = opt.get_init_tokens_op()
        queue = opt._sync_token_queue
        take_token = queue.dequeue()
        closed = queue.is_closed()
    sess = tf.Session(graph=g)
    try:
        sess.run([v.initializer for v in g.get_collection("variables")])
        sess.run([opt.chief_init_op, opt.local_step_init_op])
        sess.run(init_tokens)
        sess.run([take_token, take_token])  # the first tokens went to other workers
        coord = tf.train.Coordinator()
        threads = opt.get_chief_queue_runner().create_threads(sess, coord=coord,
                                                              daemon=True, start=True)
        outcome = {}

        def worker():  # one gradient of the two needed, then a wait for a token
            try:
                outcome["token"] = sess.run(train)
            except Exception as e:  # noqa: BLE001 - handed to the test
                outcome["error"] = e

        waiting = threading.Thread(target=worker, daemon=True)
        waiting.start()
        coord.request_stop(RuntimeError("the chief's training loop failed"))
        with pytest.raises(RuntimeError, match="training loop failed"):
            # the aggregating thread still waits for a second gradient: not joined
            coord.join(threads, stop_grace_period_secs=1, ignore_live_threads=True)
        assert not sess.run(closed)  # was True: the stop closed the token queue
        waiting.join(0.5)
        assert "error" not in outcome, repr(outcome.get("error"))  # was OutOfRangeError
    finally:
        sess.close()  # releases the waiting worker (its step is cancelled)
