"""Partitioning: Send/Recv pairs at every cross-device edge, then one graph per device.

`partition` rewrites a placed graph in place so that no data or control edge joins nodes
on different devices:

- a tensor computed on device A and read on device B goes through a ``Send`` on A and a
  ``Recv`` on B: exactly one pair per (tensor, destination device), however many nodes
  of B read it (values captured by a region count as read by the region's parent);
- a control edge from a node on A to a node on B becomes a dummy ``Const`` i1 on A (run
  after the source node), its Send on A and a Recv on B that the destination waits for;
  again one pair per (source node, destination device);
- graph arguments are fed to every partition that reads them, and results are read
  from the partition that computes them, so neither needs a transfer.

The rendezvous key of a pair is ``"{send_device};{tensor};{recv_device}"`` (``^node``
for control edges): unique per edge and stable across runs; at run time the step id is
appended. `split_by_device` then cuts the rewritten graph into `Partition`s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from ..compiler.ir import Graph, Node, Value
from ..compiler.types import TensorType
from ..errors import CompileError
from ..runtime.devices import DeviceSpec, default_device_manager
from ._rewrite import frozen, outer_uses
from .placement import REASON_ATTR


@dataclass
class Partition:
    """The nodes of one device as a graph of their own.

    `graph.args` are the original arguments it reads (in original order; `arg_indices`
    gives their positions in the original graph); `result_indices[i]` is the index of
    the original result that `graph.results[i]` provides."""

    device: str
    graph: Graph
    arg_indices: list[int]
    result_indices: list[int]


def transfer_key(send_device: str, tensor: str, recv_device: str) -> str:
    """The rendezvous key of the pair carrying `tensor` (``^node`` for a control edge)."""
    return f"{send_device};{tensor};{recv_device}"


def partition(graph: Graph) -> None:
    """Insert Send/Recv pairs at every edge of placed `graph` that crosses devices.
    Rewrites in place and returns None."""
    _require_placed(graph, "partition")
    _Partitioner(graph).run()


class _Partitioner:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.order = graph.topological_order()
        self.recvs: dict[tuple[Value, str], Value] = {}
        self.tokens: dict[tuple[Node, str], Node] = {}
        self.before: dict[Node, list[Node]] = {}
        self.after: dict[Node, list[Node]] = {}

    def run(self) -> None:
        for node in self.order:
            self._rewrite_inputs(node)
            self._rewrite_captures(node)
            self._rewrite_controls(node)
        nodes: list[Node] = []
        for node in self.order:
            nodes += self.before.get(node, [])
            nodes.append(node)
            nodes += self.after.get(node, [])
        self.graph.nodes = nodes

    def _crosses(self, v: Value, dst: str) -> bool:
        p = v.producer
        return p is not None and p.graph is self.graph and p.assigned_device != dst

    def _rewrite_inputs(self, node: Node) -> None:
        dst = node.assigned_device
        node.inputs = [self._recv(v, node) if self._crosses(v, dst) else v for v in node.inputs]

    def _rewrite_captures(self, node: Node) -> None:
        if not node.regions:
            return
        dst = node.assigned_device
        mapping = {v: self._recv(v, node) for v in _unique(outer_uses(node))
                   if self._crosses(v, dst)}
        for region in node.regions:
            region.replace_all_uses(mapping)

    def _rewrite_controls(self, node: Node) -> None:
        dst = node.assigned_device
        out: list[Node] = []
        for c in node.control_inputs:
            c = self._token(c, node) if c.assigned_device != dst else c
            if c not in out:
                out.append(c)
        node.control_inputs = out

    def _recv(self, v: Value, consumer: Node) -> Value:
        """The Recv output standing for `v` on `consumer`'s device (made once)."""
        dst = consumer.assigned_device
        known = self.recvs.get((v, dst))
        if known is not None:
            return known
        producer = v.producer
        if not isinstance(v.type, TensorType):
            raise CompileError(f"resource '{v.name}' is used on {dst} but lives on "
                               f"{producer.assigned_device}; resources cannot be sent "
                               f"between devices (colocate their users)", **consumer.error_context())
        recv = self._pair(v, v.name, consumer, anchor=producer)
        self.recvs[(v, dst)] = recv.outputs[0]
        return recv.outputs[0]

    def _token(self, source: Node, consumer: Node) -> Node:
        """The Recv that `consumer` waits for instead of a control edge from `source`."""
        dst = consumer.assigned_device
        known = self.tokens.get((source, dst))
        if known is not None:
            return known
        const = self.graph.add_node(
            "Const", [], {"value": frozen(np.array(False)), REASON_ATTR: "partition"},
            name=f"{source.name}/control_token", control_inputs=[source], loc=source.loc)
        const.assigned_device = source.assigned_device
        self.after.setdefault(source, []).append(const)
        recv = self._pair(const.outputs[0], f"^{source.name}", consumer, anchor=source)
        self.tokens[(source, dst)] = recv
        return recv

    def _pair(self, v: Value, label: str, consumer: Node, *, anchor: Node) -> Node:
        """A Send of `v` (listed after `anchor`, a node of the original order) and its Recv
        (listed before `consumer`); returns the Recv node."""
        producer = v.producer
        src, dst = producer.assigned_device, consumer.assigned_device
        endpoints = {"key": transfer_key(src, label, dst), "send_device": src, "recv_device": dst}
        base = f"{_sanitize(label)}/{{}}_{_short(dst)}"
        send = self.graph.add_node("Send", [v], {**endpoints, REASON_ATTR: "partition"},
                                   name=base.format("send"), loc=producer.loc)
        send.assigned_device = src
        recv = self.graph.add_node(
            "Recv", [], {**endpoints, "dtype": v.type.dtype, "shape": v.type.shape,
                         REASON_ATTR: "partition"}, name=base.format("recv"), loc=producer.loc)
        recv.assigned_device = dst
        self.after.setdefault(anchor, []).append(send)
        self.before.setdefault(consumer, []).append(recv)
        return recv


