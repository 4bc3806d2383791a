"""Constant folding and exact algebraic simplification.

Folding evaluates, at compile time and with the op's reference kernel, every node whose
inputs are all constants and whose result depends on nothing else: not stateful, not
ordered after any state (through control edges), no kernel context (random numbers,
variables, feeds), no regions. The node becomes a `Const` with the same name, source
location and device. A result larger than `max_elements` is left to run time, so the IR
never holds huge arrays; so is a node whose kernel fails on its constant inputs (the
error then surfaces when the graph runs, as it would have without folding).

Simplification removes operations that return one of their operands unchanged:
``x*1``, ``1*x``, ``x+0``, ``0+x``, ``x-0`` (only when the result has exactly x's dtype
and shape, so no broadcast is lost), ``Identity(x)``, ``Neg(Neg(x))``, a `Cast` to x's
own dtype, a `Reshape` to x's own shape and a `Transpose` by the identity permutation.
A node that carries control inputs, or asks for a device other than its operand's, is
kept: its consumers rely on that ordering or placement. For floats the zeros are exact
in their sign, as IEEE arithmetic (and LLVM without fast-math) has them: ``x + (-0.0)``
and ``x - (+0.0)`` are x for every x, but ``(-0.0) + (+0.0)`` is ``+0.0``, so ``x + 0.0``
and ``x - (-0.0)`` stay (folded away they would give ``1/x = -inf`` where the graph's
own arithmetic gives ``+inf``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..compiler.dtypes import as_dtype
from ..compiler.ir import Graph, Node, Value
from ..compiler.types import TensorType
from ..errors import InternalError, OpError
from ..runtime.kernel_context import CallCounters
from ..runtime.resources import ResourceManager
from ..targets.reference.executor import run_kernel
from ._rewrite import (
    const_value,
    forward_control,
    frozen,
    is_stateful,
    needs_context,
    remap_control_inputs,
)

DEFAULT_MAX_ELEMENTS = 1 << 20
"""The largest folded result, in elements (per output)."""


def fold_constants(graph: Graph, max_elements: int = DEFAULT_MAX_ELEMENTS) -> None:
    """Fold constant subgraphs into `Const` nodes and remove exact algebraic identities
    in `graph` and its nested regions. Rewrites in place and returns None.

    Nodes left without readers are not removed here; `dce` does that."""
    _fold_graph(graph, max_elements, {})


def _fold_graph(graph: Graph, max_elements: int, after_state: dict[Node, bool]) -> None:
    folder = _Folder(graph, max_elements, after_state)
    folder.run()
    for node in graph.nodes:
        for region in node.regions:
            # Regions see the outer graph's constants, so fold them once those exist.
            _fold_graph(region, max_elements, after_state)


class _Folder:
    """One walk over one graph in topological order."""

    def __init__(self, graph: Graph, max_elements: int, after_state: dict[Node, bool]) -> None:
        self.graph = graph
        self.max_elements = max_elements
        # node -> True when it is stateful or ordered after a stateful node (data or
        # control); shared with nested regions, which read values of enclosing graphs.
        self.after_state = after_state
        self.vmap: dict[Value, Value] = {}
        self.cmap: dict[Node, list[Node]] = {}
        # run_kernel wants these, but only kernels that take no context are folded, so
        # they are never touched.
        self.resources = ResourceManager()
        self.counters = CallCounters()

    def run(self) -> None:
        kept: list[Node] = []
        for node in self.graph.topological_order():
            node.inputs = [self.vmap.get(v, v) for v in node.inputs]
            remap_control_inputs(node, self.cmap)
            self.after_state[node] = self._is_after_state(node)
            forwarded = _simplified(node, self.after_state)
            if forwarded is not None:
                self.vmap[node.outputs[0]] = forwarded
                self.cmap[node] = forward_control(node, self.graph)
                continue
            consts = self._fold(node)
            if consts is None:
                kept.append(node)
                continue
            kept.extend(consts)
            self.after_state.update((c, False) for c in consts)
            self.vmap.update((out, c.outputs[0]) for out, c in zip(node.outputs, consts))
            # Nothing stateful precedes the node, so ordering after it means nothing.
            self.cmap[node] = []
        self.graph.nodes = kept
        self.graph.replace_all_uses(self.vmap)

    def _is_after_state(self, node: Node) -> bool:
        if is_stateful(node) or needs_context(node):
            return True
        deps = [v.producer for v in node.inputs if v.producer is not None]
        deps += node.control_inputs
        # A producer outside this walk (an enclosing graph's node that was never seen)
        # is assumed to be ordered after state.
        return any(self.after_state.get(d, True) for d in deps)

    # -- folding -----------------------------------------------------------------------
    def _foldable(self, node: Node) -> bool:
        if node.op == "Const" or not node.outputs or node.regions:
            return False
        if self.after_state[node] or "reference" not in node.opdef.kernels:
            return False
        if not all(isinstance(v.type, TensorType) for v in node.outputs):
            return False
        if any(const_value(v) is None for v in node.inputs):
            return False
        sizes = [v.type.num_elements for v in node.outputs]
        return all(n is None or n <= self.max_elements for n in sizes)

    def _fold(self, node: Node) -> list[Node] | None:
        """The `Const` nodes that replace `node`, or None when it cannot be folded."""
        if not self._foldable(node):
            return None
        arrays = [const_value(v) for v in node.inputs]
        try:
            results = run_kernel(node, arrays, self.resources, self.counters)
        except InternalError:
            raise  # a kernel that breaks its own declaration: a bug worth reporting now
        except OpError:
            return None
        if any(np.asarray(r).size > self.max_elements for r in results):
            return None
        return [self._const_for(node, i, np.asarray(r)) for i, r in enumerate(results)]

    def _const_for(self, node: Node, index: int, array: np.ndarray) -> Node:
        value = frozen(array)
        name = node.name if index == 0 else self.graph.unique_name(f"{node.name}/output{index}")
        const = Node(self.graph, "Const", [], {"value": value},
                     [TensorType(as_dtype(value.dtype), value.shape)], name,
                     device=node.device, loc=node.loc)
        const.assigned_device = node.assigned_device
        return const


# ------------------------------------------------------------------ simplification

def _simplified(node: Node, after_state: dict[Node, bool]) -> Value | None:
    """The operand that `node` returns unchanged, or None when it does real work."""
    rule = _RULES.get(node.op)
    if rule is None or node.control_inputs or len(node.outputs) != 1:
        return None
    x = rule(node, after_state)
    if x is None or not isinstance(x.type, TensorType) or x.type != node.outputs[0].type:
        return None
    return x if _same_placement(node, x) else None


def _same_placement(node: Node, x: Value) -> bool:
    """Removing `node` keeps placement when it asks for no device other than x's."""
    p = x.producer
    device = p.device if p is not None else None
    assigned = p.assigned_device if p is not None else None
    return node.device in (None, device) and node.assigned_device in (None, assigned)


