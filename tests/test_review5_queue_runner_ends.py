"""How a TF1 queue pipeline ends when its producer thread does not end normally.

A `QueueRunner` closes its queue (so that consumers drain it, then get OutOfRangeError)
only when its last thread ended because the queue it reads closed: the input really
ended. TensorFlow 2.21's ``tf.compat.v1`` on the same programs:

- a producer that fails (an Assert on a record) with no coordinator leaves the batch
  queue open: the consumer gets the records made before the failure, then blocks (here
  bounded by ``RunOptions(timeout_in_ms)``: DeadlineExceededError), and the error is in
  the runner's ``exceptions_raised``. It must not look like the end of the input (an
  OutOfRangeError), which a training loop takes as "done" and so trains on part of the
  data without a word;
- a Session closed (or reset) under running queue runners stops the coordinator with
  the runners' error, so ``coord.join`` raises it (TensorFlow: CancelledError) instead
  of waiting forever for a stop that nobody requests.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tests.helpers import within

HANG = 120  # seconds before a blocked pipeline fails the test (a deadlock guard)

pytestmark = pytest.mark.usefixtures("fresh_default_graph")


def _failing_pipeline(records: int, bad_from: int):
    """A batch (of one) of 0..records-1 whose producer fails at record `bad_from`."""
    queue = tf.train.range_input_producer(records, num_epochs=1, shuffle=False)
    i = queue.dequeue()
    check = tf.Assert(tf.less(i, bad_from), [i])
    with tf.control_dependencies([check]):
        record = tf.identity(i)
    return tf.train.batch([record], 1)


@pytest.mark.parametrize("bad_from", [0, 3])
def test_a_failed_producer_without_coordinator_is_not_the_end_of_the_input(bad_from):
    batch = _failing_pipeline(6, bad_from)
    runners = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    batch_runner = next(qr for qr in runners if qr.name.startswith("batch"))

    def body():
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            threads = tf.train.start_queue_runners(sess)  # no coordinator
            got = [sess.run(batch).tolist() for _ in range(bad_from)]
            for t in threads:  # every producer has ended (one of them failed)
                t.join()
            # the queue holds nothing and nobody will fill it: the run blocks (as in
            # TensorFlow) rather than reporting the end of the input
            with pytest.raises(tw.errors.DeadlineExceededError):
                sess.run(batch, options=tf.RunOptions(timeout_in_ms=300))
            return got

    got = within(HANG, body)
    assert got == [[k] for k in range(bad_from)]
    errors = batch_runner.exceptions_raised
    assert [type(e) for e in errors] == [tw.errors.InvalidArgumentError]


def test_the_input_ending_still_closes_the_queue_without_coordinator():
    queue = tf.train.range_input_producer(5, num_epochs=2, shuffle=False)
    batch = tf.train.batch([queue.dequeue()], 3, num_threads=2, allow_smaller_final_batch=True)

    def body():
        out = []
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            tf.train.start_queue_runners(sess)
            with pytest.raises(tw.errors.OutOfRangeError):
                while len(out) < 10:
                    out.append(sess.run(batch))
        return out

    out = within(HANG, body)
    values = np.concatenate(out)
    assert np.bincount(values).tolist() == [2] * 5  # each element once per epoch
    assert [len(b) for b in out] == [3, 3, 3, 1]


def test_closing_the_session_under_running_runners_lets_join_return():
    queue = tf.train.range_input_producer(1000, shuffle=False)
    batch = tf.train.batch([queue.dequeue()], 4)

    def body():
        sess = tf.Session()
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        first = sess.run(batch).tolist()
        sess.close()  # no request_stop: the runners find their session closed
        with pytest.raises(tw.errors.TensorWeaveError):
            coord.join(threads, stop_grace_period_secs=30)
        return first, coord.should_stop()

    first, stopped = within(HANG, body)
    assert first == [0, 1, 2, 3]
    assert stopped


def test_a_clean_stop_before_closing_the_session_stays_clean():
    queue = tf.train.range_input_producer(1000, shuffle=False)
    batch = tf.train.batch([queue.dequeue()], 4)

    def body():
        coord = tf.train.Coordinator()
        with tf.Session() as sess:
            threads = tf.train.start_queue_runners(sess, coord)
            first = sess.run(batch).tolist()
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=30)  # no error: the stop came first
        return first

    assert within(HANG, body) == [0, 1, 2, 3]


def test_a_session_reset_under_running_runners_lets_join_return():
    server = tf.train.Server.create_local_server()
    try:
        queue = tf.train.range_input_producer(1000, shuffle=False)
        batch = tf.train.batch([queue.dequeue()], 4)

        def body():
            sess = tf.Session(server.target)
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            first = sess.run(batch).tolist()
            tf.Session.reset(server.target)
            with pytest.raises(tw.errors.TensorWeaveError):
                coord.join(threads, stop_grace_period_secs=30)
            # a new session on the target runs the pipeline afresh
            with tf.Session(server.target) as fresh:
                coord = tf.train.Coordinator()
                threads = tf.train.start_queue_runners(fresh, coord)
                again = fresh.run(batch).tolist()
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=30)
            return first, again

        first, again = within(HANG, body)
        assert first == again == [0, 1, 2, 3]
    finally:
        server.stop(grace=0.2)
