"""Fusion (clustering): group elementwise ops, and the reductions they feed, into `Fusion`
nodes that a target compiles into one loop nest each.

Stage ``fused`` (cpu and gpu targets; the reference target runs graphs unfused):
`fuse`, in place.

What is fused
- elementwise ops: every op tagged ``elementwise`` (arithmetic, comparisons, logic,
  Select, Cast, AddN, Identity, StopGradient ...) plus BiasAdd (an Add that broadcasts
  along the last axis), ZerosLike, OnesLike and BroadcastTo; broadcasting is allowed;
- reductions (`REDUCTIONS`) over the trailing axes of their input (``reduce_sum(x, -1)``,
  ``reduce_max(x, [1, 2])`` of a rank-3 tensor, or all axes), together with the
  elementwise ops that compute their input: the softmax and cross-entropy patterns.

Rules
- only tensors of the dtypes in `FUSIBLE_DTYPES` (no f16/bf16 yet), never stateful ops,
  never across devices (a cluster's nodes share the requested and the assigned device);
- a reduction is a sink of its cluster: no member reads its output (the consumers of a
  reduction form their own cluster, which reads the reduced value with broadcasting);
- all reductions of one cluster reduce the same loop shape over the same trailing axes,
  and every other member's shape broadcasts to that loop shape;
- clusters stay convex: no path leaves a cluster and comes back into it, so the graph
  stays acyclic once each cluster is one node; a Send and the Recv with its key (the
  ``partitioned`` stage) count as an edge, so a value that goes to another device and
  comes back never joins both ends in one cluster (which would wait for itself);
- nothing downstream of a dataflow control-flow op (Switch, Merge, Enter, Exit,
  NextIteration, LoopCond: the ``lowered`` stage) is fused yet: dead tensors and frames
  are per node, and a cluster would share one deadness and one frame among its nodes.

Clusters grow greedily along data edges in topological order, so each is a maximal
connected set under these rules. A cluster that would be a lone Identity or
StopGradient (or BroadcastTo: a view) is left alone: there is nothing to compute.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from ..compiler.dtypes import bool_, float32, float64, int8, int16, int32, int64, uint8
from ..compiler.ir import Graph, Node, Value
from ..compiler.pipeline import register_stage
from ..compiler.registry import get_op
from ..compiler.types import TensorType

FUSIBLE_DTYPES = frozenset({float32, float64, int8, int16, int32, int64, uint8, bool_})
REDUCTIONS = frozenset({"Sum", "Mean", "Max", "Min", "Prod", "All", "Any"})
# Not tagged elementwise but computed element by element all the same.
EXTRA_ELEMENTWISE = frozenset({"BiasAdd", "ZerosLike", "OnesLike", "BroadcastTo"})
# Dataflow control flow: what runs downstream of these is decided per node at run time.
CONTROL_FLOW_OPS = frozenset({"Switch", "Merge", "Enter", "Exit", "NextIterationSource",
                              "NextIteration", "LoopCond"})
# Ops that compute nothing: not worth a kernel of their own.
PASS_THROUGH = frozenset({"Identity", "StopGradient", "BroadcastTo"})


# ------------------------------------------------------------------ what can be fused

def _tensor_types(node: Node) -> list[TensorType] | None:
    """The types of the node's inputs and outputs, or None if one is not a tensor."""
    types = [v.type for v in node.inputs] + [v.type for v in node.outputs]
    return types if all(isinstance(t, TensorType) for t in types) else None


def is_elementwise(node: Node) -> bool:
    """Elementwise in the sense of the fusion pass (see the module docstring)."""
    return "elementwise" in node.opdef.tags or node.op in EXTRA_ELEMENTWISE


def reduced_trailing_axes(node: Node) -> int | None:
    """For a reduction over the trailing k >= 1 axes of its input, k; otherwise None."""
    if node.op not in REDUCTIONS or not isinstance(node.inputs[0].type, TensorType):
        return None
    rank = node.inputs[0].type.rank
    axes = node.attrs.get("axes")
    axes = tuple(range(rank)) if axes is None else tuple(sorted(a % rank if rank else a
                                                               for a in axes))
    k = len(axes)
    if k == 0 or axes != tuple(range(rank - k, rank)):
        return None
    return k