def _all_equal(v: Value, scalar: int, after_state: dict[Node, bool],
               zero_sign: bool | None = None) -> bool:
    """True when `v` is a constant, free of ordering constraints, filled with `scalar`;
    with `zero_sign` (True: -0.0, False: +0.0) float zeros must also have that sign."""
    value = const_value(v)
    if value is None or after_state.get(v.producer, True):
        return False
    if not np.all(value == scalar):
        return False
    # (the project's dtype, not NumPy's kind: ml_dtypes' bfloat16 has kind "V")
    if zero_sign is None or not as_dtype(value.dtype).is_floating:
        return True
    return bool(np.all(np.signbit(value) == zero_sign))


def _neutral_operand(node: Node, after_state: dict[Node, bool], neutral: int,
                     commutative: bool, zero_sign: bool | None = None) -> Value | None:
    x, y = node.inputs
    if _all_equal(y, neutral, after_state, zero_sign):
        return x
    if commutative and _all_equal(x, neutral, after_state, zero_sign):
        return y
    return None


def _double_neg(node: Node, after_state: dict[Node, bool]) -> Value | None:
    p = node.inputs[0].producer
    if p is not None and p.op == "Neg" and not p.control_inputs and len(p.inputs) == 1:
        return p.inputs[0]
    return None


def _reshape(node: Node, after_state: dict[Node, bool]) -> Value | None:
    # With at most one unknown dim, equal types mean equal runtime shapes: the element
    # count fixes the unknown one.
    return node.inputs[0] if sum(d is None for d in node.outputs[0].type.shape) <= 1 else None


def _transpose(node: Node, after_state: dict[Node, bool]) -> Value | None:
    x = node.inputs[0]
    rank = x.type.rank if isinstance(x.type, TensorType) else -1
    perm = node.attrs.get("perm")
    if rank in (0, 1):
        return x
    if perm is not None and len(perm) == rank and all(-rank <= p < rank for p in perm):
        return x if tuple(p % rank for p in perm) == tuple(range(rank)) else None
    return None


_Rule = Callable[[Node, dict[Node, bool]], Value | None]

_RULES: dict[str, _Rule] = {
    "Identity": lambda node, _: node.inputs[0],
    "Cast": lambda node, _: node.inputs[0],  # the type check makes it a same-dtype cast
    "Neg": _double_neg,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Mul": lambda node, st: _neutral_operand(node, st, 1, commutative=True),
    # x + (-0.0) and x - (+0.0) are x bit for bit; x + (+0.0) is not when x is -0.0
    "Add": lambda node, st: _neutral_operand(node, st, 0, commutative=True, zero_sign=True),
    "Sub": lambda node, st: _neutral_operand(node, st, 0, commutative=False,
                                             zero_sign=False),
}
