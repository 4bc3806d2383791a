"""Gathers straight from variables: ``Gather(ReadVariable(v), ids)`` becomes
``ResourceGather(v, ids)`` when the read feeds nothing else.

A ReadVariable copies the whole variable; an embedding lookup needs a few rows of it. The
rewrite makes a lookup read only those rows, and, since ResourceGather uses the variable's
handle, placement puts it on the variable's task: on a parameter server only the looked-up
rows cross the network (the paper's Gather on each shard's own task). Part of the
``optimized`` stage; autodiff has already run (gradients were built when the graph was
traced), so Gather's sparse gradient is unaffected.
"""

from __future__ import annotations

from ..compiler.ir import Graph, Node, Value
from ..compiler.types import ResourceType


def gather_from_variables(graph: Graph) -> None:
    """Rewrite every ``Gather(ReadVariable(v), ids)`` (axis 0, no batch dims) whose read
    has no other use into ``ResourceGather(v, ids)``, in `graph` and its regions. Rewrites
    in place and returns None.

    The lookup now reads the variable where the Gather stood, so whatever waited for the
    read (the variable's next update, by the automatic control dependencies) waits for
    the ResourceGather instead; a read that something before the Gather waits for (an
    update between a snapshot and its lookup) keeps its Gather, which reads the
    snapshot."""
    uses = _use_counts(graph)
    mapping: dict[Value, Value] = {}
    replaced: dict[Node, Node] = {}
    out: list[Node] = []
    waited_for: set[Node] = set()  # control inputs of the nodes in `out`
    for node in list(graph.nodes):
        for region in node.regions:
            gather_from_variables(region)
        read = node.inputs[0].producer if node.op == "Gather" else None
        if (read is None or read.graph is not graph or read.op != "ReadVariable"
                or node.attrs.get("axis", 0) != 0 or node.attrs.get("batch_dims", 0)
                or uses.get(node.inputs[0], 0) != 1
                or not isinstance(read.inputs[0].type, ResourceType)
                or read in waited_for):
            out.append(node)
            waited_for.update(node.control_inputs)
            continue
        new = graph.add_node("ResourceGather", [read.inputs[0], node.inputs[1]], {},
                             name=f"{node.name}/from_variable",
                             device=node.device or read.device, loc=node.loc,
                             control_inputs=[*read.control_inputs, *node.control_inputs])
        graph.nodes.pop()  # add_node appended it: it takes the Gather's place instead
        # ... and its name (placement reports, fetches by name and tests look for it)
        node.name, new.name = new.name, node.name
        out.append(new)
        waited_for.update(new.control_inputs)
        replaced[node] = new
        replaced[read] = new  # (nothing before it waits for the read: checked above)
        mapping[node.outputs[0]] = new.outputs[0]
    if not mapping:
        return
    for node in out:  # whoever waited for a Gather or its read waits for the replacement
        if any(c in replaced for c in node.control_inputs):
            node.control_inputs = list(dict.fromkeys(replaced.get(c, c)
                                                     for c in node.control_inputs))
    graph.nodes = out
    graph.replace_all_uses(mapping)


def _use_counts(graph: Graph) -> dict[Value, int]:
    counts: dict[Value, int] = {}
    for node in graph.walk():
        for v in node.inputs:
            counts[v] = counts.get(v, 0) + 1
    for v in graph.results:
        counts[v] = counts.get(v, 0) + 1
    return counts


__all__ = ["gather_from_variables"]