def is_fusible(node: Node) -> bool:
    """Whether `node` may become part of a cluster."""
    opdef = get_op(node.op)
    if opdef.stateful or opdef.side_effects or node.regions or len(node.outputs) != 1:
        return False
    if not (is_elementwise(node) or reduced_trailing_axes(node) is not None):
        return False
    types = _tensor_types(node)
    return types is not None and all(t.dtype in FUSIBLE_DTYPES for t in types)


# ---------------------------------------------------------------------------- clusters

class _Cluster:
    """A set of nodes that will become one Fusion node."""

    __slots__ = ("nodes", "device", "reduce", "min_pos", "max_pos")

    def __init__(self, node: Node, pos: int) -> None:
        self.nodes: list[Node] = [node]
        self.device = (node.device, node.assigned_device)
        k = reduced_trailing_axes(node)
        # (loop shape, number of trailing reduced axes) once the cluster holds a reduction
        self.reduce: tuple[tuple, int] | None = (node.inputs[0].type.shape, k) if k else None
        self.min_pos = self.max_pos = pos


def _dims_compatible(a: Sequence, b: Sequence) -> bool:
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def _broadcasts_into(shape: Sequence, loop: Sequence) -> bool:
    """Whether `shape` broadcasts to `loop` without growing it (statically plausible)."""
    if len(shape) > len(loop):
        return False
    pad = len(loop) - len(shape)
    return all(d == 1 or d is None or e is None or d == e for d, e in zip(shape, loop[pad:]))


def _transfers(nodes: Sequence[Node]) -> list[tuple[Node, Node]]:
    """The (Send, Recv) pairs among `nodes` that share a rendezvous key."""
    sends = {n.attrs.get("key"): n for n in nodes if n.op == "Send"}
    return [(sends[n.attrs.get("key")], n) for n in nodes
            if n.op == "Recv" and n.attrs.get("key") in sends]


def _ordered(nodes: Sequence[Node], succ: dict[Node, list[Node]]) -> list[Node]:
    """`nodes` (already topologically ordered by their data and control edges) in an
    order that also respects the extra edges of `succ`, keeping the given order where
    it is valid."""
    pos = {n: i for i, n in enumerate(nodes)}
    pending = dict.fromkeys(nodes, 0)
    for n in nodes:
        for s in set(succ[n]):
            pending[s] += 1
    ready = [(pos[n], n) for n in nodes if pending[n] == 0]
    heapq.heapify(ready)
    order: list[Node] = []
    while ready:
        _, n = heapq.heappop(ready)
        order.append(n)
        for s in set(succ[n]):
            pending[s] -= 1
            if pending[s] == 0:
                heapq.heappush(ready, (pos[s], s))
    # (a Send whose Recv it waits for would deadlock at run time; keep the old order)
    return order if len(order) == len(nodes) else list(nodes)


