"""Reverse-mode symbolic differentiation: adds gradient nodes to a graph.

The gradient graph is ordinary IR: it can be printed, optimized and compiled like the
forward graph. For each node between the inputs `xs` and the outputs `ys`, visited in
reverse topological order, the gradients of its outputs are summed (``AddN`` over
multiple paths), missing float output gradients are filled with zeros, and the op's
registered gradient function (``OpDef.gradient``) builds the input gradients from them.
Every gradient is checked for count, dtype and static shape against the input it belongs
to, so a faulty gradient function fails loudly at the op that has it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..compiler.ir import Graph, Node, Value
from ..compiler.types import TensorType
from ..errors import CompileError, TensorWeaveError
from ..frontend.building import apply_op1
from ..frontend.context import GraphBuilder, current_builder
from ..frontend.indexed_slices import IndexedSlices, aggregate, dense
from ..frontend.tensor import Tensor


def _is_float(v: Value) -> bool:
    return isinstance(v.type, TensorType) and v.type.dtype.is_floating


class GradOp:
    """What a gradient function sees of the forward node it differentiates."""

    def __init__(self, node: Node, builder: GraphBuilder) -> None:
        self.node = node
        self.type = node.op
        self.name = node.name
        self.attrs = {k: v for k, v in node.attrs.items() if not k.startswith("_")}
        self.inputs = [Tensor(v, builder) if isinstance(v.type, TensorType) else v
                       for v in node.inputs]
        self.outputs = [Tensor(v, builder) if isinstance(v.type, TensorType) else v
                        for v in node.outputs]

    def get_attr(self, name: str) -> Any:
        return self.attrs[name]


def _load_gradients() -> None:
    from ..frontend import grads  # noqa: F401  (registers the gradient functions)


def _between(graph: Graph, ys: Sequence[Value], xs: Sequence[Value],
             stop: set[Value]) -> list[Node]:
    """Nodes on a data path from some x to some y, in topological order."""
    order = graph.topological_order()
    sources: set[Value] = set(xs)
    from_x: set[Value] = set(xs)
    forward: set[int] = set()
    for n in order:
        # a stopped value cuts the paths through it, but one that is an x starts its own
        if any(v in from_x and (v not in stop or v in sources) for v in n.inputs):
            forward.add(id(n))
            from_x.update(n.outputs)
    to_y: set[int] = set()
    needed = {id(v) for v in ys}
    for n in reversed(order):
        if id(n) in forward and any(id(v) in needed for v in n.outputs):
            to_y.add(id(n))
            needed.update(id(v) for v in n.inputs)
    return [n for n in order if id(n) in to_y]


def _sum(grads: list[Any]) -> Any:
    """The sum of the gradients of one value; IndexedSlices stay sparse if all are."""
    return aggregate(grads)


def add_gradients(ys: Sequence[Value], xs: Sequence[Value],
                  grad_ys: Sequence[Value | None] | None = None,
                  stop_gradients: Sequence[Value] = (), *,
                  graph: Graph | None = None, keep_sparse: bool = False) -> list[Any]:
    """Add nodes computing d(sum of ys)/d(x) for each x to the graph being built.

    `graph` holds `ys` and `xs` (default: the graph being built). Differentiating a
    control-flow region builds its gradient into a new region whose builder captures
    the region's values it reads. Returns one tensor per x, or None where no float path
    connects it to the ys. With `keep_sparse`, the gradient of a variable's read that
    only Gathers use is a `tw.IndexedSlices` (an optimizer applies it row by row);
    otherwise every gradient is dense.
    """
    builder = current_builder()
    if builder is None:
        raise CompileError("add_gradients needs the graph being built to be current")
    graph = graph if graph is not None else builder.graph
    _load_gradients()
    stop = set(stop_gradients)
    grads: dict[Value, list[Tensor]] = {}
    for i, y in enumerate(ys):
        if not _is_float(y):
            raise CompileError(f"cannot differentiate '{y.name}' of type {y.type}: only "
                               f"floating-point tensors have gradients")
        g = grad_ys[i] if grad_ys is not None and grad_ys[i] is not None else None
        if g is None:
            g = apply_op1("OnesLike", [Tensor(y, builder)], name="grad_ys")
        else:
            g = Tensor(g, builder) if isinstance(g, Value) else g
        grads.setdefault(y, []).append(g)

    for node in reversed(_between(graph, ys, xs, stop)):
        # a stopped value keeps the gradient it collected (it may be an x, as in
        # TensorFlow), but it goes no further back
        out_grads = [None if v in stop else grads.get(v) for v in node.outputs]
        if not any(out_grads):
            continue
        opdef = node.opdef
        if opdef.not_differentiable:
            continue
        if opdef.grad_fn is None:
            raise CompileError(f"no gradient is registered for op {node.op}",
                               **node.error_context())
        summed: list[Tensor | None] = []
        for v, gs in zip(node.outputs, out_grads):
            if gs:
                # gradient functions take dense tensors
                summed.append(dense(_sum(gs)))
            elif _is_float(v):
                summed.append(apply_op1("ZerosLike", [Tensor(v, builder)]))
            else:
                summed.append(None)
        try:
            in_grads = opdef.grad_fn(GradOp(node, builder), *summed)
        except TensorWeaveError as e:
            raise e.with_context(**node.error_context()) from None
        if isinstance(in_grads, Tensor) or in_grads is None:
            in_grads = [in_grads]
        in_grads = list(in_grads)
        if len(in_grads) != len(node.inputs):
            raise CompileError(f"gradient function returned {len(in_grads)} gradients for "
                               f"{len(node.inputs)} inputs", **node.error_context())
        for v, g in zip(node.inputs, in_grads):
            if g is None or not _is_float(v):
                continue
            _check_grad(node, v, g)
            grads.setdefault(v, []).append(g)

    out = [_sum(grads[x]) if grads.get(x) else None for x in xs]
    return out if keep_sparse else [None if g is None else dense(g) for g in out]


def _check_grad(node: Node, v: Value, g: Any) -> None:
    if isinstance(g, IndexedSlices):
        if not isinstance(g.values, Tensor) or g.dtype is not v.type.dtype or \
                len(g.dense_shape) != len(v.type.shape) or \
                any(a is not None and b is not None and a != b
                    for a, b in zip(g.dense_shape, v.type.shape)):
            raise CompileError(f"sparse gradient for input '{v.name}' has values "
                               f"{getattr(g.values, 'type', g.values)} and dense shape "
                               f"{list(g.dense_shape)}, the input is {v.type}",
                               **node.error_context())
        return
    if not isinstance(g, Tensor):
        raise CompileError(f"gradient for input '{v.name}' is {g!r}, not a tensor",
                           **node.error_context())
    if g.dtype is not v.type.dtype or not g.type.is_compatible_with(v.type):
        raise CompileError(f"gradient for input '{v.name}' has type {g.type}, the input is "
                           f"{v.type}", **node.error_context())

