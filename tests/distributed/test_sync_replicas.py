"""Synchronous replication with backup workers: conditional accumulators, the token
queue as a barrier, stale gradients dropped, a straggler never delaying a step."""

import threading
import time

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.errors import InvalidArgumentError
from tensorweave.runtime.accumulators import ConditionalAccumulator
from tensorweave.runtime.queues import Waiter

from .cluster_helpers import servers

STRAGGLER_GRAD = 1.0e6


def test_an_accumulator_averages_fresh_gradients_and_drops_stale_ones():
    acc = ConditionalAccumulator("a", "f32", (2,))
    assert acc.apply_grad(0, np.array([1.0, 2.0], np.float32))
    assert acc.apply_grad(0, np.array([3.0, 4.0], np.float32))
    np.testing.assert_array_equal(acc.take_grad(2), [2.0, 3.0])
    assert acc.global_step == 1 and acc.num_accumulated() == 0
    assert not acc.apply_grad(0, np.ones(2, np.float32))  # computed before the take
    assert acc.dropped == 1
    acc.set_global_step(5)
    assert not acc.apply_grad(4, np.ones(2, np.float32))
    assert acc.apply_grad(7, np.ones(2, np.float32))
    with pytest.raises(InvalidArgumentError, match="shape"):
        acc.apply_grad(7, np.ones(3, np.float32))
    with pytest.raises(tf.errors.DeadlineExceededError):
        acc.take_grad(2, Waiter(deadline=time.monotonic() + 0.1))


def build_worker_graph(spec, task, m, n, grad_value, dead_after=10.0):
    """Worker `task`'s graph: loss = w * grad_value, so its gradient is grad_value."""
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(
            cluster=spec, worker_device=f"/job:worker/task:{task}")):
        global_step = tf.Variable(0, name="global_step", trainable=False)
        w = tf.Variable(np.float32(0.0), name="w")
        loss = w * tf.constant(np.float32(grad_value))
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0),
                                             replicas_to_aggregate=m, total_num_replicas=n,
                                             dead_worker_timeout_secs=dead_after)
        train_op = opt.minimize(loss, global_step=global_step)
        init = tf.global_variables_initializer()
        ready = [tf.is_variable_initialized(v) for v in (global_step, w)]
        hook = opt.make_session_run_hook(is_chief=task == 0)
    return g, dict(global_step=global_step, w=w, train=train_op, init=init, ready=ready,
                   opt=opt, hook=hook)


def start_replicas(spec, tasks, m, n, grads, dead_after=10.0, coords=None):
    """A session per worker on its graph: the chief initializes, the others wait, every
    one runs its session-run hook (the chief starts aggregating)."""
    sessions, models = [], []
    for task in range(n):
        g, model = build_worker_graph(spec, task, m, n, grads[task], dead_after)
        sess = tf.Session(tasks[f"worker:{task}"].target, graph=g)
        if task == 0:
            sess.run(model["init"])
        while not all(sess.run(model["ready"])):
            time.sleep(0.01)
        model["hook"].after_create_session(sess, coords[task] if coords else None)
        sessions.append(sess)
        models.append(model)
    return sessions, models


