"""The dataflow IR: `Graph`, `Node` and `Value`.

A `Graph` is one function in SSA form: block arguments (`Graph.args`), nodes kept in a
topological order, and results. A `Node` applies a registered op to input values and
produces output values; it may also carry control inputs (nodes that must run first),
attributes, a requested and an assigned device, a source location and regions (nested
graphs for functional control flow). A `Value` is one output of a node or one argument
of a graph and has a `Type`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import TensorWeaveError, VerificationError
from .types import Type


@dataclass(frozen=True)
class SourceLoc:
    """Where a node was created in the user's program."""

    file: str
    line: int
    column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class Value:
    """An SSA value: output `index` of `producer`, or argument `index` of `graph` when
    `producer` is None."""

    __slots__ = ("type", "producer", "index", "graph", "__weakref__")

    def __init__(self, type: Type, producer: Node | None, index: int, graph: Graph) -> None:
        self.type = type
        self.producer = producer
        self.index = index
        self.graph = graph

    @property
    def is_arg(self) -> bool:
        return self.producer is None

    @property
    def name(self) -> str:
        """TensorFlow-style name: ``node`` or ``node:i`` for outputs, ``arg`` for arguments."""
        if self.producer is None:
            return self.graph.arg_names[self.index]
        if len(self.producer.outputs) == 1:
            return self.producer.name
        return f"{self.producer.name}:{self.index}"

    def __repr__(self) -> str:
        return f"<Value {self.name}: {self.type}>"


_NAME_OK = re.compile(r"[^A-Za-z0-9_.\-/]")


class Node:
    """One operation in a graph. Create nodes with `Graph.add_node`."""

    __slots__ = ("op", "inputs", "control_inputs", "attrs", "outputs", "name", "device",
                 "assigned_device", "loc", "regions", "graph", "__weakref__")

    def __init__(self, graph: Graph, op: str, inputs: Sequence[Value], attrs: Mapping[str, Any],
                 output_types: Sequence[Type], name: str, *, control_inputs: Sequence[Node] = (),
                 device: str | None = None, loc: SourceLoc | None = None,
                 regions: Sequence[Graph] = ()) -> None:
        self.graph = graph
        self.op = op
        self.inputs: list[Value] = list(inputs)
        self.control_inputs: list[Node] = list(control_inputs)
        self.attrs: dict[str, Any] = dict(attrs)
        self.outputs: list[Value] = [Value(t, self, i, graph) for i, t in enumerate(output_types)]
        self.name = name
        self.device = device
        self.assigned_device: str | None = None
        self.loc = loc
        self.regions: list[Graph] = list(regions)
        for r in self.regions:
            r.parent = self

    @property
    def opdef(self):
        from .registry import get_op
        return get_op(self.op)

    def error_context(self) -> dict[str, str | None]:
        """Keyword arguments for `TensorWeaveError.with_context` naming this node."""
        return {"op": self.op, "node": self.name, "location": str(self.loc) if self.loc else None}

    def __repr__(self) -> str:
        ins = ", ".join(v.name for v in self.inputs)
        return f"<Node {self.name} = {self.op}({ins})>"


