"""``tw.config.experimental_connect_to_cluster``: run `@tw.compile` functions on a cluster.

After ``tw.config.experimental_connect_to_cluster(cluster)``, ops that a function places
with ``tw.device("/job:worker/task:1")`` run on that task; the rest run on the client's
own task (``/job:localhost/task:0`` unless `job_name`/`task_index` say otherwise), which
is added to the cluster on a free loopback port when the spec does not list it, and is
served by this process so that other tasks can pull tensors from it. ``tw.Variable``s live
in this process (the client's task); variables meant to live on PS tasks are made with
the v1 API (``tf.Variable`` under ``replica_device_setter``) for now.
"""

from __future__ import annotations

from typing import Any

from ..runtime.distributed.cluster import ClusterSpec, as_cluster_spec, default_token
from ..runtime.distributed.connection import set_cluster_compiler
from ..runtime.distributed.server import Server
from ..runtime.resources import default_resource_manager
from .launch import free_ports
from .master import Cluster, compile_for_cluster

_state: dict[str, Any] = {}


def experimental_connect_to_cluster(cluster_spec_or_resolver: ClusterSpec | dict | str,
                                    job_name: str = "localhost", task_index: int = 0,
                                    protocol: str | None = None,
                                    token: str | None = None) -> Cluster:
    """Connect this process to a cluster (TensorFlow 2's function of this name); returns
    the `Cluster`. Connecting again replaces the previous connection."""
    spec = as_cluster_spec(cluster_spec_or_resolver)
    if job_name not in spec.jobs or task_index not in spec.task_indices(job_name):
        data = {j: dict(zip(spec.task_indices(j), spec.job_tasks(j))) for j in spec.jobs}
        data.setdefault(job_name, {})[task_index] = f"127.0.0.1:{free_ports(1)[0]}"
        spec = ClusterSpec(data)
    disconnect()
    token = token if token is not None else default_token()
    server = Server(spec, job_name, task_index, protocol=protocol or "grpc", token=token,
                    resources=default_resource_manager())
    cluster = Cluster(cluster=spec, task=f"/job:{job_name}/task:{task_index}", token=token)
    _state.update(server=server, cluster=cluster)
    set_cluster_compiler(lambda graph, target: compile_for_cluster(
        _variables_on_client(graph, cluster.task), cluster,
        "cpu" if target == "cpu" else "reference"))
    return cluster


def _variables_on_client(graph: Any, task: str) -> Any:
    """`graph` with every variable handle (regions included) requested on the client's
    `task`, where ``tw.Variable``s live: a handle that followed a ``tw.device`` scope
    to another task would name a second, fresh variable there (an update to it silently
    lost, a read of it uninitialized). Ops using the variable follow its handle."""
    for node in graph.walk():
        if node.op == "VarHandle":
            node.device = task
    return graph


def connected_cluster() -> Cluster | None:
    """The cluster this process is connected to, if any."""
    return _state.get("cluster")


def disconnect() -> None:
    """Back to local execution: stop the client's task server; functions traced after
    this compile locally again."""
    set_cluster_compiler(None)
    server = _state.pop("server", None)
    _state.pop("cluster", None)
    if server is not None:
        server.stop(grace=0.5)


__all__ = ["connected_cluster", "disconnect", "experimental_connect_to_cluster"]
