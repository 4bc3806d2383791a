"""Adversarial review: ``saver.save(sess, path, global_step=step)`` with the step a
session returned (the TensorFlow 1 loop ``step = sess.run(global_step)``)
or any NumPy integer names the checkpoint ``path-step``, as TensorFlow 1 takes any
integral number; it failed with a TypeError trying to fetch the number (this session
returns a 0-d array for the step where TensorFlow 1 returns a NumPy scalar)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tensorweave.compat.v1 as tf


def test_a_step_returned_by_the_session_or_a_numpy_integer_names_the_checkpoint(tmp_path):
    g = tf.Graph()
    with g.as_default():
        gs = tf.train.get_or_create_global_step()
        w = tf.Variable(np.float32(1.0), name="w")
        train = tf.train.GradientDescentOptimizer(0.1).minimize(w * w, global_step=gs)
        saver = tf.train.Saver(max_to_keep=None)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            step = sess.run(gs)  # a 0-d int64 array
            prefix = os.path.join(str(tmp_path), "model")
            assert saver.save(sess, prefix, global_step=step) == f"{prefix}-1"
            assert saver.save(sess, prefix, global_step=np.int32(7)) == f"{prefix}-7"
            assert saver.save(sess, prefix, global_step=gs) == f"{prefix}-1"
            assert tf.train.latest_checkpoint(str(tmp_path)) == f"{prefix}-1"
            with pytest.raises(TypeError):  # a fraction is no step
                saver.save(sess, prefix, global_step=np.float32(1.5))
