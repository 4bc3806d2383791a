"""The IR verifier: checks the invariants every pass must keep.

- every node's op is registered, its arity and attributes match the declaration;
- every value is defined exactly once, before its uses (args, earlier nodes, or an
  enclosing graph for regions), and results are defined;
- the stated output types agree with type inference (compatible: passes may refine);
- node names are unique and the graph (data + control edges) is acyclic.
"""

from __future__ import annotations

from ..errors import TensorWeaveError, VerificationError
from .ir import Graph, Value
from .registry import get_op
from .types import TensorType


def verify(graph: Graph, *, after: str | None = None) -> None:
    """Raise `VerificationError` if `graph` breaks an invariant of the IR."""
    try:
        _verify(graph, set())
    except VerificationError as e:
        if after:
            raise VerificationError(f"after pass '{after}': {e}") from None
        raise


def _verify(graph: Graph, outer: set[Value]) -> None:
    defined: set[Value] = set(outer)
    for a in graph.args:
        if a.graph is not graph or a.producer is not None:
            raise VerificationError(f"argument {a.name} of '{graph.name}' is not owned by it")
        defined.add(a)
    names: set[str] = set()
    graph.topological_order()  # raises on cycles
    order_ok = {id(n) for n in graph.nodes}
    for n in graph.topological_order():
        ctx = n.error_context()
        if n.name in names:
            raise VerificationError(f"duplicate node name '{n.name}'", **ctx)
        names.add(n.name)
        opdef = get_op(n.op)
        try:
            opdef.check_arity(len(n.inputs))
            opdef.complete_attrs(n.attrs)
        except TensorWeaveError as e:
            raise VerificationError(e.message, **ctx) from None
        for i, v in enumerate(n.inputs):
            if v not in defined:
                raise VerificationError(f"input {i} ({v.name}) is not defined before use", **ctx)
        for c in n.control_inputs:
            if id(c) not in order_ok:
                raise VerificationError(f"control input '{c.name}' is not in the graph", **ctx)
        for r in n.regions:
            _verify(r, defined)
        try:
            inferred = opdef.infer_types([v.type for v in n.inputs], n.attrs, n.regions)
        except TensorWeaveError as e:
            raise VerificationError(f"type inference fails: {e.message}", **ctx) from None
        if len(inferred) != len(n.outputs):
            raise VerificationError(f"has {len(n.outputs)} outputs, its op declares "
                                    f"{len(inferred)}", **ctx)
        for out, t in zip(n.outputs, inferred):
            if out.producer is not n:
                raise VerificationError(f"output {out.index} is not owned by the node", **ctx)
            if out in defined:
                raise VerificationError(f"output {out.index} defined twice", **ctx)
            if isinstance(t, TensorType) and not t.is_compatible_with(out.type):
                raise VerificationError(f"output {out.index} has type {out.type}, inference "
                                        f"gives {t}", **ctx)
            defined.add(out)
    for i, r in enumerate(graph.results):
        if r not in defined:
            raise VerificationError(f"result {i} of '{graph.name}' ({r.name}) is not defined")
