"""The master: compiles a client's graph for a cluster and runs it step by step.

`Cluster` is a client's view of a cluster: the tasks (from the server at the session's
target, which knows the cluster spec), the devices of each task, and a connection per
task. `compile_for_cluster` places a graph on every device of the cluster, with the
client's task as the home of unconstrained ops (`passes.placement.placement_scope`),
runs the rest of the pipeline (Send/Recv at every cross-device edge), cuts the result
into one graph per task (`passes.partition.split_by_task`) and registers each on its
task as IR text, once. A step of the `DistributedExecutable` is then one ``RunGraph``
call per task, all at once, under one fresh random step id (several clients share the
parameter-server tasks, so ids must not collide); tensors between tasks flow directly
between them (``RecvTensor``), never through the master. The first failure aborts the
step on every task (``AbortStep``) and is raised here with the op, node, source line and
task it happened on; a task that cannot be reached is `UnavailableError`. A task that lost
its graph (restarted, or idle too long) gets it registered again; the step itself is run
again only when that cannot run anything twice (`DistributedExecutable.run`).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from concurrent import futures
from typing import Any

import numpy as np

from ..compiler.ir import Graph, Node
from ..compiler.pipeline import run_pipeline
from ..compiler.printer import print_graph
from ..errors import (
    AbortedError,
    CancelledError,
    DeadlineExceededError,
    InvalidArgumentError,
    NotFoundError,
    TensorWeaveError,
    UnavailableError,
)
from ..passes.partition import split_by_task, task_name
from ..passes.placement import placement_scope
from ..runtime.dataflow import result_sources
from ..runtime.devices import Device, DeviceSpec
from ..runtime.distributed import rpc, wire
from ..runtime.distributed import server as task_server
from ..runtime.distributed.cluster import (
    ClusterSpec,
    as_cluster_spec,
    default_token,
    parse_address,
)
from ..runtime.distributed.server import LocalClient, client_for

CONNECT_TIMEOUT_S = float(os.environ.get("TW_CONNECT_TIMEOUT", "60"))
"""How long a client waits for the cluster's tasks to come up (``TW_CONNECT_TIMEOUT``)."""

ABORT_TIMEOUT_S = 5.0

RERUN_SAFE_OPS = frozenset({
    "Send", "Recv",  # the step's own rendezvous: a rerun is a new step id
    "NoOp", "Enter", "Exit", "Merge", "Switch", "LoopCond", "NextIteration",
    "NextIterationSource", "If", "While",  # control flow (their regions are checked)
    "Stack", "StackPush", "StackPop",  # a new stack each run
    "Assert", "ReadVariable", "VarIsInitialized", "ResourceGather", "QueueSize",
    "QueueIsClosed", "AccumulatorNumAccumulated", "Restore",  # they only read
})
"""Stateful ops whose running twice in a step's place leaves no trace: the step's own
transfers, control flow, per-run stacks, reads. Every other stateful op (assignments,
queue and accumulator updates, random draws, summaries, saves) changes state that a
second run would change again."""


def parse_target(target: str) -> str:
    """``grpc://host:port`` -> ``host:port``."""
    if not isinstance(target, str) or not target.startswith("grpc://"):
        raise InvalidArgumentError(f"a session target is 'grpc://host:port', got {target!r}")
    return target[len("grpc://"):]


