"""Shape inference: re-run every op's type inference and refine the types in the IR.

Traced graphs already carry inferred types, but they get more precise later: after the
arguments are given concrete shapes (`specialize`), after other passes replace a value
by a constant, or after a graph was read from text with loose types. `infer_shapes`
walks the graph in topological order and gives each output the most precise type that
both the IR and inference allow; a contradiction between them is an error that names
the op, the node and the user's source line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..compiler.ir import Graph, Node, Value
from ..compiler.types import ResourceType, TensorType, Type
from ..compiler.unknown_rank import is_unranked
from ..errors import DTypeError, ShapeError, TensorWeaveError, VerificationError


def infer_shapes(graph: Graph) -> None:
    """Refine the output types of every node of `graph` (and of its nested regions) from
    its inputs' types. Rewrites in place and returns None.

    Raises `ShapeError` / `DTypeError` (naming op, node and source location) when an op's
    inputs are inconsistent or inference contradicts a type stated in the IR.
    """
    for node in graph.topological_order():
        if "fusion" in node.opdef.tags:
            _refine_region_args(node)
        elif node.regions:
            _rank_region_args(node)
        for region in node.regions:
            infer_shapes(region)
        _refine_node(node)


def specialize(graph: Graph, arg_types: Sequence[Any] | Mapping[str, Any]) -> Graph:
    """A copy of `graph` whose arguments have the given, more precise types, with every
    other type re-inferred from them.

    `arg_types` lists one type per argument (None keeps an argument's type), or maps
    argument names to types. A type may be a `Type` or anything with a ``.type`` (such as
    a `TensorSpec`). Each must be compatible with the argument's current type (same dtype
    and rank, no conflicting known dims); the argument then gets the most precise type
    that both allow. The input graph is not changed.
    """
    g = graph.copy()
    for value, name, new in zip(g.args, g.arg_names, _types_by_position(g, arg_types)):
        if new is not None:
            value.type = _specialized_arg(g, name, value, new)
    infer_shapes(g)
    return g


# ------------------------------------------------------------------------ internals

def _refine_node(node: Node) -> None:
    opdef = node.opdef
    try:
        inferred = opdef.infer_types([v.type for v in node.inputs], node.attrs, node.regions)
        if len(inferred) != len(node.outputs):
            raise VerificationError(f"has {len(node.outputs)} outputs, type inference gives "
                                    f"{len(inferred)}")
        refined = [_merge(out.type, t, f"output {out.index}")
                   for out, t in zip(node.outputs, inferred)]
    except TensorWeaveError as e:
        raise e.with_context(**node.error_context()) from None
    for out, t in zip(node.outputs, refined):
        out.type = t


def _refine_region_args(node: Node) -> None:
    """A fused cluster's region reads exactly the node's inputs: its arguments are as
    precise as they are (so specializing a graph specializes its clusters too)."""
    for region in node.regions:
        for arg, value in zip(region.args, node.inputs):
            try:
                arg.type = _merge(arg.type, value.type, f"region argument {arg.index}")
            except TensorWeaveError as e:
                raise e.with_context(**node.error_context()) from None


def _rank_region_args(node: Node) -> None:
    """Region arguments of unknown rank (a v1 graph's cond or while_loop on a tensor of
    unknown rank, being specialized to the values fed) take the rank of the node's input
    once it is known: an If's branches take its inputs after the condition, a While's
    regions its loop variables (every dim unknown: the loop's shape invariant)."""
    inputs = node.inputs[1:] if node.op == "If" else node.inputs
    for region in node.regions:
        for arg, value in zip(region.args, inputs):
            known = value.type
            if is_unranked(arg.type) and isinstance(known, TensorType) and \
                    known.shape is not None:
                arg.type = arg.type.with_shape(
                    known.shape if node.op == "If" else (None,) * len(known.shape))


def _merge(stated: Type, inferred: Type, what: str) -> Type:
    """The most precise type that is both `stated` and `inferred`; an error if none is."""
    if isinstance(stated, TensorType) and isinstance(inferred, TensorType):
        return _merge_tensor(stated, inferred, what)
    if isinstance(stated, ResourceType) and isinstance(inferred, ResourceType):
        if stated.value_type is None or inferred.value_type is None:
            return inferred if inferred.value_type is not None else stated
        return ResourceType(_merge_tensor(stated.value_type, inferred.value_type, what))
    if type(stated) is not type(inferred):
        raise DTypeError(f"{what} has type {stated} in the IR, but type inference gives "
                         f"{inferred}")
    return inferred


def _merge_tensor(stated: TensorType, inferred: TensorType, what: str) -> TensorType:
    if stated.dtype is not inferred.dtype:
        raise DTypeError(f"{what} has type {stated} in the IR, but type inference gives "
                         f"{inferred}")
    if not stated.is_compatible_with(inferred):
        raise ShapeError(f"{what} has type {stated} in the IR, but type inference gives "
                         f"{inferred}")
    if stated.shape is None or inferred.shape is None:  # an unknown rank: the other's
        return inferred if stated.shape is None else stated
    # Both types hold for every value the output can take, so each known dim wins.
    return stated.with_shape(a if a is not None else b
                             for a, b in zip(stated.shape, inferred.shape))


def _types_by_position(graph: Graph, arg_types: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
    """`arg_types` as one entry per argument of `graph` (None: unchanged)."""
    if isinstance(arg_types, Mapping):
        unknown = [k for k in arg_types if k not in graph.arg_names]
        if unknown:
            raise VerificationError(f"'{graph.name}' has no argument named "
                                    f"{', '.join(map(repr, unknown))} (arguments: "
                                    f"{', '.join(graph.arg_names) or 'none'})")
        return [arg_types.get(n) for n in graph.arg_names]
    arg_types = list(arg_types)
    if len(arg_types) != len(graph.args):
        raise VerificationError(f"'{graph.name}' takes {len(graph.args)} arguments, "
                                f"got {len(arg_types)} types to specialize them to")
    return arg_types


def _specialized_arg(graph: Graph, name: str, value: Value, new: Any) -> Type:
    new_type = getattr(new, "type", new)
    if not isinstance(new_type, Type):
        raise TypeError(f"specialize: argument '{name}' needs a Type or a TensorSpec, "
                        f"got {new!r}")
    try:
        return _merge(value.type, new_type, f"argument '{name}'")
    except (ShapeError, DTypeError) as e:
        raise type(e)(f"cannot specialize argument '{name}' of '{graph.name}' from "
                      f"{value.type} to {new_type}") from None
