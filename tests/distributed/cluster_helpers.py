"""Clusters for the distributed tests: in-process servers, or one process per task.

Everything binds 127.0.0.1 only, every wait is bounded, and processes are killed on the
way out whatever happened (and, through PR_SET_PDEATHSIG, if the test process dies).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator

from tensorweave.distribute import ClusterSpec, Server
from tensorweave.distribute.launch import child_command, child_env, free_ports
from tensorweave.runtime.distributed import rpc
from tensorweave.runtime.distributed.cluster import TaskConfig

TOKEN = "test-token"


def make_cluster(**jobs: int) -> ClusterSpec:
    """A spec with jobs of the given sizes on free loopback ports."""
    ports = iter(free_ports(sum(jobs.values())))
    return ClusterSpec({job: [f"127.0.0.1:{next(ports)}" for _ in range(n)]
                        for job, n in jobs.items()})


@contextlib.contextmanager
def servers(token: str | None = TOKEN, **jobs: int) -> Iterator[tuple[ClusterSpec, dict]]:
    """In-process servers for every task: yields (spec, {"ps:0": Server, ...})."""
    spec = make_cluster(**jobs)
    started: dict[str, Server] = {}
    try:
        for job, index, _ in spec.tasks():
            started[f"{job}:{index}"] = Server(spec, job, index, token=token)
        yield spec, started
    finally:
        for s in started.values():
            s.stop(grace=0.2)


class ProcessCluster:
    """One ``tensorweave server`` process per task."""

    def __init__(self, spec: ClusterSpec, token: str | None = TOKEN,
                 jobs: tuple[str, ...] | None = None) -> None:
        self.spec = spec
        self.token = token
        self.procs: dict[str, subprocess.Popen] = {}
        for job, index, _ in spec.tasks():
            if jobs is None or job in jobs:  # the others are served by the test itself
                self.start(job, index)

    def start(self, job: str, index: int) -> None:
        """Start (or restart, on the same address) the process of one task."""
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        config = TaskConfig(self.spec, job, index, self.token)
        self.procs[f"{job}:{index}"] = subprocess.Popen(
            child_command([sys.executable, "-m", "tensorweave.cli", "server"]),
            env=child_env(dict(env, TW_CONFIG=config.to_json())), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for name in self.procs:
            job, index = name.split(":")
            client = rpc.client_for(self.spec.task_address(job, int(index)), self.token)
            while True:
                if self.procs[name].poll() is not None:
                    out = self.procs[name].stdout.read().decode(errors="replace")
                    raise RuntimeError(f"task {name} exited early:\n{out}")
                try:
                    client.wait_ready(min(1.0, max(0.01, deadline - time.monotonic())))
                    client.call("GetStatus", {}, timeout=5)
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise

    def kill(self, name: str) -> None:
        self.procs[name].kill()
        self.procs[name].wait(10)

    def close(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 10
        for p in self.procs.values():
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stdout:
                p.stdout.close()


@contextlib.contextmanager
def processes(token: str | None = TOKEN, in_test: tuple[str, ...] = (),
              **jobs: int) -> Iterator[ProcessCluster]:
    """One process per task, except the jobs in `in_test` (served by the test)."""
    cluster = ProcessCluster(make_cluster(**jobs), token,
                             tuple(j for j in jobs if j not in in_test))
    try:
        cluster.wait_ready()
        yield cluster
    finally:
        cluster.close()
