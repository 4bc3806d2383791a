"""Pruning to fetches: the subgraph that computes some values and runs some ops.

This is how `Session.run` turns one big v1 graph into the small function that one
``(fetches, feeds)`` pair needs: fed values become function arguments (whatever computes
them is cut away), and only nodes that fetched values or target ops depend on (by data
or control edges) are kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..compiler.ir import Graph, Node, Value
from ..errors import InvalidArgumentError


def _fed_placeholder(node: Node, fed: set[Value]) -> bool:
    return node.op == "Placeholder" and any(v in fed for v in node.outputs)


def extract_subgraph(graph: Graph, fetches: Sequence[Value], targets: Sequence[Node] = (),
                     feeds: Sequence[Value] = (), feed_names: Sequence[str] | None = None,
                     name: str = "subgraph") -> Graph:
    """A new graph whose args are `feeds`, whose results are `fetches`, holding copies of
    the nodes of `graph` needed to compute the fetches and run the targets."""
    fed = set(feeds)
    needed: set[int] = set()
    stack: list[Node] = [v.producer for v in fetches if v not in fed and v.producer is not None]
    stack += list(targets)
    while stack:
        n = stack.pop()
        if id(n) in needed:
            continue
        needed.add(id(n))
        stack.extend(v.producer for v in n.inputs if v not in fed and v.producer is not None)
        # A control edge from a fed placeholder is satisfied by the feed, as TensorFlow
        # rewires it to the feed's node: the placeholder itself never runs.
        stack.extend(c for c in n.control_inputs if not _fed_placeholder(c, fed))
    out = Graph(name)
    vmap: dict[Value, Value] = {}
    names = feed_names or [v.name for v in feeds]
    for v, n in zip(feeds, names):
        vmap[v] = out.add_arg(v.type, n.replace(":", "_"))
    nmap: dict[Node, Node] = {}
    for n in graph.topological_order():
        if id(n) not in needed:
            continue
        for v in n.inputs:
            if v not in vmap:
                raise InvalidArgumentError(f"argument '{v.name}' of '{graph.name}' is needed "
                                           f"but not fed", **n.error_context())
        new = out.add_node(n.op, [vmap[v] for v in n.inputs], n.attrs, name=n.name,
                           control_inputs=[nmap[c] for c in n.control_inputs if c in nmap],
                           device=n.device, loc=n.loc, output_types=[v.type for v in n.outputs],
                           regions=[r.copy() for r in n.regions])
        new.assigned_device = n.assigned_device
        nmap[n] = new
        vmap.update(zip(n.outputs, new.outputs))
    out.set_results([vmap[v] for v in fetches])
    return out
