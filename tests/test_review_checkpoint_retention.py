"""Adversarial review of checkpoint retention: the v1 Saver keeps what
`keep_checkpoint_every_n_hours` promises instead of deleting it."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.compat.v1 import session as v1_session
from tensorweave.runtime import checkpoint_index


def test_saver_keeps_one_checkpoint_every_n_hours(tmp_path, monkeypatch):
    """``Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1)`` swallowed the hours
    (``**_``): every checkpoint but the newest was deleted. As in TensorFlow, a dropped
    checkpoint written an hour or more after the last one preserved (at first, the
    Saver's creation) stays on disk."""
    clock = [1_000_000.0]
    monkeypatch.setattr(checkpoint_index, "now", lambda: clock[0])
    g = tf.Graph()
    with g.as_default():
        tf.Variable(np.float32(1.0))
        saver = tf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1)
        default = tf.train.Saver(max_to_keep=1)
        init = tf.global_variables_initializer()
    hours = [0.5, 1.2, 2.5, 2.7, 3.0]  # after the Saver's creation
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for step, h in enumerate(hours, 1):
            clock[0] = 1_000_000.0 + h * 3600
            saver.save(sess, str(tmp_path / "kept" / "model"), global_step=step)
            default.save(sess, str(tmp_path / "plain" / "model"), global_step=step)

    def files(d):
        return sorted(f for f in os.listdir(tmp_path / d) if f.endswith(".safetensors"))

    # model-2 (1.2 h: an hour after the creation) and model-3 (2.5 h: an hour after
    # model-2) stay; model-4 (2.7 h) does not
    assert files("kept") == ["model-2.safetensors", "model-3.safetensors",
                             "model-5.safetensors"]
    assert files("plain") == ["model-5.safetensors"]
    assert tf.train.latest_checkpoint(str(tmp_path / "kept")).endswith("model-5")


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_checkpoint_saver_hook_saves_every_n_steps(tmp_path, monkeypatch, target):
    """``save_checkpoint_steps=2`` saved after every step: the hook estimated the step
    from the global step read in the train step plus one, and saved at the real step
    without checking it again (the read sees the increment, so every estimate was one
    ahead). With max_to_keep=5 the kept checkpoints then covered 5 steps instead of 10.
    TensorFlow checks the real step before saving. (Whether the read sees the increment
    depends on the target's order of the two: the cpu target's did.)"""
    monkeypatch.setattr(v1_session, "DEFAULT_TARGET", target)
    g = tf.Graph()
    with g.as_default():
        step = tf.train.get_or_create_global_step()
        w = tf.Variable(0.0)
        train = tf.group(w.assign_add(1.0), step.assign_add(1))
        with tf.train.MonitoredTrainingSession(
                checkpoint_dir=str(tmp_path), save_checkpoint_steps=2,
                hooks=[tf.train.StopAtStepHook(last_step=7)]) as sess:
            while not sess.should_stop():
                sess.run(train)
    saved = sorted(int(f[len("model.ckpt-"):-len(".safetensors")]) for f in os.listdir(tmp_path)
                   if f.startswith("model.ckpt-") and f.endswith(".safetensors"))
    assert saved == [0, 2, 4, 6, 7]  # the initial state, every 2 steps, and the end
