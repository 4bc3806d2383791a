"""A task's server: the worker service that holds the task's state and runs its graphs.

One `Server` per task process (``tf.train.Server``). It binds exactly the address the
cluster spec gives the task and serves, over gRPC (`rpc`):

- ``GetStatus``: the task's name, devices and cluster (how a master learns the cluster);
- ``RegisterGraph``: a partition as IR text; parsed and verified here (only registered
  ops exist in the parser, so nothing received is ever executed as Python), its
  variables and queues created in the task's `ResourceManager` (shared by name between
  the graphs of every client: between-graph replication), compiled for the task's
  target; answers a handle;
- ``RunGraph``: runs a registered graph for one step id with the fed arguments, and
  answers its results;
- ``RecvTensor``: hands the tensor that this task's Send left under a rendezvous key to
  the task whose Recv asks for it (transfers are pulled, as in TensorFlow);
- ``AbortStep``: fails a step here (another task of the step failed);
- ``DeregisterGraph``: forgets a graph.

Each step id has a `_StepState` here while any of its graphs runs, a peer pulls from
it, or it holds a value not yet pulled: a `TaskRendezvous` whose Recvs of keys sent on
another task pull through that task's ``RecvTensor``. A step aborted here is remembered
for a while, so a late ``RunGraph`` of it fails at once instead of waiting for tensors
that will never come.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import threading
import time
from concurrent import futures
from typing import Any

import grpc
import numpy as np

from ...compiler.ir import Graph
from ...errors import (
    CancelledError,
    DeadlineExceededError,
    InvalidArgumentError,
    NotFoundError,
    TensorWeaveError,
    UnavailableError,
)
from ..cancellation import CancellationManager
from ..devices import DeviceManager, DeviceSpec
from ..rendezvous import LocalRendezvous, Rendezvous
from ..resources import ResourceManager, create_graph_resources
from . import rpc, wire
from .cluster import ClusterSpec, default_token

log = logging.getLogger("tensorweave.distributed")

ABORTED_MEMORY_S = 300.0
"""How long an aborted step id is remembered (late RunGraphs of it fail at once)."""

POLL_S = 0.25
"""How often a blocked RecvTensor checks that its caller is still there."""

PULL_WAIT_S = 1.0
"""How long one RecvTensor call waits for its value before answering "pending": the
puller then checks that its own step is still alive before asking again, so an aborted
step never leaves a pull (and the sender's handler) blocked forever."""

PEER_CONNECT_S = 10.0
"""How long a pull waits for its first connection to the sending task."""

STEP_IDLE_S = 300.0
"""A step entry nobody runs or pulls from for this long is dropped (with any value no
one came for): its master is gone."""

GRAPH_IDLE_S = 3600.0
"""A registered graph not run for this long is dropped (a master that comes back
registers it again)."""


def task_of_device(device: str) -> tuple[str | None, int]:
    """(job, task) of a device name."""
    spec = DeviceSpec.from_string(device)
    return spec.job, spec.task or 0


class _InProcessContext:
    """What handlers use of a gRPC context, for calls within one process."""

    def add_callback(self, callback: Any) -> bool:
        return True

    def is_active(self) -> bool:
        return True


class LocalClient:
    """A client of a task served by this very process: calls its handlers directly,
    with no serialization or loopback RPC (the common case of a worker's own task)."""

    def __init__(self, service: WorkerService) -> None:
        self.service = service
        self.address = service.address
        self._handlers = service.handlers()

    def call(self, method: str, header: dict[str, Any], tensors: Any = (),
             timeout: float | None = None) -> tuple[dict[str, Any], list[Any]]:
        out_header, out_tensors = self._handlers[method](header, list(tensors),
                                                         _InProcessContext())
        return out_header, list(out_tensors)


_local_services: dict[str, WorkerService] = {}
_local_lock = threading.Lock()

LOCAL_CALLS = os.environ.get("TW_LOCAL_CALLS", "1") not in ("0", "")
"""Call tasks served by this process directly (``TW_LOCAL_CALLS=0``: always gRPC, as the
tests of the transport with in-process servers need)."""


def client_for(address: str, token: str | None = None,
               tls: rpc.TlsConfig | None = None) -> rpc.WorkerClient | LocalClient:
    """A client of the task at `address`: direct calls when this process serves it,
    else gRPC (`rpc.client_for`)."""
    service = _local_services.get(address) if LOCAL_CALLS else None
    if service is not None:
        return LocalClient(service)
    return rpc.client_for(address, token, tls)


class TaskRendezvous(Rendezvous):
    """The rendezvous of one step on one task: keys sent here are kept in a local table;
    a Recv of a key whose Send runs on another task pulls it from that task."""

    def __init__(self, service: WorkerService, step_id: int) -> None:
        self.local = LocalRendezvous()
        self.service = service
        self.step_id = step_id
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        # tasks outside this task's cluster spec that the step's master told us of
        # (a connected client's own task: `experimental_connect_to_cluster`)
        self.peers: dict[tuple[str, int], str] = {}

    def send(self, key: str, value: Any) -> None:
        self.local.send(key, value)

    def recv(self, key: str, timeout: float | None = None) -> Any:
        job, task = task_of_device(key.split(";", 1)[0])
        if (job, task) == (self.service.job_name, self.service.task_index):
            return self.local.recv(key, timeout)
        return self._pull(key, job, task, timeout)

    def _pull(self, key: str, job: str | None, task: int, timeout: float | None) -> Any:
        if job is None:
            raise InvalidArgumentError(f"rendezvous key '{key}' names no job")
        with self._lock:
            if self._error is not None:
                raise self._cancelled(key)
        address = self._address(job, task)
        client = self.service.client(address)
        deadline = None if timeout is None else time.monotonic() + timeout
        self._connect(client, key, address, deadline)
        # Blocking calls (a gRPC future would start a thread per call), each waiting at
        # most PULL_WAIT_S on the sender: between them this step's abort is noticed.
        # Asking again is safe: "pending" means the sender did not take the value.
        while True:
            wait = PULL_WAIT_S if deadline is None else min(
                PULL_WAIT_S, max(0.0, deadline - time.monotonic()))
            header, tensors = client.call("RecvTensor", {"step": self.step_id, "key": key,
                                                         "wait": wait})
            if not header.get("pending"):
                return tensors[0]
            with self._lock:
                if self._error is not None:
                    raise self._cancelled(key)
            if deadline is not None and time.monotonic() >= deadline:
                raise DeadlineExceededError(f"timed out waiting for rendezvous key '{key}'")

    def _address(self, job: str, task: int) -> str:
        """The address of a task: from this task's cluster spec, else from the peers
        the step's master named (never overriding the spec)."""
        try:
            return self.service.cluster.task_address(job, task)
        except InvalidArgumentError:
            address = self.peers.get((job, task))
            if address is None:
                raise
            return address

    def _connect(self, client: Any, key: str, address: str, deadline: float | None) -> None:
        """Wait (in `PULL_WAIT_S` slices, noticing this step's abort) until the channel
        to the sending task is connected, at most `PEER_CONNECT_S`: pulls are
        fail-fast calls, and a first one racing the connection's setup failed a step
        with UNAVAILABLE under load. In-process clients are always connected."""
        connect = getattr(client, "connect", None)
        if connect is None:
            return
        give_up = time.monotonic() + PEER_CONNECT_S
        if deadline is not None:
            give_up = min(give_up, deadline)
        while not connect(min(PULL_WAIT_S, max(0.0, give_up - time.monotonic()))):
            with self._lock:
                if self._error is not None:
                    raise self._cancelled(key)
            if time.monotonic() >= give_up:
                raise UnavailableError(
                    f"rendezvous key '{key}': the sending task at {address} did not "
                    f"accept a connection within {PEER_CONNECT_S:g} s")

    def _cancelled(self, key: str) -> CancelledError:
        cause = self._error
        detail = cause.message if isinstance(cause, TensorWeaveError) else str(cause)
        return CancelledError(f"rendezvous for '{key}' aborted: {type(cause).__name__}: {detail}")

    def abort(self, error: BaseException) -> None:
        with self._lock:
            if self._error is None:
                self._error = error
        self.local.abort(error)


class _StepState:
    __slots__ = ("rendezvous", "cancellation", "runs", "pulls", "error", "touched")

    def __init__(self, rendezvous: TaskRendezvous) -> None:
        self.rendezvous = rendezvous
        # Shared by every graph of the step run here, so an abort from the master wakes
        # blocked queue ops too, not only Recvs.
        self.cancellation = CancellationManager()
        self.runs = 0
        self.pulls = 0
        self.error: BaseException | None = None
        self.touched = time.monotonic()


class StepTable:
    """The live steps of one task, by step id."""

    def __init__(self, service: WorkerService) -> None:
        self.service = service
        self._lock = threading.Lock()
        self._steps: dict[int, _StepState] = {}
        self._aborted: dict[int, tuple[BaseException, float]] = {}
        self._last_sweep = time.monotonic()

    def __len__(self) -> int:
        with self._lock:
            return len(self._steps)

    def _get(self, step_id: int) -> _StepState:
        state = self._steps.get(step_id)
        if state is None:
            state = self._steps[step_id] = _StepState(TaskRendezvous(self.service, step_id))
            aborted = self._aborted.get(step_id)
            if aborted is not None:
                state.error = aborted[0]
                state.cancellation.cancel(aborted[0])
                state.rendezvous.abort(aborted[0])
        return state

    def begin(self, step_id: int, kind: str) -> _StepState:
        """Join step `step_id` (kind ``run`` or ``pull``); raises if it was aborted."""
        with self._lock:
            self._expire_idle()
            state = self._get(step_id)
            state.touched = time.monotonic()
            if state.error is not None:
                error = state.error
                self._release(step_id, state)
                raise CancelledError(f"step {step_id} was aborted: {error}")
            setattr(state, kind + "s", getattr(state, kind + "s") + 1)
            return state

    def end(self, step_id: int, state: _StepState, kind: str) -> None:
        with self._lock:
            setattr(state, kind + "s", getattr(state, kind + "s") - 1)
            state.touched = time.monotonic()
            self._release(step_id, state)

    def _expire_idle(self) -> None:
        """Drop steps nobody ran or pulled from for `STEP_IDLE_S` (a value sent for a
        receiver whose step died without an abort reaching us). Under the lock; cheap:
        at most once every few seconds."""
        now = time.monotonic()
        if now - self._last_sweep < 5.0:
            return
        self._last_sweep = now
        for step_id, state in list(self._steps.items()):
            if state.runs == 0 and state.pulls == 0 and now - state.touched > STEP_IDLE_S:
                state.rendezvous.abort(CancelledError(f"step {step_id} expired (idle)"))
                del self._steps[step_id]

    def _release(self, step_id: int, state: _StepState) -> None:
        """Drop a step nobody runs, pulls from, or has left a value in."""
        if (state.runs == 0 and state.pulls == 0 and len(state.rendezvous.local) == 0
                and self._steps.get(step_id) is state):
            del self._steps[step_id]

    def abort(self, step_id: int, error: BaseException) -> None:
        """Fail step `step_id` here: blocked Recvs wake with `CancelledError`."""
        now = time.monotonic()
        with self._lock:
            for old in [s for s, (_, t) in self._aborted.items() if now - t > ABORTED_MEMORY_S]:
                del self._aborted[old]
            self._aborted[step_id] = (error, now)
            state = self._get(step_id)
            state.error = state.error or error
        state.cancellation.cancel(error)
        state.rendezvous.abort(error)
        with self._lock:
            self._release(step_id, state)

    def abort_all(self, error: BaseException) -> None:
        with self._lock:
            ids = list(self._steps)
        for step_id in ids:
            self.abort(step_id, error)


class WorkerService:
    """The state and RPC handlers of one task (see the module docstring)."""

    def __init__(self, cluster: ClusterSpec, job_name: str, task_index: int, *,
                 token: str | None = None, tls: rpc.TlsConfig | None = None,
                 target: str = "cpu", resources: ResourceManager | None = None) -> None:
        self.cluster = cluster
        self.job_name = job_name
        self.task_index = task_index
        self.token = token
        self.tls = tls
        self.target = target
        self.task_name = f"/job:{job_name}/replica:0/task:{task_index}"
        self.address = cluster.task_address(job_name, task_index)
        self.devices = DeviceManager(job_name, 0, task_index)
        self.resources = resources if resources is not None else ResourceManager()
        self.steps = StepTable(self)
        self._graphs: dict[str, Any] = {}
        self._graphs_lock = threading.Lock()
        self._handles = itertools.count(1)

    def client(self, address: str) -> rpc.WorkerClient | LocalClient:
        return client_for(address, self.token, self.tls)

    def handlers(self) -> dict[str, rpc.Handler]:
        return {"GetStatus": self.get_status, "RegisterGraph": self.register_graph,
                "DeregisterGraph": self.deregister_graph, "RunGraph": self.run_graph,
                "RecvTensor": self.recv_tensor, "AbortStep": self.abort_step,
                "ResetContainers": self.reset_containers}

    # ----------------------------------------------------------------- handlers
    def get_status(self, header: dict, tensors: list, context: Any) -> tuple[dict, list]:
        return {"task": self.task_name, "job": self.job_name, "index": self.task_index,
                "devices": [d.name for d in self.devices.devices],
                "cluster": self.cluster.to_json(), "graphs": len(self._graphs),
                "steps": len(self.steps)}, []

    def register_graph(self, header: dict, tensors: list, context: Any) -> tuple[dict, list]:
        from ...compiler.parser import parse_graph
        from ...compiler.verifier import verify
        if len(tensors) != 1 or getattr(tensors[0], "dtype", None) != np.uint8:
            raise InvalidArgumentError("RegisterGraph needs the graph's IR text as one u8 "
                                       "tensor")
        try:
            text = tensors[0].tobytes().decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgumentError("RegisterGraph: the graph text is not UTF-8") from None
        graph = parse_graph(text, source_name=f"graph for {self.task_name}")
        verify(graph)
        self._check_devices(graph)
        create_graph_resources(graph, self.resources)
        target = str(header.get("target") or self.target)
        exe = _executable(graph, target, self.resources)
        handle = f"{self.job_name}{self.task_index}-g{next(self._handles)}"
        peers = self._peers(header.get("cluster"))
        now = time.monotonic()
        with self._graphs_lock:
            for old, (_, used, _) in list(self._graphs.items()):
                if now - used[0] > GRAPH_IDLE_S:  # its master is gone (or re-registers)
                    del self._graphs[old]
            self._graphs[handle] = (exe, [now], peers)
        log.debug("%s: registered %s (%d nodes, target %s)", self.task_name, handle,
                  len(graph.nodes), target)
        return {"handle": handle}, []

    def _peers(self, cluster_json: Any) -> dict[tuple[str, int], str]:
        """The tasks of the master's cluster (JSON) that this task's spec lacks, by (job,
        index): where a Recv of this graph pulls from a task the master added (the
        client's own task of a connected process)."""
        if not cluster_json:
            return {}
        from .cluster import as_cluster_spec
        try:
            theirs = as_cluster_spec(json.loads(str(cluster_json)))
        except (ValueError, TypeError, InvalidArgumentError) as e:
            raise InvalidArgumentError(f"RegisterGraph: a malformed cluster spec: {e}") from None
        known = {(job, index) for job, index, _ in self.cluster.tasks()}
        return {(job, index): address for job, index, address in theirs.tasks()
                if (job, index) not in known}

    def _check_devices(self, graph: Graph) -> None:
        for node in graph.nodes:
            device = node.assigned_device
            if device is None:
                continue
            job, task = task_of_device(device)
            if (job, task) != (self.job_name, self.task_index):
                raise InvalidArgumentError(
                    f"node '{node.name}' is placed on {device}, which is not a device of "
                    f"{self.task_name}", **node.error_context())
            self.devices.lookup(device)  # raises, listing this task's devices

    def reset_containers(self, header: dict, tensors: list, context: Any) -> tuple[dict, list]:
        """``Session.reset``: drop the values of this task's resources in the containers
        named (all when None). Every resource here is in the default container ``""``
        (there is no ``tf.container``), so a list without it resets nothing."""
        from ..queues import close_all_queues
        containers = header.get("containers")
        if containers is not None and "" not in containers:
            return {"reset": 0}, []
        close_all_queues(self.resources)
        return {"reset": self.resources.reset()}, []

    def deregister_graph(self, header: dict, tensors: list, context: Any) -> tuple[dict, list]:
        with self._graphs_lock:
            self._graphs.pop(str(header.get("handle")), None)
        return {}, []

    def run_graph(self, header: dict, tensors: list, context: Any) -> tuple[dict, list]:
        handle = str(header.get("handle"))
        entry = self._graphs.get(handle)
        exe = None if entry is None else entry[0]
        peers = {} if entry is None else entry[2]
        if entry is not None:
            entry[1][0] = time.monotonic()
        if exe is None:
            # the master matches "<task> has no graph": it knows the task ran nothing
            raise NotFoundError(f"{self.task_name} has no graph {handle!r} (was the task "
                                f"restarted, or the graph idle for {GRAPH_IDLE_S:g} s? the "
                                f"master registers it again)")
        step_id = int(header["step"])
        timeout = header.get("timeout")
        state = self.steps.begin(step_id, "run")
        state.rendezvous.peers.update(peers)
        done = threading.Event()

        def caller_gone() -> None:  # the master died or gave up: do not wait forever
            if not done.is_set():
                self.steps.abort(step_id, CancelledError(
                    f"the client of step {step_id} went away"))

        context.add_callback(caller_gone)
        trace: list | None = [] if header.get("trace") else None
        try:
            results = exe.run(tensors, timeout=timeout, step_id=step_id,
                              rendezvous=state.rendezvous, cancellation=state.cancellation,
                              trace=trace)
        finally:
            done.set()
            self.steps.end(step_id, state, "run")
        if trace is not None:  # node timings on the wall clock, for the master's timeline
            from ..profiler import to_records
            return {"trace": to_records(trace)}, results
        return {}, results

    def recv_tensor(self, header: dict, tensors: list, context: Any) -> tuple[dict, list]:
        step_id, key = int(header["step"]), str(header["key"])
        wait = float(header.get("wait", PULL_WAIT_S))
        end = time.monotonic() + wait
        state = self.steps.begin(step_id, "pull")
        try:
            while True:
                try:
                    # a timed-out recv withdraws without taking the value
                    value = state.rendezvous.local.recv(
                        key, timeout=max(0.0, min(POLL_S, end - time.monotonic())))
                    break
                except DeadlineExceededError:
                    if not context.is_active():
                        raise CancelledError(f"the receiver of '{key}' went away") from None
                    if time.monotonic() >= end:
                        return {"pending": True}, []
        finally:
            self.steps.end(step_id, state, "pull")
        return {}, [value]

    def abort_step(self, header: dict, tensors: list, context: Any) -> tuple[dict, list]:
        error = wire.error_from_header(header) or CancelledError("aborted by the client")
        self.steps.abort(int(header["step"]), error)
        return {}, []


def _check_unauthenticated(address: str, insecure: bool) -> None:
    """A server with no token runs any registered graph for anyone who can reach it
    (a Save op writes files): only on loopback, unless the caller insists."""
    from .cluster import parse_address
    host, _ = parse_address(address)
    loopback = host in ("localhost", "[::1]") or host.startswith("127.")
    if not loopback and not insecure:
        raise InvalidArgumentError(
            f"refusing to serve {address} without a cluster token: anyone reaching it could "
            f"run graphs (and write files) as this user. Set TW_CONFIG's 'token' or TW_TOKEN "
            f"(tensorweave launch does), or pass insecure=True / --insecure")
    log.warning("serving %s without a cluster token: any local process may call it",
                address)


def _executable(graph: Graph, target: str, resources: ResourceManager) -> Any:
    """A dataflow executable of a registered partition with `target`'s per-node kernels
    (Send/Recv graphs run on the dataflow executor)."""
    from ..dataflow import DataflowExecutable
    if target == "cpu":
        from ...targets import cpu
        cpu._register_with_executor()
    return DataflowExecutable(graph, target, resources)


class Server:
    """This task's server (``tf.train.Server``): binds the task's address from `cluster`
    and serves its worker service until `stop` (or the process ends).

    ``Server(cluster, job_name="ps", task_index=0)``; `target` is ``grpc://host:port``,
    what ``Session(server.target)`` connects to. `token` defaults to ``TW_CONFIG``'s
    (or ``TW_TOKEN``): calls without it are refused. A server without a token accepts
    any caller, so it may only listen on a loopback address unless `insecure` says
    otherwise. `resources` holds the task's variables and queues (default: a manager of
    its own)."""

    def __init__(self, cluster: ClusterSpec | dict, job_name: str | None = None,
                 task_index: int | None = None, protocol: str = "grpc", config: Any = None,
                 start: bool = True, *, token: str | None = None,
                 tls: rpc.TlsConfig | None = None, target: str = "cpu",
                 max_workers: int = 64, resources: ResourceManager | None = None,
                 insecure: bool = False) -> None:
        from .cluster import as_cluster_spec
        if protocol != "grpc":
            raise InvalidArgumentError(f"only the 'grpc' protocol is supported, got {protocol!r}")
        self.cluster = as_cluster_spec(cluster)
        if job_name is None:
            if len(self.cluster.jobs) != 1:
                raise InvalidArgumentError(f"job_name is needed: the cluster has jobs "
                                           f"{self.cluster.jobs}")
            job_name = self.cluster.jobs[0]
        if task_index is None:
            if self.cluster.num_tasks(job_name) != 1:
                raise InvalidArgumentError(f"task_index is needed: job {job_name!r} has "
                                           f"{self.cluster.num_tasks(job_name)} tasks")
            task_index = self.cluster.task_indices(job_name)[0]
        self.address = self.cluster.task_address(job_name, task_index)
        if token is None:
            token = default_token()
        if not token:
            _check_unauthenticated(self.address, insecure)
        self._grpc = grpc.server(futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix=f"tw-{job_name}{task_index}"),
            options=rpc.SERVER_OPTIONS)
        try:
            port = (self._grpc.add_insecure_port(self.address) if tls is None else
                    self._grpc.add_secure_port(self.address, tls.server_credentials()))
        except RuntimeError as e:
            port = 0
            reason = str(e)
        else:
            reason = "the address is in use or not local"
        if not port:
            raise UnavailableError(f"/job:{job_name}/replica:0/task:{task_index} cannot listen "
                                   f"on {self.address}: {reason}")
        self._bound_port(job_name, task_index, port)
        self.service = WorkerService(self.cluster, job_name, task_index, token=token, tls=tls,
                                     target=target, resources=resources)
        self._grpc.add_generic_rpc_handlers((rpc.generic_handler(
            self.service.handlers(), token, self.service.task_name),))
        self._started = False
        self._stopped = threading.Event()
        if start:
            self.start()

    @classmethod
    def create_local_server(cls, config: Any = None, start: bool = True) -> Server:
        """A one-task in-process server on a free loopback port (TensorFlow's
        ``tf.train.Server.create_local_server``): job ``localhost``, task 0;
        ``Session(server.target)`` runs graphs on it, and its variables outlive
        sessions."""
        return cls({"localhost": ["localhost:0"]}, "localhost", 0, config=config, start=start)

    def _bound_port(self, job_name: str, task_index: int, port: int) -> None:
        """An address with port 0 asks for a free port, as TensorFlow's: the task's
        address in the spec becomes the one bound (what peers and sessions reach)."""
        from .cluster import parse_address
        host, asked = parse_address(self.address)
        if asked != 0:
            return
        self.address = f"{host}:{port}"
        jobs = {j: dict(enumerate(t)) if isinstance(t, list) else dict(t)
                for j, t in self.cluster.as_dict().items()}
        jobs[job_name][task_index] = self.address
        self.cluster = ClusterSpec(jobs)

    @property
    def target(self) -> str:
        """``grpc://host:port``: give it to ``Session``."""
        return f"grpc://{self.address}"

    @property
    def server_def(self) -> dict[str, Any]:
        return {"cluster": self.cluster.as_dict(), "job_name": self.service.job_name,
                "task_index": self.service.task_index, "protocol": "grpc"}

    @property
    def resources(self) -> ResourceManager:
        """The task's variables and queues."""
        return self.service.resources

    def start(self) -> None:
        """Start serving (done by the constructor unless ``start=False``)."""
        if not self._started:
            self._grpc.start()
            self._started = True
            with _local_lock:
                _local_services[self.address] = self.service
            log.info("%s serving at %s", self.service.task_name, self.address)

    def join(self) -> None:
        """Block until the server stops."""
        self._stopped.wait()

    def stop(self, grace: float | None = 1.0) -> None:
        """Stop serving: running steps are aborted, then the port is released."""
        from ...errors import AbortedError
        from ..queues import close_all_queues
        with _local_lock:
            if _local_services.get(self.address) is self.service:
                del _local_services[self.address]
        self.service.steps.abort_all(AbortedError(f"{self.service.task_name} is shutting down"))
        close_all_queues(self.service.resources)
        self._grpc.stop(grace).wait()
        self._stopped.set()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<Server {self.service.task_name} at {self.address}>"


__all__ = ["LocalClient", "Server", "StepTable", "TaskRendezvous", "WorkerService", "client_for",
           "task_of_device"]
