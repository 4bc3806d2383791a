"""Fault-tolerant training loops: MonitoredTrainingSession with hooks and checkpoints,
Supervisor, and recovery from a parameter server that dies and comes back."""

import threading
import time

import numpy as np
import pytest

import tensorweave.compat.v1 as tf

from .cluster_helpers import TOKEN, processes, servers

LR, GRAD = 0.5, 2.0  # each step moves w by exactly -LR * GRAD


def build(device_setter=None):
    g = tf.Graph()
    with g.as_default(), tf.device(device_setter):
        global_step = tf.train.get_or_create_global_step()
        w = tf.Variable(np.float32(100.0), name="w")
        loss = w * tf.constant(np.float32(GRAD))
        train = tf.train.GradientDescentOptimizer(LR).minimize(loss, global_step=global_step)
    return g, global_step, w, train, loss


def test_monitored_training_session_stops_saves_and_resumes(tmp_path):
    g, step, w, train, _ = build()
    with g.as_default():
        with tf.train.MonitoredTrainingSession(
                checkpoint_dir=str(tmp_path), save_checkpoint_steps=5,
                hooks=[tf.train.StopAtStepHook(last_step=12)]) as sess:
            runs = 0
            while not sess.should_stop():
                sess.run(train)
                runs += 1
        assert runs == 12
        assert tf.train.latest_checkpoint(str(tmp_path)).endswith("-12")
    g2, step2, w2, train2, _ = build()
    with g2.as_default():
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               hooks=[tf.train.StopAtStepHook(num_steps=3)]) as s:
            assert s.run(step2.read_value()) == 12  # restored, not initialized
            while not s.should_stop():
                s.run(train2)
            assert s.run(w2.read_value()) == pytest.approx(100.0 - LR * GRAD * 15)


def test_nan_tensor_hook_fails_the_loop():
    g = tf.Graph()
    with g.as_default():
        tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [])
        loss = tf.log(x)
        with pytest.raises(tf.train.NanLossDuringTrainingError):
            with tf.train.MonitoredTrainingSession(hooks=[tf.train.NanTensorHook(loss)]) as s:
                s.run(loss, {x: 1.0})
                s.run(loss, {x: -1.0})


def test_supervisor_chief_initializes_and_other_workers_wait(tmp_path):
    with servers(ps=1, worker=2) as (spec, tasks):
        graphs = [build(tf.train.replica_device_setter(
            cluster=spec, worker_device=f"/job:worker/task:{i}")) for i in range(2)]
        results = {}

        def worker(i):
            g, step, w, train, _ = graphs[i]
            with g.as_default():
                sv = tf.train.Supervisor(is_chief=i == 0, logdir=str(tmp_path) if i == 0 else None,
                                         global_step=step, recovery_wait_secs=0.1)
                with sv.managed_session(tasks[f"worker:{i}"].target) as sess:
                    for _ in range(5):
                        sess.run(train)
                    results[i] = int(sess.run(step))

        other = threading.Thread(target=worker, args=(1,))
        other.start()  # starts first: must wait for the chief's initialization
        time.sleep(0.5)
        worker(0)
        other.join(60)
        assert sorted(results) == [0, 1] and max(results.values()) == 10


def test_the_chief_recovers_from_a_lost_ps_by_restoring_the_last_checkpoint(tmp_path):
    with processes(ps=1, worker=1, in_test=("worker",)) as cluster:
        from tensorweave.distribute import Server
        spec = cluster.spec
        worker = Server(spec, "worker", 0, token=TOKEN)  # the chief, in this process
        g, step, w, train, _ = build(tf.train.replica_device_setter(
            cluster=spec, worker_device="/job:worker/task:0"))
        killed = threading.Event()
        try:
            with g.as_default():
                sess = tf.train.MonitoredTrainingSession(
                    worker.target, checkpoint_dir=str(tmp_path), save_checkpoint_steps=10,
                    hooks=[tf.train.StopAtStepHook(last_step=40)], recovery_wait_secs=0.2,
                    max_wait_secs=60)
                with sess:
                    while not sess.should_stop():
                        sess.run(train)
                        if not killed.is_set() and sess.run(step.read_value()) == 25:
                            cluster.kill("ps:0")  # its variables are gone with it
                            cluster.start("ps", 0)  # back, empty, on the same address
                            killed.set()
                    final_step, final_w = sess.run([step.read_value(), w.read_value()])
            assert killed.is_set() and sess.recoveries >= 1
            # steps 21-25 were lost with the PS and redone from the checkpoint of step 20:
            # the result is that of an uninterrupted run of 40 steps
            assert final_step == 40
            assert final_w == pytest.approx(100.0 - LR * GRAD * 40)
        finally:
            worker.stop(grace=0.2)