class Cluster:
    """A client's connection to a cluster: its spec, tasks, devices and the client's
    own task (where ops without a device request go)."""

    def __init__(self, target: str | None = None, cluster: ClusterSpec | dict | None = None,
                 *, task: str | None = None, token: str | None = None,
                 tls: rpc.TlsConfig | None = None,
                 connect_timeout: float = CONNECT_TIMEOUT_S,
                 device_filters: list[str] | None = None) -> None:
        self.token = token if token is not None else default_token()
        self.tls = tls
        self.connect_timeout = connect_timeout
        if cluster is None:
            if target is None:
                raise InvalidArgumentError("give a session target or a cluster spec")
            status = self._status(parse_target(target))
            cluster = as_cluster_spec(json.loads(status["cluster"]))
            task = task or status["task"]
        self.spec = as_cluster_spec(cluster) if not isinstance(cluster, ClusterSpec) else cluster
        if task is None:
            first = next(self.spec.tasks())
            task = f"/job:{first[0]}/replica:0/task:{first[1]}"
        self.task = task_name(task)
        # Only the tasks matching `device_filters` (ConfigProto's) are used or even
        # contacted: a session on the PS need not wait for workers that are down.
        self.filters = [DeviceSpec.from_string(f) for f in device_filters or []]
        self.tasks = [f"/job:{j}/replica:0/task:{i}" for j, i, _ in self.spec.tasks()
                      if not self.filters or any(f.is_compatible_with(
                          DeviceSpec(j, 0, i)) for f in self.filters)]
        if not self.tasks:
            raise InvalidArgumentError(f"device_filters {device_filters} match no task of "
                                       f"the cluster {self.spec.as_dict()}")
        if self.task not in self.tasks:
            self.task = self.tasks[0]
        self._devices: list[Device] | None = None
        self._lock = threading.Lock()

    def _status(self, address: str) -> dict[str, Any]:
        client = client_for(address, self.token, self.tls)
        if isinstance(client, rpc.WorkerClient):
            client.wait_ready(self.connect_timeout)
        header, _ = client.call("GetStatus", {}, timeout=self.connect_timeout)
        return header

    def address_of(self, task: str) -> str:
        spec = DeviceSpec.from_string(task)
        return self.spec.task_address(spec.job or "", spec.task or 0)

    def client(self, task: str) -> rpc.WorkerClient | LocalClient:
        """Direct calls when this process serves `task`, else gRPC."""
        return client_for(self.address_of(task), self.token, self.tls)

    @property
    def devices(self) -> list[Device]:
        """Every device of every task (asked of the tasks once, waiting for them to
        start up to ``connect_timeout``)."""
        with self._lock:
            if self._devices is None:
                pool = futures.ThreadPoolExecutor(max_workers=8)
                try:
                    statuses = list(pool.map(self._status, map(self.address_of, self.tasks)))
                finally:
                    pool.shutdown(wait=False)
                check_same_addresses(self.spec, {
                    s["task"]: as_cluster_spec(json.loads(s["cluster"])) for s in statuses})
                self._devices = [Device(DeviceSpec.from_string(name))
                                 for s in statuses for name in s["devices"]]
            return list(self._devices)

    def __repr__(self) -> str:
        return f"<Cluster {self.spec.as_dict()} as {self.task}>"


def _resolved(host: str) -> frozenset[str]:
    """The IP addresses `host` resolves to (empty when it does not resolve here)."""
    try:
        return frozenset(info[4][0] for info in socket.getaddrinfo(host.strip("[]"), None))
    except (OSError, UnicodeError):
        return frozenset()


def _same_endpoint(a: str, b: str) -> bool:
    """Whether two task addresses may be the same endpoint: the same port, and hosts
    equal or resolving to a common address (a name where another spec has its IP);
    a host that does not resolve here cannot be judged, so it counts as the same."""
    if a == b:
        return True
    (host_a, port_a), (host_b, port_b) = parse_address(a), parse_address(b)
    if port_a != port_b:
        return False
    ips_a, ips_b = _resolved(host_a), _resolved(host_b)
    return not ips_a or not ips_b or bool(ips_a & ips_b)


def check_same_addresses(spec: ClusterSpec, theirs: dict[str, ClusterSpec]) -> None:
    """Refuse tasks whose cluster specs (`theirs`, by task name) give a task of `spec` (the
    session's) another endpoint: a task pulls tensors from its peers at the addresses of
    its own spec, so such a step would wait for a connection to the wrong address and
    fail seconds later blaming a peer that is up. Tasks one spec lacks are fine (a
    connected client adds its own task to its spec only)."""
    for task, other in sorted(theirs.items()):
        for job, index, address in other.tasks():
            if job not in spec.jobs or index not in spec.task_indices(job):
                continue
            ours = spec.task_address(job, index)
            if not _same_endpoint(ours, address):
                raise InvalidArgumentError(
                    f"the cluster spec of {task} gives /job:{job}/task:{index} the address "
                    f"{address}, but the session's (from its target) gives {ours}: start "
                    f"every task with the same cluster spec")


def compile_for_cluster(graph: Graph, cluster: Cluster, target: str = "cpu") -> DistributedExecutable:
    """Place, partition and register `graph` on the tasks of `cluster` (see the module
    docstring); the result runs one step per call."""
    with placement_scope(cluster.devices, cluster.task):
        compiled = run_pipeline(graph, target=target)
    return DistributedExecutable(compiled, cluster, target)


