"""examples/distributed_mnist.py's training loop under synchronous replication: every
worker finishes, whatever the order of the workers' steps.

The example used to stop a worker on a read of `global_step` fetched beside its train
op. That read may predate the step that made the token the train op ends by taking, so
a worker could run one step more, needing a token of a step that the other workers,
stopped, never help make. Forced here with the real library, in-process: the chief ends
up waiting for a token forever (and its final release of the waiters never runs). The
loop now stops each worker on its token: each step hands out one token per worker.
"""

import importlib.util
import threading
import time
from pathlib import Path

from .cluster_helpers import servers
from .test_sync_replicas import start_replicas

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "distributed_mnist.py"
CHIEF, FAST, STRAGGLER = 0, 1, 2


def _example():
    spec = importlib.util.spec_from_file_location("distributed_mnist_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines train() and main(); runs neither
    return module


class _Turns:
    """Runs the workers' steps one at a time in `order`: a worker's `before_step` waits
    for its turn, which ends when it comes back for its next step (or stops), once the
    chief's queue runner has taken any m gradients it was given (`settle`). Turns of a
    worker that stopped are skipped; after the last turn everyone runs freely."""

    def __init__(self, order, settle):
        self.order, self.settle = list(order), settle
        self.turn, self.holder, self.stopped = 0, None, set()
        self.cv = threading.Condition()

    def _end_turn_of(self, worker):
        if self.holder == worker:
            self.settle()
            self.holder = None
            self.turn += 1
            self.cv.notify_all()

    def before_step(self, worker):
        deadline = time.monotonic() + 30
        with self.cv:
            self._end_turn_of(worker)
            while True:
                while self.turn < len(self.order) and self.order[self.turn] in self.stopped:
                    self.turn += 1
                if self.turn >= len(self.order):
                    return
                if self.holder is None and self.order[self.turn] == worker:
                    self.holder = worker
                    return
                assert time.monotonic() < deadline, "a turn never ended"
                self.cv.wait(0.05)

    def stop(self, worker):
        with self.cv:
            self.stopped.add(worker)
            self._end_turn_of(worker)
            self.cv.notify_all()


def test_every_worker_of_the_example_finishes_when_the_last_step_races_its_reads():
    """n = 3, m = 2, 2 steps. The order below leaves, under the old stop rule, the chief
    holding a token of step 2 that it read as step 1 (its read ran before its own
    gradient made step 2), the two others each taking one of step 2's tokens and
    stopping, and the chief then applying a fresh gradient and waiting for a step-3
    token nobody helps make. Under the token rule each worker stops on its step-2 token."""
    example = _example()
    n, m, last = 3, 2, 2
    order = [FAST, CHIEF, STRAGGLER, STRAGGLER, CHIEF, CHIEF, STRAGGLER, FAST, CHIEF]
    with servers(ps=1, worker=n) as (spec, tasks):
        sessions, models = start_replicas(spec, tasks, m, n, {0: 1.0, 1: 2.0, 2: 3.0})
        acc = tasks["ps:0"].resources.lookup("w/grad_accum")
        tokens = tasks["ps:0"].resources.lookup("sync_replicas/token_q")

        def settle():  # the queue runner took the step's gradients: the next is ordered
            deadline = time.monotonic() + 30
            while acc.num_accumulated() >= m:
                assert time.monotonic() < deadline, "the chief's queue runner stalled"
                time.sleep(0.005)

        turns = _Turns(order, settle)
        results, errors = {}, []

        def worker(task):
            try:
                results[task] = example.train(
                    sessions[task], models[task]["train"], models[task]["global_step"], last,
                    sync_replicas=True, feed=dict, before_step=lambda: turns.before_step(task),
                    task_index=task)
            except Exception as e:  # noqa: BLE001
                errors.append((task, e))
            finally:
                turns.stop(task)

        threads = [threading.Thread(target=worker, args=(t,), daemon=True) for t in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        waiting = [task for task, t in enumerate(threads) if t.is_alive()]
        global_step = sessions[0].run(models[0]["global_step"])
        left = tokens.size()
        for s in sessions:
            s.close()  # stops the chief's queue runner (and releases a worker still waiting)
        for t in threads:
            t.join(30)
    assert not waiting, f"workers {waiting} still wait for a token: {results}"
    assert not errors, errors
    # every worker stopped on a token of the last step, which was made exactly once, and
    # took exactly one of its n tokens
    assert {task: step for task, (_, step) in results.items()} == {0: last, 1: last, 2: last}
    assert global_step == last == acc.global_step, (global_step, acc.global_step)
    assert left == 0, left
