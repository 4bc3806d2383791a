"""Helpers shared by the rewriting passes: which nodes have state or effects, and how to
keep control edges meaningful when a node is removed or replaced."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..compiler.ir import Graph, Node, Value


def has_side_effects(node: Node) -> bool:
    """True when `node` must run even if nothing reads it: its op has side effects, or a
    node nested in one of its regions does (a loop whose body assigns a variable)."""
    if node.opdef.side_effects:
        return True
    return any(has_side_effects(n) for r in node.regions for n in r.nodes)


def is_stateful(node: Node) -> bool:
    """True when running `node` reads or changes state, so it must not be folded, merged
    or dropped in favour of another node: a stateful op, one with side effects, or a
    node whose regions hold such a node."""
    op = node.opdef
    if op.stateful or op.side_effects:
        return True
    return any(is_stateful(n) for r in node.regions for n in r.nodes)


def needs_context(node: Node) -> bool:
    """True when the op's reference kernel asks for a `KernelContext` (random numbers,
    resources, feeds): its result is not a function of its inputs alone."""
    kdef = node.opdef.kernels.get("reference")
    return kdef is not None and kdef.context


def const_value(v: Value) -> np.ndarray | None:
    """The array held by `v` when a `Const` node produces it, else None."""
    p = v.producer
    if p is not None and p.op == "Const":
        return p.attrs["value"]
    return None


def frozen(array: np.ndarray) -> np.ndarray:
    """A read-only copy of `array`, safe to share as the value of a `Const`."""
    out = np.array(array, copy=True)
    out.flags.writeable = False
    return out


def local_producers(node: Node, graph: Graph) -> list[Node]:
    """The producers of `node`'s inputs that are nodes of `graph` (not arguments, not
    values of an enclosing graph)."""
    out: list[Node] = []
    for v in node.inputs:
        p = v.producer
        if p is not None and p.graph is graph and p not in out:
            out.append(p)
    return out


def forward_control(node: Node, graph: Graph) -> list[Node]:
    """What "run after `node`" means once `node` is gone: run after everything it ran
    after, i.e. the local producers of its inputs and its own control inputs."""
    out = local_producers(node, graph)
    out.extend(c for c in node.control_inputs if c not in out)
    return out


def remap_control_inputs(node: Node, cmap: Mapping[Node, Sequence[Node]]) -> None:
    """Replace each control input of `node` found in `cmap` by its substitutes, keeping
    the first occurrence of each and never making `node` depend on itself.

    The substitutes in `cmap` must already be final (the passes visit nodes in
    topological order, so every control input was settled before its dependents)."""
    if not any(c in cmap for c in node.control_inputs):
        return
    out: list[Node] = []
    for c in node.control_inputs:
        for s in cmap.get(c, (c,)):
            if s is not node and s not in out:
                out.append(s)
    node.control_inputs = out


def outer_uses(node: Node) -> Iterable[Value]:
    """Every value read inside `node`'s regions (at any depth), including region results:
    the values of enclosing graphs that the regions capture are among them."""
    for region in node.regions:
        yield from region.results
        for n in region.nodes:
            yield from n.inputs
            yield from outer_uses(n)
