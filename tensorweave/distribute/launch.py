"""``tensorweave launch``: a whole local cluster, one process per task.

    tensorweave launch --ps 1 --workers 2 train.py -- --steps 1000

picks free loopback ports, writes each task's ``TW_CONFIG`` (the cluster, its job and
index, and a fresh random token), starts ``python train.py ARGS`` once per task (the
script reads ``TW_CONFIG``: a PS task typically just ``server.join()``s), prefixes every
line a task prints with its name, and tears everything down: when every worker has
exited (the PS tasks are then stopped with SIGTERM), when a worker fails (its status
becomes the launcher's), on Ctrl-C or SIGTERM, and if the launcher itself dies (each
child gets SIGTERM from the kernel: ``PR_SET_PDEATHSIG``, see `tensorweave.task_child`).

On several machines any launcher that sets ``TW_CONFIG`` per process does the same job
(see docs/distributed.md).
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..runtime.distributed.cluster import ClusterSpec, TaskConfig
from ..task_child import PARENT_ENV

GRACE_S = 5.0
"""How long a task gets between SIGTERM and SIGKILL at teardown."""


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """`n` distinct ports free on `host` right now (the sockets are closed again, so a
    race with another program is possible but unlikely)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def local_cluster(num_ps: int, num_workers: int, host: str = "127.0.0.1") -> ClusterSpec:
    """A cluster spec of `num_ps` PS and `num_workers` worker tasks on free ports."""
    ports = free_ports(num_ps + num_workers, host)
    spec: dict[str, list[str]] = {}
    if num_ps:
        spec["ps"] = [f"{host}:{p}" for p in ports[:num_ps]]
    spec["worker"] = [f"{host}:{p}" for p in ports[num_ps:]]
    return ClusterSpec(spec)


def child_command(command: Sequence[str]) -> list[str]:
    """`command` (``python SCRIPT ...`` or ``python -m MODULE ...``) run through
    `tensorweave.task_child`, so it gets SIGTERM when the process starting it dies."""
    python, *rest = command
    return [python, "-m", "tensorweave.task_child", *rest]


def child_env(env: dict[str, str]) -> dict[str, str]:
    return dict(env, **{PARENT_ENV: str(os.getpid())})


@dataclass
class Task:
    """One launched process."""

    name: str
    job: str
    index: int
    process: subprocess.Popen


def _pump(task: Task, stream: object, out: object, lock: threading.Lock) -> None:
    for line in iter(stream.readline, b""):  # type: ignore[attr-defined]
        with lock:
            out.write(f"[{task.name}] {line.decode(errors='replace')}")  # type: ignore[attr-defined]
            out.flush()  # type: ignore[attr-defined]


class LocalCluster:
    """Processes of one local cluster; `run` waits for the workers and tears down."""

    def __init__(self, command: Sequence[str], cluster: ClusterSpec, token: str | None,
                 env: dict[str, str] | None = None, out: object = None) -> None:
        self.cluster = cluster
        self.tasks: list[Task] = []
        self._lock = threading.Lock()
        base = dict(os.environ if env is None else env)
        base["PYTHONUNBUFFERED"] = "1"
        for job, index, _ in cluster.tasks():
            config = TaskConfig(cluster, job, index, token)
            task_env = dict(base, TW_CONFIG=config.to_json())
            process = subprocess.Popen(child_command(command), env=child_env(task_env),
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL)
            task = Task(f"{job}:{index}", job, index, process)
            self.tasks.append(task)
            threading.Thread(target=_pump, args=(task, process.stdout, out or sys.stdout,
                                                 self._lock),
                             daemon=True, name=f"tw-log-{task.name}").start()

    def workers(self) -> list[Task]:
        return [t for t in self.tasks if t.job != "ps"]

    def wait(self, timeout: float | None = None) -> int:
        """Wait until every worker exits (or one fails); returns the exit status: 0, the
        first failing worker's status, or 124 after `timeout`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            codes = [t.process.poll() for t in self.workers()]
            failed = [c for c in codes if c not in (None, 0)]
            if failed:
                bad = next(t for t in self.workers() if t.process.returncode not in (None, 0))
                self._say(f"{bad.name} exited with status {bad.process.returncode}; "
                          f"stopping the cluster")
                return failed[0] if failed[0] > 0 else 128 - failed[0]
            if all(c == 0 for c in codes):
                return 0
            if deadline is not None and time.monotonic() > deadline:
                self._say(f"timed out after {timeout:g} s; stopping the cluster")
                return 124
            time.sleep(0.05)

    def _say(self, message: str) -> None:
        with self._lock:
            print(f"[launch] {message}", file=sys.stderr, flush=True)

    def shutdown(self) -> None:
        """SIGTERM every task still running, SIGKILL after `GRACE_S`."""
        running = [t for t in self.tasks if t.process.poll() is None]
        for t in running:
            t.process.terminate()
        deadline = time.monotonic() + GRACE_S
        for t in running:
            try:
                t.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                t.process.kill()
                t.process.wait()


def launch(script: str, args: Sequence[str], num_ps: int, num_workers: int,
           token: str | None = None, timeout: float | None = None,
           python: str = sys.executable) -> int:
    """Run `script` as every task of a new local cluster; returns the exit status."""
    if num_workers < 1:
        raise ValueError("a cluster needs at least one worker")
    cluster = local_cluster(num_ps, num_workers)
    token = token if token is not None else secrets.token_hex(16)
    command = [python, script, *args]
    local = LocalCluster(command, cluster, token)
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_signal)
    try:
        status = local.wait(timeout)
    except KeyboardInterrupt:
        local._say("interrupted; stopping the cluster")
        status = 130
    finally:
        local.shutdown()
        signal.signal(signal.SIGTERM, previous)
    return status


__all__ = ["LocalCluster", "child_command", "child_env", "free_ports", "launch",
           "local_cluster"]
