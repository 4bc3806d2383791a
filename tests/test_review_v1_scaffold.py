"""Adversarial review of ``tf.train.Scaffold`` / ``Supervisor`` arguments that were
accepted and silently ignored: ``init_fn`` (TensorFlow 1 calls it after ``init_op`` when
no checkpoint is restored: the usual way to start from pretrained weights; ignored, the
model trained from its random initialization) and ``summary_op`` (ignored, the summary
hook wrote ``merge_all()`` instead)."""

from __future__ import annotations

import glob

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

pytest.importorskip("tensorboard")


def _graph():
    g = tf.Graph()
    with g.as_default():
        gs = tf.train.get_or_create_global_step()
        w = tf.Variable(np.float32(0.0), name="w")
        train = tf.train.GradientDescentOptimizer(0.5).minimize(tf.square(w - 1.0),
                                                                global_step=gs)
    return g, w, train


def test_scaffold_init_fn_runs_when_no_checkpoint_is_restored(tmp_path):
    g, w, train = _graph()
    calls = []

    def init_fn(scaffold, sess):
        calls.append(scaffold)
        sess.run(w.assign(5.0))  # "pretrained" weights

    with g.as_default():
        scaffold = tf.train.Scaffold(init_fn=init_fn)
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=scaffold,
                                               save_summaries_steps=None) as sess:
            assert sess.run(w) == 5.0
            sess.run(train)
    assert calls == [scaffold]
    g, w, train = _graph()
    with g.as_default():  # restored from the checkpoint: init_fn is not called
        scaffold = tf.train.Scaffold(init_fn=lambda s, sess: calls.append("again"))
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=scaffold,
                                               save_summaries_steps=None) as sess:
            assert sess.run(w) == pytest.approx(5.0 - 0.5 * 2 * 4.0)
    assert calls == [calls[0]]


def test_supervisor_init_fn_runs_after_init_op():
    g, w, train = _graph()
    with g.as_default():
        sv = tf.train.Supervisor(init_fn=lambda sess: sess.run(w.assign(3.0)),
                                 save_model_secs=0)
        with sv.managed_session() as sess:
            assert sess.run(w) == 3.0


def test_scaffold_summary_op_is_what_the_summary_hook_writes(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    g, w, train = _graph()
    with g.as_default():
        tf.summary.scalar("in_collection", w)
        chosen = tf.summary.scalar("chosen", w * 2.0, collections=[])
        scaffold = tf.train.Scaffold(summary_op=chosen)
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=scaffold,
                                               save_summaries_steps=1,
                                               save_checkpoint_secs=None) as sess:
            sess.run(train)
    [events] = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    acc = EventAccumulator(events)
    acc.Reload()
    assert acc.Tags()["scalars"] == ["chosen"]
