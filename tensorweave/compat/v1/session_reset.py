"""``tf.Session.reset(target, containers=None, config=None)``: reset the resource
containers of the cluster that `target` names.

TensorFlow resets the containers on every task of the cluster (variables lose their
values; queues, readers and the like are made anew, empty) and closes the sessions on
the master named by `target`. Here the master is each client process, so the sessions
closed are this process's sessions on `target` (their next run is an `AbortedError`);
another process's session keeps its registered steps, which find the variables
uninitialized. A local target (``""``) has nothing shared to reset, as in TensorFlow,
where reset is only implemented for distributed sessions.
"""

from __future__ import annotations

import weakref
from typing import Any

from ...errors import InvalidArgumentError

_cluster_sessions: weakref.WeakSet = weakref.WeakSet()
"""This process's open sessions on a cluster target (for `reset` to close)."""


def track(session: Any) -> None:
    """Remember a session on a cluster target, so that a `reset` of it closes it."""
    _cluster_sessions.add(session)


def reset(target: str, containers: Any = None, config: Any = None) -> None:
    """Reset `containers` (all when None) on every task of `target`'s cluster (those
    `config`'s ``device_filters`` match, when given), and close this process's sessions
    on `target`."""
    if not target:
        return
    if isinstance(containers, str):
        containers = [containers]
    if containers is not None:
        containers = list(containers)
        bad = [c for c in containers if not isinstance(c, str)]
        if bad:
            raise InvalidArgumentError(f"Session.reset: containers are names (strings), "
                                       f"got {bad!r}")
    from ...distribute.master import Cluster
    from ...runtime.distributed import rpc
    cluster = Cluster(target, device_filters=list(getattr(config, "device_filters", None)
                                                    or []))
    for session in list(_cluster_sessions):
        if session.sess_str == target:
            session._close_by_reset(target)
    for task in cluster.tasks:
        client = cluster.client(task)
        if isinstance(client, rpc.WorkerClient):
            client.wait_ready(cluster.connect_timeout)
        client.call("ResetContainers", {"containers": containers},
                    timeout=cluster.connect_timeout)
