"""Dead-code elimination.

A node is live when a result needs it, when it has side effects (variable assignments,
or a region that holds one), or when a live node needs it through a data input, a
control input or a value captured by one of its regions. Everything else is dropped.
Regions are cleaned first (their results and effects are what they must keep), so an
enclosing graph no longer keeps alive what only a dead part of a region read.
"""

from __future__ import annotations

from ..compiler.ir import Graph, Node
from ._rewrite import has_side_effects, outer_uses


def dce(graph: Graph) -> None:
    """Remove the nodes of `graph` (and of its nested regions) that neither the results
    nor any side effect need. Rewrites in place and returns None."""
    for node in graph.nodes:
        for region in node.regions:
            dce(region)
    live = _live_nodes(graph)
    # remove_nodes also drops control edges into removed nodes; only dead nodes have
    # such edges, since a live node's control inputs are live.
    graph.remove_nodes([n for n in graph.nodes if n not in live])


def _live_nodes(graph: Graph) -> set[Node]:
    def local(values) -> list[Node]:
        return [v.producer for v in values if v.producer is not None and v.producer.graph is graph]

    stack: list[Node] = local(graph.results)
    stack += [n for n in graph.nodes if has_side_effects(n)]
    live: set[Node] = set()
    while stack:
        node = stack.pop()
        if node in live:
            continue
        live.add(node)
        stack += local(node.inputs)
        stack += node.control_inputs
        if node.regions:
            stack += local(outer_uses(node))
    return live