class DistributedExecutable:
    """A graph registered on the tasks of a cluster; ``exe(*args)`` runs one step and
    returns the results in the graph's order (like `runtime.dataflow.DataflowExecutable`)."""

    def __init__(self, graph: Graph, cluster: Cluster, target: str = "cpu",
                 timeout: float | None = None) -> None:
        self.graph = graph
        self.cluster = cluster
        self.timeout = timeout
        self.target = target
        self.partitions = list(split_by_task(graph, cluster.task).values())
        _check_python_callbacks(self.partitions, cluster)
        self._texts = [print_graph(p.graph) for p in self.partitions]
        self.handles: list[str] = [self._register(k) for k in range(len(self.partitions))]
        # per partition: the ops that change state, so that running it twice would too
        self._state_changes = [_state_changing_ops(p.graph) for p in self.partitions]
        self._register_lock = threading.Lock()
        self._last_sent = time.monotonic()  # when a step of these handles last went out
        self._result_sources = result_sources(graph, self.partitions)
        self._inflight: set[int] = set()  # step ids running now (close() aborts them)
        self._inflight_lock = threading.Lock()

    def _register(self, k: int) -> str:
        """Register partition `k` on its task; returns the handle. The IR text travels
        as a byte tensor (streamed in chunks when big), not in the JSON header."""
        text = np.frombuffer(self._texts[k].encode(), np.uint8)
        # the cluster as this client knows it: a task may have to pull from one its own
        # spec lacks (a connected client's task)
        header, _ = self.cluster.client(self.partitions[k].device).call(
            "RegisterGraph", {"target": self.target, "cluster": self.cluster.spec.to_json()},
            [text])
        return header["handle"]

    @property
    def tasks(self) -> list[str]:
        """The tasks this graph runs on, one per partition."""
        return [p.device for p in self.partitions]

    def __call__(self, *args: Any, timeout: float | None = None) -> list[Any]:
        return self.run(args, timeout=self.timeout if timeout is None else timeout)

    def run(self, args: Any, timeout: float | None = None,
            trace: list | None = None) -> list[Any]:
        """One step on every task; returns the graph's results.

        A task that lost this graph (it was restarted, or dropped the graph after
        `server.GRAPH_IDLE_S` idle) answers that it has no graph, and gets it registered
        again. The step is then run once more only when nothing can run twice: every
        task had no graph (nothing ran anywhere), or the partitions of the tasks that did
        start the step change no state (`RERUN_SAFE_OPS`). Otherwise those tasks may
        already have run part of it (a global-step increment, an optimizer update), so
        the step is `AbortedError`, as in TensorFlow: the next run works, and
        ``MonitoredTrainingSession`` recreates its session and goes on."""
        from ..targets.reference.executor import check_arguments
        arrays = check_arguments(self.graph, list(args))
        if timeout is not None and timeout <= 0:
            raise InvalidArgumentError(f"timeout must be positive, got {timeout}")
        self._refresh_if_idle()
        handles = list(self.handles)
        no_graph: set[int] = set()
        try:
            return self._step(arrays, timeout, trace, handles, no_graph)
        except NotFoundError as e:
            if not no_graph:
                raise
            self._register_again(no_graph, handles)
            changes = {self.partitions[k].device: ops for k, ops in
                       enumerate(self._state_changes) if k not in no_graph and ops}
            if changes:
                raise _partly_run_error(sorted(self.partitions[k].device for k in no_graph),
                                        changes) from e
        return self._step(arrays, timeout, trace, list(self.handles), set())

    def _refresh_if_idle(self) -> None:
        """Register every partition again (new handles) when no step of this graph went
        out for half of `server.GRAPH_IDLE_S`: a task may drop a graph idle that long,
        and a step finding it gone on one task after the others ran their parts is
        aborted (partly run), though nothing failed, and MonitoredTrainingSession would
        then restore the last checkpoint (or initialize the model again). The old
        graphs are left to the tasks' idle sweep: a step running now may use them."""
        limit = task_server.GRAPH_IDLE_S / 2
        if time.monotonic() - self._last_sent <= limit:
            return
        with self._register_lock:
            if time.monotonic() - self._last_sent <= limit:
                return  # another thread refreshed them
            self.handles = [self._register(k) for k in range(len(self.partitions))]
            self._last_sent = time.monotonic()

    def _register_again(self, lost: set[int], stale: list[str]) -> None:
        """Register the partitions `lost` again (once, when several steps find out at the
        same time: only a handle still equal to the `stale` one is replaced)."""
        with self._register_lock:
            for k in sorted(lost):
                if self.handles[k] == stale[k]:
                    self.handles[k] = self._register(k)

    def _step(self, arrays: list[Any], timeout: float | None, trace: list | None,
              handles: list[str], no_graph: set[int]) -> list[Any]:
        """One step with the partitions' `handles`. With a `trace` list, every task's
        node timings (wall-clock records) are added to it. The partitions whose task
        answered that it has no graph (so ran nothing) are added to `no_graph`."""
        step_id = secrets.randbits(62)
        self._last_sent = time.monotonic()
        header = {"step": step_id, "timeout": timeout}
        if trace is not None:
            header["trace"] = True
        deadline = None if timeout is None else timeout + 5.0  # the tasks time out first
        calls = [(self.cluster.client(p.device), dict(header, handle=handle),
                  [arrays[i] for i in p.arg_indices])
                 for p, handle in zip(self.partitions, handles)]
        with self._inflight_lock:
            self._inflight.add(step_id)
        try:
            if len(calls) == 1:
                client, head, tensors = calls[0]
                try:
                    answers = [client.call("RunGraph", head, tensors, timeout=deadline)]
                except NotFoundError as e:
                    if self._has_no_graph(0, e):
                        no_graph.add(0)
                    raise
            else:
                answers = self._gather(step_id, calls, deadline, no_graph)
        finally:
            with self._inflight_lock:
                self._inflight.discard(step_id)
        if trace is not None:
            for head, _ in answers:
                trace.extend(head.get("trace", ()))
        outputs = [tensors for _, tensors in answers]
        return [outputs[k][j] if k >= 0 else arrays[j] for k, j in self._result_sources]

    def _has_no_graph(self, k: int, error: BaseException) -> bool:
        """Whether `error` is partition `k`'s task saying it has no such graph (so it
        ran nothing of the step), not an op's own NotFoundError."""
        return isinstance(error, NotFoundError) and \
            f"{self.partitions[k].device} has no graph" in error.message

    def _gather(self, step_id: int, calls: list, deadline: float | None,
                no_graph: set[int]) -> list[Any]:
        """Run every task's part of the step at once; the first failure aborts the rest.
        Blocking calls on pool threads: a gRPC future would start a thread per call.
        The partitions whose task has no graph are added to `no_graph`."""
        pending = {_call_pool().submit(client.call, "RunGraph", head, tensors, deadline): k
                   for k, (client, head, tensors) in enumerate(calls)}
        outputs: list[list[Any] | None] = [None] * len(calls)
        errors: list[BaseException] = []
        while pending:
            # After the first failure the others get ABORT_TIMEOUT_S to wind down; a
            # task that cannot even hear the abort must not hang the client.
            done, _ = futures.wait(pending, timeout=ABORT_TIMEOUT_S if errors else None,
                                   return_when=futures.FIRST_EXCEPTION)
            if not done:
                break
            for f in done:
                k = pending.pop(f)
                if f.exception() is not None:
                    if self._has_no_graph(k, f.exception()):
                        no_graph.add(k)
                    if not errors:
                        self._abort(step_id, f.exception(), [c[0] for c in calls])
                    errors.append(f.exception())
                else:
                    outputs[k] = f.result()
        if errors:
            raise _root_cause(errors)
        return outputs  # type: ignore[return-value]

    def _abort(self, step_id: int, error: BaseException, clients: list) -> None:
        """Tell every task the step failed (best effort: a dead task cannot hear it)."""
        header = dict(wire.error_to_header(error, "the master"), step=step_id)
        for client in clients:
            # Not waited for, on a thread of its own (not the pool, which may be full of
            # calls waiting for exactly these aborts).
            threading.Thread(target=_quietly, args=(client, "AbortStep", header),
                             daemon=True).start()

    def close(self) -> None:
        """Abort the steps still running (a closed session's blocked steps end with
        `CancelledError`, as in TensorFlow) and forget the graphs on their tasks."""
        from ..errors import CancelledError as _Cancelled
        with self._inflight_lock:
            running = list(self._inflight)
        clients = [self.cluster.client(p.device) for p in self.partitions]
        for step_id in running:
            self._abort(step_id, _Cancelled("the session was closed"), clients)
        for p, handle in zip(self.partitions, self.handles):
            try:
                self.cluster.client(p.device).call("DeregisterGraph", {"handle": handle},
                                                   timeout=ABORT_TIMEOUT_S)
            except TensorWeaveError:
                pass

    def __repr__(self) -> str:
        return f"<DistributedExecutable {self.graph.name} on {', '.join(self.tasks)}>"


