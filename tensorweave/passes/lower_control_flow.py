"""Lowering of functional control flow (`If`, `While`) to TensorFlow's dataflow primitives
(`Switch`, `Merge`, `Enter`, `Exit`, `NextIteration`, `LoopCond`; see
`tensorweave.compiler.ops.dataflow_control`), which the dataflow executor runs with dead
tensors and loop frames.

Stage ``lowered`` (after ``partitioned``): `lower_control_flow`, in place. Compiling runs it
only when lowering is asked for: ``tw.compile(fn, lower_control_flow=True)``,
``tw.config.set_lower_control_flow(True)`` or the environment variable
``TW_LOWER_CONTROL_FLOW=1``; by default compiled code keeps the functional ops (which a
target may compile natively). `run_pipeline` without a target (``tensorweave dump``)
always runs it, so ``--stage lowered`` shows the primitives.

Where it sits: after placement and partitioning, so a whole loop or conditional runs on
the device its functional node was placed on (placement already puts every node of a
region on its parent's device); Send/Recv therefore never sit inside a loop frame or a
branch. (The executor nevertheless keys Send/Recv inside frames by frame and iteration,
so a partitioner that splits loops across devices only has to add the per-device loop
control, as TensorFlow does.)

How a node is lowered (top-down: a region's nested If/While nodes are inlined as they
are, then lowered in turn, to any depth, without recursion)
- Values of the enclosing graph that a region reads (hand-written IR; the frontend
  never makes them) first become explicit inputs: extra If inputs, extra loop invariants.
- ``If(pred, *xs)``: each used input goes through ``Switch(x, pred)``; the then branch is
  inlined on the true outputs, the else branch on the false ones; result k becomes
  ``Merge(else_k, then_k)``, whose value index is therefore ``int(pred)``. Region nodes
  with no inputs (constants, variable handles) get a control input from the branch's
  *pivot* (``Identity`` of ``Switch(pred, pred)``'s output), so they run, and their side
  effects happen, only in the taken branch.
- ``While(*xs)``: in frame ``frame_name`` = the node's (unique) name, each loop variable
  is ``Enter -> Merge(enter, NextIterationSource) -> Switch(merge, LoopCond(pred))``,
  its false output goes to ``Exit`` (the loop's result) and its true output into the
  inlined body, whose result goes to ``NextIteration`` (paired with the source).
  Loop invariants (variables the body returns unchanged: captured tensors, weights)
  are one ``Enter`` with ``is_constant`` instead, visible in every iteration; the loop's
  result for them is its input. ``maximum_iterations`` adds an i32 counter variable and
  ``pred = (counter < maximum) and cond`` (like TensorFlow, the cond region is evaluated
  once more when the bound stops the loop). Body nodes that read only invariants (or
  nothing) get a control input from the body pivot (``Identity`` of the first Switch's
  true output); cond nodes likewise from the first Merge.
- Order of side effects, as the functional op runs them: the cond's stateful nodes are
  control inputs of ``LoopCond`` (every body node comes after it), and the body's are
  control inputs of every ``NextIteration`` (the next iteration starts after them); so
  a stateful body gives up overlapping iterations, a pure one keeps
  ``parallel_iterations``. Stack pushes and pops (the gradient's history) are ordered
  by the handle they thread and need no such edges.
- Control edges: the node's control inputs become control inputs of every Switch (If)
  or Enter (While); a node that had a control input from it gets one from the If's
  ``Merge`` of the two branches' "done" tokens (after the taken branch's stateful
  nodes), or from the While's first Exit (after the last iteration).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..compiler.dtypes import int32
from ..compiler.ir import Graph, Node, Value
from ..compiler.ops.dataflow_control import CONTROL_FLOW_OPS
from ..compiler.types import TensorType, Type
from ..errors import CompileError
from ._rewrite import frozen, outer_uses
from .placement import REASON_ATTR

FUNCTIONAL_OPS = frozenset({"If", "While"})

# Stateful ops whose order across iterations is already fixed by the data they thread
# (the stack handle), so they need no ordering edges.
_UNORDERED_OPS = frozenset({"Stack", "StackPush", "StackPop"}) | CONTROL_FLOW_OPS

ENV_VAR = "TW_LOWER_CONTROL_FLOW"

# ------------------------------------------------------------------------ the switch

_default: bool | None = None  # None: from the environment
_override: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "tw_lower_control_flow", default=None)


def set_default(enabled: bool | None) -> None:
    """Whether compiled functions lower control flow unless they say otherwise (None:
    back to the environment variable ``TW_LOWER_CONTROL_FLOW``, default off)."""
    global _default
    _default = None if enabled is None else bool(enabled)


def default_enabled() -> bool:
    """The process-wide default (see `set_default`)."""
    if _default is not None:
        return _default
    return os.environ.get(ENV_VAR, "") not in ("", "0")


def enabled() -> bool:
    """Whether compiling now lowers control flow: the innermost `lowering` scope's
    choice, else the default."""
    choice = _override.get()
    return default_enabled() if choice is None else choice


@contextlib.contextmanager
def lowering(choice: bool | None) -> Iterator[None]:
    """Within the block, compiling lowers control flow iff `choice` (None: as outside
    the block)."""
    if choice is None:
        yield
        return
    token = _override.set(bool(choice))
    try:
        yield
    finally:
        _override.reset(token)


def stage_wanted(target: str) -> bool:
    """The ``lowered`` stage's condition when compiling for `target`."""
    return enabled()


