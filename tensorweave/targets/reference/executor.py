"""The NumPy reference target: runs a graph node by node with each op's reference kernel.

It is the oracle the other targets are tested against, so it checks everything it can:
argument types on entry, and the dtype and shape of every kernel output against the
types the IR promised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...compiler.ir import Graph, Node, Value
from ...compiler.types import ResourceType, TensorType, format_shape
from ...errors import InternalError, InvalidArgumentError, TensorWeaveError, UnimplementedError
from ...runtime.kernel_context import CallCounters, KernelContext
from ...runtime.resources import ResourceManager, default_resource_manager

TARGET = "reference"


def check_arguments(graph: Graph, args: Sequence[Any]) -> list[np.ndarray]:
    """Convert call arguments to arrays and check them against the graph's argument types."""
    if len(args) != len(graph.args):
        raise InvalidArgumentError(f"'{graph.name}' takes {len(graph.args)} arguments, "
                                   f"got {len(args)}")
    out = []
    for value, name, arg in zip(graph.args, graph.arg_names, args):
        t = value.type
        if isinstance(t, TensorType):
            arr = np.asarray(arg)
            if arr.dtype != t.dtype.np or not t.accepts(t.dtype, arr.shape):
                raise InvalidArgumentError(
                    f"argument '{name}' of '{graph.name}' expects {t}, got "
                    f"{arr.dtype}{format_shape(arr.shape)}")
            out.append(arr)
        else:
            out.append(arg)
    return out


def run_kernel(node: Node, inputs: Sequence[Any], resources: ResourceManager,
               counters: CallCounters, step_id: int = 0) -> list[Any]:
    """Run the reference kernel of `node` on `inputs`; returns its outputs, checked."""
    kdef = node.opdef.kernels.get(TARGET)
    if kdef is None:
        raise UnimplementedError(f"op {node.op} has no reference kernel",
                                 **node.error_context())
    attrs = {k: v for k, v in node.attrs.items() if not k.startswith("_")}
    try:
        with np.errstate(all="ignore"):
            if kdef.context:
                ctx = KernelContext(node, resources, counters, step_id)
                result = kdef.fn(ctx, *inputs, **attrs)
            else:
                result = kdef.fn(*inputs, **attrs)
    except TensorWeaveError as e:
        raise e.with_context(**node.error_context()) from None
    except (ValueError, IndexError, TypeError, ArithmeticError) as e:
        raise InvalidArgumentError(f"{type(e).__name__}: {e}", **node.error_context()) from e
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    return _check_outputs(node, outputs)


def _check_outputs(node: Node, outputs: list[Any]) -> list[Any]:
    if len(outputs) != len(node.outputs):
        raise InternalError(f"kernel returned {len(outputs)} outputs, the op declares "
                            f"{len(node.outputs)}", **node.error_context())
    checked = []
    for value, out in zip(node.outputs, outputs):
        t = value.type
        if isinstance(t, ResourceType):
            checked.append(out)
            continue
        arr = np.asarray(out)
        if arr.dtype != t.dtype.np or not t.accepts(t.dtype, arr.shape):
            raise InternalError(
                f"kernel produced {arr.dtype}{format_shape(arr.shape)} for output {value.index},"
                f" the IR says {t}", **node.error_context())
        checked.append(arr)
    return checked


class ReferenceExecutable:
    """A graph made callable on the reference target."""

    target = TARGET

    def __init__(self, graph: Graph, resources: ResourceManager | None = None) -> None:
        self.graph = graph
        self.order = graph.topological_order()
        self.resources = resources or default_resource_manager()
        self.counters = CallCounters()

    def __call__(self, *args: Any) -> list[np.ndarray]:
        arrays = check_arguments(self.graph, args)
        return evaluate(self.graph, arrays, self.resources, self.counters, self.order)


def evaluate(graph: Graph, args: Sequence[Any], resources: ResourceManager,
             counters: CallCounters, order: Sequence[Node] | None = None) -> list[Any]:
    """Run `graph` on already-checked arguments and return its results."""
    env: dict[Value, Any] = dict(zip(graph.args, args))
    for node in order if order is not None else graph.topological_order():
        outs = run_kernel(node, [env[v] for v in node.inputs], resources, counters)
        env.update(zip(node.outputs, outs))
    return [env[v] for v in graph.results]
