"""Synchronous training stopped by the replica watchdog (too few live workers) resumes
when the workers are restarted, as its error says ("Restart the workers (training
resumes from the last checkpoint)").

The watchdog stops every replica by failing the token queue on the PS
(close_with_error), and the PS keeps that queue: the restarted chief's first tokens
(get_init_tokens_op) then failed with the old error, again and again, until the PS
process itself was restarted. The chief's first tokens now open the queue afresh
(dropping stale tokens) before they go in."""

import threading
import time

import numpy as np

import tensorweave.compat.v1 as tf
from tensorweave.distribute import Server
from tensorweave.runtime.distributed import rpc

from .cluster_helpers import TOKEN, servers
from .test_sync_replicas import _train_until_error, start_replicas

N = 3


def _one_round(sessions, models):
    """Every replica runs its train op once, on its own thread: their errors."""
    errors = {}

    def train(task):
        try:
            sessions[task].run(models[task]["train"])
        except Exception as e:  # noqa: BLE001 - handed to the test
            errors[task] = e

    threads = [threading.Thread(target=train, args=(t,), daemon=True) for t in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a replica still waits for a token"
    return errors


def test_restarted_workers_train_again_after_the_watchdog_stopped_them():
    with servers(ps=1, worker=N) as (spec, tasks):
        sessions, models = start_replicas(spec, tasks, N, N, {t: 1.0 for t in range(N)},
                                          dead_after=1.0)
        tasks["worker:2"].stop(grace=0.1)
        errors = _train_until_error(sessions, models, (0, 1), seconds=20)
        for s in sessions:
            s.close()
        assert set(errors) == {0, 1}
        assert all(isinstance(e, tf.errors.FailedPreconditionError) for e in errors.values())

        # the operator restarts the workers
        tasks["worker:2"] = Server(spec, "worker", 2, token=TOKEN)
        rpc.client_for(spec.task_address("worker", 2), TOKEN).wait_ready(10)
        sessions, models = start_replicas(spec, tasks, N, N, {t: 1.0 for t in range(N)},
                                          dead_after=10.0)
        try:
            assert _one_round(sessions, models) == {}
            deadline = time.monotonic() + 20
            while sessions[0].run(models[0]["global_step"]) < 1:
                assert time.monotonic() < deadline, "the chief never applied the step"
                time.sleep(0.01)
            # one aggregated step of three gradients of 1.0, by SGD with rate 1
            np.testing.assert_allclose(sessions[0].run(models[0]["w"]), -1.0)
        finally:
            for s in sessions:
                s.close()
