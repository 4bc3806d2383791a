"""Adversarial review of ``tf.train.MonitoredSession``: what a hook adds to a run, and
what is saved when training ends with an error."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf


def _nan_graph():
    g = tf.Graph()
    with g.as_default():
        gs = tf.train.get_or_create_global_step()
        w = tf.Variable(np.float32(1.0), name="w")
        x = tf.placeholder(tf.float32, [])
        loss = tf.square(w * x)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    return g, w, x, loss, train


def test_an_error_in_the_block_does_not_save_a_final_checkpoint(tmp_path):
    """As in TensorFlow 1 (hooks' ``end`` runs only when the session closes without an
    error): NanTensorHook's error left the NaN weights in the session, and the
    CheckpointSaverHook's final save made them the newest checkpoint, which the next
    MonitoredTrainingSession restored (training restarted from NaN)."""
    g, w, x, loss, train = _nan_graph()
    with g.as_default():
        with pytest.raises(tf.train.NanLossDuringTrainingError):
            with tf.train.MonitoredTrainingSession(
                    checkpoint_dir=str(tmp_path), save_checkpoint_steps=100,
                    save_summaries_steps=None,
                    hooks=[tf.train.NanTensorHook(loss)]) as sess:
                sess.run(train, {x: 1.0})
                sess.run(train, {x: np.nan})
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("-0")
    g, w, x, loss, train = _nan_graph()
    with g.as_default():
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               save_checkpoint_secs=None,
                                               save_summaries_steps=None) as sess:
            assert sess.run(w) == 1.0  # the initial checkpoint, not NaN


def test_end_of_input_still_saves_the_final_checkpoint(tmp_path):
    """OutOfRangeError (the input is exhausted) is a normal end: hooks' ``end`` runs."""
    g, w, x, loss, train = _nan_graph()
    with g.as_default():
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               save_checkpoint_steps=100,
                                               save_summaries_steps=None) as sess:
            sess.run(train, {x: 1.0})
            raise tf.errors.OutOfRangeError("end of input")
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("-1")


class _FeedingHook(tf.train.SessionRunHook):
    def __init__(self, feeds):
        self.feeds = feeds

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(None, feed_dict=self.feeds)


def test_a_tensor_fed_by_a_hook_and_the_caller_is_an_error():
    """TensorFlow 1 refuses a tensor fed by both a hook and the caller, or by two hooks;
    the hook's value silently replaced the caller's (a loss of 4 for x = 1)."""
    g, w, x, loss, train = _nan_graph()
    with g.as_default():
        with tf.train.MonitoredTrainingSession(hooks=[_FeedingHook({x: 2.0})]) as sess:
            with pytest.raises(RuntimeError, match="fed by a SessionRunHook and the caller"):
                sess.run(loss, {x: 1.0})
            assert sess.run(loss) == 4.0  # a feed of the hook alone is used
        with tf.train.MonitoredTrainingSession(hooks=[_FeedingHook({x: 2.0}),
                                              _FeedingHook({x: 3.0})]) as sess:
            with pytest.raises(RuntimeError, match="fed by two SessionRunHooks"):
                sess.run(loss)


def test_run_metadata_reaches_the_session():
    """A traced run records its timeline into the caller's RunMetadata (it was dropped)."""
    g, w, x, loss, train = _nan_graph()
    with g.as_default():
        with tf.train.MonitoredTrainingSession() as sess:
            meta = tf.RunMetadata()
            got = sess.run(loss, {x: 1.0},
                           options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                           run_metadata=meta)
            assert got == 1.0
            assert len(meta.step_stats) > 0


def _failing_input_graph():
    """A queue runner whose third enqueue fails (bad input), feeding a train op."""
    g = tf.Graph()
    with g.as_default():
        gs = tf.train.get_or_create_global_step()
        q = tf.FIFOQueue(4, [tf.float32], shapes=[[]])
        count = tf.Variable(0.0, trainable=False, name="count")
        nxt = count.assign_add(1.0)
        with tf.control_dependencies([tf.debugging.assert_less(nxt, 3.0)]):
            enqueue = q.enqueue([tf.identity(nxt)])
        tf.train.add_queue_runner(tf.train.QueueRunner(q, [enqueue]))
        w = tf.Variable(np.float32(0.0), name="w")
        train = tf.train.GradientDescentOptimizer(0.1).minimize(w * q.dequeue(),
                                                                global_step=gs)
    return g, train


def test_a_queue_runner_error_is_raised_not_a_quiet_end(tmp_path):
    """As TensorFlow 1's coordinated session: the input thread's error is what the
    training loop raises (its dequeue's OutOfRangeError, from the queue the failing
    runner closed, is caused by it). Before, the loop ended as if the input were
    exhausted, the error only logged, and a final checkpoint written."""
    g, train = _failing_input_graph()
    steps = 0
    with g.as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="assert_less"):
            with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                                   save_summaries_steps=None) as sess:
                while not sess.should_stop():
                    sess.run(train)
                    steps += 1
    assert steps <= 2
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("-0")


def test_should_stop_raises_the_queue_runner_error_rather_than_ending_quietly(tmp_path):
    """The loop can see the failed runner first through ``should_stop`` (the coordinator
    stops), not through a run: TensorFlow 1's coordinated session raises the runner's error
    there. Before, ``should_stop`` only said True, the block ended normally and the final
    checkpoint of the failed run was written (model.ckpt-1 here; CI saw it as a race)."""
    import time

    g, train = _failing_input_graph()
    with g.as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="assert_less"):
            with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                                   save_summaries_steps=None) as sess:
                sess.run(train)  # global_step 1: a final save would be model.ckpt-1
                deadline = time.monotonic() + 30
                while not sess.should_stop():  # the runner fails on its own
                    assert time.monotonic() < deadline, "the queue runner never failed"
                    time.sleep(0.01)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("-0")