CALL_THREADS = 64
"""Threads that wait on the tasks' RunGraph calls, for every step of every executable of
this process (a call only waits on I/O; concurrent steps queue past this many calls)."""

_pool: futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _call_pool() -> futures.ThreadPoolExecutor:
    """The process-wide pool of `CALL_THREADS` threads (made on first use)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = futures.ThreadPoolExecutor(max_workers=CALL_THREADS,
                                               thread_name_prefix="tw-master")
        return _pool


def _quietly(client: rpc.WorkerClient, method: str, header: dict[str, Any]) -> None:
    """A best-effort call: a task that cannot hear it fails its own calls anyway."""
    try:
        client.call(method, header, timeout=ABORT_TIMEOUT_S)
    except TensorWeaveError:
        pass


IN_PROCESS_OPS = frozenset({"PyFunc"})
"""Ops that call a Python function of the process that built the graph (`tf.py_func`),
found by a token in that process's registry: they can run only on a task it serves."""


def _check_python_callbacks(partitions: list[Any], cluster: Cluster) -> None:
    """Refuse a `IN_PROCESS_OPS` op placed on a task served by another process. There its
    token names nothing, or a function of that process's own (a worker that is also a
    client made py_funcs too): a wrong function called silently. TensorFlow asks the
    same: pin the py_func to a device of a server running in the caller's process."""
    def visit(nodes: list[Node]) -> Node | None:
        for node in nodes:
            if node.op in IN_PROCESS_OPS:
                return node
            for region in node.regions:
                found = visit(region.nodes)
                if found is not None:
                    return found
        return None

    for p in partitions:
        node = visit(p.graph.nodes)
        if node is not None and cluster.address_of(p.device) not in task_server._local_services:
            raise InvalidArgumentError(
                f"tf.py_func is placed on {p.device}, a task served by another process, but "
                f"its Python function exists only in this process: start a "
                f"tf.distribute.Server for a task in this process and pin the py_func to one "
                f"of its devices (with tf.device)", **node.error_context())


