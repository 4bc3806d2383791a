"""Whole steps as one native function: a partition with static shapes becomes

    i32 tw_step(i8** args, i8** results, i8** vars, i8** consts, i8* workspace,
                i32* failed, i8* callback_context, callback)

which runs every node in a fixed topological order: nodes with a native lowering
(`lowering`) are calls into functions of the same module; the few without one call back
into Python (`callback`) to run their reference kernel on the same buffers. The Python
side of a call checks the arguments, takes the variables' locks, picks the buffers and
makes one ctypes call (which releases the GIL).

Planning (`plan_step`), all at compile time because every shape is known:
- storage: each value lives in an argument, a variable's buffer, a constant, a result
  buffer or the workspace; copies of the same bytes (Identity, Reshape, ExpandDims,
  Squeeze, StopGradient) share their input's storage; a `ReadVariable` uses the
  variable's buffer itself unless that variable is assigned while the read value (or a
  copy of it) is still to be used, in which case it takes a snapshot;
- results are written by their producer directly into the result buffer; a result that
  is an argument, a constant, a variable or a second copy of a value is copied at the end;
- the workspace holds every other value; offsets come from the values' live ranges in
  the schedule (first fit), so memory is reused within the step, and the workspace is
  reused across steps (one per concurrent call).

Control flow: an If/While whose regions plan natively (static shapes, no callbacks) is
a branch or a loop calling the regions' own step functions (`_emit_if`, `_emit_while`).
Regions read and assign variables through the step's variable table (one index per
variable for the whole step, so a region's function takes the caller's table), and a
region that assigns a variable counts as an assignment of it where the If/While runs
(so an earlier read of the variable takes a snapshot if still used afterwards). A
variable whose first access in the step would be an assignment inside a region declines
the native path (were the loop to run no iteration, the variable would look initialized).
Loop gradients' stacks (``Stack``/``StackPush``/``StackPop``) are handles in ordinary
storage whose entries live in the call's arena (`stacks`), so the forward loop's pushes
and the backward loop's pops never leave native code. ``ResourceGather`` gathers rows
straight from the variable's buffer (the ``Gather`` lowering on it).

Loop variables that need not alternate between the two buffer sets (`_in_place`): an
invariant stays in its input's storage; a ``DynamicUpdateRow`` of the variable writes
its row in place (``row_update``); ``acc + UnsortedSegmentSum(row, i)`` adds the row in
place (``row_add``); ``acc + P^T @ G`` in a bounded loop appends P and G to histories and
one GEMM after the loop adds the products (``outer_acc``). Variable updates by a scalar
multiple, ``var -= c * x``, multiply in the update's own pass, and touch only the named
rows when x is a segment sum and c a positive constant (``sparse_update``, an
embedding's SGD step). Each keeps the reference's results: the same operations in the
same order, except ``outer_acc``, whose sum BLAS groups (within float tolerance, and the
same on any thread count).

A graph that cannot run this way (several devices, Send/Recv, blocking ops, resources
other than variables and stacks, shapes known only at run time) raises `Ineligible` and
runs on the dataflow executor instead (`executable.CpuExecutable`).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import llvmlite.ir as ir
import numpy as np

from ...compiler.dtypes import bool_
from ...compiler.ir import Graph, Node, Value
from ...compiler.types import ResourceType, TensorType, Type
from ...errors import UnimplementedError
from . import profiling, stacks
from .loops import counted_loop
from .lowering import I8, I8P, I8PP, I32, I64, emit_node_function, find_lowering
from .stacks import STACK_OPS, is_stack_type
from .step_abi import (  # (defined there so that calling a cached step needs no codegen)
    ALIGN,
    OBJECTS_STEP_NAME,
    WORKSPACE_HEADER,
    CallbackFn,  # noqa: F401 (re-exported)
    Ineligible,
    numpy_data_offset,
)

ALIAS_OPS = frozenset({"Identity", "StopGradient", "Reshape", "ExpandDims", "Squeeze",
                       "ReshapeLike"})
ASSIGN_OPS = frozenset({"AssignVariable", "AssignAddVariable", "AssignSubVariable"})
# Dataflow control flow (lowered loops and conds): needs frames and dead tensors.
DATAFLOW_ONLY_OPS = frozenset({"Switch", "Merge", "Enter", "Exit", "NextIteration",
                               "NextIterationSource", "LoopCond"})
CALLBACK_TYPE = ir.FunctionType(I32, [I8P, I32, I8PP, I8PP])
STEP_NAME = "tw_step"


# ------------------------------------------------------------------------ planning

@dataclass
class Storage:
    """Where a value's bytes are: ("arg" | "var" | "const" | "out" | "ws", index or
    byte offset)."""

    kind: str
    index: int


@dataclass
class Action:
    """One thing the step does, in order."""

    kind: str                  # "native", "callback", "snapshot", "assign", "result",
                               # "region", "stack"
    node: Node | None = None
    ins: list[Storage] = field(default_factory=list)
    outs: list[Storage] = field(default_factory=list)
    nbytes: int = 0
    var: int = -1              # snapshot/assign: the variable
    op: str = ""               # assign: AssignVariable / AssignAdd... ; result: ""
    dtype: Any = None
    regions: list[StepPlan] = field(default_factory=list)  # "region": If/While bodies
    scratch: int = 0           # "region": workspace offset of its loop buffers
    # "region" (While): loop variables kept in one buffer ("invariant": the input's own
    # storage; "update": updated in place by the body), and outputs nobody reads
    in_place: dict[int, str] = field(default_factory=dict)
    unused: frozenset[int] = frozenset()


@dataclass
class StepPlan:
    """Everything about one static graph that a call needs (see the module docstring)."""

    graph: Graph
    actions: list[Action]
    var_names: list[str]
    var_types: list[TensorType]
    var_first_access: list[str]      # "read" (must be initialized) or "write"
    consts: list[np.ndarray]
    workspace_bytes: int
    callback_nodes: dict[int, Node]  # action position -> node run by Python
    native_nodes: list[Node]
    base: int = 0                    # id of the first action (ids span nested plans)
    const_base: int = 0              # a region's constants start here in the step's table

    def number(self, base: int = 0) -> int:
        """Give every action of this plan and of its regions' plans a step-wide id (the
        failing one is reported by id); returns the next free id."""
        self.base = base
        nxt = base + len(self.actions)
        for a in self.actions:
            for r in a.regions:
                nxt = r.number(nxt)
        return nxt

    def action_by_id(self, ident: int) -> Action:
        """The action with step-wide id `ident` (see `number`)."""
        if self.base <= ident < self.base + len(self.actions):
            return self.actions[ident - self.base]
        for a in self.actions:
            for r in a.regions:
                try:
                    return r.action_by_id(ident)
                except KeyError:
                    pass
        raise KeyError(ident)


def _tensor(v: Value) -> TensorType:
    t = v.type
    if not isinstance(t, TensorType) or not t.is_fully_defined:
        raise Ineligible(f"{v.name} has type {t}, not a tensor of known shape")
    if not np.dtype(t.dtype.np).isnative:
        raise Ineligible(f"{v.name}: non-native byte order")
    if t.dtype.is_string:  # (host values: their ops run their reference kernels)
        raise Ineligible(f"{v.name} is a string tensor, which native code does not hold")
    return t


def _nbytes(t: Type) -> int:
    if is_stack_type(t):
        return stacks.HANDLE_BYTES
    return int(t.num_elements) * np.dtype(t.dtype.np).itemsize


def _value_type(v: Value) -> Type:
    """A value's type when the step can store it: a tensor of known shape or a stack
    handle."""
    return v.type if is_stack_type(v.type) else _tensor(v)


# ops that may take or make stack handles (copies of a handle are handles too)
_STACK_USERS = STACK_OPS | {"While", "If"} | ALIAS_OPS


def _const_value(node: Node) -> np.ndarray:
    t = node.outputs[0].type
    return np.ascontiguousarray(np.asarray(node.attrs["value"], dtype=t.dtype.np)
                                .reshape(t.shape))


class _Planner:
    def __init__(self, graph: Graph, parent: _Planner | None = None,
                 in_place: dict[int, str] | None = None) -> None:
        self.graph = graph
        # (a While body: results that live in their argument's buffer, see `_in_place`)
        self.in_place = in_place or {}
        self.order = graph.topological_order()
        self.storage: dict[Value, Storage] = {}
        self.root: dict[Value, Value] = {}        # alias groups: value -> its root
        # one variable table for the whole step: regions share their parent's
        self.in_region = parent is not None
        self.var_index: dict[str, int] = parent.var_index if parent else {}
        self.var_names: list[str] = parent.var_names if parent else []
        self.var_types: list[TensorType] = parent.var_types if parent else []
        self.var_first: list[str] = parent.var_first if parent else []
        self.handle_var: dict[Value, int] = {}
        self.consts: list[np.ndarray] = []
        self.region_plans: dict[Node, list[StepPlan]] = {}
        self.loop_in_place: dict[Node, dict[int, str]] = {}
        self.scratch: dict[Node, int] = {}

    # -- classification ---------------------------------------------------------------
    def check(self) -> None:
        for node in self.order:
            if node.op in ("Send", "Recv") or "blocking" in node.opdef.tags:
                raise Ineligible(f"{node.op} '{node.name}' may block")
            if node.op in DATAFLOW_ONLY_OPS:
                raise Ineligible(f"{node.op} '{node.name}' needs the dataflow executor")
            if node.regions and node.op != "Fusion" and any(_reads_enclosing(r)
                                                            for r in node.regions):
                raise Ineligible(f"{node.op} '{node.name}' has regions that read values of "
                                 f"the enclosing graph")
            if node.op == "VarHandle":
                continue
            for v in list(node.inputs) + list(node.outputs):
                if is_stack_type(v.type):
                    self._check_stack(node, v)
                elif isinstance(v.type, ResourceType):
                    if node.op not in ("ReadVariable", "ResourceGather") + tuple(ASSIGN_OPS) \
                            or v.producer is None or v.producer.op != "VarHandle":
                        raise Ineligible(f"{node.op} '{node.name}' uses a resource")
                else:
                    _tensor(v)
        for v in self.graph.args:
            if not (self.in_region and is_stack_type(v.type)):
                _tensor(v)
        for v in self.graph.results:
            if not (self.in_region and is_stack_type(v.type)):
                _tensor(v)

    def _check_stack(self, node: Node, v: Value) -> None:
        """A resource without a value type must be a loop-gradient stack: made by Stack,
        passed on by the stack ops, loops and branches (or a region's argument)."""
        p = v.producer
        if node.op not in _STACK_USERS or (p is None and not self.in_region) or \
                (p is not None and p.op not in _STACK_USERS):
            raise Ineligible(f"{node.op} '{node.name}' uses a resource")

    def _var_of(self, handle: Value, access: str) -> int:
        node = handle.producer
        name = node.attrs.get("shared_name") or node.name
        k = self.var_index.get(name)
        if k is None:
            if access == "write" and self.in_region:
                raise Ineligible(f"variable '{name}' is first assigned inside a loop or "
                                 f"branch")
            k = self.var_index[name] = len(self.var_names)
            self.var_names.append(name)
            vt = handle.type.value_type
            if not isinstance(vt, TensorType) or not vt.is_fully_defined:
                raise Ineligible(f"variable '{name}' has no static shape")
            self.var_types.append(vt)
            self.var_first.append(access)
        return k

    # -- planning ---------------------------------------------------------------------
    def plan(self) -> StepPlan:
        self.check()
        for i, v in enumerate(self.graph.args):
            self.storage[v] = Storage("arg", i)
        row_adds: dict[Node, tuple[int, Node]] = {}  # fused sum -> (argument, segment sum)
        for i, how in self.in_place.items():
            if how in ("update", "row_add"):  # (updated in place: `_in_place`)
                self.storage[self.graph.results[i]] = Storage("arg", i)
            if how == "row_add":
                f, u = _row_add_parts(self.graph.results[i], self.graph.args[i], self.order,
                                      {n: k for k, n in enumerate(self.order)})
                row_adds[f] = (i, u)
        skipped = {u for _, u in row_adds.values()}
        self.row_adds = row_adds
        # var -= c * x (an optimizer's update): the product is computed in the update's own
        # pass instead of a fused kernel writing it to memory first
        self.scaled = _scaled_updates(self.graph, self.order)
        skipped |= {x.producer for x, _ in self.scaled.values()}
        # ... and of a segment sum (an embedding's gradient): only the rows it names
        self.sparse = {n: _sparse_update_parts(n, x, c, self.order)
                       for n, (_, (x, c)) in self.scaled.items()}
        self.sparse = {n: u for n, u in self.sparse.items() if u is not None}
        skipped |= set(self.sparse.values())
        # outer_acc: the fused sum becomes an append of the product's operands to the
        # loop's histories (argument slots after the loop variables); the product and the
        # sum never run
        appends: dict[Node, tuple[int, Node]] = {}
        n_vars = len(self.graph.args)
        for j, i in enumerate(sorted(i for i, h in self.in_place.items() if h == "outer_acc")):
            self.storage[self.graph.results[i]] = Storage("arg", i)
            f, m = _outer_acc_parts(self.graph.parent, self.graph.results[i],
                                    self.graph.args[i], self.order)
            appends[f] = (n_vars + 2 * j, m)
            skipped.add(m)
        self.appends = appends
        steps: list[tuple[str, Node]] = []
        for node in self.order:
            op = node.op
            if op == "VarHandle" or op == "NoOp" or node in skipped:
                continue
            if node in row_adds:
                steps.append(("row_add", node))
                continue
            if node in appends:
                steps.append(("append", node))
                continue
            if op == "Const":
                self.storage[node.outputs[0]] = Storage("const", len(self.consts))
                self.consts.append(_const_value(node))
            elif op in ALIAS_OPS:
                self.root[node.outputs[0]] = self._root(node.inputs[0])
            elif op == "ReadVariable":
                steps.append(("read", node))
                self._var_of(node.inputs[0], "read")
            elif op == "ResourceGather":
                steps.append(("rgather", node))
                self._var_of(node.inputs[0], "read")
            elif op in STACK_OPS:
                steps.append(("stack", node))
            elif op in ASSIGN_OPS:
                steps.append(("assign", node))
                self._var_of(node.inputs[0], "write" if op == "AssignVariable" else "read")
            elif op in ("If", "While") and self._region_plans(node) is not None:
                steps.append(("region", node))
            else:
                low = find_lowering(node)
                steps.append(("native" if low is not None else "callback", node))
        pos = {node: k for k, (_, node) in enumerate(steps)}
        end = len(steps)
        last_use: dict[Value, int] = {}  # per alias root
        for k, (kind, node) in enumerate(steps):
            for v in self._step_inputs(kind, node):
                r = self._root(v)
                last_use[r] = max(last_use.get(r, -1), k)
        for v in self.graph.results:
            last_use[self._root(v)] = end
        # ReadVariable: alias the variable's buffer unless it is assigned while in use.
        assigns: dict[int, list[int]] = {}
        for k, (kind, node) in enumerate(steps):
            if kind == "assign":
                assigns.setdefault(self._var_of(node.inputs[0], "read"), []).append(k)
            elif kind == "region":
                for name in _assigned_in_regions(node):
                    assigns.setdefault(self.var_index[name], []).append(k)
        snapshot: set[Node] = set()
        for kind, node in steps:
            if kind != "read":
                continue
            var = self._var_of(node.inputs[0], "read")
            p, last = pos[node], last_use.get(node.outputs[0], pos[node])
            if any(p < a <= last for a in assigns.get(var, ())):
                snapshot.add(node)
            else:
                self.storage[node.outputs[0]] = Storage("var", var)
        # Results: the producer of a result's root writes into the result buffer.
        result_of: dict[Value, int] = {}
        for r, v in enumerate(self.graph.results):
            root = self._root(v)
            if root in self.storage or root in result_of:
                continue
            result_of[root] = r
        # Workspace: every other computed value, placed by live range.
        computed: list[tuple[int, Any, int]] = []  # (definition, value or node, bytes)
        for k, (kind, node) in enumerate(steps):
            if kind == "assign" and node in self.sparse:
                computed.append((k, node, _sparse_scratch(self.sparse[node])))
            if kind == "assign" or (kind == "read" and node not in snapshot):
                continue
            if kind == "region":
                computed.append((k, node, _region_scratch(node, self.region_plans[node])))
            for v in node.outputs:
                if v in self.storage:
                    continue
                if v in result_of:
                    self.storage[v] = Storage("out", result_of[v])
                else:
                    computed.append((k, v, _nbytes(_value_type(v))))
        ws_bytes = self._place(computed, last_use)
        self.last_use = last_use
        actions = self._actions(steps, snapshot)
        for a in actions:
            for r in a.regions:
                r.const_base = len(self.consts)
                self.consts.extend(_all_consts(r))
        callbacks = {k: a.node for k, a in enumerate(actions) if a.kind == "callback"}
        natives = [a.node for a in actions if a.kind == "native"]
        return StepPlan(self.graph, actions, self.var_names, self.var_types, self.var_first,
                        self.consts, ws_bytes, callbacks, natives)

    def _step_inputs(self, kind: str, node: Node) -> list[Value]:
        """What a step reads: a row_add reads the segment sum's row and id instead of the
        segment sum (which never runs)."""
        if kind == "row_add":
            u = self.row_adds[node][1]
            return [node.inputs[0], *u.inputs]
        if kind == "append":
            return list(self.appends[node][1].inputs)
        if kind == "assign" and node in self.sparse:
            return [node.inputs[0], *self.sparse[node].inputs, self.scaled[node][1][1]]
        if kind == "assign" and node in self.scaled:
            return [node.inputs[0], *self.scaled[node][1]]
        return list(node.inputs)

    def _region_plans(self, node: Node) -> list[StepPlan] | None:
        """Plans of an If's branches or a While's cond and body when they can run natively
        inside this step: static shapes, no callbacks (at any depth); variables go in
        the step's table. None when they cannot (then a region using resources makes
        the whole graph ineligible: run by a callback, it would take variable locks
        that the step holds, or need stacks that live in native memory)."""
        if node in self.region_plans:
            return self.region_plans[node]
        plans = []
        in_place = _in_place(node) if node.op == "While" else {}
        for j, region in enumerate(node.regions):
            if _reads_enclosing(region):
                return self._no_region_plans(node)
            try:
                sub = _Planner(region, self, in_place if j == 1 else None).plan()
            except (Ineligible, KeyError):
                return self._no_region_plans(node)
            if not _all_native(sub):
                return self._no_region_plans(node)
            plans.append(sub)
        self.region_plans[node] = plans
        self.loop_in_place[node] = in_place
        return plans

    @staticmethod
    def _no_region_plans(node: Node) -> None:
        if _uses_resources(node):
            raise Ineligible(f"{node.op} '{node.name}' uses variables or stacks inside "
                             f"regions that cannot run natively")
        return None

    def _root(self, v: Value) -> Value:
        return self.root.get(v, v)

    def _place(self, computed: list[tuple[int, Any, int]], last_use: dict[Any, int]) -> int:
        """First-fit offsets for values (and region scratch) live over [definition, last
        use]."""
        live: list[tuple[int, int, int]] = []  # (last use, offset, size)
        free: list[tuple[int, int]] = []       # (offset, size), sorted by offset
        top = 0
        for k, v, nbytes in computed:
            # release what died before this definition
            still = []
            for entry in live:
                if entry[0] < k:
                    free.append((entry[1], entry[2]))
                else:
                    still.append(entry)
            live = still
            free = _coalesce(free)
            size = max(ALIGN, -(-nbytes // ALIGN) * ALIGN)
            for j, (off, fsize) in enumerate(free):
                if fsize >= size:
                    free[j:j + 1] = [(off + size, fsize - size)] if fsize > size else []
                    break
            else:
                off, top = top, top + size
            if isinstance(v, Node):
                self.scratch[v] = off
            else:
                self.storage[v] = Storage("ws", off)
            live.append((last_use.get(v, k), off, size))
        return top

    def _actions(self, steps: list[tuple[str, Node]], snapshot: set[Node]) -> list[Action]:
        st = lambda v: self.storage[self._root(v)]  # noqa: E731
        actions: list[Action] = []
        for kind, node in steps:
            if kind in ("native", "callback"):
                ins, outs = [st(v) for v in node.inputs], [st(v) for v in node.outputs]
                if node.op == "DynamicUpdateRow" and ins[0] == outs[0]:
                    kind = "row_update"  # (a loop variable updated in place: `_in_place`)
                actions.append(Action(kind, node, ins, outs))
            elif kind == "region":
                unused = frozenset(k for k, v in enumerate(node.outputs)
                                   if self._root(v) not in self.last_use)
                actions.append(Action(kind, node, [st(v) for v in node.inputs],
                                      [st(v) for v in node.outputs],
                                      regions=self.region_plans[node],
                                      scratch=self.scratch[node],
                                      in_place=self.loop_in_place.get(node, {}),
                                      unused=unused))
            elif kind == "stack":
                actions.append(Action(kind, node, [st(v) for v in node.inputs],
                                      [st(v) for v in node.outputs]))
            elif kind == "row_add":
                u = self.row_adds[node][1]
                actions.append(Action(kind, u, [st(v) for v in self._step_inputs(kind, node)],
                                      [st(node.outputs[0])]))
            elif kind == "append":
                slot, m = self.appends[node]
                actions.append(Action("copies", m, [st(v) for v in m.inputs],
                                      [Storage("arg", slot), Storage("arg", slot + 1)]))
            elif kind == "rgather":
                var = self._var_of(node.inputs[0], "read")
                actions.append(Action("native", _gather_node(node, self.var_types[var]),
                                      [Storage("var", var), st(node.inputs[1])],
                                      [st(node.outputs[0])]))
            elif kind == "read":
                if node in snapshot:
                    t = node.outputs[0].type
                    actions.append(Action("snapshot", node, outs=[st(node.outputs[0])],
                                          nbytes=_nbytes(t),
                                          var=self._var_of(node.inputs[0], "read")))
            else:
                value = node.inputs[1]
                t = _tensor(value)
                if t.dtype is bool_ and node.op != "AssignVariable":
                    raise Ineligible(f"{node.op} '{node.name}' on a bool variable")
                if node in self.sparse:  # (rows, ids, c; reported as the segment sum)
                    actions.append(Action(
                        "sparse_update", self.sparse[node],
                        ins=[st(v) for v in self._step_inputs(kind, node)[1:]],
                        nbytes=_nbytes(t), var=self._var_of(node.inputs[0], "read"),
                        op=node.op, dtype=t.dtype, scratch=self.scratch[node]))
                    continue
                # (a scaled update reads x and the scalar c: var -= c * x)
                ins = [st(v) for v in self.scaled[node][1]] if node in self.scaled else \
                    [st(value)]
                actions.append(Action("assign", node, ins=ins, nbytes=_nbytes(t),
                                      var=self._var_of(node.inputs[0], "read"), op=node.op,
                                      dtype=t.dtype))
        for r, v in enumerate(self.graph.results):
            src = st(v)
            if src.kind == "out" and src.index == r or r in self.in_place:
                continue
            actions.append(Action("result", None, ins=[src], outs=[Storage("out", r)],
                                  nbytes=_nbytes(_value_type(v))))
        return actions


def _reads_enclosing(region: Graph) -> bool:
    """Whether a region (or a region nested in it) reads a value of an enclosing graph
    instead of only its own arguments (the IR allows it; a region's step function has
    no storage for such values)."""
    for n in region.nodes:
        for v in n.inputs:
            if v.graph is not region:
                return True
        if any(_reads_enclosing(r) for r in n.regions) and n.op != "Fusion":
            return True
    return any(v.graph is not region for v in region.results)


def _in_place(node: Node) -> dict[int, str]:
    """Loop variables of a While that need not alternate between two buffers:
    "invariant" where the body returns its argument (captured tensors, weights: they
    stay in the input's storage, never copied), "update" where the body returns
    ``DynamicUpdateRow(argument, index, row)`` (a scan's accumulators and their
    gradients) and reads the argument nowhere after that update, which then writes
    just the row, in place."""
    body = node.regions[1]
    order = body.topological_order()
    pos = {n: k for k, n in enumerate(order)}
    out: dict[int, str] = {}
    for k, (arg, res) in enumerate(zip(body.args, body.results)):
        if sum(r is res for r in body.results) != 1 or any(r is arg for j, r in
                                                            enumerate(body.results) if j != k):
            continue
        if res is arg:
            out[k] = "invariant"
            continue
        if _row_add_parts(res, arg, order, pos) is not None:
            out[k] = "row_add"
            continue
        if _outer_acc_parts(node, res, arg, order) is not None:
            out[k] = "outer_acc"
            continue
        d = res.producer
        if d is None or d.op != "DynamicUpdateRow" or d.inputs[0] is not arg or \
                d.inputs[2] is arg or d.inputs[1] is arg:
            continue
        users = [n for n in order if any(v is arg for v in n.inputs) and n is not d]
        if all(pos[n] < pos[d] and n.op not in ALIAS_OPS for n in users) and \
                not any(v is res for n in order if n is not d for v in n.inputs):
            out[k] = "update"
    return out


def _fused_sum_of(res: Value, arg: Value) -> Node | None:
    """The Fusion computing ``res = arg + other`` as one Add/AddN of its two inputs,
    `arg` first, of one type; else None."""
    f = res.producer
    if f is None or f.op != "Fusion" or len(f.inputs) != 2 or len(f.outputs) != 1:
        return None
    region = f.regions[0]
    if len(region.nodes) != 1 or region.nodes[0].op not in ("Add", "AddN") or \
            [v for v in region.nodes[0].inputs] != list(region.args) or \
            region.results[0] is not region.nodes[0].outputs[0]:
        return None
    if f.inputs[0] is not arg or not isinstance(arg.type, TensorType) or \
            res.type != arg.type or f.inputs[1].type != arg.type:
        return None
    return f


OUTER_ACC_MAX_BYTES = 256 << 20  # the largest histories of a weight gradient's products


def _outer_acc_parts(node: Node, res: Value, arg: Value, order: list[Node]
                     ) -> tuple[Node, Node] | None:
    """``res = arg + MatMul(P, G, transpose_a=True)`` in a bounded loop's body, where
    nothing else reads `arg`, the product or `res` (a weight's gradient in a scan's
    backward loop, the sum of one outer product per iteration): the fused sum and the
    product. The loop then only appends P's and G's rows to two histories, and one GEMM
    after the loop adds all the products at once (the same sum, grouped by BLAS instead
    of by iteration: within float tolerance of the reference, and independent of the
    thread count: one serial BLAS call)."""
    if int(node.attrs.get("maximum_iterations", -1)) < 0:
        return None
    cond = node.regions[0]
    k = arg.index
    if any(v is cond.args[k] for n in cond.walk() for v in n.inputs) or \
            any(v is cond.args[k] for v in cond.results):
        return None  # (the cond would see the value before the products are added)
    f = _fused_sum_of(res, arg)
    if f is None or arg.type.dtype.ir_name not in ("f32", "f64"):
        return None
    m = f.inputs[1].producer
    if m is None or m.op != "MatMul" or not m.attrs.get("transpose_a") or \
            m.attrs.get("transpose_b") or any(v.type.rank != 2 or v is arg for v in m.inputs):
        return None
    if any(n is not f and any(v is f.inputs[1] or v is res or v is arg for v in n.inputs)
           for n in order):
        return None
    # the histories hold a row block for every iteration the bound allows: past
    # OUTER_ACC_MAX_BYTES (a safety bound such as maximum_iterations=10**7 on a loop that
    # stops after 5) the products are added per iteration instead
    if int(node.attrs["maximum_iterations"]) * sum(_nbytes(v.type) for v in m.inputs) > \
            OUTER_ACC_MAX_BYTES:
        return None
    return f, m


def _outer_acc_vars(node: Node) -> list[tuple[int, Node]]:
    """(loop variable, its product) for each "outer_acc" variable of a While, in order
    (their history slots follow the loop variables in the body's argument table)."""
    body = node.regions[1]
    out = []
    for k, how in sorted(_in_place(node).items()):
        if how == "outer_acc":
            out.append((k, _outer_acc_parts(node, body.results[k], body.args[k],
                                            body.topological_order())[1]))
    return out


def _scaled_updates(graph: Graph, order: list[Node]) -> dict[Node, tuple[Value, list[Value]]]:
    """AssignAdd/AssignSub nodes whose value is ``c * x`` from a fused Mul of a float
    scalar and a tensor of the variable's shape that nothing else reads: node -> (the
    product, [x, c])."""
    readers: dict[Value, int] = {}
    for n in order:
        for v in n.inputs:
            readers[v] = readers.get(v, 0) + 1
    for v in graph.results:
        readers[v] = readers.get(v, 0) + 1
    out = {}
    for node in order:
        if node.op not in ("AssignAddVariable", "AssignSubVariable"):
            continue
        value = node.inputs[1]
        f = value.producer
        if f is None or f.op != "Fusion" or len(f.outputs) != 1 or readers.get(value) != 1 \
                or not isinstance(value.type, TensorType) or value.type.dtype.kind != "float":
            continue
        region = f.regions[0]
        if len(region.nodes) != 1 or region.nodes[0].op != "Mul" or \
                region.results[0] is not region.nodes[0].outputs[0]:
            continue
        mul = region.nodes[0]
        if any(v.producer is not None for v in mul.inputs):
            continue
        outer = [f.inputs[v.index] for v in mul.inputs]
        shapes = [tuple(v.type.shape) for v in outer]
        if shapes == [(), tuple(value.type.shape)]:
            out[node] = (value, [outer[1], outer[0]])
        elif shapes == [tuple(value.type.shape), ()] and shapes[0] != ():
            out[node] = (value, [outer[0], outer[1]])
    return out


def _sparse_update_parts(assign: Node, x: Value, c: Value, order: list[Node]) -> Node | None:
    """The UnsortedSegmentSum producing `x` in ``var -= c * x`` (or ``+=`` with c < 0),
    when only its named rows can change the variable: c is a positive (negative for +=)
    finite constant, so ``var - c * 0`` is exactly ``var`` on every row no id names
    (signed zeros included), and nothing else reads the sum; else None."""
    u = x.producer
    if u is None or u.op != "UnsortedSegmentSum" or c.producer is None or \
            c.producer.op != "Const":
        return None
    value = float(np.asarray(c.producer.attrs["value"]))
    if not np.isfinite(value) or value == 0.0 or \
            (value > 0) != (assign.op == "AssignSubVariable"):
        return None
    data, ids = u.inputs
    if not isinstance(data.type, TensorType) or data.type.dtype != x.type.dtype or \
            ids.type.rank < 1 or x.type.rank < 1 or \
            tuple(data.type.shape[ids.type.rank:]) != tuple(x.type.shape[1:]):
        return None
    if sum(1 for n in order for v in n.inputs if v is x) != 1 or \
            any(v is x for v in assign.graph.results):  # (only the fused product reads it)
        return None
    return u


def _sparse_scratch(u: Node) -> int:
    """Workspace of a sparse update: one slot per segment (int64), then one accumulated
    row per data row."""
    n_seg = int(u.outputs[0].type.shape[0])
    rows = int(u.inputs[1].type.num_elements)
    return _aligned(8 * n_seg) + _aligned(rows * _nbytes(u.outputs[0].type) // max(1, n_seg))


def _row_add_parts(res: Value, arg: Value, order: list[Node], pos: dict[Node, int]
                   ) -> tuple[Node, Node] | None:
    """``res = arg + UnsortedSegmentSum(row, id)`` with one scalar segment id (the
    gradient a scan's body gives to a sequence it reads row by row), as a fused Add or
    AddN of exactly those two, where nothing reads `arg` after the sum and nothing else
    reads the segment sum or `res`: the fused node and the segment sum (then the loop
    adds the row to row `id` of `arg`, in place: the same additions, in the same order,
    as the whole-tensor sum, whose other rows add zeros)."""
    f = res.producer
    if f is None or f.op != "Fusion" or len(f.inputs) != 2 or len(f.outputs) != 1:
        return None
    region = f.regions[0]
    if len(region.nodes) != 1 or region.nodes[0].op not in ("Add", "AddN") or \
            [v for v in region.nodes[0].inputs] != list(region.args) or \
            region.results[0] is not region.nodes[0].outputs[0]:
        return None
    if f.inputs[0] is not arg:
        return None
    u = f.inputs[1].producer
    if u is None or u.op != "UnsortedSegmentSum" or u.inputs[0] is arg or \
            u.inputs[1].type.rank != 0 or res.type != arg.type or \
            not isinstance(arg.type, TensorType) or arg.type.dtype.kind != "float" or \
            f.inputs[1].type != arg.type:
        return None
    if any(n is not f and any(v is f.inputs[1] or v is res for v in n.inputs) for n in order):
        return None
    if any(n is not f and n is not u and any(v is arg for v in n.inputs) and
           (pos[n] > pos[f] or n.op in ALIAS_OPS) for n in order):
        return None
    return f, u


def _gather_node(node: Node, var_type: TensorType) -> Node:
    """A stand-in ``Gather`` (axis 0) over the variable's value for a ResourceGather
    node: the Gather lowering emits it (same name and source line for errors)."""
    table = Value(var_type, None, 0, node.graph)
    return Node(node.graph, "Gather", [table, node.inputs[1]], {"axis": 0, "batch_dims": 0},
                [node.outputs[0].type], node.name, loc=node.loc)


def _assigned_in_regions(node: Node) -> set[str]:
    """Names of the variables that `node`'s regions (at any depth) assign."""
    names = set()
    for region in node.regions:
        for n in region.walk():
            if n.op in ASSIGN_OPS and n.inputs[0].producer is not None:
                h = n.inputs[0].producer
                names.add(h.attrs.get("shared_name") or h.name)
    return names


def uses_stacks(plan: StepPlan) -> bool:
    """Whether `plan` (or a region's plan in it) runs stack ops (and so needs the
    call's arena)."""
    return any(a.kind == "stack" or any(uses_stacks(r) for r in a.regions)
               for a in plan.actions)


def _uses_resources(node: Node) -> bool:
    """Whether `node` or a node in its regions (at any depth) reads or makes a resource
    (a variable handle made inside a branch, say)."""
    if any(isinstance(v.type, ResourceType) for v in list(node.inputs) + list(node.outputs)):
        return True
    return any(_uses_resources(n) for r in node.regions for n in r.nodes)


def _all_consts(plan: StepPlan) -> list[np.ndarray]:
    """A region plan's constants (its nested regions' were already appended to its own)."""
    return list(plan.consts)


def _all_native(plan: StepPlan) -> bool:
    return not plan.callback_nodes and all(_all_native(r) for a in plan.actions
                                           for r in a.regions)


def _aligned(n: int) -> int:
    return max(ALIGN, -(-n // ALIGN) * ALIGN)


def _region_layout(node: Node, plans: list[StepPlan]) -> tuple[list[int], list[int], int, int]:
    """Scratch layout of an If/While: offsets of the loop variables' two buffer sets
    (While only), of the cond flag, and of the regions' (shared) workspace; total size."""
    off = 0
    first, second = [], []
    if node.op == "While":
        for which in (first, second):
            for v in node.outputs:
                which.append(off)
                off += _aligned(_nbytes(v.type))
    flag = off
    off += ALIGN
    ws = off
    off += _aligned(WORKSPACE_HEADER + max(p.workspace_bytes for p in plans))
    if node.op == "While":  # outer_acc histories: one row block per iteration
        limit = int(node.attrs.get("maximum_iterations", -1))
        for _, m in _outer_acc_vars(node):
            for v in m.inputs:
                first.append(off)  # (after both buffer sets: see `_emit_while`)
                off += _aligned(limit * _nbytes(v.type))
    return first + second, [flag], ws, off


def _region_scratch(node: Node, plans: list[StepPlan]) -> int:
    return _region_layout(node, plans)[3]


def _coalesce(free: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for off, size in sorted(f for f in free if f[1] > 0):
        if out and out[-1][0] + out[-1][1] == off:
            out[-1] = (out[-1][0], out[-1][1] + size)
        else:
            out.append((off, size))
    return out


def plan_step(graph: Graph) -> StepPlan:
    """Plan `graph` (one partition, all shapes static) as one native step; raises
    `Ineligible` when it cannot run that way."""
    plan = _Planner(graph).plan()
    plan.number()  # ids of nested actions: errors are reported by id, cached code or not
    profiling.register_symbols()  # (the probes' libc symbols, before any step code loads)
    if uses_stacks(plan):
        stacks.register_symbols()  # (before any code that allocates is loaded)
    return plan


# ------------------------------------------------------------------------- codegen

STEP_TYPE = ir.FunctionType(I32, [I8PP, I8PP, I8PP, I8PP, I8P, ir.PointerType(I32), I8P,
                                   ir.PointerType(CALLBACK_TYPE)])


def _formats_on_failure(node: Node) -> bool:
    """Whether a failure of native `node` calls back into Python to format its message:
    an Assert with data tensors, whose values the message shows, or an op whose reference
    kernel names the bad element (`NativeLowering.explained_by_reference`: a Gather's
    index and its value) (top-level actions only: callbacks see the step's own buffers)."""
    if node.op == "Assert":
        return len(node.inputs) > 1
    low = find_lowering(node)
    return low is not None and low.explained_by_reference


def emit_step(plan: StepPlan, gemm_mode: str = "blas", allow_callbacks: bool = True,
              data_offset: int | None = None) -> ir.Module:
    """The LLVM module of `plan`: its node functions and ``tw_step``; with
    `data_offset`, also the JIT entry ``tw_step_objects`` (`_emit_objects_entry`)."""
    if data_offset is None and uses_stacks(plan):
        # (the arena lives in the JIT entry's workspace header)
        raise UnimplementedError("loop gradients (stacks) run only in JIT-compiled steps, "
                                 "not in ahead-of-time libraries")
    module = ir.Module(name=f"step_{plan.graph.name}")
    if data_offset is not None:  # JIT steps: per-action clocks for tw.profiler (`profiling`)
        profiling.instrument(module)
    fn = _emit_plan(module, plan, STEP_NAME, gemm_mode, allow_callbacks)
    if data_offset is not None:
        _emit_objects_entry(module, fn, plan, data_offset)
    return module


def _emit_plan(module: ir.Module, plan: StepPlan, name: str, gemm_mode: str,
               allow_callbacks: bool) -> ir.Function:
    """Define ``i32 @name(args, results, vars, consts, workspace, failed, callback
    context, callback)`` running `plan`'s actions (regions' plans as functions of their
    own, called from loops and branches)."""
    node_fns: dict[int, ir.Function] = {}
    region_fns: dict[int, list[ir.Function]] = {}
    for k, a in enumerate(plan.actions):
        ident = plan.base + k
        if a.kind == "native":
            node_fns[k] = emit_node_function(module, a.node, f"n{ident}.{a.node.op}", gemm_mode)
            # A node function is external (kept whole) and called once: inlined into the
            # step, LLVM would optimize and compile its code twice, for nothing at run
            # time (one call per step). W3: the step function 2111 -> ~1000 lines.
            node_fns[k].attributes.add("noinline")
        elif a.kind == "region":
            region_fns[k] = [_emit_plan(module, r, f"r{ident}.{j}.{a.node.op}", gemm_mode,
                                        allow_callbacks) for j, r in enumerate(a.regions)]
        elif a.kind == "stack":
            node = a.node
            types = [v.type for v in (node.inputs[1:] if node.op == "StackPush" else
                                      node.outputs[1:])]
            node_fns[k] = stacks.emit_stack_function(module, node.op, f"s{ident}.{node.op}",
                                                     node.attrs, types)
        elif a.kind == "callback" and not allow_callbacks:
            raise UnimplementedError(f"op {a.node.op} ('{a.node.name}') has no native "
                                     f"lowering", **a.node.error_context())
    fn = ir.Function(module, STEP_TYPE, name)
    if name != STEP_NAME:
        fn.linkage = "internal"
    args, results, vars_, consts, ws, failed, cb_ctx, callback = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def table(tab: ir.Value, k: int) -> ir.Value:
        return b.load(b.gep(tab, [I64(k)]))

    cache: dict[tuple[str, int], ir.Value] = {}

    def pointer(s: Storage) -> ir.Value:
        key = (s.kind, s.index)
        if key not in cache:
            if s.kind == "ws":
                cache[key] = b.gep(ws, [I64(s.index)])
            else:
                tab = {"arg": args, "var": vars_, "const": consts, "out": results}[s.kind]
                cache[key] = table(tab, s.index)
        return cache[key]

    # every pointer is loaded once, up front
    for a in plan.actions:
        for s in a.ins + a.outs:
            pointer(s)
        if a.var >= 0:
            pointer(Storage("var", a.var))

    def pointer_array(ptrs: list[ir.Value]) -> ir.Value:
        arr = b.alloca(I8P, size=I32(max(1, len(ptrs))))
        for j, p in enumerate(ptrs):
            b.store(p, b.gep(arr, [I64(j)]))
        return arr

    def copy(dst: ir.Value, src: ir.Value, nbytes: int) -> None:
        b.call(memmove, [dst, src, I64(nbytes), ir.IntType(1)(0)])

    def check(status: ir.Value, ident: int | None) -> None:
        with b.if_then(b.icmp_signed("!=", status, I32(0)), likely=False):
            if ident is not None:  # (a region's function already said which action failed)
                b.store(I32(ident), failed)
            b.ret(status)

    memmove = module.globals.get("llvm.memmove.p0i8.p0i8.i64") or ir.Function(
        module, ir.FunctionType(ir.VoidType(), [I8P, I8P, I64, ir.IntType(1)]),
        "llvm.memmove.p0i8.p0i8.i64")
    env = _RegionEnv(b, pointer, pointer_array, copy, check, ws, vars_, consts, module, gemm_mode,
                     failed, cb_ctx, callback)
    for k, a in enumerate(plan.actions):
        probe = profiling.begin(b, module)
        if a.kind in ("native", "callback"):
            ins = pointer_array([pointer(s) for s in a.ins])
            outs = pointer_array([pointer(s) for s in a.outs])
            if a.kind == "native":
                status = b.call(node_fns[k], [ins, outs])
                if _formats_on_failure(a.node) and name == STEP_NAME and allow_callbacks:
                    # a failed Assert with data tensors: Python formats their values into
                    # the error (`NativeStep._run_callback`); the Assert's status stands
                    with b.if_then(b.icmp_signed("!=", status, I32(0)), likely=False):
                        b.call(callback, [cb_ctx, I32(plan.base + k), ins, outs])
            else:
                status = b.call(callback, [cb_ctx, I32(plan.base + k), ins, outs])
            check(status, plan.base + k)
        elif a.kind == "stack":
            ins = pointer_array([pointer(s) for s in a.ins])
            outs = pointer_array([pointer(s) for s in a.outs])
            check(b.call(node_fns[k], [cb_ctx, ins, outs]), plan.base + k)
        elif a.kind == "row_update":
            _emit_row_update(b, a, [pointer(s) for s in a.ins], copy, check, plan.base + k)
        elif a.kind == "row_add":
            _emit_row_add(b, a, [pointer(s) for s in a.ins], check, plan.base + k)
        elif a.kind == "copies":  # (an outer_acc product's operands to the histories)
            for src, dst, v in zip(a.ins, a.outs, a.node.inputs):
                copy(pointer(dst), pointer(src), _nbytes(v.type))
        elif a.kind == "region":
            if a.node.op == "If":
                _emit_if(env, a, region_fns[k])
            else:
                _emit_while(env, a, region_fns[k])
        elif a.kind == "snapshot":
            copy(pointer(a.outs[0]), pointer(Storage("var", a.var)), a.nbytes)
        elif a.kind == "result":
            copy(pointer(a.outs[0]), pointer(a.ins[0]), a.nbytes)
        elif a.kind == "sparse_update":
            _emit_sparse_update(b, a, pointer(Storage("var", a.var)),
                                [pointer(s) for s in a.ins], b.gep(ws, [I64(a.scratch)]),
                                check, plan.base + k)
        elif a.kind == "assign":
            dst, src = pointer(Storage("var", a.var)), pointer(a.ins[0])
            if a.op == "AssignVariable":
                copy(dst, src, a.nbytes)
            else:
                scale = pointer(a.ins[1]) if len(a.ins) == 2 else None
                _emit_update(b, a, dst, src, scale)
        profiling.end(b, module, probe, plan.base + k)
    b.ret(I32(0))
    return fn


@dataclass
class _RegionEnv:
    """What emitting an If/While needs from the enclosing function."""

    b: ir.IRBuilder
    pointer: Any
    pointer_array: Any
    copy: Any
    check: Any
    ws: ir.Value
    vars: ir.Value
    consts: ir.Value
    module: ir.Module
    gemm_mode: str
    failed: ir.Value
    cb_ctx: ir.Value
    callback: ir.Value

    def call(self, fn: ir.Function, plan: StepPlan, args: ir.Value, results: ir.Value,
             sub_ws: ir.Value) -> ir.Value:
        b = self.b
        consts = b.gep(self.consts, [I64(plan.const_base)])
        return b.call(fn, [args, results, self.vars, consts, sub_ws, self.failed, self.cb_ctx,
                           self.callback])


def _emit_row_update(b: ir.IRBuilder, a: Action, ptrs: list[ir.Value], copy: Any, check: Any,
                     ident: int) -> None:
    """DynamicUpdateRow in place: check the index (status 1, the lowering's message),
    then copy the row over row `index` of the buffer."""
    t = a.node.outputs[0].type
    rows, row_bytes = int(t.shape[0]), _nbytes(t) // max(1, int(t.shape[0]))
    index = _load_index(b, ptrs[1], a.node.inputs[1].type.dtype)
    bad = b.icmp_unsigned(">=", index, I64(rows))
    check(b.select(bad, I32(1), I32(0)), ident)
    copy(b.gep(ptrs[0], [b.mul(index, I64(row_bytes))]), ptrs[2], row_bytes)


def _load_index(b: ir.IRBuilder, ptr: ir.Value, dtype: Any) -> ir.Value:
    bits = np.dtype(dtype.np).itemsize * 8
    index = b.load(b.bitcast(ptr, ir.PointerType(ir.IntType(bits))))
    return b.sext(index, I64) if bits < 64 else index


def _emit_row_add(b: ir.IRBuilder, a: Action, ptrs: list[ir.Value], check: Any,
                  ident: int) -> None:
    """buffer[id] += row for an in-place ``buffer + UnsortedSegmentSum(row, id)``
    (`_row_add_parts`; `a.node` is the segment sum): an id >= the number of rows is
    the segment sum's status 1; a negative id drops the row, as the op does."""
    from .elementwise import memory_type
    t = a.node.outputs[0].type
    rows = int(t.shape[0])
    n = int(t.num_elements) // max(1, rows)
    index = _load_index(b, ptrs[2], a.node.inputs[1].type.dtype)
    check(b.select(b.icmp_signed(">=", index, I64(rows)), I32(1), I32(0)), ident)
    et = ir.PointerType(memory_type(t.dtype))
    with b.if_then(b.icmp_signed(">=", index, I64(0))):
        dst = b.gep(b.bitcast(ptrs[0], et), [b.mul(index, I64(n))])
        src = b.bitcast(ptrs[1], et)
        with counted_loop(b, 0, n, name="row") as i:
            pd = b.gep(dst, [i])
            b.store(b.fadd(b.load(pd), b.load(b.gep(src, [i]))), pd)


def _emit_sparse_update(b: ir.IRBuilder, a: Action, var: ir.Value, ptrs: list[ir.Value],
                        scratch: ir.Value, check: Any, ident: int) -> None:
    """var[s] -= c * sum of the data rows with id s, for the ids present only (`a.node` is
    the segment sum, `_sparse_update_parts`). The sums are the segment sum's: from 0.0,
    adding rows in data order; then the product and the update, rounded as the dense
    kernels round them. An id >= the number of segments is the segment sum's status 1,
    a negative id drops its row."""
    from .elementwise import memory_type
    u = a.node
    t = u.outputs[0].type
    n_seg = int(t.shape[0])
    width = int(t.num_elements) // max(1, n_seg)
    ids_t = u.inputs[1].type
    rows = int(ids_t.num_elements)
    et = ir.PointerType(memory_type(t.dtype))
    data, ids, cp = (b.bitcast(ptrs[0], et), ptrs[1], b.bitcast(ptrs[2], et))
    slots = b.bitcast(scratch, ir.PointerType(I64))
    acc = b.bitcast(b.gep(scratch, [I64(_aligned(8 * n_seg))]), et)
    idt = np.dtype(ids_t.dtype.np).itemsize * 8
    id_ptr = b.bitcast(ids, ir.PointerType(ir.IntType(idt)))

    def segment(j: ir.Value) -> ir.Value:
        s = b.load(b.gep(id_ptr, [j]))
        return b.sext(s, I64) if idt < 64 else s

    zero = ir.Constant(memory_type(t.dtype), 0.0)
    with counted_loop(b, 0, n_seg, name="slot") as s:
        b.store(I64(-1), b.gep(slots, [s]))
    with counted_loop(b, 0, rows, name="gather") as j:
        s = segment(j)
        check(b.select(b.icmp_signed(">=", s, I64(n_seg)), I32(1), I32(0)), ident)
        with b.if_then(b.icmp_signed(">=", s, I64(0))):
            slot_ptr = b.gep(slots, [s])
            slot = b.load(slot_ptr)
            first = b.icmp_signed("<", slot, I64(0))
            with b.if_then(first):
                b.store(j, slot_ptr)
            row = b.select(first, j, slot)
            dst = b.gep(acc, [b.mul(row, I64(width))])
            src = b.gep(data, [b.mul(j, I64(width))])
            with counted_loop(b, 0, width, name="sum") as i:
                pd = b.gep(dst, [i])
                before = b.select(first, zero, b.load(pd))
                b.store(b.fadd(before, b.load(b.gep(src, [i]))), pd)
    c = b.load(cp)
    v = b.bitcast(var, et)
    with counted_loop(b, 0, rows, name="apply") as j:
        s = segment(j)
        owner = b.and_(b.icmp_signed(">=", s, I64(0)),
                       b.icmp_signed("<", s, I64(n_seg)))
        with b.if_then(owner):
            with b.if_then(b.icmp_signed("==", b.load(b.gep(slots, [s])), j)):
                dst = b.gep(v, [b.mul(s, I64(width))])
                src = b.gep(acc, [b.mul(j, I64(width))])
                with counted_loop(b, 0, width, name="upd") as i:
                    pd = b.gep(dst, [i])
                    y = b.fmul(c, b.load(b.gep(src, [i])))
                    x = b.load(pd)
                    b.store(b.fsub(x, y) if a.op == "AssignSubVariable" else b.fadd(x, y), pd)


def _emit_if(env: _RegionEnv, a: Action, fns: list[ir.Function]) -> None:
    """Branch on the predicate; the branch's function writes the node's outputs."""
    b = env.b
    bufs, (flag_off,), ws_off, _ = _region_layout(a.node, a.regions)
    sub_ws = b.gep(env.ws, [I64(a.scratch + ws_off + WORKSPACE_HEADER)])
    pred = b.icmp_unsigned("!=", b.load(b.bitcast(env.pointer(a.ins[0]), I8P)), I8(0))
    args = env.pointer_array([env.pointer(s) for s in a.ins[1:]])
    outs = env.pointer_array([env.pointer(s) for s in a.outs])
    with b.if_else(pred) as (then, otherwise):
        with then:
            env.check(env.call(fns[0], a.regions[0], args, outs, sub_ws), None)
        with otherwise:
            env.check(env.call(fns[1], a.regions[1], args, outs, sub_ws), None)


def _emit_while(env: _RegionEnv, a: Action, fns: list[ir.Function]) -> None:
    """Loop variables alternate between two buffer sets: cond reads the current set,
    body writes the next; at the end the current set is copied to the outputs."""
    b = env.b
    node = a.node
    n = len(node.outputs)
    bufs, (flag_off,), ws_off, _ = _region_layout(node, a.regions)
    outer = _outer_acc_vars(node) if "outer_acc" in a.in_place.values() else []
    hist_offs = bufs[n:n + 2 * len(outer)]  # (`_region_layout` lists them after the first set)
    bufs = bufs[:n] + bufs[n + 2 * len(outer):]
    base = a.scratch
    sizes = [_nbytes(v.type) for v in node.outputs]
    first = [b.gep(env.ws, [I64(base + bufs[k])]) for k in range(n)]
    second = [b.gep(env.ws, [I64(base + bufs[n + k])]) for k in range(n)]
    hists = [b.gep(env.ws, [I64(base + off)]) for off in hist_offs]
    for k in range(n):
        how = a.in_place.get(k)
        if how == "invariant":  # read-only all along: the input's own buffer
            first[k] = second[k] = env.pointer(a.ins[k])
            continue
        if how in ("update", "row_add", "outer_acc"):
            second[k] = first[k]
        env.copy(first[k], env.pointer(a.ins[k]), sizes[k])
    # (history slots: set to this iteration's rows before each body call)
    tab_a, tab_b = env.pointer_array(first + hists), env.pointer_array(second + hists)
    flag = b.gep(env.ws, [I64(base + flag_off)])
    flag_tab = env.pointer_array([flag])
    sub_ws = b.gep(env.ws, [I64(base + ws_off + WORKSPACE_HEADER)])
    limit = int(node.attrs.get("maximum_iterations", -1))
    cond_fn, body_fn = fns
    cond_plan, body_plan = a.regions

    pre = b.block
    head = b.append_basic_block("while.head")
    test = b.append_basic_block("while.cond")
    body = b.append_basic_block("while.body")
    done = b.append_basic_block("while.done")
    b.branch(head)
    b.position_at_end(head)
    cur = b.phi(I8PP, name="cur")
    nxt = b.phi(I8PP, name="next")
    i = b.phi(I64, name="iteration")
    cur.add_incoming(tab_a, pre)
    nxt.add_incoming(tab_b, pre)
    i.add_incoming(I64(0), pre)
    if limit >= 0:
        b.cbranch(b.icmp_signed("<", i, I64(limit)), test, done)
    else:
        b.branch(test)
    b.position_at_end(test)
    env.check(env.call(cond_fn, cond_plan, cur, flag_tab, sub_ws), None)
    go = b.icmp_unsigned("!=", b.load(flag), I8(0))
    b.cbranch(go, body, done)
    b.position_at_end(body)
    for j, (_, m) in enumerate(outer):
        for h, v in enumerate(m.inputs):
            row = b.gep(hists[2 * j + h], [b.mul(i, I64(_nbytes(v.type)))])
            b.store(row, b.gep(cur, [I64(n + 2 * j + h)]))
    env.check(env.call(body_fn, body_plan, cur, nxt, sub_ws), None)
    end_body = b.block
    cur.add_incoming(nxt, end_body)
    nxt.add_incoming(cur, end_body)
    i.add_incoming(b.add(i, I64(1)), end_body)
    b.branch(head)
    b.position_at_end(done)
    for j, (k, m) in enumerate(outer):
        _emit_outer_products(env, m, first[k], hists[2 * j], hists[2 * j + 1], i)
    for k in range(n):
        if k in a.unused:
            continue
        src = b.load(b.gep(cur, [I64(k)]))
        env.copy(env.pointer(a.outs[k]), src, sizes[k])


def _emit_outer_products(env: _RegionEnv, m: Node, acc: ir.Value, ps: ir.Value, gs: ir.Value,
                         iterations: ir.Value) -> None:
    """acc += P_hist^T @ G_hist over the rows of the iterations that ran: one serial
    GEMM with beta 1 (the same result on any thread count)."""
    from .elementwise import scalar_type
    from .lowering import gemm_function
    b = env.b
    p_t, g_t = m.inputs[0].type, m.inputs[1].type
    rows, p, q = int(p_t.shape[0]), int(p_t.shape[1]), int(g_t.shape[1])
    dtype = m.outputs[0].type.dtype
    fn = gemm_function(env.module, dtype, env.gemm_mode)
    fn = env.module.globals.get(fn.name + ".serial") or fn
    t = scalar_type(dtype)
    tp = ir.PointerType(t)
    k = b.mul(iterations, I64(rows))
    with b.if_then(b.icmp_signed(">", k, I64(0))):
        b.call(fn, [I32(1), I32(0), I64(p), I64(q), k, ir.Constant(t, 1.0), b.bitcast(ps, tp),
                    I64(p), b.bitcast(gs, tp), I64(q), ir.Constant(t, 1.0), b.bitcast(acc, tp),
                    I64(q)])


def _emit_objects_entry(module: ir.Module, step: ir.Function, plan: StepPlan,
                        data_offset: int) -> None:
    """``i32 tw_step_objects(i8** objects, i8** consts, i8* callback)``: the JIT entry.
    `objects` are the addresses of the NumPy arrays themselves (arguments, results,
    variable buffers, then the workspace); their data pointers are read from the array
    objects (at `data_offset`, the ``data`` field of NumPy's array struct), which saves
    Python one slow ``.ctypes.data`` per array and call. The workspace's first bytes
    receive the position of a failing action."""
    n_args, n_res, n_vars = len(plan.graph.args), len(plan.graph.results), len(plan.var_names)
    fn = ir.Function(module, ir.FunctionType(I32, [I8PP, I8PP, ir.PointerType(CALLBACK_TYPE)]),
                     OBJECTS_STEP_NAME)
    objects, consts, callback = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def data(k: int) -> ir.Value:
        obj = b.load(b.gep(objects, [I64(k)]))
        field = b.bitcast(b.gep(obj, [I64(data_offset)]), I8PP)
        return b.load(field)

    def table(start: int, n: int) -> ir.Value:
        arr = b.alloca(I8P, size=I32(max(1, n)))
        for j in range(n):
            b.store(data(start + j), b.gep(arr, [I64(j)]))
        return arr

    args = table(0, n_args)
    results = table(n_args, n_res)
    vars_ = table(n_args + n_res, n_vars)
    raw_ws = data(n_args + n_res + n_vars)
    failed = b.bitcast(raw_ws, ir.PointerType(I32))
    ws = b.gep(raw_ws, [I64(WORKSPACE_HEADER)])
    context = ir.Constant(I8P, None)
    if uses_stacks(plan):
        # the step's context (handed on to every function, callbacks ignore it) is the
        # call's arena, in the workspace header
        context = b.gep(raw_ws, [I64(stacks.ARENA_OFFSET)])
        stacks.emit_arena_reset(b, module, context)
        stacks.emit_arena_release(module)
    b.ret(b.call(step, [args, results, vars_, consts, ws, failed, context, callback]))


def _emit_update(b: ir.IRBuilder, a: Action, dst: ir.Value, src: ir.Value,
                 scale: ir.Value | None = None) -> None:
    """var += value / var -= value, elementwise: a call of the module's update loop for
    the op, dtype and scaling (`_update_function`)."""
    n = a.nbytes // np.dtype(a.dtype.np).itemsize
    fn = _update_function(b.module, a.op, a.dtype, scale is not None)
    b.call(fn, [dst, src, scale if scale is not None else ir.Constant(I8P, None), I64(n)])


def _update_function(module: ir.Module, op: str, dtype: Any, scaled: bool) -> ir.Function:
    """``void @tw_update.<op>.<dtype>[.scaled](i8* var, i8* value, i8* scale, i64 n)``:
    var += value / var -= value over n elements (wrapping for integers, like NumPy); with
    `scaled` (a float scalar c at `scale`), value is c * src, rounded as the product on
    its own (no fused multiply-add), as the fused kernel computed it.

    One loop per module and kind, called by every update of that kind: emitted inline,
    each of a step's updates was its own loop for LLVM to vectorize, with alias checks and
    remainder (W3's 8 updates: a third of its step function's lines)."""
    from .elementwise import memory_type
    name = f"tw_update.{op}.{dtype.ir_name}{'.scaled' if scaled else ''}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P, I8P, I8P, I64]), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")  # (otherwise inlined back into every caller)
    fn.attributes.add("nounwind")
    dst, src, scale, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    t = memory_type(dtype)  # (bool variables are refused when planning)
    d = b.bitcast(dst, ir.PointerType(t))
    s = b.bitcast(src, ir.PointerType(t))
    is_float = dtype.kind == "float"
    c = b.load(b.bitcast(scale, ir.PointerType(t))) if scaled else None
    with counted_loop(b, 0, n, name="upd") as i:
        pd, ps = b.gep(d, [i]), b.gep(s, [i])
        x, y = b.load(pd), b.load(ps)
        if c is not None:
            y = b.fmul(c, y)
        if op == "AssignAddVariable":
            r = b.fadd(x, y) if is_float else b.add(x, y)
        else:
            r = b.fsub(x, y) if is_float else b.sub(x, y)
        b.store(r, pd)
    b.ret_void()
    return fn


def array_at(address: int, t: TensorType) -> np.ndarray:
    """A NumPy view of `t`'s bytes at `address` (which the caller keeps alive)."""
    n = _nbytes(t)
    if n == 0:
        return np.empty(t.shape, t.dtype.np)
    buf = (ctypes.c_char * n).from_address(address)
    return np.frombuffer(buf, dtype=t.dtype.np).reshape(t.shape)


def describe(plan: StepPlan) -> str:
    """A one-line-per-action summary of a plan (for debugging and tests)."""
    lines = []
    for k, a in enumerate(plan.actions):
        what = a.node.op if a.node is not None else "copy"
        lines.append(f"{k:3d} {a.kind:8s} {what}")
    return "\n".join(lines)


__all__ = ["Action", "Ineligible", "StepPlan", "Storage", "array_at", "describe", "emit_step",
           "numpy_data_offset", "plan_step", "uses_stacks"]