# ----------------------------------------------------------------------------- the pass

def lower_control_flow(graph: Graph) -> None:
    """Replace every `If` and `While` of `graph`, nested ones included, by dataflow
    control-flow primitives (see the module docstring). Rewrites in place and returns
    None."""
    while True:
        functional = [n for n in graph.nodes if n.op in FUNCTIONAL_OPS]
        if not functional:
            break
        for node in functional:
            _Lowering(graph, node).run()
    graph.sort()


def has_functional_control_flow(graph: Graph) -> bool:
    """True when `graph` (regions included) still holds an If or a While."""
    return any(n.op in FUNCTIONAL_OPS for n in graph.walk())


class _LoopVar:
    """The nodes of one loop-carried variable of a lowered While."""

    __slots__ = ("index", "source", "merge", "switch", "exit")

    def __init__(self, index: Any, source: Node, merge: Node) -> None:
        self.index = index
        self.source = source
        self.merge = merge
        self.switch: Node | None = None
        self.exit: Node | None = None


class _Lowering:
    """Lowers one If or While node of `graph` (whose regions may still hold functional
    nodes: they are inlined as they are)."""

    def __init__(self, graph: Graph, node: Node) -> None:
        self.graph = graph
        self.node = node
        self.name = node.name
        self.reason = f"lowered from {node.op} '{node.name}'"

    def run(self) -> None:
        _make_captures_explicit(self.graph, self.node)
        if self.node.op == "If":
            control_out = self._lower_if()
        else:
            control_out = self._lower_while()
        self._finish(control_out)

    # ------------------------------------------------------------------- building
    def _add(self, op: str, inputs: Sequence[Value], name: str, attrs: dict | None = None,
             control: Iterable[Node] = ()) -> Node:
        node = self.node
        attrs = dict(attrs or {})
        if node.assigned_device:
            attrs[REASON_ATTR] = self.reason
        new = self.graph.add_node(op, list(inputs), attrs, name=f"{self.name}/{name}",
                                  control_inputs=_unique(control), device=node.device,
                                  loc=node.loc)
        new.assigned_device = node.assigned_device
        return new

    def _const(self, value: Any, name: str, control: Iterable[Node]) -> Value:
        return self._add("Const", [], name, {"value": frozen(np.asarray(value))},
                         control).outputs[0]

    def _anchor(self, value: Value) -> list[Node]:
        """A node that runs (or is dead) exactly when `value` is computed (or dead): a
        control input that puts a new node in `value`'s context."""
        p = value.producer
        if p is None:
            return []  # an argument of the graph: the root frame, always live
        if p.op == "Switch":  # live node, possibly dead output
            return [self._add("Identity", [value], "anchor")]
        return [p]

    def _inline(self, region: Graph, args: Sequence[Value], pivot: Node, free: set[Value],
                tag: str) -> tuple[list[Value], list[Node]]:
        """Copy `region`'s nodes into the graph on `args`; returns the values of its
        results and the new nodes. A node with no control input whose inputs are all in
        `free` (none at all included) gets a control input from `pivot`, which puts it in
        the region's context."""
        vmap: dict[Value, Value] = dict(zip(region.args, args))
        nmap: dict[Node, Node] = {}
        inlined: list[Node] = []
        for n in region.topological_order():
            inputs = [vmap[v] for v in n.inputs]
            control = [nmap[c] for c in n.control_inputs]
            if not control and all(v in free for v in inputs):
                control = [pivot]
            for r in n.regions:  # nested regions may read this region's values
                r.replace_all_uses(vmap)
            new = self.graph.add_node(n.op, inputs, n.attrs, name=f"{self.name}/{tag}/{n.name}",
                                      control_inputs=control, device=n.device, loc=n.loc,
                                      output_types=[v.type for v in n.outputs],
                                      regions=n.regions)
            new.assigned_device = n.assigned_device or self.node.assigned_device
            nmap[n] = new
            vmap.update(zip(n.outputs, new.outputs))
            inlined.append(new)
        return [vmap[v] for v in region.results], inlined

    def _control_consumers(self) -> list[Node]:
        return [n for n in self.graph.nodes if any(c is self.node for c in n.control_inputs)]

    def _finish(self, control_out: Node | None) -> None:
        """Point control edges from the lowered node at `control_out`, then drop it."""
        node = self.node
        for n in self._control_consumers():
            out: list[Node] = []
            for c in n.control_inputs:
                c = control_out if c is node else c
                if c is not None and c not in out:
                    out.append(c)
            n.control_inputs = out
        self.graph.remove_nodes([node])

    # ------------------------------------------------------------------------- If
    def _lower_if(self) -> Node | None:
        node = self.node
        pred, inputs = node.inputs[0], node.inputs[1:]
        then_g, else_g = node.regions
        control = list(node.control_inputs)
        switch_pred = self._add("Switch", [pred, pred], "switch_pred", control=control)
        pivot_f = self._add("Identity", [switch_pred.outputs[0]], "pivot_false")
        pivot_t = self._add("Identity", [switch_pred.outputs[1]], "pivot_true")
        used = _read_args(then_g) | _read_args(else_g)
        f_args, t_args = [], []
        for k, x in enumerate(inputs):
            if k in used:
                sw = self._add("Switch", [x, pred], f"switch_{k}", control=control)
                f_args.append(sw.outputs[0])
                t_args.append(sw.outputs[1])
            else:  # read by neither branch: any value will do
                f_args.append(x)
                t_args.append(x)
        t_res, t_nodes = self._inline(then_g, t_args, pivot_t, set(), "then")
        f_res, f_nodes = self._inline(else_g, f_args, pivot_f, set(), "else")
        outs = [self._add("Merge", [f, t], f"merge_{k}").outputs[0]
                for k, (f, t) in enumerate(zip(f_res, t_res))]
        self.graph.replace_all_uses(dict(zip(node.outputs, outs)))
        if not self._control_consumers():
            return None
        done_f = self._add("Identity", [pivot_f.outputs[0]], "done_false",
                           control=[n for n in f_nodes if order_sensitive(n)])
        done_t = self._add("Identity", [pivot_t.outputs[0]], "done_true",
                           control=[n for n in t_nodes if order_sensitive(n)])
        return self._add("Merge", [done_f.outputs[0], done_t.outputs[0]], "done")

    # ---------------------------------------------------------------------- While
    def _lower_while(self) -> Node | None:
        node = self.node
        cond_g, body_g = node.regions
        xs = node.inputs
        limit = node.attrs["maximum_iterations"]
        invariant = {k for k in range(len(xs)) if body_g.results[k] is body_g.args[k]}
        if limit < 0 and len(invariant) == len(xs):
            invariant.discard(0)  # a loop needs one variable that goes round
        control = list(node.control_inputs)
        enter_attrs = {"frame_name": node.name,
                       "parallel_iterations": node.attrs["parallel_iterations"]}

        def enter(x: Value, k: Any, constant: bool) -> Node:
            return self._add("Enter", [x], f"enter_{k}", {**enter_attrs, "is_constant": constant},
                             control=control)

        def loop_var(x: Value, t: Type, k: Any) -> _LoopVar:
            source = self._add("NextIterationSource", [], f"next_iteration_source_{k}",
                               {"value_type": t})
            merge = self._add("Merge", [enter(x, k, False).outputs[0], source.outputs[0]],
                              f"merge_{k}")
            return _LoopVar(k, source, merge)

        free: set[Value] = set()
        args: list[Value] = []
        carried: list[_LoopVar] = []
        for k, x in enumerate(xs):
            if k in invariant:
                args.append(enter(x, k, True).outputs[0])
                free.add(args[-1])
            else:
                carried.append(loop_var(x, body_g.args[k].type, k))
                args.append(carried[-1].merge.outputs[0])
        counter = None
        if limit >= 0:
            zero = self._const(np.int32(0), "iteration_init", control + self._anchor(xs[0]))
            counter = loop_var(zero, TensorType(int32, ()), "iteration")
            carried.append(counter)
        first = carried[0]
        (pred,), cond_nodes = self._inline(cond_g, args, first.merge, free, "cond")
        if counter is not None:
            bound = self._const(np.int32(limit), "maximum_iterations", [first.merge])
            below = self._add("Less", [counter.merge.outputs[0], bound], "below_maximum")
            pred = self._add("LogicalAnd", [below.outputs[0], pred], "continue").outputs[0]
        loop_cond = self._add("LoopCond", [pred], "loop_cond",
                              control=[n for n in cond_nodes if order_sensitive(n)])
        for var in carried:
            var.switch = self._add("Switch", [var.merge.outputs[0], loop_cond.outputs[0]],
                                   f"switch_{var.index}")
            var.exit = self._add("Exit", [var.switch.outputs[0]], f"exit_{var.index}")
        pivot = self._add("Identity", [first.switch.outputs[1]], "pivot")
        by_index = {var.index: var for var in carried}
        body_args = [a if k in invariant else by_index[k].switch.outputs[1]
                     for k, a in enumerate(args)]
        results, body_nodes = self._inline(body_g, body_args, pivot, free, "body")
        barrier = [n for n in body_nodes if order_sensitive(n)]
        nexts = {var.index: results[var.index] for var in carried if var is not counter}
        if counter is not None:
            one = self._const(np.int32(1), "one", [pivot])
            nexts[counter.index] = self._add("Add", [counter.switch.outputs[1], one],
                                             "next_iteration_count").outputs[0]
        for var in carried:
            value = nexts[var.index]
            if value in free:  # an invariant would be live after the last iteration too
                value = self._add("Identity", [value], f"carry_{var.index}", control=[pivot]).outputs[0]
            self._add("NextIteration", [value, var.source.outputs[1]],
                      f"next_iteration_{var.index}", control=barrier)
        outs = [xs[k] if k in invariant else by_index[k].exit.outputs[0] for k in range(len(xs))]
        self.graph.replace_all_uses(dict(zip(node.outputs, outs)))
        return first.exit


