"""Common-subexpression elimination.

Two nodes compute the same thing when they apply the same op to the same inputs with
equal attributes, after the same control inputs, on the same requested (and assigned)
device, with the same output types. The later one is dropped and its readers (nodes,
results, nested regions, control edges) go to the earlier one. `Const` nodes with equal
values merge like any other node; so do `VarHandle`s naming the same variable.

Never merged: stateful ops (two reads of a variable may see different values), ops
with side effects, ops whose kernel needs a context (random numbers, feeds), and nodes
with regions. Attribute equality is exact: arrays by dtype, shape and bytes, floats by
bit pattern (so NaN equals NaN, and 0.0 differs from -0.0).

One walk in topological order with a hash table: linear in the size of the graph.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Hashable
from typing import Any

import numpy as np

from ..compiler.dtypes import DType
from ..compiler.ir import Graph, Node, Value
from ._rewrite import is_stateful, needs_context, remap_control_inputs


def cse(graph: Graph) -> None:
    """Merge duplicate computations in `graph` and in each nested region (separately).
    Rewrites in place and returns None."""
    table: dict[Hashable, Node] = {}
    vmap: dict[Value, Value] = {}
    cmap: dict[Node, list[Node]] = {}
    kept: list[Node] = []
    for node in graph.topological_order():
        node.inputs = [vmap.get(v, v) for v in node.inputs]
        remap_control_inputs(node, cmap)
        key = _key(node) if _mergeable(node) else None
        if key is not None:
            first = table.setdefault(key, node)
            if first is not node and _same_arrays(first.attrs, node.attrs):
                vmap.update(zip(node.outputs, first.outputs))
                cmap[node] = [first]
                continue
        kept.append(node)
    graph.nodes = kept
    graph.replace_all_uses(vmap)
    for node in kept:
        for region in node.regions:
            cse(region)


def _mergeable(node: Node) -> bool:
    if not node.outputs or node.regions or is_stateful(node):
        return False
    # A variable handle only names its variable; other context kernels draw random
    # numbers or read feeds, and two of them are different on purpose.
    return node.op == "VarHandle" or not needs_context(node)


def _key(node: Node) -> Hashable:
    return (node.op, tuple(node.inputs), attr_key(node.attrs), frozenset(node.control_inputs),
            node.device, node.assigned_device, tuple(attr_key(v.type) for v in node.outputs))


def attr_key(value: Any) -> Hashable:
    """A hashable key for an attribute value such that equal keys mean equal values.

    Arrays are keyed by dtype, shape and a digest of their bytes (`_same_arrays` then
    compares the bytes themselves); floats by their bit pattern; objects that cannot be
    hashed by identity, so they only equal themselves."""
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value).tobytes()
        return ("array", value.dtype.str, value.dtype.name, value.shape,
                hashlib.blake2b(data, digest_size=16).digest())
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if isinstance(value, (int, np.integer)):
        return ("int", int(value))
    if isinstance(value, (float, np.floating)):
        return ("float", struct.pack("<d", float(value)))
    if isinstance(value, (str, type(None), DType)):
        return ("atom", type(value).__name__, value)
    if isinstance(value, (tuple, list)):
        return ("seq", tuple(attr_key(x) for x in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), attr_key(v)) for k, v in value.items())))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return ("object", type(value).__qualname__, value)


def _arrays_in(value: Any) -> list[np.ndarray]:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for x in value for a in _arrays_in(x)]
    if isinstance(value, dict):
        return [a for k in sorted(value, key=str) for a in _arrays_in(value[k])]
    return []


def _same_arrays(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Byte-for-byte equality of the arrays in two attribute dicts whose keys matched
    (guards against a digest collision)."""
    left, right = _arrays_in(a), _arrays_in(b)
    return len(left) == len(right) and all(
        x is y or np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes()
        for x, y in zip(left, right))
