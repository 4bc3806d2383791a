"""Sharded checkpoints of variables spread over PS tasks: one shard per task, a manifest
written last, restore by name whatever the number of PS tasks now, retention that deletes
whole checkpoints, and a writer killed mid-save leaving the previous checkpoint intact."""

import os
import signal
import subprocess
import sys
import time

import numpy as np

import tensorweave.compat.v1 as tf
from tensorweave.runtime import checkpoint_io

from .cluster_helpers import servers


def model(spec, values=None):
    g = tf.Graph()
    rng = np.random.default_rng(0)
    with g.as_default(), tf.device(tf.train.replica_device_setter(
            cluster=spec, worker_device="/job:worker/task:0")):
        variables = [tf.Variable(rng.normal(size=(50, 4)).astype(np.float32), name=f"v{i}")
                     for i in range(4)]
        bump = tf.group(*[v.assign_add(tf.ones_like(v.read_value())) for v in variables])
        init = tf.global_variables_initializer()
        saver = tf.train.Saver(sharded=True, max_to_keep=1)
    return g, variables, bump, init, saver


def test_each_ps_task_writes_its_shard_and_restore_works_with_another_ps_count(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    with servers(ps=2, worker=1) as (spec, tasks):
        g, variables, bump, init, saver = model(spec)
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run(init)
            saved = sess.run([v.read_value() for v in variables])
            path = saver.save(sess, prefix, global_step=1)
            shards = checkpoint_io.shard_files(path)
            assert len(shards) == 2 and all(os.path.exists(s) for s in shards)
            # round robin: v0, v2 on ps:0 and v1, v3 on ps:1, each in its task's shard
            first = checkpoint_io.read_tensors(shards[0][:-len(checkpoint_io.SUFFIX)])
            assert sorted(first) == ["v0", "v2"]
            sess.run(bump)
            saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
            for want, got in zip(saved, sess.run([v.read_value() for v in variables])):
                np.testing.assert_array_equal(got, want)
    with servers(ps=3, worker=1) as (spec3, tasks3):  # another number of PS tasks
        g, variables, _, _, saver = model(spec3)
        with tf.Session(tasks3["worker:0"].target, graph=g) as sess:
            saver.restore(sess, path)
            for want, got in zip(saved, sess.run([v.read_value() for v in variables])):
                np.testing.assert_array_equal(got, want)


def test_retention_deletes_old_checkpoints_with_their_shards(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    with servers(ps=2, worker=1) as (spec, tasks):
        g, variables, bump, init, saver = model(spec)
        with tf.Session(tasks["worker:0"].target, graph=g) as sess:
            sess.run(init)
            first = saver.save(sess, prefix, global_step=1)
            old_shards = checkpoint_io.shard_files(first)
            second = saver.save(sess, prefix, global_step=2)
    assert not os.path.exists(checkpoint_io.data_path(first))
    assert not any(os.path.exists(s) for s in old_shards)
    assert all(os.path.exists(s) for s in checkpoint_io.shard_files(second))


SAVER_SCRIPT = """
import sys, numpy as np
import tensorweave.compat.v1 as tf
v = tf.Variable(np.zeros((2_000_000,), np.float32), name="big")
step = tf.Variable(0, name="step")
bump = tf.group(v.assign_add(tf.ones_like(v.read_value())), step.assign_add(1))
saver = tf.train.Saver(sharded=True, max_to_keep=2)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    while True:
        sess.run(bump)
        saver.save(sess, sys.argv[1], global_step=step)
        print("saved", flush=True)
"""


def test_a_checkpoint_writer_killed_mid_save_leaves_the_last_checkpoint_restorable(tmp_path):
    script = tmp_path / "saver.py"
    script.write_text(SAVER_SCRIPT)
    rng = np.random.default_rng(3)
    for attempt in range(4):
        proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "model.ckpt")],
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "saved"  # one complete checkpoint
            time.sleep(float(rng.uniform(0.0, 0.4)))  # then die somewhere in later saves
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        latest = tf.train.latest_checkpoint(str(tmp_path))
        values = checkpoint_io.read_tensors(latest)  # checksums verified
        steps = int(values["step"])
        assert steps >= 1 and np.all(values["big"] == steps)