def test_sync_training_with_a_backup_worker_never_waits_for_the_straggler():
    """Two fast workers reach step K while the straggler's every gradient is stale.

    Ordered by steps, not by the clock: it used to stop each fast worker at a wall-clock
    time, and under load one of them could stop while the other still needed a partner's
    gradient for its step's token (TensorFlow's protocol: m fresh gradients per step), so
    it waited until the sessions closed and failed with CancelledError. Now every worker
    stops on receiving a token of step K: each step pushes n tokens, one each, so nobody
    waits for a step that will not come. The straggler only runs once its gradient can
    no longer count (the global step passed its local step), instead of sleeping and
    hoping the fast workers stepped meanwhile."""
    n, m, last = 3, 2, 20
    grads = {0: 1.0, 1: 2.0, 2: STRAGGLER_GRAD}
    with servers(ps=1, worker=n) as (spec, tasks):
        sessions, models = start_replicas(spec, tasks, m, n, grads)
        acc = tasks["ps:0"].resources.lookup("w/grad_accum")
        steps = [0] * n
        errors = []

        def loop(task):
            local_step = 0  # the local_step_init_op's global step
            try:
                while local_step < last:
                    if task == 2:  # the straggler: wait until its gradient is stale
                        deadline = time.monotonic() + 60
                        while acc.global_step <= local_step:
                            assert time.monotonic() < deadline, "the fast workers stalled"
                            time.sleep(0.01)
                    # the train op ends by taking a token: the step to compute at next
                    local_step = int(sessions[task].run(models[task]["train"]))
                    steps[task] += 1
            except Exception as e:  # noqa: BLE001
                errors.append((task, e))

        threads = [threading.Thread(target=loop, args=(t,), daemon=True) for t in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        alive = [t.is_alive() for t in threads]
        global_step, w = sessions[0].run([models[0]["global_step"], models[0]["w"]])
        for s in sessions:
            s.close()  # stops the chief's queue runner (and releases a hung worker)
        assert not errors, errors
        assert not any(alive), (alive, steps, global_step)
        # the fast workers made every step: the straggler never contributed one
        assert global_step == last == acc.global_step, (global_step, steps)
        assert steps[2] >= 1
        # each update applied the mean of 2 gradients of {1, 2}: never the straggler's
        # stale one (which would move w by ~5e5)
        assert 1.0 * global_step <= -w <= 2.0 * global_step, (w, global_step)
        assert acc.dropped >= steps[2]  # the straggler's gradients were all dropped


def test_a_sparse_accumulator_averages_the_rows_it_was_given():
    from tensorweave.runtime.accumulators import SparseConditionalAccumulator
    acc = SparseConditionalAccumulator("emb", "f32", (10, 2))
    assert acc.apply_indexed_slices(0, np.array([3, 1]), np.ones((2, 2), np.float32))
    assert acc.apply_indexed_slices(0, np.array([3]), np.full((1, 2), 3.0, np.float32))
    indices, values = acc.take_indexed_slices(2)
    np.testing.assert_array_equal(indices, [1, 3])
    # each row over the gradients that held it (TensorFlow's element-wise average)
    np.testing.assert_array_equal(values, [[1.0, 1.0], [2.0, 2.0]])
    assert not acc.apply_indexed_slices(0, np.array([0]), np.ones((1, 2), np.float32))
    with pytest.raises(InvalidArgumentError, match="out of range"):
        acc.apply_indexed_slices(1, np.array([10]), np.ones((1, 2), np.float32))


def test_sync_replicas_keep_embedding_gradients_sparse():
    """Two replicas, an embedding table on the PS: the accumulator is sparse and the
    update is the mean of both workers' row gradients, on the touched rows only."""
    n = 2
    with servers(ps=1, worker=n) as (spec, tasks):
        sessions, models = [], []
        for task in range(n):
            g = tf.Graph()
            with g.as_default(), tf.device(tf.train.replica_device_setter(
                    cluster=spec, worker_device=f"/job:worker/task:{task}")):
                step = tf.Variable(0, name="global_step", trainable=False)
                table = tf.Variable(np.zeros((1000, 4), np.float32), name="table")
                ids = tf.constant([task, 10 + task, 10 + task])  # worker t: rows t, 10+t
                loss = tf.reduce_sum(tf.nn.embedding_lookup(table, ids))
                opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0),
                                                     replicas_to_aggregate=n,
                                                     total_num_replicas=n)
                train = opt.minimize(loss, global_step=step)
                init = tf.global_variables_initializer()
                hook = opt.make_session_run_hook(is_chief=task == 0)
                probe = table.read_value()
            sess = tf.Session(tasks[f"worker:{task}"].target, graph=g)
            if task == 0:
                sess.run(init)
            hook.after_create_session(sess)
            sessions.append(sess)
            models.append((train, probe, step))
        threads = [threading.Thread(target=sessions[t].run, args=(models[t][0],))
                   for t in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        deadline = time.monotonic() + 10
        while sessions[0].run(models[0][2]) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        table = sessions[0].run(models[0][1])
        acc = tasks["ps:0"].resources.lookup("table/grad_accum")
        for s in sessions:
            s.close()
    assert type(acc).__name__ == "SparseConditionalAccumulator"
    # each worker's gradient: 1 for row t, 2 for row 10+t; each row is held by one
    # worker's gradient, so the update is minus that gradient (TensorFlow's element-wise
    # average over the gradients that held the row)
    expected = np.zeros((1000, 4), np.float32)
    expected[[0, 1]] = -1.0
    expected[[10, 11]] = -2.0
    np.testing.assert_allclose(table, expected)



def _train_until_error(sessions, models, replicas, seconds):
    """Run each replica's train op in a loop on its own thread; {replica: error}."""
    errors = {}

    def train(task):
        try:
            stop = time.monotonic() + seconds
            while time.monotonic() < stop:
                sessions[task].run(models[task]["train"])
        except Exception as e:  # noqa: BLE001
            errors[task] = e

    threads = [threading.Thread(target=train, args=(t,), daemon=True) for t in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 5)
    assert not any(t.is_alive() for t in threads), "a replica still waits for a token"
    return errors


def test_fewer_live_workers_than_replicas_to_aggregate_is_a_clear_error_everywhere():
    """n = m = 3 and one worker dies: the two survivors cannot give 3 gradients from
    different workers per step. TensorFlow would let them contribute several each
    (silently aggregating fewer replicas than asked); here every survivor stops with
    an error naming the dead task, within the watchdog's timeout."""
    n = 3
    coords = [tf.train.Coordinator() for _ in range(n)]
    with servers(ps=1, worker=n) as (spec, tasks):
        sessions, models = start_replicas(spec, tasks, n, n, {t: 1.0 for t in range(n)},
                                          dead_after=1.0, coords=coords)
        tasks["worker:2"].stop(grace=0.1)
        started = time.monotonic()
        errors = _train_until_error(sessions, models, (0, 1), seconds=20)
        took = time.monotonic() - started
        # the chief's own watchdog stops its coordinator; when a worker's watchdog saw the
        # dead task first, the chief got the error from the token queue before its own
        # watchdog's timeout ran out: wait for that, with the sessions (and watchdogs) open
        deadline = time.monotonic() + 10
        while not coords[0].should_stop() and time.monotonic() < deadline:
            time.sleep(0.05)
        for s in sessions[:2]:
            s.close()
    assert set(errors) == {0, 1}, errors
    for e in errors.values():
        assert isinstance(e, tf.errors.FailedPreconditionError), repr(e)
        assert "only 2 of the 3 worker tasks answer" in str(e), str(e)
        assert "/job:worker/replica:0/task:2 unreachable" in str(e), str(e)
    # not a speed check: a deadline the library promises. With dead_worker_timeout_secs=1
    # the error surfaces within about that timeout plus a probe (1 s) and an interval
    # (0.5 s); 10 s fails only if the configured timeout were ignored (the 10 s default)
    # or the survivors were left waiting for tokens until _train_until_error gave up.
    assert took < 10, took
    assert coords[0].should_stop()  # the chief's coordinator carries the error too


def test_a_dead_chief_is_a_clear_error_on_the_workers():
    """n = 3, m = 2 and the chief dies: two workers are enough gradients, but nobody
    aggregates them: the workers stop with an error naming the chief, not a hang."""
    n, m = 3, 2
    with servers(ps=1, worker=n) as (spec, tasks):
        sessions, models = start_replicas(spec, tasks, m, n, {t: 1.0 for t in range(n)},
                                          dead_after=1.0)
        sessions[0].close()
        tasks["worker:0"].stop(grace=0.1)
        errors = _train_until_error(sessions, models, (1, 2), seconds=20)
        for s in sessions[1:]:
            s.close()
    assert set(errors) == {1, 2}, errors
    for e in errors.values():
        assert isinstance(e, tf.errors.FailedPreconditionError), repr(e)
        assert "the chief /job:worker/replica:0/task:0" in str(e), str(e)


class _FakeCluster:
    def __init__(self, workers, me):
        self.spec = tf.train.ClusterSpec({"ps": ["h:1"], "worker": [f"h:{10 + i}"
                                                                    for i in range(workers)]})
        self.task = f"/job:worker/replica:0/task:{me}"


def test_the_watchdog_counts_a_task_dead_only_after_the_timeout_and_forgives_a_return():
    from tensorweave.compat.v1.replica_watchdog import ReplicaWatchdog
    up = {"/job:worker/replica:0/task:1": True, "/job:worker/replica:0/task:2": True}
    dog = ReplicaWatchdog(_FakeCluster(3, me=0), replicas_to_aggregate=3, is_chief=True,
                          on_failure=None, timeout_secs=5.0,
                          probe=lambda cluster, task: up[task])
    assert dog.workers == ["/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1",
                           "/job:worker/replica:0/task:2"]
    assert dog.check(now=0.0) is None
    up["/job:worker/replica:0/task:2"] = False
    assert dog.check(now=1.0) is None
    assert dog.check(now=5.9) is None          # down 4.9 s: not yet dead
    up["/job:worker/replica:0/task:2"] = True  # back: the clock starts again
    assert dog.check(now=6.5) is None
    up["/job:worker/replica:0/task:2"] = False
    assert dog.check(now=7.0) is None
    message = dog.check(now=12.0)
    assert "only 2 of the 3 worker tasks answer" in message
    assert "/job:worker/replica:0/task:2 unreachable for 5 s" in message


def test_the_watchdog_of_a_worker_reports_a_dead_chief_but_tolerates_a_dead_backup():
    from tensorweave.compat.v1.replica_watchdog import ReplicaWatchdog
    up = {"/job:worker/replica:0/task:0": True, "/job:worker/replica:0/task:2": False}
    dog = ReplicaWatchdog(_FakeCluster(3, me=1), replicas_to_aggregate=2, is_chief=False,
                          on_failure=None, timeout_secs=1.0,
                          probe=lambda cluster, task: up[task])
    assert dog.check(now=0.0) is None
    assert dog.check(now=2.0) is None  # task 2 dead, but 2 of 3 are enough
    up["/job:worker/replica:0/task:2"] = True
    up["/job:worker/replica:0/task:0"] = False
    assert dog.check(now=3.0) is None
    assert "the chief /job:worker/replica:0/task:0" in dog.check(now=4.5)
