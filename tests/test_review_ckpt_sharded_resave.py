"""A sharded v1 Saver saving again to the same prefix (``saver.save(sess, path)`` with no
global step) must not overwrite the shards the current manifest names: a save cut off
after some shards would leave a checkpoint mixing two saves, which loads without error."""

import os

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.compat.v1.checkpoint_utils import load_variable
from tensorweave.runtime import checkpoint_io


def _model():
    g = tf.Graph()
    with g.as_default():
        # two tasks (the client's, and none requested): two shards, one per task
        with tf.device("/job:localhost/task:0"):
            a = tf.Variable(np.zeros(3, np.float32), name="a")
        b = tf.Variable(np.zeros(3, np.float32), name="b")
        bump = tf.group(a.assign_add(tf.ones([3])), b.assign_add(tf.ones([3])))
        saver = tf.train.Saver(sharded=True, max_to_keep=2)
        init = tf.global_variables_initializer()
    return g, bump, saver, init


def test_a_resave_cut_off_after_one_shard_leaves_the_previous_checkpoint_whole(
        tmp_path, monkeypatch):
    g, bump, saver, init = _model()
    prefix = str(tmp_path / "model")
    with tf.Session(graph=g) as sess:
        sess.run(init)
        saver.save(sess, prefix)
        assert len(checkpoint_io.shard_files(prefix)) == 2
        sess.run(bump)
        real_write = checkpoint_io.write_tensors
        calls = []

        def dies_on_the_second_shard(*args, **kwargs):
            calls.append(args[0])
            if len(calls) == 2:
                raise OSError("killed")  # the writer dies between its two shards
            return real_write(*args, **kwargs)

        monkeypatch.setattr(checkpoint_io, "write_tensors", dies_on_the_second_shard)
        with pytest.raises(Exception, match="killed"):
            saver.save(sess, prefix)
        monkeypatch.setattr(checkpoint_io, "write_tensors", real_write)
    latest = tf.train.latest_checkpoint(str(tmp_path))
    assert latest == prefix
    a, b = load_variable(latest, "a"), load_variable(latest, "b")
    # the first save's values, both of them (not one shard from each save)
    np.testing.assert_array_equal(a, np.zeros(3, np.float32))
    np.testing.assert_array_equal(b, np.zeros(3, np.float32))


def test_resaving_a_sharded_checkpoint_keeps_only_the_new_shards(tmp_path):
    g, bump, saver, init = _model()
    prefix = str(tmp_path / "model")
    with tf.Session(graph=g) as sess:
        sess.run(init)
        saver.save(sess, prefix)
        first = checkpoint_io.shard_files(prefix)
        sess.run(bump)
        saver.save(sess, prefix)
        second = checkpoint_io.shard_files(prefix)
        sess.run(bump)
        saver.restore(sess, prefix)
        with g.as_default():
            values = sess.run(tf.global_variables())
    for value in values:  # the second save's values: one bump
        np.testing.assert_array_equal(value, np.ones(3, np.float32))
    assert len(second) == 2 and all(os.path.exists(s) for s in second)
    # the first save's shards are gone once the second's manifest replaced its
    assert not any(os.path.exists(s) for s in first if s not in second)
    shard_files_on_disk = [n for n in os.listdir(tmp_path) if ".shard-" in n]
    assert sorted(os.path.join(tmp_path, n) for n in shard_files_on_disk) == second