class _Clustering:
    """Greedy clustering of one graph's nodes (no rewriting)."""

    def __init__(self, graph: Graph) -> None:
        nodes = graph.topological_order()
        self.succ: dict[Node, list[Node]] = {n: [] for n in nodes}
        for n in nodes:
            preds = {v.producer for v in n.inputs if v.producer is not None} | set(n.control_inputs)
            for p in preds:
                if p in self.succ:
                    self.succ[p].append(n)
        # A Send and the Recv with its key are an edge the graph does not show (the
        # partitioned stage): a value that leaves a device and comes back must not
        # let a cluster swallow both ends, which would wait for its own output.
        for send, recv in _transfers(nodes):
            self.succ[send].append(recv)
        self.order = _ordered(nodes, self.succ)
        self.pos = {n: i for i, n in enumerate(self.order)}
        self.cluster_of: dict[Node, _Cluster] = {}
        self.excluded = self._downstream_of_control_flow()

    def _downstream_of_control_flow(self) -> set[Node]:
        out = {n for n in self.order if n.op in CONTROL_FLOW_OPS}
        stack = list(out)
        while stack:
            for s in self.succ[stack.pop()]:
                if s not in out:
                    out.add(s)
                    stack.append(s)
        return out

    def run(self) -> list[_Cluster]:
        for n in self.order:
            if n in self.excluded or not is_fusible(n):
                continue
            self.cluster_of[n] = _Cluster(n, self.pos[n])
            for v in n.inputs:
                p = v.producer
                if p is None or p not in self.cluster_of:
                    continue
                producer, mine = self.cluster_of[p], self.cluster_of[n]
                if producer is not mine and self._compatible(producer, mine) \
                        and self._convex(producer, mine):
                    self._merge(producer, mine)
        unique = {id(c): c for c in self.cluster_of.values()}.values()
        return [c for c in unique
                if not (len(c.nodes) == 1 and c.nodes[0].op in PASS_THROUGH)]

    def _compatible(self, a: _Cluster, b: _Cluster) -> bool:
        """The merge of `a` and `b` keeps the rules of the module docstring."""
        if a.device != b.device:
            return False
        members = set(a.nodes) | set(b.nodes)
        for n in members:
            if any(v.producer in members and v.producer.op in REDUCTIONS for v in n.inputs):
                return False  # a reduction's output read inside its own cluster
        if a.reduce is not None and b.reduce is not None:
            (shape_a, k_a), (shape_b, k_b) = a.reduce, b.reduce
            if k_a != k_b or not _dims_compatible(shape_a, shape_b):
                return False
        reduce = a.reduce or b.reduce
        if reduce is None:
            return True
        loop = reduce[0]
        return all(_broadcasts_into(n.outputs[0].type.shape, loop)
                   for n in members if n.op not in REDUCTIONS)

    def _convex(self, a: _Cluster, b: _Cluster) -> bool:
        """No path leaves a ∪ b through another node and comes back into it."""
        members = set(a.nodes) | set(b.nodes)
        last = max(a.max_pos, b.max_pos)
        stack = [s for m in members for s in self.succ[m] if s not in members]
        seen: set[int] = set()
        while stack:
            n = stack.pop()
            group = self.cluster_of.get(n)
            key = id(group) if group is not None else id(n)
            if key in seen:
                continue
            seen.add(key)
            nodes = group.nodes if group is not None else [n]
            if min(self.pos[x] for x in nodes) > last:
                continue  # everything reachable from here comes after the merged cluster
            for x in nodes:
                for s in self.succ[x]:
                    if s in members:
                        return False
                    stack.append(s)
        return True

    def _merge(self, keep: _Cluster, gone: _Cluster) -> None:
        keep.nodes = sorted(keep.nodes + gone.nodes, key=self.pos.__getitem__)
        keep.reduce = keep.reduce or gone.reduce
        keep.min_pos = min(keep.min_pos, gone.min_pos)
        keep.max_pos = max(keep.max_pos, gone.max_pos)
        for n in gone.nodes:
            self.cluster_of[n] = keep


# --------------------------------------------------------------------------- rewriting

def _values_used_outside(graph: Graph, cluster_of: dict[Node, _Cluster]) -> set[Value]:
    """Values read outside the cluster that computes them: by a node of no cluster or of
    another cluster (nested regions included), or returned by `graph`."""
    used: set[Value] = set(graph.results)
    for n in graph.walk():
        mine = cluster_of.get(n) if n.graph is graph else None
        for v in n.inputs:
            if v.producer is not None and cluster_of.get(v.producer) is not mine:
                used.add(v)
    return used


def _cluster_boundary(cluster: _Cluster, used_outside: set[Value]
                      ) -> tuple[list[Value], list[Value]]:
    """The values the cluster reads from outside (first use first) and the member
    outputs used outside it."""
    members = set(cluster.nodes)
    inputs: dict[Value, None] = {}
    for n in cluster.nodes:
        for v in n.inputs:
            if v.producer not in members:
                inputs.setdefault(v, None)
    outputs = [v for n in cluster.nodes for v in n.outputs if v in used_outside]
    return list(inputs), outputs


