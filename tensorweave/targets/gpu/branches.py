"""`If` planned as device launches: the step planner's part for a conditional whose
branches have a kernel for every node (`actions.Branch`).

Both branches are planned once, each into its own action list, and each ends by copying
its results into the If's output buffers (no copy where a branch's kernel already wrote
there: in a loop body, an output that is a loop variable's next value is that
variable's buffer entry). The runner downloads the one-element predicate (one pinned
flag: a synchronization) and runs one list. Only the taken branch's kernels run, so
only they can fail, advance a random op's call count or update a variable, as in the
reference.

Not planned here (the If then runs on the host as before, or in a loop body sends the
loop to the host, with the reason): a branch with a node without a GPU kernel, a stack
op or a value of the enclosing graph read other than through the If's inputs; inputs or
outputs that are not tensors of known shape.
"""

from __future__ import annotations

from typing import Any

from ...compiler.ir import Graph, Node
from ...compiler.types import ResourceType, TensorType
from .actions import Branch, Copy, HostCall, Ineligible, Slot
from .loops import STACK_OPS, BodyOnHost


class BranchPlanning:
    """The step planner's `If` method (mixed into `step._Planner` beside
    `loops.LoopPlanning`, whose `_mark`, `_rollback` and `_extend` it uses)."""

    # the planner's own (see step._Planner and loops.LoopPlanning)
    slots: dict
    actions: list[Any]
    fallbacks: dict[str, str]
    frames: list

    def _plan_if(self, node: Node, assigned_vars: set[str]) -> None:
        """A `Branch` when both branches can run on the device, else a host call (in a
        loop body: the loop's refusal)."""
        reason = _if_refusal(node)
        if reason is None:
            mark = self._mark()  # type: ignore[attr-defined]
            try:
                self._plan_branches(node, assigned_vars)
                return
            except (BodyOnHost, Ineligible) as e:
                if self.frames:
                    raise
                self._rollback(mark)  # type: ignore[attr-defined]
                reason = str(e)
        if self.frames:
            raise BodyOnHost(f"If '{node.name}' in its body cannot run on the device "
                             f"({reason})")
        if not all(isinstance(v.type, TensorType) and v.type.is_fully_defined
                   for v in node.outputs):
            raise Ineligible(f"If '{node.name}' has a shape known only at run time")
        self.fallbacks[node.name] = f"If: {reason}"
        ins = [self._use(v) for v in node.inputs]  # type: ignore[attr-defined]
        outs = [self._tmp(v) for v in node.outputs]  # type: ignore[attr-defined]
        self._emit(HostCall(node, reason, ins, outs))  # type: ignore[attr-defined]

    def _plan_branches(self, node: Node, assigned_vars: set[str]) -> None:
        predicate: Slot = self._use(node.inputs[0])  # type: ignore[attr-defined]
        outs: list[Slot] = [self._tmp(v) for v in node.outputs]  # type: ignore[attr-defined]
        lists = []
        for region in node.regions:
            for arg, v in zip(region.args, node.inputs[1:]):
                self.slots[arg] = self._use(v)  # type: ignore[attr-defined]
            saved, self.actions = self.actions, []
            try:
                for n in region.topological_order():
                    self._plan_node(n, assigned_vars)  # type: ignore[attr-defined]
                for res, out in zip(region.results, outs):
                    src = self._use(res)  # type: ignore[attr-defined]
                    if src != out:
                        self._emit(Copy(node, src, out))  # type: ignore[attr-defined]
            finally:
                actions, self.actions = self.actions, saved
            lists.append(actions)
        for out in outs:  # written by either branch: live across both
            self._extend(out, self.clock)  # type: ignore[attr-defined]
        self._emit(Branch(node, predicate, lists[0], lists[1]))  # type: ignore[attr-defined]


def _if_refusal(node: Node) -> str | None:
    """Why If `node` cannot be a device `Branch` whatever its shapes, or None."""
    for v in (*node.inputs, *node.outputs):
        t = v.type
        if isinstance(t, ResourceType):
            return "an input or output is a resource"
        if not (isinstance(t, TensorType) and t.is_fully_defined):
            return "an input or output's shape is known only at run time"
    if int(node.inputs[0].type.num_elements) != 1 or node.inputs[0].type.dtype.kind != "bool":
        return "its predicate is not a scalar"
    for region in node.regions:
        region_: Graph = region
        for n in region_.nodes:
            if n.op in STACK_OPS:
                return f"a branch uses a stack ({n.op} '{n.name}')"
        if any(v.producer is None and v not in region_.args for v in region_.results) or \
                any(v.graph is not region_ for n in region_.nodes for v in n.inputs):
            return "a branch reads values of the enclosing graph"
    return None


__all__ = ["BranchPlanning"]
