"""Running graphs on a cluster of tasks (TensorFlow's distributed runtime).

``tw.distribute.ClusterSpec`` names the tasks, ``tw.distribute.Server`` starts this
process's task, and a v1 ``Session("grpc://host:port")`` (or `Cluster` with
`compile_for_cluster`) runs a graph across them. The transport, the task's server and
the wire format are in `tensorweave.runtime.distributed`; the master (placement over
the cluster, one graph per task, steps) is `master`. ``tensorweave launch`` starts a
local cluster (`launch`).
"""

from __future__ import annotations

from ..runtime.distributed.cluster import ClusterSpec, TaskConfig, task_config_from_env
from ..runtime.distributed.rpc import TlsConfig
from ..runtime.distributed.server import Server
from .connect import connected_cluster, disconnect, experimental_connect_to_cluster
from .device_setter import (
    GreedyLoadBalancingStrategy,
    RoundRobinStrategy,
    byte_size_load_fn,
    replica_device_setter,
)
from .master import Cluster, DistributedExecutable, compile_for_cluster

__all__ = ["Cluster", "ClusterSpec", "DistributedExecutable", "GreedyLoadBalancingStrategy",
           "RoundRobinStrategy", "Server", "TaskConfig", "TlsConfig", "byte_size_load_fn",
           "compile_for_cluster", "connected_cluster", "disconnect",
           "experimental_connect_to_cluster", "replica_device_setter", "task_config_from_env"]
