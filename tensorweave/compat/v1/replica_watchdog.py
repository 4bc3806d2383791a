"""Watches the worker tasks of synchronous replication, so that training stops with a
clear error instead of going on with too few replicas or hanging.

`SyncReplicasOptimizer` (m = `replicas_to_aggregate` of n workers) survives dead
workers as long as m of them are left: the survivors' gradients fill each step. With
fewer than m, TensorFlow's protocol keeps going (a survivor takes several tokens of a
step and contributes several gradients, so steps silently aggregate fewer replicas than
asked), and if the chief dies nobody aggregates at all and every worker waits for a
token forever. The watchdog turns both into a `FailedPreconditionError` that names the
unreachable tasks:

- every replica (through the session-run hook) and the chief's queue runner (the classic
  API) ask each worker task of its job (with a ``chief`` job: the chief's and the
  workers', `replica_tasks`) for its status every `interval_secs`; a task
  counts as dead once it has not answered for `timeout_secs` (a stopped or frozen task
  stays reachable as long as its server answers, so a straggler is never dead);
- when fewer than m workers are alive, or (on a worker) the chief is dead, the replica
  that saw it closes the sync token queue on the parameter server with the error
  (`QueueBase.close_with_error`): every worker blocked on a token, on any task, raises it
  at once, and the replica's coordinator is stopped with it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent import futures
from typing import Any

from ...runtime.devices import DeviceSpec

_log = logging.getLogger("tensorweave")

PROBE_TIMEOUT_S = 1.0


def replica_tasks(spec: Any, job: str) -> list[str]:
    """The tasks that hold replicas, the chief first: with a ``chief`` job (TF_CONFIG's
    layout for TensorFlow's estimators), its task and the ``worker`` tasks, the chief
    being ``/job:chief/task:0``, as TensorFlow counts them; otherwise the tasks of the
    client's own `job`, the chief being the first."""
    jobs = ("chief", "worker") if "chief" in spec.jobs and job in ("chief", "worker") \
        else (job,)
    return [f"/job:{j}/replica:0/task:{i}" for want in jobs
            for j, i, _ in spec.tasks() if j == want]


def _probe(cluster: Any, task: str) -> bool:
    """Whether `task`'s server answers a status request within PROBE_TIMEOUT_S."""
    try:
        cluster.client(task).call("GetStatus", {}, timeout=PROBE_TIMEOUT_S)
        return True
    except Exception:  # noqa: BLE001 - any failure to answer is "not reachable now"
        return False


class ReplicaWatchdog:
    """Probes the worker tasks of `cluster`'s own job and calls `on_failure(message)`
    once, from its thread, when synchronous training cannot go on (module docstring).
    It stops when `stop()` is called or `active()` turns false (its session closed)."""

    def __init__(self, cluster: Any, *, replicas_to_aggregate: int, is_chief: bool,
                 on_failure: Callable[[str], None], timeout_secs: float,
                 interval_secs: float = 0.5, name: str = "sync_replicas",
                 probe: Callable[[Any, str], bool] = _probe,
                 active: Callable[[], bool] = lambda: True) -> None:
        me = DeviceSpec.from_string(cluster.task)
        job = me.job or ""
        self.workers = replica_tasks(cluster.spec, job)
        self.me = f"/job:{job}/replica:0/task:{me.task or 0}"
        self.chief = self.workers[0]
        self._cluster = cluster
        self._m = int(replicas_to_aggregate)
        self._is_chief = is_chief
        self._on_failure = on_failure
        self._timeout = float(timeout_secs)
        self._interval = float(interval_secs)
        self._name = name
        self._probe = probe
        self._active = active  # False once the session it guards is closed
        self._down_since: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self, now: float | None = None) -> str | None:
        """Probe every other worker once; the failure message if training cannot go on."""
        now = time.monotonic() if now is None else now
        others = [t for t in self.workers if t != self.me]
        if others:
            with futures.ThreadPoolExecutor(max_workers=len(others)) as pool:
                answers = dict(zip(others, pool.map(lambda t: self._probe(self._cluster, t),
                                                    others)))
        else:
            answers = {}
        for task, up in answers.items():
            if up:
                self._down_since.pop(task, None)
            else:
                self._down_since.setdefault(task, now)
        dead = [t for t in self.workers
                if t in self._down_since and now - self._down_since[t] >= self._timeout]
        alive = len(self.workers) - len(dead)
        unreachable = f"{', '.join(dead)} unreachable for {self._timeout:g} s or more"
        # m > n is TensorFlow's setting for several gradients per worker and step: then
        # every worker must be alive (not m of them, which can never be)
        if alive < min(self._m, len(self.workers)):
            return (f"SyncReplicasOptimizer '{self._name}' needs replicas_to_aggregate="
                    f"{self._m} gradients per step from different workers, but only {alive} "
                    f"of the {len(self.workers)} worker tasks answer ({unreachable}): "
                    f"training stopped. Restart the workers (training resumes from the last "
                    f"checkpoint), or lower replicas_to_aggregate.")
        if not self._is_chief and self.chief in dead:
            return (f"SyncReplicasOptimizer '{self._name}': the chief {self.chief}, which "
                    f"aggregates the gradients and hands out the tokens, is unreachable "
                    f"({unreachable}): no step can complete; training stopped. Restart the "
                    f"chief (training resumes from the last checkpoint).")
        return None

    def start(self) -> threading.Thread:
        """Start probing on a daemon thread (returned, not yet joined)."""
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"ReplicaWatchdog-{self._name}")
        self._thread.start()
        return self._thread

    def stop(self) -> None:
        """Stop probing (the thread ends within one interval)."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self._interval) and self._active():
            message = self.check()
            if message is not None and not self._stop.is_set() and self._active():
                _log.error("%s", message)
                self._on_failure(message)
                return


__all__ = ["ReplicaWatchdog", "replica_tasks"]