def split_by_device(graph: Graph) -> dict[str, Partition]:
    """One `Partition` per device of partitioned `graph`, in device order (a graph with
    no nodes gives one partition on the default device). Raises `CompileError` if an
    edge still crosses devices (run `partition` first)."""
    return _split(graph, lambda device: device)


def task_name(device: str) -> str:
    """The task a device belongs to: ``/job:ps/replica:0/task:1``."""
    spec = DeviceSpec.from_string(device)
    return DeviceSpec(spec.job, spec.replica or 0, spec.task or 0).to_string()


def split_by_task(graph: Graph, home: str | None = None) -> dict[str, Partition]:
    """One `Partition` per task of partitioned `graph` (its `device` field is the task's
    name, ``/job:worker/replica:0/task:0``): what a cluster's master registers on each
    task. Transfers between two devices of one task stay inside that task's graph.
    `home` (the client's task) gets a graph with no nodes, and results that are
    arguments no task reads."""
    return _split(graph, task_name, None if home is None else task_name(home))


def _split(graph: Graph, group_of: Callable[[str], str],
           home: str | None = None) -> dict[str, Partition]:
    _require_placed(graph, "split_by_device")
    _check_no_crossing(graph)
    groups: dict[str, list[Node]] = {}
    for n in graph.topological_order():
        groups.setdefault(group_of(n.assigned_device), []).append(n)
    if home is None:
        home = group_of(default_device_manager().default_device.name)
    if not groups:
        groups[home] = []
    devices = sorted(groups, key=lambda d: DeviceSpec.from_string(d).sort_key())
    readers = {d: _args_read(graph, groups[d]) for d in devices}
    owners = _result_owners(graph, devices, readers, home, group_of)
    return {d: _cut(graph, d, groups[d], readers[d], owners) for d in devices}


