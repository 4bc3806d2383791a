"""Structural equality of graphs, for tests of the text form and of passes.

Two graphs are equal when they have the same name, arguments (types and names), nodes in
the same order (op, name, inputs and control inputs referring to corresponding values and
nodes, attributes, requested and assigned devices, source location, output types and,
recursively, regions) and results (values and names). SSA identity does not matter,
only which positions values come from. Attribute values compare exactly: floats by their
bits (so NaN equals NaN with the same payload and -0.0 differs from 0.0), NumPy arrays
by dtype, shape and raw bytes, dtypes by identity, tuples and lists element-wise.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from .dtypes import DType
from .ir import Graph, Node, Value
from .types import Type


def graphs_equal(a: Graph, b: Graph, *, check_names: bool = True, check_locs: bool = True) -> bool:
    """True when `a` and `b` are structurally equal (see the module docstring).

    `check_names=False` ignores node, argument, result and graph names;
    `check_locs=False` ignores source locations.
    """
    return graph_diff(a, b, check_names=check_names, check_locs=check_locs) is None


def graph_diff(a: Graph, b: Graph, *, check_names: bool = True, check_locs: bool = True) -> str | None:
    """The first difference between `a` and `b` as a sentence, or None when they are equal."""
    return _Differ(check_names, check_locs).graph(a, b, {}, f"graph '{a.name}'")


def attr_values_equal(x: Any, y: Any) -> bool:
    """Exact equality of two attribute values (bitwise for floats and arrays)."""
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == y.dtype
                and x.shape == y.shape and np.ascontiguousarray(x).tobytes()
                == np.ascontiguousarray(y).tobytes())
    if isinstance(x, (bool, np.bool_)) or isinstance(y, (bool, np.bool_)):
        return isinstance(x, (bool, np.bool_)) and isinstance(y, (bool, np.bool_)) and bool(x) == bool(y)
    if isinstance(x, (float, np.floating)) or isinstance(y, (float, np.floating)):
        return (isinstance(x, (float, np.floating)) and isinstance(y, (float, np.floating))
                and _f64_bits(x) == _f64_bits(y))
    if isinstance(x, (int, np.integer)) and isinstance(y, (int, np.integer)):
        return int(x) == int(y)
    if isinstance(x, (tuple, list)) or isinstance(y, (tuple, list)):
        return (isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)) and len(x) == len(y)
                and all(attr_values_equal(p, q) for p, q in zip(x, y)))
    if isinstance(x, DType) or isinstance(y, DType):
        return x is y
    if isinstance(x, Type) or isinstance(y, Type):
        return isinstance(x, Type) and isinstance(y, Type) and x == y
    return type(x) is type(y) and x == y


def _f64_bits(x: float) -> bytes:
    return struct.pack("<d", float(x))


def _show(v: Any) -> str:
    return repr(v) if not isinstance(v, np.ndarray) else f"array({v.dtype}, shape={v.shape})"


class _Differ:
    """Walks two graphs in step; `vmap` maps ids of values and nodes of `a` to `b`'s."""

    def __init__(self, check_names: bool, check_locs: bool) -> None:
        self.check_names = check_names
        self.check_locs = check_locs

    def graph(self, a: Graph, b: Graph, outer: Mapping[int, Any], where: str) -> str | None:
        vmap: dict[int, Any] = dict(outer)
        if self.check_names and a.name != b.name:
            return f"{where}: name {a.name!r} vs {b.name!r}"
        diff = self.args(a, b, vmap, where)
        if diff:
            return diff
        for i, (na, nb) in enumerate(zip(a.nodes, b.nodes)):
            diff = self.node(na, nb, vmap, f"{where}, node {i} ('{na.name}')")
            if diff:
                return diff
            vmap[id(na)] = nb
            for va, vb in zip(na.outputs, nb.outputs):
                vmap[id(va)] = vb
        if len(a.nodes) != len(b.nodes):
            return f"{where}: {len(a.nodes)} nodes vs {len(b.nodes)}"
        return self.results(a, b, vmap, where)

    def args(self, a: Graph, b: Graph, vmap: dict[int, Any], where: str) -> str | None:
        if len(a.args) != len(b.args):
            return f"{where}: {len(a.args)} arguments vs {len(b.args)}"
        for i, (va, vb) in enumerate(zip(a.args, b.args)):
            if va.type != vb.type:
                return f"{where}: argument {i} has type {va.type} vs {vb.type}"
            vmap[id(va)] = vb
        if self.check_names and a.arg_names != b.arg_names:
            return f"{where}: argument names {a.arg_names} vs {b.arg_names}"
        return None

    def results(self, a: Graph, b: Graph, vmap: dict[int, Any], where: str) -> str | None:
        if len(a.results) != len(b.results):
            return f"{where}: {len(a.results)} results vs {len(b.results)}"
        for i, (va, vb) in enumerate(zip(a.results, b.results)):
            if not self.same_value(va, vb, vmap):
                return f"{where}: result {i} is {_value_name(va)} vs {_value_name(vb)}"
        if self.check_names and a.result_names != b.result_names:
            return f"{where}: result names {a.result_names} vs {b.result_names}"
        return None

    def same_value(self, va: Value, vb: Value, vmap: Mapping[int, Any]) -> bool:
        # A value defined outside both graphs (broken IR) only matches itself.
        return vmap.get(id(va), va) is vb

    def node(self, a: Node, b: Node, vmap: dict[int, Any], where: str) -> str | None:
        for check in (self.node_header, self.node_edges, self.node_attrs, self.node_outputs):
            diff = check(a, b, vmap, where)
            if diff:
                return diff
        if len(a.regions) != len(b.regions):
            return f"{where}: {len(a.regions)} regions vs {len(b.regions)}"
        for i, (ra, rb) in enumerate(zip(a.regions, b.regions)):
            diff = self.graph(ra, rb, vmap, f"{where}, region {i}")
            if diff:
                return diff
        return None

    def node_header(self, a: Node, b: Node, vmap: Mapping[int, Any], where: str) -> str | None:
        fields = [("op", a.op, b.op), ("device", a.device, b.device),
                  ("assigned device", a.assigned_device, b.assigned_device)]
        if self.check_names:
            fields.append(("name", a.name, b.name))
        if self.check_locs:
            fields.append(("source location", a.loc, b.loc))
        for label, x, y in fields:
            if x != y:
                return f"{where}: {label} {x!r} vs {y!r}"
        return None

    def node_edges(self, a: Node, b: Node, vmap: Mapping[int, Any], where: str) -> str | None:
        if len(a.inputs) != len(b.inputs):
            return f"{where}: {len(a.inputs)} inputs vs {len(b.inputs)}"
        for i, (va, vb) in enumerate(zip(a.inputs, b.inputs)):
            if not self.same_value(va, vb, vmap):
                return f"{where}: input {i} is {_value_name(va)} vs {_value_name(vb)}"
        ca = [vmap.get(id(c), c) for c in a.control_inputs]
        if len(ca) != len(b.control_inputs) or any(x is not y for x, y in zip(ca, b.control_inputs)):
            return (f"{where}: control inputs {[c.name for c in a.control_inputs]} vs "
                    f"{[c.name for c in b.control_inputs]}")
        return None

    def node_attrs(self, a: Node, b: Node, vmap: Mapping[int, Any], where: str) -> str | None:
        if set(a.attrs) != set(b.attrs):
            return f"{where}: attribute names {sorted(a.attrs)} vs {sorted(b.attrs)}"
        for key in sorted(a.attrs):
            if not attr_values_equal(a.attrs[key], b.attrs[key]):
                return f"{where}: attribute '{key}' is {_show(a.attrs[key])} vs {_show(b.attrs[key])}"
        return None

    def node_outputs(self, a: Node, b: Node, vmap: Mapping[int, Any], where: str) -> str | None:
        ta, tb = [v.type for v in a.outputs], [v.type for v in b.outputs]
        if ta != tb:
            return f"{where}: output types {[str(t) for t in ta]} vs {[str(t) for t in tb]}"
        return None


def _value_name(v: Value) -> str:
    try:
        return v.name
    except (IndexError, AttributeError):
        return repr(v)


__all__ = ["graphs_equal", "graph_diff", "attr_values_equal"]