# ------------------------------------------------------------------------------- helpers

def order_sensitive(node: Node) -> bool:
    """True when `node` reads or changes state in a way whose order matters: a stateful
    op other than the stack ops, or a node whose regions hold one (the functional ops
    are declared stateful, but what they do is what their regions hold)."""
    if node.regions:
        return any(order_sensitive(n) for r in node.regions for n in r.nodes)
    if node.op in _UNORDERED_OPS:
        return False
    return node.opdef.stateful or node.opdef.side_effects


def _read_args(region: Graph) -> set[int]:
    """Indices of the arguments of `region` that it reads (results and nested regions
    included)."""
    reads: set[Value] = set(region.results)
    for n in region.nodes:
        reads.update(n.inputs)
        if n.regions:
            reads.update(outer_uses(n))
    return {a.index for a in region.args if a in reads}


def _defined_inside(node: Node) -> set[Value]:
    out: set[Value] = set()
    for region in node.regions:
        out.update(region.args)
        for n in region.walk():
            out.update(n.outputs)
            for r in n.regions:
                out.update(r.args)
    return out


def _make_captures_explicit(graph: Graph, node: Node) -> None:
    """Values of enclosing graphs read inside `node`'s regions become explicit: extra
    inputs of an If, extra loop invariants of a While (what the frontend does)."""
    inside = _defined_inside(node)
    captured = list(dict.fromkeys(v for v in outer_uses(node) if v not in inside))
    if not captured:
        return
    bad = [v.name for v in captured if v.graph is not graph]
    if bad:
        raise CompileError(f"a region reads {', '.join(bad)}, which is not a value of the "
                           f"graph being lowered", **node.error_context())
    for v in captured:
        node.inputs.append(v)
        for region in node.regions:
            arg = region.add_arg(v.type, v.name.replace(":", "_"))
            region.replace_all_uses({v: arg})
        if node.op == "While":  # a loop invariant: the body passes it on unchanged
            body = node.regions[1]
            body.results.append(body.args[-1])
            body.result_names.append(f"invariant{len(body.results) - 1}")
            node.outputs.append(Value(v.type, node, len(node.outputs), graph))


def _unique(nodes: Iterable[Node]) -> list[Node]:
    out: list[Node] = []
    for n in nodes:
        if n not in out:
            out.append(n)
    return out


__all__ = ["ENV_VAR", "FUNCTIONAL_OPS", "default_enabled", "enabled", "has_functional_control_flow",
           "lower_control_flow", "lowering", "order_sensitive", "set_default", "stage_wanted"]
