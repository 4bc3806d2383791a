"""A partitioned variable restored from a checkpoint of a variable of another shape must
be an error, also when every shard of the new model has the shape of the stored shard of
the same name: a [4, 3] variable saved as two [2, 3] shards was loaded into a [2, 6]
variable split along its columns, the saved rows laid side by side without a word."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import DataLossError

VALUES = np.arange(12, dtype=np.float32).reshape(4, 3)


def _model(shape: list[int], axis: int) -> tuple:
    """Variable `w` of `shape` in two shards along `axis`, and the whole of it."""
    g = tf.Graph()
    with g.as_default():
        w = tf.get_variable("w", shape, initializer=tf.zeros_initializer(),
                            partitioner=tf.fixed_size_partitioner(2, axis=axis))
        whole = tf.concat(list(w), axis)
        saver = tf.train.Saver()
        init = tf.global_variables_initializer()
        assigns = [part.assign(VALUES[2 * k:2 * k + 2]) for k, part in enumerate(w)] \
            if shape == [4, 3] and axis == 0 else []
    return g, whole, saver, init, assigns


def _saved(tmp_path) -> str:
    g, whole, saver, init, assigns = _model([4, 3], 0)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run(assigns)
        np.testing.assert_array_equal(sess.run(whole), VALUES)
        return saver.save(sess, str(tmp_path / "model"))


def test_shards_of_the_same_shapes_from_a_variable_of_another_shape_are_an_error(tmp_path):
    path = _saved(tmp_path)
    g, _, saver, _, _ = _model([2, 6], 1)  # shards w/part_0, w/part_1: [2, 3] each
    with tf.Session(graph=g) as sess, pytest.raises(DataLossError, match=r"'w'.*\[4, 3\]"):
        saver.restore(sess, path)


def test_the_same_partitioning_still_restores(tmp_path):
    path = _saved(tmp_path)
    g, whole, saver, _, _ = _model([4, 3], 0)
    with tf.Session(graph=g) as sess:
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(whole), VALUES)


def test_another_partitioning_of_the_same_shape_still_restores(tmp_path):
    path = _saved(tmp_path)
    g, whole, saver, _, _ = _model([4, 3], 1)  # shards [4, 2] and [4, 1]
    with tf.Session(graph=g) as sess:
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(whole), VALUES)