class Graph:
    """A function in SSA form: arguments, topologically ordered nodes, results."""

    def __init__(self, name: str = "main") -> None:
        self.name = name
        self.args: list[Value] = []
        self.arg_names: list[str] = []
        self.nodes: list[Node] = []
        self.results: list[Value] = []
        self.result_names: list[str] = []
        self.parent: Node | None = None
        self._names: set[str] = set()
        self._counters: dict[str, itertools.count] = {}

    # ----------------------------------------------------------------- building
    def unique_name(self, base: str) -> str:
        """A node name not used yet in this graph, derived from `base`."""
        base = _NAME_OK.sub("_", base) or "node"
        if base not in self._names:
            self._names.add(base)
            return base
        counter = self._counters.setdefault(base, itertools.count(1))
        while True:
            candidate = f"{base}_{next(counter)}"
            if candidate not in self._names:
                self._names.add(candidate)
                return candidate

    def rename(self, node: Node, name: str) -> str:
        """Give `node` the unused name derived from `name` (its old name is free again);
        returns the new name."""
        self._names.discard(node.name)
        node.name = self.unique_name(name)
        return node.name

    def add_arg(self, type: Type, name: str | None = None) -> Value:
        """Append a function argument of the given type."""
        value = Value(type, None, len(self.args), self)
        self.args.append(value)
        self.arg_names.append(self.unique_name(name or f"arg{len(self.args) - 1}"))
        return value

    def add_node(self, op: str, inputs: Sequence[Value] = (), attrs: Mapping[str, Any] | None = None,
                 *, name: str | None = None, control_inputs: Sequence[Node] = (),
                 device: str | None = None, loc: SourceLoc | None = None,
                 output_types: Sequence[Type] | None = None,
                 regions: Sequence[Graph] = ()) -> Node:
        """Create a node applying registered op `op`, append it and return it.

        Attributes are checked and completed with defaults from the op's declaration, and
        output types come from its type-inference function unless `output_types` is given.
        Errors name the op, the node and `loc`.
        """
        from .registry import get_op
        opdef = get_op(op)
        node_name = self.unique_name(name or opdef.default_name)
        try:
            full_attrs = opdef.complete_attrs(attrs or {})
            opdef.check_arity(len(inputs))
            for v in inputs:
                if not isinstance(v, Value):
                    raise VerificationError(f"input {v!r} is not an IR Value")
            if output_types is None:
                output_types = opdef.infer_types([v.type for v in inputs], full_attrs,
                                                 regions=regions)
        except TensorWeaveError as e:
            self._names.discard(node_name)
            raise e.with_context(op=op, node=node_name,
                                 location=str(loc) if loc else None) from None
        node = Node(self, op, inputs, full_attrs, output_types, node_name,
                    control_inputs=control_inputs, device=device, loc=loc, regions=regions)
        self.nodes.append(node)
        return node

    def set_results(self, values: Sequence[Value], names: Sequence[str] | None = None) -> None:
        """Set what the function returns."""
        self.results = list(values)
        self.result_names = list(names) if names is not None else [f"result{i}" for i in
                                                                    range(len(values))]

    # ---------------------------------------------------------------- analysis
    def topological_order(self) -> list[Node]:
        """Nodes ordered so that data and control inputs come first (stable: keeps the
        current order where it is already valid)."""
        position = {id(n): i for i, n in enumerate(self.nodes)}
        pending: dict[int, int] = {}
        users: dict[int, list[Node]] = {}
        for n in self.nodes:
            deps = {id(v.producer) for v in n.inputs if v.producer is not None
                    and id(v.producer) in position}
            deps |= {id(c) for c in n.control_inputs if id(c) in position}
            pending[id(n)] = len(deps)
            for d in deps:
                users.setdefault(d, []).append(n)
        import heapq
        ready = [(position[id(n)], n) for n in self.nodes if pending[id(n)] == 0]
        heapq.heapify(ready)
        order: list[Node] = []
        while ready:
            _, n = heapq.heappop(ready)
            order.append(n)
            for u in users.get(id(n), ()):
                pending[id(u)] -= 1
                if pending[id(u)] == 0:
                    heapq.heappush(ready, (position[id(u)], u))
        if len(order) != len(self.nodes):
            stuck = [n.name for n in self.nodes if pending[id(n)] > 0][:5]
            raise VerificationError(f"graph '{self.name}' has a cycle through {stuck}")
        return order

    def sort(self) -> None:
        """Reorder `nodes` topologically in place."""
        self.nodes = self.topological_order()

    def consumers(self) -> dict[Value, list[tuple[Node, int]]]:
        """Map each value to the (node, input index) pairs that read it (this graph only)."""
        out: dict[Value, list[tuple[Node, int]]] = {}
        for n in self.nodes:
            for i, v in enumerate(n.inputs):
                out.setdefault(v, []).append((n, i))
        return out

    def node_by_name(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def walk(self) -> Iterable[Node]:
        """Every node of this graph and of the regions nested in it, outer first."""
        for n in self.nodes:
            yield n
            for r in n.regions:
                yield from r.walk()

    # ---------------------------------------------------------------- rewriting
    def replace_all_uses(self, mapping: Mapping[Value, Value]) -> None:
        """Make every reader of a key of `mapping` (nodes, results, nested regions) read its
        value instead."""
        if not mapping:
            return

        def resolve(v: Value) -> Value:
            seen = 0
            while v in mapping:
                v = mapping[v]
                seen += 1
                if seen > len(mapping):
                    raise VerificationError("replace_all_uses: cyclic replacement")
            return v

        for g in self._self_and_regions():
            for n in g.nodes:
                n.inputs = [resolve(v) for v in n.inputs]
            g.results = [resolve(v) for v in g.results]

    def _self_and_regions(self) -> Iterable[Graph]:
        yield self
        for n in self.nodes:
            for r in n.regions:
                yield from r._self_and_regions()

    def remove_nodes(self, dead: Iterable[Node]) -> None:
        """Drop nodes (the caller guarantees nothing live reads them)."""
        dead_ids = {id(n) for n in dead}
        if not dead_ids:
            return
        self.nodes = [n for n in self.nodes if id(n) not in dead_ids]
        for n in self.nodes:
            if any(id(c) in dead_ids for c in n.control_inputs):
                n.control_inputs = [c for c in n.control_inputs if id(c) not in dead_ids]

    def copy(self) -> Graph:
        """A deep copy (new nodes and values, same attributes and types)."""
        g, _ = self.copy_with_map()
        return g

    def copy_with_map(self, value_map: dict[Value, Value] | None = None) -> tuple[Graph, dict]:
        """Deep copy; returns the copy and the map from old values and nodes to new ones."""
        vmap: dict[Any, Any] = dict(value_map or {})
        g = Graph(self.name)
        for a, aname in zip(self.args, self.arg_names):
            vmap[a] = g.add_arg(a.type, aname)
        for n in self.nodes:
            regions = [r.copy_with_map(vmap)[0] for r in n.regions]
            new = Node(g, n.op, [vmap.get(v, v) for v in n.inputs], n.attrs,
                       [v.type for v in n.outputs], n.name,
                       control_inputs=[vmap.get(c, c) for c in n.control_inputs],
                       device=n.device, loc=n.loc, regions=regions)
            new.assigned_device = n.assigned_device
            g._names.add(n.name)
            g.nodes.append(new)
            vmap[n] = new
            for old_v, new_v in zip(n.outputs, new.outputs):
                vmap[old_v] = new_v
        g.results = [vmap.get(v, v) for v in self.results]
        g.result_names = list(self.result_names)
        g._names |= self._names
        return g, vmap

    def __str__(self) -> str:
        from .printer import print_graph
        return print_graph(self)

    def __repr__(self) -> str:
        return f"<Graph {self.name}: {len(self.args)} args, {len(self.nodes)} nodes>"
