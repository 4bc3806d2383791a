"""Cluster specifications: which tasks exist, grouped in jobs, and where each listens.

`ClusterSpec` is TensorFlow's ``tf.train.ClusterSpec``: a mapping from job name to the
addresses of its tasks, either a list (task i is the i-th address) or a dict from task
index to address (sparse jobs, as TensorFlow allows). `TaskConfig` is what one process
learns from ``TW_CONFIG``, the same JSON as TensorFlow's ``TF_CONFIG``::

    {"cluster": {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]},
     "task": {"type": "worker", "index": 0}, "token": "..."}

The optional ``token`` is the shared secret every RPC of the cluster carries.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidArgumentError

_JOB = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):(\d{1,5})$")

CONFIG_ENV = "TW_CONFIG"
"""The environment variable holding this process's cluster and task (JSON)."""


def parse_address(address: str) -> tuple[str, int]:
    """``"host:port"`` (or ``"[::1]:port"``) as (host, port); raises on anything else.
    Port 0 asks the task's server for a free port, as TensorFlow's (the server puts the
    port it bound in its spec: ``Server.create_local_server``)."""
    m = _ADDRESS.match(address.strip()) if isinstance(address, str) else None
    if m is None or not 0 <= int(m.group(2)) < 65536:
        raise InvalidArgumentError(f"bad task address {address!r}: expected 'host:port' with a "
                                   f"port in 0..65535, e.g. '127.0.0.1:2222'")
    return m.group(1), int(m.group(2))


