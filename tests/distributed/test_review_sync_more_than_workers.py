"""replicas_to_aggregate larger than the number of workers is TensorFlow's way of
aggregating several gradients per worker and step (get_init_tokens_op allows it). The
replica watchdog required m live workers, which 2 workers never are for m = 3: every
such run stopped at its first probe (0.5 s) with "only 2 of the 2 worker tasks answer (
unreachable for 10 s or more)" although nothing was unreachable."""

import threading
import time

import tensorweave.compat.v1 as tf

from .cluster_helpers import servers
from .test_sync_replicas import start_replicas


def test_three_gradients_per_step_from_two_workers_train_on():
    with servers(ps=1, worker=2) as (spec, tasks):
        sessions, models = start_replicas(spec, tasks, 3, 2, {0: 1.0, 1: 2.0})
        errors, stop = [], time.monotonic() + 2.5

        def loop(t):
            try:
                while time.monotonic() < stop:
                    sessions[t].run(models[t]["train"])
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=loop, args=(t,), daemon=True) for t in range(2)]
        for th in threads:
            th.start()
        time.sleep(3.0)
        # the last run of one worker may wait for a token that needs the other's next
        # gradient: closing the sessions releases it (CancelledError)
        step, w = sessions[0].run([models[0]["global_step"], models[0]["w"]])
        for s in sessions:
            s.close()
        for th in threads:
            th.join(30)
    assert not [e for e in errors if not isinstance(e, tf.errors.CancelledError)], errors
    assert step >= 3
    # each update: minus the mean of (at least) 3 gradients, each 1.0 or 2.0
    assert 1.0 * step <= -w <= 2.0 * step, (w, step)
