"""Adversarial review of checkpoint retention: the v1 Saver keeps what
`keep_checkpoint_every_n_hours` promises instead of deleting it."""

from __future__ import annotations

import os

import numpy as np

import tensorweave.compat.v1 as tf
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
