"""``replica_device_setter``: put variables on parameter-server tasks, the rest on the
worker (TensorFlow 1's between-graph replication helper).

The setter is a *device function* (`tw.device` accepts one): called with each node
created in its scope, it sends variable handles to a PS task chosen by a strategy
(round robin, or greedy by bytes so the PS tasks hold about as much as each other) and
every other node to the worker device. A request the node already has (an inner
``tw.device``) wins over the setter's for every field it sets, as in TensorFlow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from ..compiler.ir import Node
from ..errors import InvalidArgumentError
from ..runtime.devices import DeviceSpec
from ..runtime.distributed.cluster import ClusterSpec, as_cluster_spec

PS_OPS = ("VarHandle",)
"""Ops placed on parameter servers: the variables (their reads, updates and the
optimizers' slots follow them by colocation)."""


class RoundRobinStrategy:
    """The i-th variable goes to PS task ``i % num_tasks``."""

    def __init__(self, num_tasks: int) -> None:
        self._num_tasks = num_tasks
        self._next = 0

    def __call__(self, node: Node) -> int:
        task = self._next
        self._next = (self._next + 1) % self._num_tasks
        return task


def byte_size_load_fn(node: Node) -> int:
    """The bytes of the variable a ``VarHandle`` node makes (unknown dims count 1)."""
    shape = node.attrs.get("shape") or ()
    dtype = node.attrs.get("dtype")
    itemsize = getattr(dtype, "itemsize", 4)
    return math.prod(1 if d is None else int(d) for d in shape) * itemsize


class GreedyLoadBalancingStrategy:
    """Each variable goes to the PS task with the least load so far, by `load_fn`
    (default: bytes); ties go to the lowest task index."""

    def __init__(self, num_tasks: int, load_fn: Callable[[Node], float] = byte_size_load_fn) -> None:
        self._loads = [0.0] * num_tasks
        self._load_fn = load_fn

    def __call__(self, node: Node) -> int:
        task = min(range(len(self._loads)), key=lambda i: (self._loads[i], i))
        self._loads[task] += self._load_fn(node)
        return task

    @property
    def loads(self) -> list[float]:
        return list(self._loads)


def replica_device_setter(ps_tasks: int = 0, ps_device: str = "/job:ps",
                          worker_device: str = "/job:worker", merge_devices: bool = True,
                          cluster: ClusterSpec | dict | None = None,
                          ps_ops: Iterable[str] | None = None,
                          ps_strategy: Callable[[Node], int] | None = None
                          ) -> Callable[[Node], str | None] | None:
    """A device function for ``tw.device(...)``: variables on the PS tasks (chosen by
    `ps_strategy`, default round robin), every other op on `worker_device`. With
    `cluster`, the number of PS tasks is that of its ``ps`` job. Returns None when there
    are no PS tasks (as TensorFlow does), which ``tw.device(None)`` treats as no request."""
    if cluster is not None:
        cluster = as_cluster_spec(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job or "ps"
        ps_tasks = cluster.num_tasks(ps_job) if ps_job in cluster.jobs else 0
    if not isinstance(ps_tasks, int) or ps_tasks < 0:
        raise InvalidArgumentError(f"ps_tasks must be a non-negative int, got {ps_tasks!r}")
    if ps_tasks == 0:
        return None
    if not merge_devices:
        raise InvalidArgumentError("merge_devices=False is not supported (TensorFlow "
                                   "deprecated it too)")
    ops = frozenset(PS_OPS if ps_ops is None else ps_ops)
    strategy = ps_strategy or RoundRobinStrategy(ps_tasks)
    ps_spec = DeviceSpec.from_string(ps_device)
    worker_spec = DeviceSpec.from_string(worker_device)

    def device_function(node: Node) -> str | None:
        # as TensorFlow's _ReplicaDeviceChooser: the strategy picks a task only for a
        # variable not requested on another job (a variable pinned to /job:worker uses
        # up no round-robin slot), and the request's fields win over the setter's
        current = DeviceSpec.from_string(node.device or "")
        if node.op in ops:
            base = ps_spec
            if ps_spec.job and current.job in (None, ps_spec.job):
                base = DeviceSpec(ps_spec.job, ps_spec.replica, int(strategy(node)),
                                  ps_spec.device_type, ps_spec.device_index)
        else:
            base = worker_spec
        return base.merge(current).to_string()

    return device_function


__all__ = ["GreedyLoadBalancingStrategy", "PS_OPS", "RoundRobinStrategy", "byte_size_load_fn",
           "replica_device_setter"]