def _state_changing_ops(graph: Graph) -> list[str]:
    """The names of the ops of `graph` (regions included) that change state a second run
    would change again: stateful ops not in `RERUN_SAFE_OPS`, each once, in order."""
    found: dict[str, None] = {}

    def visit(nodes: list[Node]) -> None:
        for node in nodes:
            op = node.opdef
            if (op.stateful or op.side_effects) and op.name not in RERUN_SAFE_OPS:
                found[op.name] = None
            for region in node.regions:
                visit(region.nodes)

    visit(graph.nodes)
    return list(found)


def _partly_run_error(lost: list[str], changes: dict[str, list[str]]) -> AbortedError:
    """The error of a step that a task without the graph failed while other tasks, whose
    parts change state, may have run theirs."""
    ran = "; ".join(f"{task}: {', '.join(ops[:4])}{', ...' if len(ops) > 4 else ''}"
                    for task, ops in sorted(changes.items()))
    return AbortedError(
        f"the step was aborted: {', '.join(lost)} had lost the graph (the task was "
        f"restarted, or dropped the graph after {task_server.GRAPH_IDLE_S:g} s idle). "
        f"The step did not complete and may have partly run on the other tasks, whose parts change "
        f"state ({ran}), so it is not run again (that could apply their changes twice). "
        f"The graph is registered again: the next run works (MonitoredTrainingSession "
        f"recreates its session and runs the step again by itself)")


def _root_cause(errors: list[BaseException]) -> BaseException:
    """The error that explains a failed step: an op's own error before the cancellations
    and deadline it caused in other tasks; a step's own deadline before the cancellations
    it caused (a Recv woken by the timed-out task's abort may answer first)."""
    for kinds in ((UnavailableError,), (Exception,)):
        for e in errors:
            if isinstance(e, kinds) and not isinstance(e, CancelledError | DeadlineExceededError):
                return e
    return next((e for e in errors if isinstance(e, DeadlineExceededError)), errors[0])


__all__ = ["Cluster", "DistributedExecutable", "check_same_addresses", "compile_for_cluster",
           "parse_target"]
