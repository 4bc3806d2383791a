"""Specializing a Session's step to the shapes fed to placeholders of unknown rank.

A ``tf.placeholder`` made without a shape has an unknown rank, and so may what is
computed from it (`compiler/unknown_rank.py`). Before a pruned subgraph is compiled, its
fed arguments of unknown rank get the shape of the array fed and every type is inferred
again (`passes.shape_inference.specialize`), so passes and targets see known ranks only.
A Session compiles one step per combination of shapes fed to them (the cpu target
compiles one per shape for None dims too); the concrete shapes let every op's inference
work as on a graph built with those shapes (a squeeze of every size-1 dim, say).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...compiler import ir
from ...compiler.types import ResourceType, TensorType
from ...compiler.unknown_rank import is_unranked
from ...errors import UnimplementedError
from ...passes.shape_inference import specialize


def fed_shapes(feeds: Sequence[ir.Value], arrays: Sequence[np.ndarray]) -> tuple:
    """For each fed value of unknown rank, the shape of its array (None for the others):
    the part of a step's key that these shapes decide."""
    return tuple(np.shape(a) if is_unranked(v.type) else None for v, a in zip(feeds, arrays))


def specialize_to_feeds(sub: ir.Graph, shapes: Sequence[tuple | None]) -> ir.Graph:
    """`sub` (a pruned step whose arguments are the values fed, one entry per argument
    from `fed_shapes`) with known ranks everywhere; `sub` itself when it has no unknown
    rank. An output whose rank the shapes fed do not decide (its rank depends on values
    computed at run time) is an error naming its op and the user's line."""
    if not any(_unranked(v.type) for v in _values(sub)):
        return sub
    arg_types = [None if s is None else TensorType(a.type.dtype, s)
                 for a, s in zip(sub.args, shapes)]
    specialized = specialize(sub, arg_types)
    for node in _nodes_in_order(specialized):
        for out in node.outputs:
            if _unranked(out.type):
                raise UnimplementedError(
                    f"output {out.index} ({out.type}) still has an unknown rank once the "
                    f"graph is specialized to the shapes of the values fed: its rank "
                    f"depends on values computed at run time, which tensorweave's "
                    f"compiled steps need before they run; give the placeholders "
                    f"(tf.placeholder) shapes", **node.error_context())
    return specialized


def _unranked(t: object) -> bool:
    return is_unranked(t) or (isinstance(t, ResourceType) and is_unranked(t.value_type))


def _values(graph: ir.Graph) -> list[ir.Value]:
    """Every value of `graph` and of its regions: arguments and node outputs."""
    values = list(graph.args)
    for node in graph.nodes:
        values += node.outputs
        for region in node.regions:
            values += _values(region)
    return values


def _nodes_in_order(graph: ir.Graph) -> list[ir.Node]:
    """The nodes of `graph` in topological order, each followed by those of its regions
    (so the first node named is where an unknown rank starts)."""
    out = []
    for node in graph.topological_order():
        for region in node.regions:
            out += _nodes_in_order(region)
        out.append(node)
    return out
