"""The NumPy reference target: runs a graph node by node with each op's reference kernel.

It is the oracle the other targets are tested against, so it checks everything it can:
argument types on entry, and the dtype and shape of every kernel output against the
types the IR promised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...compiler.ir import Graph, Node, Value
from ...compiler.types import ResourceType, TensorType, format_shape
from ...errors import InternalError, InvalidArgumentError, TensorWeaveError, UnimplementedError
from ...runtime.kernel_context import CallCounters, KernelContext, StepContext
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
               counters: CallCounters, step_id: int = 0, *,
               step: StepContext | None = None) -> list[Any]:
    """Run the reference kernel of `node` on `inputs`; returns its outputs, checked.

    `step` (the step's id, rendezvous and cancellation) reaches kernels that take a
    `KernelContext`; without it they get `step_id` and no rendezvous."""
    kernel = PreparedKernel(node)
    with np.errstate(all="ignore"):
        return kernel(inputs, resources, counters, step, step_id)


class PreparedKernel:
    """The reference kernel of one node with its attributes resolved once, for executors
    that run the same node many times. Callers set ``np.errstate(all="ignore")``."""

    __slots__ = ("node", "fn", "context", "attrs")

    def __init__(self, node: Node) -> None:
        kdef = node.opdef.kernels.get(TARGET)
        self.node = node
        self.fn = kdef.fn if kdef is not None else None
        self.context = kdef is not None and kdef.context
        self.attrs = {k: v for k, v in node.attrs.items() if not k.startswith("_")}

    def __call__(self, inputs: Sequence[Any], resources: ResourceManager, counters: CallCounters,
                 step: StepContext | None = None, step_id: int = 0, *,
                 captures: Mapping[Value, Any] | None = None) -> list[Any]:
        """Run the kernel on `inputs` (see `run_kernel`); returns its outputs, checked.
        `captures` holds the values of enclosing graphs that the node's regions read."""
        node = self.node
        if self.fn is None:
            raise UnimplementedError(f"op {node.op} has no reference kernel",
                                     **node.error_context())
        try:
            if self.context:
                if step is None:
                    ctx = KernelContext(node, resources, counters, step_id, captures=captures)
                else:
                    ctx = KernelContext(node, resources, counters, step.step_id,
                                        step.rendezvous, step.cancellation, captures)
                result = self.fn(ctx, *inputs, **self.attrs)
            else:
                result = self.fn(*inputs, **self.attrs)
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
             counters: CallCounters, order: Sequence[Node] | None = None, *,
             step: StepContext | None = None,
             captures: Mapping[Value, Any] | None = None) -> list[Any]:
    """Run `graph` on already-checked arguments, one node after the other in this thread,
    and return its results. `captures` gives the values of enclosing graphs that a
    region reads. Inside a step (`step` given) it stops with `CancelledError` as soon as
    the step is cancelled."""
    env: dict[Value, Any] = dict(captures or {})
    env.update(zip(graph.args, args))
    cancellation = step.cancellation if step is not None else None
    with np.errstate(all="ignore"):
        for node in order if order is not None else graph.topological_order():
            if cancellation is not None and cancellation.is_cancelled:
                raise cancellation.cancelled_error()
            # A node with regions sees everything defined so far (its regions may
            # capture any of it).
            outs = PreparedKernel(node)([env[v] for v in node.inputs], resources, counters, step,
                                        captures=env if node.regions else None)
            env.update(zip(node.outputs, outs))
    return [env[v] for v in graph.results]
