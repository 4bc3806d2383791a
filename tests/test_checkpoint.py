"""Checkpoints: Save/Restore ops, tw.train.Checkpoint, the v1 Saver, atomicity and
corruption handling, and save-kill-restore across processes."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorweave as tw
import tensorweave.compat.v1 as tf
from tensorweave.runtime import atomic_files


def test_checkpoint_round_trip_with_optimizer_slots(tmp_path):
    w = tw.Variable(np.array([1.0, 2.0], np.float32), name="ck_w")
    opt = tw.optimizers.Adam(0.1)

    @tw.compile
    def step():
        opt.minimize(tw.reduce_sum(tw.square(w)), var_list=[w])
        return w.read_value()

    step()
    ckpt = tw.train.Checkpoint(w=w, opt=opt)
    prefix = ckpt.save(str(tmp_path / "model"))
    saved = {"w": w.numpy(), "m": opt.get_slot(w, "m").numpy()}
    step()
    step()
    assert not np.array_equal(w.numpy(), saved["w"])
    ckpt.restore(prefix)
    np.testing.assert_array_equal(w.numpy(), saved["w"])
    np.testing.assert_array_equal(opt.get_slot(w, "m").numpy(), saved["m"])
    assert tw.train.latest_checkpoint(str(tmp_path)) == prefix


def test_manager_keeps_the_newest_n(tmp_path):
    v = tw.Variable(0.0, name="ck_counter")
    manager = tw.train.CheckpointManager(tw.train.Checkpoint(v=v), str(tmp_path), max_to_keep=2)
    paths = []
    for i in range(4):
        v.assign(float(i))
        paths.append(manager.save())
    assert manager.checkpoints == paths[-2:]
    assert not os.path.exists(paths[0] + ".safetensors")
    assert os.path.exists(paths[-1] + ".safetensors")
    assert manager.latest_checkpoint == paths[-1]


def test_corrupt_or_truncated_file_is_a_clear_error_and_previous_still_restores(tmp_path):
    v = tw.Variable(np.arange(4.0), name="ck_corrupt")
    ckpt = tw.train.Checkpoint(v=v)
    first = ckpt.save(str(tmp_path / "c"))
    v.assign(np.full(4, 9.0))
    second = ckpt.save(str(tmp_path / "c"))
    data = open(second + ".safetensors", "rb").read()
    open(second + ".safetensors", "wb").write(data[:-5])
    with pytest.raises(tw.errors.DataLossError, match="truncated or corrupt"):
        ckpt.restore(second)
    flipped = bytearray(data)
    flipped[-3] ^= 0xFF
    open(second + ".safetensors", "wb").write(bytes(flipped))
    with pytest.raises(tw.errors.DataLossError, match="checksum"):
        ckpt.restore(second)
    np.testing.assert_array_equal(v.numpy(), np.full(4, 9.0))  # failed restore changed nothing
    ckpt.restore(first)
    np.testing.assert_array_equal(v.numpy(), np.arange(4.0))


def test_missing_checkpoint_and_missing_tensor(tmp_path):
    v = tw.Variable(1.0, name="ck_missing")
    with pytest.raises(tw.errors.NotFoundError, match="does not exist"):
        tw.train.Checkpoint(v=v).restore(str(tmp_path / "nope"))
    prefix = tw.train.Checkpoint(other=v).save(str(tmp_path / "x"))
    with pytest.raises(tw.errors.NotFoundError, match="lacks v"):
        tw.train.Checkpoint(v=v).restore(prefix)


def test_writes_are_atomic(tmp_path, monkeypatch):
    path = str(tmp_path / "f.bin")
    atomic_files.write_bytes(path, b"old")

    def boom(fd):
        raise OSError("disk failed")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        atomic_files.write_bytes(path, b"new contents")
    assert open(path, "rb").read() == b"old"
    assert os.listdir(tmp_path) == ["f.bin"]


def test_v1_saver_save_and_restore(tmp_path):
    g = tf.Graph()
    with g.as_default():
        w = tf.Variable(tf.zeros([3]), name="sw")
        x = tf.placeholder(tf.float32, [3])
        train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(tf.reduce_sum(tf.square(w - x)))
        saver = tf.train.Saver(max_to_keep=3)
        init = tf.global_variables_initializer()
    target = np.array([1.0, 2.0, 3.0], np.float32)
    with tf.Session(graph=g) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train, {x: target})
        path = saver.save(sess, str(tmp_path / "m"), global_step=3)
        expected = sess.run(w)
    assert path.endswith("m-3")
    with tf.Session(graph=g) as sess2:
        with pytest.raises(tw.errors.FailedPreconditionError, match="uninitialized"):
            sess2.run(w)
        saver.restore(sess2, tf.train.latest_checkpoint(str(tmp_path)))
        np.testing.assert_array_equal(sess2.run(w), expected)


TRAIN_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import tensorweave as tw

    directory, mode = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4))
    y = x @ np.array([1.0, -2.0, 0.5, 3.0])
    w = tw.Variable(np.zeros(4), name="w")
    opt = tw.optimizers.Adam(0.05)
    ckpt = tw.train.Checkpoint(w=w, opt=opt)
    manager = tw.train.CheckpointManager(ckpt, directory)

    @tw.compile
    def step(x, y):
        loss = tw.reduce_mean(tw.square(tw.reshape(x @ tw.reshape(w, [4, 1]), [-1]) - y))
        opt.minimize(loss, var_list=[w])
        return loss

    if mode == "resume":
        ckpt.restore(manager.latest_checkpoint)
    for _ in range(5):
        step(x, y)
    if mode == "first":
        manager.save()
    np.save(directory + "/" + mode + ".npy",
            np.concatenate([w.numpy(), opt.get_slot(w, "m").numpy(), opt.get_slot(w, "v").numpy()]))
""")


def test_save_kill_restore_in_a_new_process_continues_identically(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    for mode in ("first", "resume"):
        subprocess.run([sys.executable, str(script), str(tmp_path), mode], check=True, env=env,
                       timeout=120)
    # Reference: one process running 10 steps straight through.
    (tmp_path / "straight").mkdir()
    subprocess.run([sys.executable, str(script), str(tmp_path / "straight"), "first"],
                   check=True, env=env, timeout=120)
    straight_script = TRAIN_SCRIPT.replace("range(5)", "range(10)")
    script.write_text(straight_script)
    subprocess.run([sys.executable, str(script), str(tmp_path / "straight"), "ten"],
                   check=True, env=env, timeout=120)
    resumed = np.load(tmp_path / "resume.npy")
    ten = np.load(tmp_path / "straight" / "ten.npy")
    np.testing.assert_array_equal(resumed, ten)
