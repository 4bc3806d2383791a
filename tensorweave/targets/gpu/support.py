"""Which ops have a GPU kernel, decided before shapes are known: what placement asks when
a node could go on a GPU (`passes.placement.kernel_reason`).

An op has a GPU kernel when the gpu target can run it without a host call: elementwise
ops with GPU code and trailing-axis reductions (through a Fusion cluster), the ops of
`lowering.GENERATORS`, the views, constants and variable reads and updates (sparse ones
included) the step planner handles itself; all in dtypes with GPU code (not
float16/bfloat16). Segment sums of 8/16-bit integers (no atomic add) are refused here
too. Shape-dependent refusals (empty tensors) cannot be known at placement time: such a
node still runs on the GPU device, through a host call inside its step.

Inside the gpu target's own step (``in_step=True``: placement for ``target="gpu"``) a
While also has a kernel when every node of its cond and body has one (a While or If
nested in it included: `loops.NESTABLE`; the planner runs it as a device loop, checking
its cond each iteration when its trip count is known only at run time), an If when every
node of its branches has one (`branches.py`), and so do
the stack ops that such loops keep on the device, and DeduplicateSlices (padded to its
number of indices when its rows end in the scatters; the step is declined otherwise).
The dataflow executor's GPU partitions run nodes one by one and have none of these.
"""

from __future__ import annotations

from ...compiler.ir import Node
from ...compiler.types import TensorType
from .source import has_gpu_type

# handled by the step planner without a generated kernel of their own
_PLANNED = frozenset({"NoOp", "VarHandle", "Const", "ReadVariable", "AssignVariable",
                      "AssignAddVariable", "AssignSubVariable", "Send", "Recv",
                      "ResourceGather", "ResourceScatterAdd", "ResourceScatterSub",
                      "ResourceScatterUpdate"})
_NO_ATOMIC_ADD = frozenset({"int8", "int16", "uint8", "uint16", "bool"})


def gpu_kernel_reason(node: Node, in_step: bool = False) -> str | None:
    """None when the gpu target has a kernel for `node`, else a short reason
    (``"no GPU kernel for RandomUniform"``); `in_step`: inside the gpu target's own step,
    where While loops and their stacks can run on the device (module docstring)."""
    from ...passes.fusion import is_elementwise, is_fusible
    from . import exprs
    from .loops import STACK_OPS
    from .lowering import GENERATORS, VIEW_OPS
    op = node.op
    if in_step and op in ("While", "If"):
        return _loop_reason(node)
    if op == "Fusion":  # a cluster (after placement): its members answer
        return _members_reason(node, in_step)
    if op in _FUSED_PRODUCTS:  # a product with its epilogue cluster (targets/gpu/epilogue.py)
        return _types_reason(node) or _members_reason(node, in_step)
    if node.regions:
        return f"{op} runs its regions on the host"
    why = _types_reason(node)
    if why is not None:
        return why
    if in_step and (op in STACK_OPS or op == "DeduplicateSlices"):
        return None
    if op in _PLANNED or op in VIEW_OPS:
        if op in ("AssignAddVariable", "AssignSubVariable", "ResourceScatterAdd",
                  "ResourceScatterSub"):
            t = node.inputs[-1].type
            if isinstance(t, TensorType) and t.dtype.kind == "bool":
                return f"no GPU kernel for {op} of bool"
        return None
    if is_fusible(node):
        if is_elementwise(node) and not exprs.supports(op):
            return f"no GPU code for elementwise {op}"
        return None
    if op not in GENERATORS:
        return f"no GPU kernel for {op}"
    if op == "UnsortedSegmentSum":
        t = node.inputs[0].type
        if isinstance(t, TensorType) and t.dtype.np.name in _NO_ATOMIC_ADD:
            return f"no atomic add for UnsortedSegmentSum of {t.dtype.np.name}"
    return None


_FUSED_PRODUCTS = frozenset({"FusedMatMul", "FusedConv2D"})


def _members_reason(node: Node, in_step: bool) -> str | None:
    """The first reason of a member of `node`'s cluster region(s), or None."""
    return next((why for r in node.regions for m in r.nodes
                 if (why := gpu_kernel_reason(m, in_step)) is not None), None)


def _types_reason(node: Node) -> str | None:
    """Why `node`'s operand or result dtypes have no GPU code, or None."""
    for v in (*node.inputs, *node.outputs):
        t = v.type
        if isinstance(t, TensorType) and not has_gpu_type(t.dtype):
            return f"no GPU code for {t.dtype.np.name} ({node.op})"
    return None


def _loop_reason(node: Node) -> str | None:
    """Why While or If `node` cannot run as device launches of the gpu target's step
    (a device loop, `loops.py`, or branch, `branches.py`), or None."""
    from .loops import NESTABLE
    for region in node.regions:
        for inner in region.nodes:
            where = "its body" if node.op == "While" else "a branch"
            if inner.regions and inner.op not in NESTABLE:
                return (f"{node.op}: {where} holds {inner.op} '{inner.name}' (nested "
                        f"control flow)")
            why = gpu_kernel_reason(inner, in_step=True)
            if why is not None:
                return why if why.startswith(("While: ", "If: ")) else \
                    f"{node.op}: {why} in {where}"
    return None


__all__ = ["gpu_kernel_reason"]