class ClusterSpec:
    """The tasks of a cluster: ``ClusterSpec({"ps": ["h0:2222"], "worker": ["h1:2222",
    "h2:2222"]})``. Also accepts another ClusterSpec or a dict of {index: address}."""

    def __init__(self, cluster: ClusterSpec | Mapping[str, Any]) -> None:
        if isinstance(cluster, ClusterSpec):
            self._jobs = {j: dict(t) for j, t in cluster._jobs.items()}
            return
        if not isinstance(cluster, Mapping):
            raise InvalidArgumentError(f"a cluster spec is a dict from job name to a list of "
                                       f"'host:port' addresses, got {type(cluster).__name__}")
        self._jobs: dict[str, dict[int, str]] = {}
        seen: dict[str, str] = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str) or not _JOB.match(job):
                raise InvalidArgumentError(f"bad job name {job!r} in the cluster spec")
            if isinstance(tasks, str):
                raise InvalidArgumentError(f"job {job!r}: expected a list of addresses, got the "
                                           f"string {tasks!r} (write [{tasks!r}])")
            items = (tasks.items() if isinstance(tasks, Mapping) else enumerate(tasks))
            table: dict[int, str] = {}
            for index, address in items:
                index = int(index)
                if index < 0:
                    raise InvalidArgumentError(f"job {job!r}: negative task index {index}")
                parse_address(address)
                if address in seen:
                    raise InvalidArgumentError(
                        f"address {address} is given to both {seen[address]} and "
                        f"/job:{job}/task:{index}")
                seen[address] = f"/job:{job}/task:{index}"
                table[index] = address
            self._jobs[job] = dict(sorted(table.items()))

    @property
    def jobs(self) -> list[str]:
        """The job names, sorted."""
        return sorted(self._jobs)

    def num_tasks(self, job_name: str) -> int:
        """How many tasks `job_name` has."""
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """The task indices of `job_name`, sorted."""
        return list(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """The ``host:port`` of one task."""
        tasks = self._job(job_name)
        if task_index not in tasks:
            raise InvalidArgumentError(f"job {job_name!r} has no task {task_index} (tasks: "
                                       f"{sorted(tasks)})")
        return tasks[task_index]

    def job_tasks(self, job_name: str) -> list[str]:
        """The addresses of `job_name`'s tasks in index order (TensorFlow's method)."""
        return list(self._job(job_name).values())

    def tasks(self) -> Iterator[tuple[str, int, str]]:
        """Every task as (job, index, address), jobs sorted, then by index."""
        for job in self.jobs:
            for index, address in self._jobs[job].items():
                yield job, index, address

    def find_task(self, address: str) -> tuple[str, int] | None:
        """The (job, index) listening at `address`, or None."""
        return next(((j, i) for j, i, a in self.tasks() if a == address), None)

    def _job(self, job_name: str) -> dict[int, str]:
        try:
            return self._jobs[job_name]
        except KeyError:
            raise InvalidArgumentError(f"no job {job_name!r} in the cluster (jobs: "
                                       f"{', '.join(self.jobs) or 'none'})") from None

    def as_dict(self) -> dict[str, list[str] | dict[int, str]]:
        """The spec as plain data: a list per job when its indices are 0..n-1."""
        out: dict[str, list[str] | dict[int, str]] = {}
        for job, tasks in self._jobs.items():
            dense = list(tasks) == list(range(len(tasks)))
            out[job] = list(tasks.values()) if dense else dict(tasks)
        return out

    def to_json(self) -> str:
        return json.dumps({j: ({str(k): v for k, v in t.items()} if isinstance(t, dict) else t)
                           for j, t in self.as_dict().items()}, sort_keys=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __hash__(self) -> int:
        return hash(self.to_json())

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __repr__(self) -> str:
        return f"ClusterSpec({self.as_dict()!r})"


@dataclass(frozen=True)
class TaskConfig:
    """This process's place in a cluster, as ``TW_CONFIG`` gives it."""

    cluster: ClusterSpec
    job_name: str
    task_index: int
    token: str | None = None

    @property
    def address(self) -> str:
        return self.cluster.task_address(self.job_name, self.task_index)

    def to_json(self) -> str:
        """The ``TW_CONFIG`` value for this task."""
        data: dict[str, Any] = {"cluster": json.loads(self.cluster.to_json()),
                                "task": {"type": self.job_name, "index": self.task_index}}
        if self.token:
            data["token"] = self.token
        return json.dumps(data)


def task_config_from_env(environ: Mapping[str, str] | None = None) -> TaskConfig | None:
    """The `TaskConfig` in ``TW_CONFIG`` (falling back to ``TF_CONFIG``), or None when
    neither is set. Raises `InvalidArgumentError` naming the problem for a bad value."""
    environ = os.environ if environ is None else environ
    name = CONFIG_ENV if environ.get(CONFIG_ENV) else "TF_CONFIG"
    text = environ.get(name)
    if not text:
        return None
    return parse_task_config(text, source=name)


def parse_task_config(text: str, source: str = CONFIG_ENV) -> TaskConfig:
    """Parse the JSON of ``TW_CONFIG``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidArgumentError(f"{source} is not valid JSON: {e}") from None
    if not isinstance(data, dict) or "cluster" not in data or "task" not in data:
        raise InvalidArgumentError(f"{source} must be a JSON object with 'cluster' and 'task' "
                                   f"(e.g. {{\"cluster\": {{\"worker\": [\"127.0.0.1:2222\"]}}, "
                                   f"\"task\": {{\"type\": \"worker\", \"index\": 0}}}})")
    task = data["task"]
    if not isinstance(task, dict) or "type" not in task:
        raise InvalidArgumentError(f"{source}: 'task' needs 'type' and 'index', got {task!r}")
    cluster = ClusterSpec(data["cluster"])
    job, index = str(task["type"]), int(task.get("index", 0))
    cluster.task_address(job, index)  # the task must be in the cluster
    token = data.get("token")
    return TaskConfig(cluster, job, index, str(token) if token else None)


def default_token() -> str | None:
    """The cluster token of this process: ``TW_CONFIG``'s ``token``, else ``TW_TOKEN``."""
    config = task_config_from_env()
    if config is not None and config.token:
        return config.token
    return os.environ.get("TW_TOKEN") or None


def as_cluster_spec(cluster: ClusterSpec | Mapping[str, Sequence[str]] | str) -> ClusterSpec:
    """A `ClusterSpec` from a spec, a dict, or its JSON text."""
    if isinstance(cluster, str):
        try:
            cluster = json.loads(cluster)
        except json.JSONDecodeError as e:
            raise InvalidArgumentError(f"the cluster spec is not valid JSON: {e}") from None
    return ClusterSpec(cluster)  # type: ignore[arg-type]


__all__ = ["CONFIG_ENV", "ClusterSpec", "TaskConfig", "as_cluster_spec", "default_token",
           "parse_address",
           "parse_task_config", "task_config_from_env"]