def _require_placed(graph: Graph, what: str) -> None:
    missing = [n.name for n in graph.nodes if not n.assigned_device]
    if missing:
        raise CompileError(f"{what} needs a placed graph (run the placement pass first): "
                           f"no assigned device on {', '.join(missing[:5])}"
                           + (" ..." if len(missing) > 5 else ""))


def _check_no_crossing(graph: Graph) -> None:
    for n in graph.nodes:
        reads = [v.producer for v in n.inputs] + list(n.control_inputs)
        if n.regions:
            reads += [v.producer for v in outer_uses(n)]
        for p in reads:
            if p is not None and p.graph is graph and p.assigned_device != n.assigned_device:
                raise CompileError(f"the edge from '{p.name}' ({p.assigned_device}) to "
                                   f"'{n.name}' ({n.assigned_device}) crosses devices: run "
                                   f"the partition pass first", **n.error_context())


def _args_read(graph: Graph, nodes: list[Node]) -> set[int]:
    """Indices of the arguments of `graph` that `nodes` (or their regions) read."""
    out: set[int] = set()
    for n in nodes:
        values: Iterable[Value] = n.inputs
        if n.regions:
            values = [*n.inputs, *outer_uses(n)]
        out.update(v.index for v in values if v.is_arg and v.graph is graph)
    return out


def _result_owners(graph: Graph, devices: list[str], readers: dict[str, set[int]],
                   home: str, group_of: Callable[[str], str] | None = None) -> list[str]:
    """The device whose partition returns each result: the one computing it; for a result
    that is an argument, the first partition reading it (else `home`'s, else the
    first)."""
    fallback = home if home in devices else devices[0]
    owners = []
    for r in graph.results:
        if r.producer is not None:
            owners.append(r.producer.assigned_device if group_of is None
                          else group_of(r.producer.assigned_device))
        else:
            owners.append(next((d for d in devices if r.index in readers[d]), fallback))
    return owners


def _cut(graph: Graph, device: str, nodes: list[Node], read: set[int],
         owners: list[str]) -> Partition:
    """The partition of `device`: copies of `nodes`, the arguments they read, the
    results this device owns."""
    result_indices = [i for i, d in enumerate(owners) if d == device]
    arg_indices = sorted(read | {graph.results[i].index for i in result_indices
                                 if graph.results[i].producer is None})
    out = Graph(f"{graph.name}_{_short(device)}")
    vmap: dict[Value, Value] = {}
    for i in arg_indices:
        vmap[graph.args[i]] = out.add_arg(graph.args[i].type, graph.arg_names[i])
    nmap: dict[Node, Node] = {}
    for n in nodes:
        new = out.add_node(n.op, [vmap[v] for v in n.inputs], n.attrs, name=n.name,
                           control_inputs=[nmap[c] for c in n.control_inputs], device=n.device,
                           loc=n.loc, output_types=[v.type for v in n.outputs],
                           regions=[r.copy_with_map(vmap)[0] for r in n.regions])
        new.assigned_device = n.assigned_device
        nmap[n] = new
        vmap.update(zip(n.outputs, new.outputs))
    out.set_results([vmap[graph.results[i]] for i in result_indices],
                    [graph.result_names[i] for i in result_indices])
    return Partition(device, out, arg_indices, result_indices)


def _short(device: str) -> str:
    """``cpu1`` for CPU:1 of this task, ``worker1_gpu0`` for another task's GPU:0."""
    spec = DeviceSpec.from_string(device)
    kind = f"{(spec.device_type or 'dev').lower()}{spec.device_index or 0}"
    if spec.job in (None, "localhost") and not spec.task and not spec.replica:
        return kind
    return f"{spec.job}{spec.task or 0}_{kind}"


def _sanitize(label: str) -> str:
    return label.replace(":", "_").replace("^", "ctrl_")


def _unique(values: Iterable[Value]) -> list[Value]:
    seen: dict[Value, None] = {}
    for v in values:
        seen.setdefault(v, None)
    return list(seen)


__all__ = ["Partition", "partition", "split_by_device", "split_by_task", "task_name",
           "transfer_key"]
