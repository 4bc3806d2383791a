"""While loops and loop-gradient stacks planned as device launches (the step planner's
part for `While`, `Stack`, `StackPush`, `StackPop` and in-place `DynamicUpdateRow`).

A While whose trip count T is known at plan time (`trips.TripCounter`: every `tw.scan`,
and the gradient loop that pops its history) and whose body has a kernel for every node
becomes a `Loop` action: the body is planned once, and the runner runs its prepared
launches T times, with no host call and no download or upload of loop state. Each loop
variable lives in one of these ways (the cpu target's `_in_place` analysis decides all
but the last):

- *invariant* (the body returns its argument: captured weights, inputs): the body reads
  the input's own storage;
- *update* (the body returns ``DynamicUpdateRow(argument, i, row)`` and reads the
  argument nowhere after it: a scan's accumulators): one buffer, the kernel writes the
  row in place;
- *row_add* (``argument + UnsortedSegmentSum(row, i)`` with one scalar id: the gradient
  of a sequence a scan reads row by row) and *outer_acc* (``argument + MatMul(P, G,
  transpose_a)``: a weight's gradient): one buffer, one kernel adding the row, or the
  product, into it in place;
- otherwise a *double buffer*: a buffer of two entries; iteration t reads entry t % 2
  and its result is written straight into entry (t + 1) % 2 by the kernel that computes
  it (a copy only when the result is a view, a popped entry or another result). The
  loop's output is entry T % 2, known at plan time;
- *stacked* (`_stack_resident`): a variable the body pushes as it is (a scan's carried
  h, c and counter, pushed for the gradient), in a loop of known trip count, lives in
  the stack's own entries: iteration t reads entry ``at + delta * t``, where its push
  would copy it, and the kernel computing its next value writes entry ``at + delta *
  (t + 1)``, so the push copies nothing. The output, entry ``at + delta * T``, is one
  spare row past the stack's bound, where no later push can reach.

The initial values are copied into the buffers once, before the loop.

Stacks. The cursor of every stack handle is known at plan time (up to the trip counts of
loops counted at run time, see below): a `Stack` starts empty,
each `StackPush` adds one and each `StackPop` removes one, and in a loop body the cursor
is ``base + delta * t`` (delta: the pushes minus the pops on the handle's path through
the body). So a stack is one buffer of `max_size` entries per element (a row buffer, see
`Slot.row`): a push is a device copy into the entry at the cursor, and a pop is a view of
the entry below it, no copy. A stack must be pushed before it is popped (a push after a
pop would overwrite an entry a popped view may still read) and stay within its bound;
otherwise the graph runs on the reference executor (which also reports a full or empty
stack with its own message).

A While whose trip count is known only at run time (its cond reads computed values: a
Newton iteration until a residual is small, a bound fed as an argument) is a `Loop` with
`trips` None: the cond region is planned once too, into launches that write its
one-element predicate, and the runner runs cond, downloads the flag, runs the body while
it is true (at most ``maximum_iterations`` times). The loop variables live as above; the
cond reads them where the body does. A double buffer's result is entry 0, and the runner
copies entry 1 over it after an odd number of iterations.

Such a loop may keep a stack (the history its gradient pops). Cursors then depend on
run-time trip counts: after the loop, a handle's cursor is ``base + delta * T`` with T
the loop's count, an `actions.Offset` (a linear form in the counts of such loops), and
the gradient loop, itself counted only at run time, pops from ``base + delta * T - t``.
The runner finds these entries when the action runs (the counts of the loops they name
are known by then) and checks them against the stack's size as the reference does.
Without ``maximum_iterations`` (the stack's `max_size`) that size is known only at run
time: the stack starts with `FIRST_ROWS` entries and the runner doubles it when a push
goes past its end (a new block, the old entries copied device to device, as TensorFlow's
GPU stacks grow), keeping the larger block for later calls.

Nesting. A body may hold a While (`NESTABLE`): the inner loop is planned inside the
outer body, its buffers living across the outer loop, its initial values copied in each
outer iteration. Its launches step its own buffers with its own iteration, so a loop
variable it passes through unchanged (read in place otherwise) that is an entry moving
with the outer loop's iterations is copied once per outer iteration into a buffer of its
own. A nested loop may not keep a stack (its cursor would step with two iterations: the
gradient of nested loops pushes the inner loop's stack on the outer one). A body may also
hold an If (`branches.py`).

Loops the planner cannot put on the device run on the host as before (a `HostCall` of
the While, with the reason in the plan's `fallbacks`): a body or cond node with no GPU
kernel (or other nested control flow), a variable handle as loop variable. A loop that
keeps a stack on the device cannot: that makes the whole graph ineligible, with the
reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...compiler.ir import Graph, Node, Value
from ...compiler.types import ResourceType, TensorType
from ..cpu.stacks import BOUNDED_FIRST_BYTES, is_stack_type
from .actions import (
    Copy,
    HostCall,
    Ineligible,
    Launch,
    Loop,
    Offset,
    Slot,
    Storage,
    row_stride,
    walk_actions,
)
from .lowering import VIEW_OPS, kernel_name
from .matmul import matmul_kernel
from .rows import add_row_in_place_kernel, bad_row_message, update_row_in_place_kernel
from .scatter import bad_segment_message
from .source import Unsupported
from .trips import NoTripCount, TripCounter

STACK_OPS = frozenset({"Stack", "StackPush", "StackPop"})
FIRST_ROWS = 16  # entries of a stack whose size is known only at run time, at first
# region ops a device loop body may hold (a product with its epilogue is one kernel)
NESTABLE = frozenset({"Fusion", "FusedMatMul", "FusedConv2D", "While", "If"})


def _entry_bytes(types: list[TensorType]) -> int:
    """Bytes of one stack entry holding values of `types` (one row buffer each)."""
    return sum(row_stride(int(np.prod(t.shape, dtype=np.int64)) * t.dtype.np.itemsize)
               for t in types)


class BodyOnHost(Exception):
    """A loop body node cannot run on the device (the message says which and why)."""


@dataclass
class _Stack:
    """One run of a `Stack` node: its bound, its element buffers (made at the first
    push) and whether it has been popped."""

    node: Node
    max_size: int
    slots: list[Slot] | None = None
    rows: int = 0
    popped: bool = False
    growable: bool = False  # its size is known only at run time: the runner grows it


@dataclass
class _LoopFrame:
    """The loop whose body is being planned: its trip count, the clock of its first
    action (buffers that live across iterations start there), and the slots that must
    stay live up to its end."""

    trips: int | None  # None: known only at run time
    start: int
    keep: list[Slot]


class LoopPlanning:
    """The step planner's loop and stack methods (mixed into `step._Planner`, whose
    storage helpers they use)."""

    def __init__(self) -> None:
        self.clock = 0
        self.preset: dict[Value, Slot] = {}       # a loop result -> its next buffer entry
        self.in_place: dict[Node, Slot] = {}      # DynamicUpdateRow -> its loop buffer
        # the fused sum of a row_add/outer_acc loop variable -> (its loop buffer, the
        # segment sum or product it adds); that segment sum or product -> None
        self.in_place_sums: dict[Node, tuple[Slot, Node] | None] = {}
        # handle -> (stack, base, step); the base may depend on run-time trip counts
        self.cursor: dict[Value, tuple[_Stack, int | Offset, int]] = {}
        self.frames: list[_LoopFrame] = []
        self.trip_counter = TripCounter()
        self.n_loops = 0  # loops planned so far: their `Loop.key`s
        # the temporaries holding stack entries -> (the Stack node's name, growable)
        self.stack_buffers: dict[int, tuple[str, bool]] = {}
        # growable ones that may not pass their Stack's max_size -> that size
        self.stack_limits: dict[int, int] = {}

    # the planner's own (see step._Planner)
    slots: dict[Value, Slot]
    actions: list[Any]
    temps: list[int]
    live: list[list[int]]
    consts: list[Any]
    fallbacks: dict[str, str]
    assigned: set[str]
    var_names: list[str]
    var_types: list[Any]
    first: list[str]
    n_status: int
    # (and its methods _emit, _use, _tmp and _plan_node)

    # ------------------------------------------------------------------ buffers
    def _row_buffer(self, t: TensorType, rows: int) -> Slot:
        """A temporary of `rows` entries of type `t`; inside a loop it lives from the
        outermost loop's start (it is written in every iteration)."""
        slot = Slot(Storage("tmp", len(self.temps)), t.dtype,
                    tuple(int(s) for s in t.shape), None, rows)
        self.temps.append(rows * slot.row_stride)
        start = self.frames[0].start if self.frames else self.clock
        self.live.append([start, self.clock])
        return slot

    def _extend(self, slot: Slot, end: int) -> None:
        if slot.storage.kind == "tmp":
            live = self.live[slot.storage.key]
            live[1] = max(live[1], end)

    def _touch(self, slot: Slot) -> Slot:
        """Mark a slot used at the current clock (and, in a loop, to its end)."""
        self._extend(slot, self.clock)
        if self.frames:
            self.frames[-1].keep.append(slot)
        return slot

    @staticmethod
    def _entry(buf: Slot, base: int, step: int) -> Slot:
        return Slot(buf.storage, buf.dtype, buf.shape, (base, step), buf.rows)

    def _no_kernel_in_loop(self, node: Node, why: str) -> None:
        if self.frames:
            raise BodyOnHost(f"{node.op} '{node.name}' in its body has no GPU kernel: {why}")

    # -------------------------------------------------------------------- While
    def _plan_while(self, node: Node, assigned_vars: set[str]) -> None:
        """A `Loop` when the loop can run on the device, else a host call (or
        `Ineligible` when it keeps a stack on the device)."""
        reason = self._loop_refusal(node)
        trips: int | None = 0
        if reason is None:
            try:
                trips = self.trip_counter.trips(node)
            except NoTripCount as e:  # a device loop checking its cond every iteration
                trips = None
                why = _dynamic_refusal(node)
                if why is not None:
                    reason = f"no trip count known at plan time ({e}) and {why}"
        if reason is None:
            mark = self._mark()
            try:
                self._plan_loop(node, trips, assigned_vars)
                return
            except (BodyOnHost, Ineligible) as e:  # e.g. a shape known only at run time
                if self.frames:
                    raise
                self._rollback(mark)
                reason = str(e)
        uses_stacks = any(is_stack_type(v.type) for v in node.inputs)
        if uses_stacks or self.frames:
            raise Ineligible(f"While '{node.name}' cannot run on the device ({reason})"
                             + (" and keeps a stack there" if uses_stacks else ""))
        if any(isinstance(v.type, ResourceType) for v in node.inputs + node.outputs):
            raise Ineligible(f"While '{node.name}' uses a resource on the host ({reason})")
        if not all(isinstance(v.type, TensorType) and v.type.is_fully_defined
                   for v in node.outputs):
            raise Ineligible(f"While '{node.name}' has a shape known only at run time")
        self.fallbacks[node.name] = f"While: {reason}"
        ins = [self._use(v) for v in node.inputs]
        outs = [self._tmp(v) for v in node.outputs]
        self._emit(HostCall(node, reason, ins, outs))

    @staticmethod
    def _loop_refusal(node: Node) -> str | None:
        """Why While `node` cannot be a device loop whatever its trip count, or None."""
        for v in node.inputs:
            t = v.type
            if isinstance(t, ResourceType) and not is_stack_type(t):
                return "a loop variable is a variable handle"
            if isinstance(t, TensorType) and not t.is_fully_defined:
                return "a loop variable's shape is known only at run time"
        body = node.regions[1]
        if any(isinstance(a.type, TensorType) and not a.type.is_fully_defined
               for a in body.args):
            return "a loop variable's shape invariant is not fully defined"
        for n in body.nodes:
            if n.regions and n.op not in NESTABLE:
                return f"its body holds {n.op} '{n.name}' (nested control flow)"
        if any(v.producer is None and v not in body.args for v in body.results) or \
                any(v.graph is not body for n in body.nodes for v in n.inputs):
            return "its body reads values of the enclosing graph"
        return None

    def _mark(self) -> tuple:
        return (self.actions, len(self.actions), len(self.temps), len(self.live),
                len(self.consts), self.n_status, dict(self.fallbacks), set(self.assigned),
                len(self.var_names), dict(self.cursor), dict(self.preset))

    def _rollback(self, mark: tuple) -> None:
        (actions, n_actions, n_temps, n_live, n_consts, self.n_status, fallbacks, assigned,
         n_vars, cursor, preset) = mark
        self.actions = actions
        del actions[n_actions:]
        del self.temps[n_temps:], self.live[n_live:], self.consts[n_consts:]
        for key in [k for k in self.stack_buffers if k >= n_temps]:
            del self.stack_buffers[key]
            self.stack_limits.pop(key, None)
        self.fallbacks, self.assigned, self.cursor, self.preset = (fallbacks, assigned,
                                                                   cursor, preset)
        del self.var_names[n_vars:], self.var_types[n_vars:], self.first[n_vars:]

    def _plan_loop(self, node: Node, trips: int | None, assigned_vars: set[str]) -> None:
        """Plan While `node` as a `Loop` running its body `trips` times, or with `trips`
        None as many times as its cond, run on the device each iteration, says."""
        from ..cpu.step import _in_place, _outer_acc_parts, _row_add_parts
        cond: Graph = node.regions[0]
        body: Graph = node.regions[1]
        if trips == 0:  # the outputs are the inputs
            for v_in, v_out in zip(node.inputs, node.outputs):
                if is_stack_type(v_in.type):
                    self.cursor[v_out] = self._cursor(node, v_in)
                else:
                    self.slots[v_out] = self._use(v_in)
            return
        modes = _in_place(node)
        stacked = self._stack_resident(node, trips, modes)
        order = body.topological_order()
        pos = {n: i for i, n in enumerate(order)}
        keep: list[Slot] = []
        outputs: dict[int, Slot] = {}
        nexts: dict[int, Slot] = {}
        finals: list[tuple[Slot, Slot]] = []  # run-time trip count: entry 1 -> entry 0
        stacks: list[tuple[int, _Stack, int, int]] = []
        for k, (v_in, arg, res) in enumerate(zip(node.inputs, body.args, body.results)):
            if is_stack_type(v_in.type):
                if self.frames:
                    raise BodyOnHost(f"the loop '{node.name}' nested in its body keeps a "
                                     f"stack (a cursor stepping with two loops)")
                st, base, step = self._cursor(node, v_in)
                delta = _stack_delta(body, k)
                if delta is None:
                    raise Ineligible(f"While '{node.name}': its stack (loop variable {k}) "
                                     f"is used in a way the GPU step cannot plan")
                self.cursor[arg] = (st, base, delta)
                stacks.append((k, st, base, delta))
                continue
            src = self._use(v_in)
            mode = modes.get(k)
            if mode == "invariant":
                if src.row is not None and src.row[1] % src.rows:
                    # an entry that moves with the enclosing loop's iterations: this
                    # loop's launches would step it with their own, so read a copy
                    fixed = self._row_buffer(arg.type, 1)
                    self._emit(Copy(node, src, fixed))
                    src = fixed
                self.slots[arg] = outputs[k] = src
                keep.append(src)
                continue
            if mode in ("update", "row_add", "outer_acc"):
                buf = self._row_buffer(arg.type, 1)
                self._emit(Copy(node, src, buf))
                self.slots[arg] = outputs[k] = buf
                if mode == "update":
                    self.in_place[res.producer] = buf
                else:  # the fused sum adds the segment sum's row / the product in place
                    f, u = _row_add_parts(res, arg, order, pos) if mode == "row_add" \
                        else _outer_acc_parts(node, res, arg, order)
                    self.in_place_sums[f], self.in_place_sums[u] = (buf, u), None
                keep.append(buf)
                continue
            if k in stacked:  # its entries are the stack's: the push copies nothing
                buf, at, delta = stacked[k]
                self._emit(Copy(node, src, self._entry(buf, at, 0)))
                self.slots[arg] = self._entry(buf, at, delta)
                nexts[k] = self._entry(buf, at + delta, delta)
                if res.producer is not None and res not in self.preset and \
                        res.producer.op not in STACK_OPS:
                    self.preset[res] = nexts[k]
                outputs[k] = self._entry(buf, at + delta * int(trips or 0), 0)
                keep.append(buf)
                continue
            buf = self._row_buffer(arg.type, 2)
            self._emit(Copy(node, src, self._entry(buf, 0, 0)))
            self.slots[arg] = self._entry(buf, 0, 1)
            nexts[k] = self._entry(buf, 1, 1)
            if res.producer is not None and res not in self.preset and \
                    res.producer.op not in STACK_OPS:
                self.preset[res] = nexts[k]
            if trips is None:  # the parity of the count is known after the loop only
                outputs[k] = self._entry(buf, 0, 0)
                finals.append((self._entry(buf, 1, 0), outputs[k]))
            else:
                outputs[k] = self._entry(buf, trips % 2, 0)
            keep.append(buf)
        self.n_loops += 1
        key = f"{node.name}#{self.n_loops}"  # (node names repeat across regions)
        frame = _LoopFrame(trips, self.clock, keep)
        saved, self.actions = self.actions, []
        self.frames.append(frame)
        pushed: list[Value] = []
        cond_actions: list[Any] = []
        predicate: Slot | None = None
        try:
            if trips is None:  # the cond reads the loop variables where the body does
                for c_arg, b_arg in zip(cond.args, body.args):
                    if b_arg in self.slots:  # (a stack handle has a cursor instead)
                        self.slots[c_arg] = self.slots[b_arg]
                for n in cond.topological_order():
                    self._plan_node(n, assigned_vars)
                predicate = self._touch(self._use(cond.results[0]))
                cond_actions, self.actions = self.actions, []
            for k, st, base, delta in stacks:
                pushed.extend(self._preset_pushes(body, k, st, base, delta))
            for n in body.topological_order():
                self._plan_node(n, assigned_vars)
            for k, nxt in nexts.items():  # results not written in place by their kernel
                res = body.results[k]
                slot = self._use(res)
                if slot is not nxt:
                    self._emit(Copy(node, slot, nxt))
            for k, st, base, delta in stacks:
                if self.cursor.get(body.results[k]) != (st, base + delta, delta):
                    raise Ineligible(f"While '{node.name}': its stack's cursor does not "
                                     f"advance by a fixed step per iteration")
        finally:
            self.frames.pop()
            for v in [*(body.results[k] for k in nexts), *pushed]:
                self.preset.pop(v, None)
            body_actions, self.actions = self.actions, saved
        # (a host call reads the entry of iteration 0 only; in a branch too)
        if any(isinstance(a, HostCall) for a in walk_actions(body_actions + cond_actions)):
            raise BodyOnHost("its body has host calls")
        self._emit(Loop(node, trips, body_actions, cond_actions, predicate,
                        int(node.attrs.get("maximum_iterations", -1)), finals, key))
        for slot in frame.keep:
            self._extend(slot, self.clock)
            if self.frames:
                self.frames[-1].keep.append(slot)
        for k, v_out in enumerate(node.outputs):
            if k in outputs:
                self.slots[v_out] = outputs[k]
        count = Offset.trips(key) if trips is None else trips
        for k, st, base, delta in stacks:
            self.cursor[node.outputs[k]] = (st, base + count * delta, 0)

    def _stack_resident(self, node: Node, trips: int | None, modes: dict[int, str]
                        ) -> dict[int, tuple[Slot, int, int]]:
        """The loop variables of While `node` that live in a stack's entries (the
        "stacked" form of the module docstring): loop variable -> (the stack's element
        buffer, the entry ``at`` of iteration 0, the entries per iteration). Makes that
        stack's buffers, with the spare rows holding the outputs. Only in a loop of known
        trip count, not nested, pushing on a fresh stack of known bound only (no pops in
        the body) and filling it to its bound, so the spare rows are past anything a
        later push may write."""
        body = node.regions[1]
        if not trips or self.frames:
            return {}
        out: dict[int, tuple[Slot, int, int]] = {}
        consumers = body.consumers()
        for ks, v_in in enumerate(node.inputs):
            found = self.cursor.get(v_in) if is_stack_type(v_in.type) else None
            if found is None:
                continue
            st, base, step = found
            delta = _stack_delta(body, ks)
            if isinstance(base, Offset) or step or st.slots is not None or st.popped or \
                    st.max_size < 0 or not delta:
                continue
            pushes, v, at = [], body.args[ks], base
            while consumers.get(v):
                n = consumers[v][0][0]
                if n.op != "StackPush":
                    break
                pushes.append((n, at))
                at += 1
                v = n.outputs[0]
            if len(pushes) != delta:  # (a pop on the way)
                continue
            pushed: dict[Value, list[tuple[int, int]]] = {}
            for n, at in pushes:
                for j, e in enumerate(n.inputs[1:]):
                    pushed.setdefault(e, []).append((j, at))
            picks = {}
            for k, arg in enumerate(body.args):
                where = pushed.get(arg, [])
                if k in modes or is_stack_type(arg.type) or len(where) != 1 or k in out:
                    continue
                j, at = where[0]
                final = at + delta * trips  # the output's entry
                if at + delta * (trips - 1) >= st.max_size or final < st.max_size:
                    continue  # (overfilled: the push refuses it; room left: a later
                    #            push could overwrite the output)
                picks[k] = (j, at, final)
            if not picks:
                continue
            first = pushes[0][0]
            types = self._stack_types(first, [e.type for e in first.inputs[1:]])
            if any(len(n.inputs) != len(first.inputs) or
                   [e.type for e in n.inputs[1:]] != types for n, _ in pushes):
                continue
            spare = max(final for _, _, final in picks.values()) + 1 - st.max_size
            st.rows = st.max_size
            st.slots = [self._row_buffer(t, st.rows + spare) for t in types]
            for slot in st.slots:
                self.stack_buffers[slot.storage.key] = (
                    str(st.node.attrs.get("stack_name") or st.node.name), False)
            for k, (j, at, _) in picks.items():
                out[k] = (st.slots[j], at, delta)
        return out

    def _cursor(self, node: Node, handle: Value) -> tuple[_Stack, int | Offset, int]:
        found = self.cursor.get(handle)
        if found is None:
            raise Ineligible(f"{node.op} '{node.name}' takes a stack that the GPU step "
                             f"cannot follow")
        return found

    # ------------------------------------------------------------------- stacks
    def _span(self, base: int | Offset, step: int) -> tuple[int, int] | None:
        """The lowest and highest entry ``base + step * t`` over the current loop, or None
        when they depend on trip counts known only at run time (the runner checks them)."""
        trips = self.frames[-1].trips if self.frames else 1
        if isinstance(base, Offset) or (trips is None and step):
            return None
        last = base + step * ((trips or 1) - 1)
        return min(base, last), max(base, last)

    def _plan_stack_op(self, node: Node) -> None:
        if node.op == "Stack":
            self.cursor[node.outputs[0]] = (_Stack(node, int(node.attrs.get("max_size", -1))),
                                            0, 0)
            return
        st, base, step = self._cursor(node, node.inputs[0])
        if step and not self.frames:
            raise Ineligible(f"{node.op} '{node.name}' takes a stack that the GPU step "
                             f"cannot follow")
        if node.op == "StackPush":
            self._plan_push(node, st, base, step)
            self.cursor[node.outputs[0]] = (st, base + 1, step)
        else:
            self._plan_pop(node, st, base, step)
            self.cursor[node.outputs[0]] = (st, base - 1, step)

    def _stack_types(self, node: Node, types: list) -> list[TensorType]:
        for t in types:
            if not (isinstance(t, TensorType) and t.is_fully_defined):
                raise Ineligible(f"{node.op} '{node.name}': a stack entry that is not a "
                                 f"tensor of known shape")
        return types

    def _preset_pushes(self, body: Graph, k: int, st: _Stack, base: int, delta: int
                       ) -> list[Value]:
        """Let the kernels computing the values that the body pushes on stack `k` write
        them straight into their stack entries (no copy at the push): values made by a
        kernel of the body, pushed once, not already a loop variable's next value.
        Returns the values given an entry."""
        consumers = body.consumers()
        pushes: list[tuple[Node, int]] = []
        v, cursor = body.args[k], base
        while consumers.get(v):
            n = consumers[v][0][0]
            if n.op == "StackPush":
                pushes.append((n, cursor))
            cursor += 1 if n.op == "StackPush" else -1
            v = n.outputs[0]
        if not pushes or st.popped:
            return []
        counts: dict[Value, int] = {}
        for n, _ in pushes:
            for e in n.inputs[1:]:
                counts[e] = counts.get(e, 0) + 1
        out = []
        for n, at in pushes:
            self._stack_buffers(n, st, at, delta)
            for e, buf in zip(n.inputs[1:], st.slots or []):
                p = e.producer
                if p is None or p.graph is not body or counts[e] != 1 or e in self.preset \
                        or p.op in VIEW_OPS or p.op in STACK_OPS or p.op == "Const" or \
                        p in self.in_place:
                    continue
                self.preset[e] = self._entry(buf, at, delta)
                out.append(e)
        return out

    def _stack_buffers(self, node: Node, st: _Stack, base: int, step: int) -> None:
        """Make `st`'s entry buffers at its first push (`node`, entries ``base + step *
        t``), or check that `node` fits them."""
        span = self._span(base, step)
        lo, hi = span if span is not None else (0, -1)
        if st.popped:
            raise Ineligible(f"StackPush '{node.name}': the stack is pushed after a pop")
        types = self._stack_types(node, [v.type for v in node.inputs[1:]])
        if st.slots is None:
            if lo < 0 or 0 <= st.max_size <= hi:
                raise Ineligible(f"StackPush '{node.name}' overfills its stack "
                                 f"(max_size {st.max_size})")
            # a run-time count and no max_size: a first guess, grown by the runner. A
            # max_size needing more than BOUNDED_FIRST_BYTES (a safety bound such as
            # maximum_iterations=10**7 on a loop of a few trips) starts there and grows
            # up to max_size, as the cpu target's stacks do, instead of reserving it all
            first = max(FIRST_ROWS, BOUNDED_FIRST_BYTES // _entry_bytes(types))
            large = st.max_size > first
            st.growable = (span is None and st.max_size < 0) or large
            if large:
                st.rows = first if span is None else min(st.max_size, max(first, hi + 1))
            else:
                st.rows = st.max_size if st.max_size >= 0 else \
                    FIRST_ROWS if st.growable else hi + 1
            st.slots = [self._row_buffer(t, st.rows) for t in types]
            for slot in st.slots:
                self.stack_buffers[slot.storage.key] = (
                    str(st.node.attrs.get("stack_name") or st.node.name), st.growable)
                if large:
                    self.stack_limits[slot.storage.key] = st.max_size
        elif [(s.dtype, s.shape) for s in st.slots] != \
                [(t.dtype, tuple(int(d) for d in t.shape)) for t in types] or \
                lo < 0 or (hi >= st.rows and not st.growable):
            raise Ineligible(f"StackPush '{node.name}': its entries do not fit the stack's "
                             f"earlier pushes")

    def _plan_push(self, node: Node, st: _Stack, base: int, step: int) -> None:
        """Copy each pushed value into its entry, unless its kernel wrote it there."""
        self._stack_buffers(node, st, base, step)
        for v, buf in zip(node.inputs[1:], st.slots or []):
            src, dst = self._use(v), self._touch(self._entry(buf, base, step))
            if src != dst:
                self._emit(Copy(node, src, dst))

    def _plan_pop(self, node: Node, st: _Stack, base: int, step: int) -> None:
        span = self._span(base - 1, step)
        lo, hi = span if span is not None else (0, -1)  # (else checked at run time)
        types = self._stack_types(node, list(node.attrs.get("elem_types", ())))
        if st.slots is None or lo < 0 or (hi >= st.rows and not st.growable):
            raise Ineligible(f"StackPop '{node.name}' pops an entry that was never pushed")
        if [(s.dtype, s.shape) for s in st.slots] != \
                [(t.dtype, tuple(int(d) for d in t.shape)) for t in types]:
            raise Ineligible(f"StackPop '{node.name}': its elem_types differ from the "
                             f"pushed entries")
        st.popped = True
        for v, buf in zip(node.outputs[1:], st.slots):
            self.slots[v] = self._touch(self._entry(buf, base - 1, step))

    # --------------------------------------------------------- DynamicUpdateRow
    def _plan_update_in_place(self, node: Node) -> None:
        """Write the row into the loop variable's own buffer (see the module docstring)."""
        buf = self.in_place[node]
        index, row = self._use(node.inputs[1]), self._use(node.inputs[2])
        try:
            kernel = update_row_in_place_kernel(node, kernel_name(node, self.clock))
        except Unsupported as e:
            raise BodyOnHost(f"{node.op} '{node.name}': {e}") from None
        status = self.n_status
        self.n_status += kernel.status_width
        self._touch(buf)
        self._emit(Launch(node, kernel, [index, row, buf],
                          lambda code, ix: (bad_row_message(node, ix), node), status))
        self.slots[node.outputs[0]] = buf


    def _plan_in_place_sum(self, node: Node) -> None:
        """``arg + UnsortedSegmentSum(row, id)`` (the cpu target's "row_add" form) as
        one kernel adding the row to row `id` of the loop variable's buffer, and ``arg +
        MatMul(P, G)`` ("outer_acc": a weight's gradient) as the product kernel adding
        into the buffer; the segment sum or product is not stored on its own."""
        found = self.in_place_sums[node]
        if found is None:
            return  # the segment sum or product: the fused sum's kernel reads its inputs
        buf, part = found
        ins = [self._use(v) for v in part.inputs]
        name = kernel_name(node, self.clock)
        try:
            if part.op == "MatMul":
                kernel, errors = matmul_kernel(part, name, accumulate=True), None
            else:
                kernel = add_row_in_place_kernel(part, name)
                ins.reverse()  # (ids, row)
                errors = (lambda code: (bad_segment_message(part), part))
        except Unsupported as e:
            raise BodyOnHost(f"{node.op} '{node.name}': {e}") from None
        status = None
        if kernel.can_fail:
            status = self.n_status
            self.n_status += kernel.status_width
        self._touch(buf)
        self._emit(Launch(part, kernel, [*ins, buf], errors, status))
        self.slots[node.outputs[0]] = buf


def _dynamic_refusal(node: Node) -> str | None:
    """Why While `node`, whose trip count is known only at run time, cannot be a device
    loop checking its cond each iteration (its cond must be plain device launches), or
    None."""
    cond = node.regions[0]
    for n in cond.nodes:
        if n.regions and n.op not in ("Fusion", "FusedMatMul", "FusedConv2D"):
            return f"its cond holds {n.op} '{n.name}' (nested control flow)"
        if n.op in STACK_OPS:
            return f"its cond uses a stack ({n.op} '{n.name}')"
    if any(v.producer is None and v not in cond.args for v in cond.results) or \
            any(v.graph is not cond for n in cond.nodes for v in n.inputs):
        return "its cond reads values of the enclosing graph"
    t = cond.results[0].type
    if not (isinstance(t, TensorType) and t.is_fully_defined):
        return "its cond's result is not a tensor of known shape"
    return None


def _stack_delta(body: Graph, k: int) -> int | None:
    """Pushes minus pops on the path of stack handle `k` through `body`, when that path
    is a chain of StackPush/StackPop ending in result `k`; else None."""
    consumers = body.consumers()
    v, delta = body.args[k], 0
    while True:
        uses = consumers.get(v, [])
        returned = [j for j, r in enumerate(body.results) if r is v]
        if not uses:
            return delta if returned == [k] else None
        if len(uses) != 1 or returned:
            return None
        n, i = uses[0]
        if i != 0 or n.op not in ("StackPush", "StackPop"):
            return None
        delta += 1 if n.op == "StackPush" else -1
        v = n.outputs[0]


__all__ = ["STACK_OPS", "BodyOnHost", "LoopPlanning"]