def _build_region(cluster: _Cluster, inputs: list[Value], outputs: list[Value]) -> Graph:
    """A graph holding copies of the cluster's nodes: args = inputs, results = outputs."""
    region = Graph("fusion")
    vmap: dict[Value, Value] = {v: region.add_arg(v.type, _arg_name(v, i))
                                for i, v in enumerate(inputs)}
    for n in cluster.nodes:
        copy = Node(region, n.op, [vmap[v] for v in n.inputs], n.attrs,
                    [v.type for v in n.outputs], region.unique_name(n.name), loc=n.loc)
        region.nodes.append(copy)
        vmap.update(zip(n.outputs, copy.outputs))
    region.set_results([vmap[v] for v in outputs], [v.name.replace(":", "_") for v in outputs])
    return region


def _arg_name(v: Value, i: int) -> str:
    return v.name.replace(":", "_") if v.name else f"in{i}"


def _fusion_node(graph: Graph, cluster: _Cluster, used_outside: set[Value]
                 ) -> tuple[Node, list[Value]]:
    """A new Fusion node (appended to `graph`) computing the cluster; returns it and the
    member outputs its outputs replace."""
    members = set(cluster.nodes)
    inputs, outputs = _cluster_boundary(cluster, used_outside)
    region = _build_region(cluster, inputs, outputs)
    controls: dict[Node, None] = {}
    for n in cluster.nodes:
        for c in n.control_inputs:
            if c not in members:
                controls.setdefault(c, None)
    first = cluster.nodes[0]
    fused = graph.add_node("Fusion", inputs, name="fusion", regions=[region],
                           control_inputs=list(controls), device=first.device, loc=first.loc)
    fused.assigned_device = first.assigned_device
    return fused, outputs


def _redirect_control_edges(graph: Graph, fusion_of: dict[Node, Node]) -> None:
    """Control edges from or to cluster members now go from or to their Fusion node."""
    for g in graph._self_and_regions():
        for n in g.nodes:
            if any(c in fusion_of for c in n.control_inputs):
                new: dict[Node, None] = {}
                for c in n.control_inputs:
                    target = fusion_of.get(c, c)
                    if target is not n:
                        new.setdefault(target, None)
                n.control_inputs = list(new)


def find_clusters(graph: Graph) -> list[list[Node]]:
    """The clusters `fuse` would make, each as its nodes in topological order."""
    return [c.nodes for c in _Clustering(graph).run()]


def fuse(graph: Graph) -> None:
    """Replace each cluster of fusible nodes of `graph` by one ``Fusion`` node (in place),
    in the regions of functional control flow (If/While bodies) too, so a target can
    compile a loop body like any graph. Linear in the graph's size apart from the
    clustering itself: all clusters are rewritten in one sweep."""
    for node in graph.nodes:
        if node.op in ("If", "While"):
            for region in node.regions:
                fuse(region)
    clustering = _Clustering(graph)
    clusters = clustering.run()
    if not clusters:
        return
    kept = {id(c) for c in clusters}
    cluster_of = {n: c for n, c in clustering.cluster_of.items() if id(c) in kept}
    used_outside = _values_used_outside(graph, cluster_of)
    replacements: dict[Value, Value] = {}
    fusion_of: dict[Node, Node] = {}
    for c in sorted(clusters, key=lambda c: c.max_pos):
        fused, outputs = _fusion_node(graph, c, used_outside)
        replacements.update(zip(outputs, fused.outputs))
        fusion_of.update((n, fused) for n in c.nodes)
    graph.replace_all_uses(replacements)
    _redirect_control_edges(graph, fusion_of)
    graph.remove_nodes(list(fusion_of))
    graph.sort()


def _register() -> None:
    """Register stage ``fused`` (cpu and gpu targets) as the pipeline's last stage; a
    second import (`importlib.reload`) keeps the stage already there."""
    try:
        register_stage("fused", [fuse], targets=("cpu", "gpu"))
    except ValueError:  # "stage 'fused' exists"
        pass


_register()
