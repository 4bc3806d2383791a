"""Planning a step for the GPU: which kernel runs each node, where every value lives.

`plan_step(graph)` takes a graph with static shapes (the pipeline's output specialized to
one call's argument shapes) and returns a `StepPlan`, a pure description that needs no
GPU: a fixed order of *actions* (kernel launches, device-to-device copies, host calls
for nodes with no GPU kernel) and a *storage* for every value: a graph argument's
buffer, a constant's (uploaded once), a variable's device buffer, or a temporary with a
live range; view ops (Reshape, ExpandDims, Identity ...) share their input's storage.
`runner.GpuStep` binds a plan to device memory and runs it; ``tensorweave dump --stage
kernels`` prints the plan's kernels.

Variables are read and updated on their device buffer: ReadVariable (a view, or a copy
when the step also updates the variable), Assign*Variable (a copy or an in-place kernel),
and the sparse ops ResourceGather and ResourceScatterAdd/Sub/Update (`sparse.py`). Every
update marks the variable *assigned*, so the runner writes it back at the step's end.
DeduplicateSlices (sparse optimizer rules) is planned padded to its number of indices,
with a device count of its real rows (`_Planner._bound_deduplicated`).

A While whose trip count is known at plan time is a `Loop` action, its body planned once
and run that many times on the device; one whose trip count is known only at run time
runs its cond's launches and downloads one flag per iteration; loop-gradient stacks are
device buffers (`loops.py`, whose `LoopPlanning` methods this planner has). An If whose
branches have kernels is a `Branch`: one device flag decides which branch's launches run
(`branches.py`). Actions are numbered by
`clock`, bodies included, for the temporaries' live ranges.

Placement is honoured: nodes placed on a CPU of the GPU's own task (``tw.device("/CPU:0")``,
or ops without a GPU kernel, which the gpu target's placement puts there with the
reason) run as host calls inside the one step, and the partition pass's Send/Recv pairs
between them and the GPU's nodes are no actions: a host call downloads its inputs and
uploads its outputs itself. That keeps the step one launch sequence on one stream, where
running the partitions on the dataflow executor would run every GPU node as a step of
its own. Nodes without a device (one-node steps of the dataflow executor's GPU
partitions) run on the GPU.

Graphs the plan declines raise `Ineligible` (several GPUs or tasks, every node on a CPU,
a node on a CPU that uses a variable or a stack, resources other than
variables and device stacks, variables used by host-side ops, shapes unknown after
specialization); the executable then runs the graph on the reference dataflow executor
and says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...compiler.dtypes import DType, int32, int64
from ...compiler.ir import Graph, Node, Value
from ...compiler.types import ResourceType, TensorType
from ...passes.placement import REASON_ATTR, kernel_reason
from ...runtime.devices import DeviceSpec
from .actions import (
    ROW_ALIGN,
    Action,
    Branch,
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
from .assign import update_kernel
from .branches import BranchPlanning
from .fused import Unsupported
from .loops import STACK_OPS, LoopPlanning
from .lowering import VIEW_OPS, ErrorFn, kernel_name, lower
from .sort import SortPass
from .source import Kernel
from .sparse import (
    SCATTER_OPS,
    apply_kernel,
    bad_row_message,
    dedupe_kernels,
    gather_kernel,
    order_passes,
)

ASSIGN_OPS = frozenset({"AssignVariable", "AssignAddVariable", "AssignSubVariable"})
_NOTHING_TO_RUN = frozenset({"NoOp", "VarHandle"})


@dataclass
class StepPlan:
    """A planned step (see the module docstring)."""

    graph: Graph
    actions: list[Action]
    args: list[Slot]
    results: list[Slot]
    consts: list[np.ndarray]
    temps: list[int]                    # bytes of each temporary
    live: list[tuple[int, int]]         # first and last action using each temporary
    var_names: list[str]
    var_types: list[TensorType]
    var_first_access: list[str]         # "read" or "assign"
    assigned: set[str]
    n_status: int
    fallbacks: dict[str, str] = field(default_factory=dict)  # node name -> reason
    # temporaries holding stack entries -> (the Stack's name, whether the runner grows it)
    stack_buffers: dict[int, tuple[str, bool]] = field(default_factory=dict)
    # growable stack buffers that may not pass their Stack's max_size -> that size
    stack_limits: dict[int, int] = field(default_factory=dict)

    @property
    def kernels(self) -> list[Kernel]:
        return [a.kernel for a in walk_actions(self.actions) if isinstance(a, Launch)]


class _Planner(LoopPlanning, BranchPlanning):
    def __init__(self, graph: Graph) -> None:
        LoopPlanning.__init__(self)
        self.graph = graph
        self.slots: dict[Value, Slot] = {}
        self.actions: list[Action] = []
        self.consts: list[np.ndarray] = []
        self.temps: list[int] = []
        self.live: list[list[int]] = []
        self.var_of: dict[Value, str] = {}
        self.var_names: list[str] = []
        self.var_types: list[TensorType] = []
        self.first: list[str] = []
        self.assigned: set[str] = set()
        self.n_status = 0
        self.fallbacks: dict[str, str] = {}
        self.used: set[Value] = set()  # values some node (or the graph's results) reads
        # values padded to a DeduplicateSlices' bound (its number of indices): the node
        # whose count of real rows they carry, and that count's device slot
        self.pad_of: dict[Value, Node] = {}
        self.count_of: dict[Node, Slot] = {}
        self.on_host: set[Node] = set()      # nodes placed on a CPU: host calls
        self.sends: dict[str, Node] = {}     # Send nodes by rendezvous key

    # --------------------------------------------------------------- storage
    def _emit(self, action: Action) -> None:
        """Append `action` to the actions being planned (a loop body's, inside one);
        `clock` numbers every action of the step, bodies included, for live ranges."""
        self.actions.append(action)
        self.clock += 1

    def _tmp(self, v: Value) -> Slot:
        preset = self.preset.pop(v, None)
        if preset is not None:  # a loop variable's next value: its buffer (`loops.py`)
            self.slots[v] = preset
            return preset
        t: TensorType = v.type
        shape = tuple(int(s) for s in t.shape)
        self.temps.append(max(1, int(np.prod(shape, dtype=np.int64)) * t.dtype.np.itemsize))
        self.live.append([self.clock, self.clock])
        slot = Slot(Storage("tmp", len(self.temps) - 1), t.dtype, shape)
        self.slots[v] = slot
        return slot

    def _use(self, v: Value) -> Slot:
        slot = self.slots[v]
        if slot.storage.kind == "tmp":
            self.live[slot.storage.key][1] = self.clock
        return slot

    def _var(self, name: str, t: TensorType, access: str) -> None:
        if name not in self.var_names:
            self.var_names.append(name)
            self.var_types.append(t)
            self.first.append(access)

    # --------------------------------------------------------------- planning
    def run(self) -> StepPlan:
        g = self.graph
        for i, v in enumerate(g.args):
            t = v.type
            if not isinstance(t, TensorType) or not t.is_fully_defined:
                raise Ineligible("an argument is not a tensor of known shape")
            self.slots[v] = Slot(Storage("arg", i), t.dtype, tuple(int(s) for s in t.shape))
        self.on_host = placed_on_host(g)
        self.sends = {str(n.attrs["key"]): n for n in g.nodes if n.op == "Send"}
        self.used = {v for n in g.walk() for v in n.inputs} | set(g.results)
        self._bound_deduplicated(g)
        assigned_vars = {self._var_name(n.inputs[0]) for n in g.nodes
                         if n.op in ASSIGN_OPS or n.op in SCATTER_OPS}
        for node in _order_with_transfers(g, self.sends):
            self._plan_node(node, assigned_vars)
        results = []
        for v in g.results:
            if v not in self.slots:
                raise Ineligible("a result is not a tensor")
            slot = self._use(v)
            if slot.row is not None and slot.storage.kind == "tmp" and \
                    slot.storage.key in self.stack_buffers and \
                    (isinstance(slot.row[0], Offset) or self.stack_buffers[slot.storage.key][1]):
                # a popped entry the runner finds (and may grow its stack for) only at
                # run time, while results are downloaded from views made at bind time
                self._emit(Copy(v.producer, slot, self._tmp(v)))
            results.append(self._use(v))
        end = self.clock
        for v in g.results:  # results stay until they are downloaded
            s = self.slots[v]
            if s.storage.kind == "tmp":
                self.live[s.storage.key][1] = end
        return StepPlan(g, self.actions, [self.slots[v] for v in g.args], results, self.consts,
                        self.temps, [tuple(x) for x in self.live], self.var_names,
                        self.var_types, self.first, self.assigned, self.n_status,
                        self.fallbacks, self.stack_buffers, self.stack_limits)

    def _var_name(self, v: Value) -> str:
        p = v.producer
        if p is None or p.op != "VarHandle":
            raise Ineligible("a resource that does not come from a VarHandle")
        return str(p.attrs["shared_name"])

    def _plan_node(self, node: Node, assigned_vars: set[str]) -> None:
        for v in node.outputs:
            t = v.type
            if isinstance(t, TensorType) and not t.is_fully_defined:
                raise Ineligible(f"{node.op} '{node.name}' has a shape known only at run time")
        op = node.op
        if op in _NOTHING_TO_RUN:
            if op == "VarHandle":
                self.var_of[node.outputs[0]] = str(node.attrs["shared_name"])
            return
        if op == "Const":
            value = np.ascontiguousarray(node.attrs["value"])
            t = node.outputs[0].type
            self.consts.append(np.asarray(value, dtype=t.dtype.np).reshape(
                tuple(int(s) for s in t.shape)))
            self.slots[node.outputs[0]] = Slot(Storage("const", len(self.consts) - 1), t.dtype,
                                               tuple(int(s) for s in t.shape))
            return
        if op in ("Send", "Recv"):
            self._plan_transfer(node)
            return
        if node in self.on_host:
            self._plan_on_host(node)
            return
        if op == "ReadVariable":
            name = self._var_name(node.inputs[0])
            t = node.outputs[0].type
            self._var(name, t, "read")
            var_slot = Slot(Storage("var", name), t.dtype, tuple(int(s) for s in t.shape))
            if name in assigned_vars and node.outputs[0] in self.used:
                # a snapshot: a later assign must not change it (a read that only orders
                # the updates after it, through control edges, needs none)
                self._emit(Copy(node, var_slot, self._tmp(node.outputs[0])))
            else:
                self.slots[node.outputs[0]] = var_slot
            return
        if op in ASSIGN_OPS:
            self._plan_assign(node)
            return
        if op == "ResourceGather":
            self._plan_resource_gather(node)
            return
        if op in SCATTER_OPS:
            self._plan_scatter(node)
            return
        if op == "DeduplicateSlices" and node.outputs[0] in self.pad_of:
            self._plan_deduplicate(node)
            return
        if op == "While":
            self._plan_while(node, assigned_vars)
            return
        if op == "If" and not any(isinstance(v.type, ResourceType)
                                  for v in node.inputs + node.outputs):
            self._plan_if(node, assigned_vars)
            return
        if op in STACK_OPS:
            self._plan_stack_op(node)
            return
        if node in self.in_place_sums:
            self._plan_in_place_sum(node)
            return
        if op == "DynamicUpdateRow" and node in self.in_place:
            self._plan_update_in_place(node)
            return
        if any(isinstance(v.type, ResourceType) for v in node.inputs + node.outputs):
            raise Ineligible(f"{op} '{node.name}' uses a resource on the host")
        if not all(isinstance(v.type, TensorType) for v in node.outputs):
            raise Ineligible(f"{op} '{node.name}' produces a value that is not a tensor")
        if op in VIEW_OPS:
            src = self._use(node.inputs[0])
            t = node.outputs[0].type
            self.slots[node.outputs[0]] = Slot(src.storage, t.dtype,
                                               tuple(int(s) for s in t.shape), src.row,
                                               src.rows)
            return
        self._plan_compute(node)

    def _plan_transfer(self, node: Node) -> None:
        """A Send is no action, and a Recv's value is its Send's input: a host call
        downloads its inputs and uploads its outputs itself."""
        if node.op == "Send":
            return
        send = self.sends.get(str(node.attrs["key"]))
        src = send.inputs[0] if send is not None else None
        if src is None or src not in self.slots:
            raise Ineligible(f"Recv '{node.name}' comes before its Send")
        self.slots[node.outputs[0]] = self._use(src)

    def _plan_on_host(self, node: Node) -> None:
        """A node placed on the CPU: its reference kernel as a host call."""
        where = f"placed on {node.assigned_device}"
        if any(isinstance(v.type, ResourceType) for v in node.inputs + node.outputs) or \
                any(isinstance(v.type, ResourceType) for v in _captured(node)):
            raise Ineligible(f"{node.op} '{node.name}' is {where} and uses a resource (the "
                             f"gpu step keeps variables and stacks on its GPU)")
        if not all(isinstance(v.type, TensorType) for v in node.outputs):
            raise Ineligible(f"{node.op} '{node.name}' produces a value that is not a tensor")
        why = _host_reason(node)
        self.fallbacks[node.name] = why if why.startswith(f"{node.op}: ") else \
            f"{node.op}: {why}"
        ins = [self._use(v) for v in node.inputs]
        outs = [self._tmp(v) for v in node.outputs]
        self._emit(HostCall(node, why, ins, outs))

    def _plan_assign(self, node: Node) -> None:
        name = self._var_name(node.inputs[0])
        value = self._use(node.inputs[1])
        t = node.inputs[1].type
        self._var(name, TensorType(t.dtype, t.shape),
                  "assign" if node.op == "AssignVariable" else "read")
        self.assigned.add(name)
        var_slot = Slot(Storage("var", name), t.dtype, tuple(int(s) for s in t.shape))
        if node.op == "AssignVariable":
            self._emit(Copy(node, value, var_slot))
            return
        try:
            kernel = update_kernel(node.op, t.dtype, var_slot.size,
                                   kernel_name(node, self.clock))
        except Unsupported as e:
            raise Ineligible(f"{node.op} '{node.name}': {e}") from None
        self._emit(Launch(node, kernel, [var_slot, value]))

    def _var_slot(self, node: Node, access: str) -> tuple[str, TensorType, Slot]:
        """The variable `node`'s first input is a handle of: name, type, device buffer."""
        name = self._var_name(node.inputs[0])
        t = node.inputs[0].type.value_type
        if not isinstance(t, TensorType) or not t.is_fully_defined:
            raise Ineligible(f"{node.op} '{node.name}': the variable's shape is not known")
        self._var(name, t, access)
        return name, t, Slot(Storage("var", name), t.dtype, tuple(int(s) for s in t.shape))

    def _scratch(self, dtype: DType, n: int) -> Slot:
        """A temporary of `n` elements used by the next action only."""
        self.temps.append(max(1, n * dtype.np.itemsize))
        self.live.append([self.clock, self.clock])
        return Slot(Storage("tmp", len(self.temps) - 1), dtype, (n,))

    def _sparse_errors(self, node: Node, name: str, t: TensorType) -> ErrorFn:
        return lambda code, *details: (bad_row_message(name, t, details), node)

    # ------------------------------------------------ DeduplicateSlices, padded
    def _bound_deduplicated(self, g: Graph) -> None:
        """Give DeduplicateSlices' outputs, whose row count is known only at run time, a
        static bound: the number of indices. The real rows come first, the others are
        zeros, and a one-element device count says how many are real. Every value
        computed from them must be row by row and end in variable ops that take the
        count (ResourceGather, the scatters); anything else declines the graph. Retypes
        values of `g` (a copy: see `plan_step`)."""
        from ...passes.fusion import is_elementwise
        pad = self.pad_of
        for node in g.topological_order():
            srcs = {pad[v] for v in node.inputs if v in pad}
            op = node.op
            if op == "DeduplicateSlices" and not srcs and node not in self.on_host:
                vt, it = node.inputs[0].type, node.inputs[1].type
                if isinstance(vt, TensorType) and vt.is_fully_defined and \
                        isinstance(it, TensorType) and it.is_fully_defined:
                    n = int(it.shape[0])
                    node.outputs[0].type = vt.with_shape((n, *vt.shape[1:]))
                    node.outputs[1].type = it.with_shape((n,))
                    pad[node.outputs[0]] = pad[node.outputs[1]] = node
                continue
            if not srcs:
                continue
            src = srcs.pop()
            why = (f"{op} '{node.name}' reads the rows of DeduplicateSlices '{src.name}', "
                   f"whose number is known only at run time")
            if srcs:
                raise Ineligible(why + " (and of another one)")
            n = int(src.inputs[1].type.shape[0])
            if op == "ResourceGather" and node.inputs[1] in pad:
                vt = node.inputs[0].type.value_type
                node.outputs[0].type = vt.with_shape((n, *vt.shape[1:]))
                pad[node.outputs[0]] = src
            elif op in SCATTER_OPS and node.inputs[1] in pad and node.inputs[2] in pad:
                pass
            elif op == "Fusion" and all(is_elementwise(m) or m.op == "Const"
                                        for r in node.regions for m in r.nodes):
                for v in node.outputs:
                    t = v.type
                    if not (isinstance(t, TensorType) and t.rank >= 1 and t.shape[0] is None
                            and all(d is not None for d in t.shape[1:])):
                        raise Ineligible(why)
                    v.type = t.with_shape((n, *t.shape[1:]))
                    pad[v] = src
            else:
                raise Ineligible(why)
        if any(v in pad for v in g.results):
            raise Ineligible("a result has DeduplicateSlices' rows, whose number is known "
                             "only at run time")

    def _count(self, src: Node) -> Slot:
        """The device count of `src`'s real rows, kept alive up to the next action."""
        slot = self.count_of[src]
        self.live[slot.storage.key][1] = self.clock
        return slot

    def _plan_deduplicate(self, node: Node) -> None:
        """Sort positions by row (`order_passes`), number the runs by first occurrence,
        then sum each run into its row of the padded outputs (`dedupe_kernels`)."""
        vt, it = node.inputs[0].type, node.inputs[1].type
        base = kernel_name(node, self.clock)
        try:
            passes = order_passes(None, it, base + "_order")
            zero, ranks, chunks, total = dedupe_kernels(vt, it, base)
        except Unsupported as e:
            raise Ineligible(f"{node.op} '{node.name}': {e}") from None
        values, indices = self._use(node.inputs[0]), self._use(node.inputs[1])
        n = int(it.shape[0])
        order, first = self._scratch(int32, n), self._scratch(int32, n)
        sums, count = self._scratch(int32, chunks), self._scratch(int32, 1)
        self.count_of[node] = count
        summed, unique = self._tmp(node.outputs[0]), self._tmp(node.outputs[1])
        self._emit(Launch(node, zero, [summed, unique]))
        self._plan_sort(node, passes, indices, order, [])
        mark, chunk_sums, scan, prefix = ranks
        self._keep(count)  # written by the scan, read by the counted consumers
        for kernel, slots in ((mark, [indices, order, first]), (chunk_sums, [first, sums]),
                              (scan, [sums, count]), (prefix, [first, sums])):
            for slot in (*slots, order, first, values, indices):
                self._keep(slot)
            self._emit(Launch(node, kernel, slots))
        self._emit(Launch(node, total, [values, indices, order, first, summed, unique]))

    def _plan_sort(self, node: Node, passes: list[SortPass], indices: Slot, order: Slot,
                   count: list[Slot], errors: ErrorFn | None = None) -> None:
        """The launches of a stable sort of `indices`' positions into `order` (its first
        launch may fail: `errors` and a status entry then)."""
        buffers = [order, self._scratch(int32, order.size)] if len(passes) > 1 else [order]
        for p in passes:
            for slot in (indices, *buffers, *count):
                self._keep(slot)
            src = [] if p.src is None else [buffers[p.src]]
            args = [indices, *count, *src, buffers[p.dst]]
            if p.kernel.can_fail:
                self._emit(Launch(node, p.kernel, args, errors, self._status(p.kernel)))
            else:
                self._emit(Launch(node, p.kernel, args))

    def _keep(self, slot: Slot) -> None:
        """Extend a temporary's live range to the next action."""
        if slot.storage.kind == "tmp":
            self.live[slot.storage.key][1] = self.clock

    def _plan_resource_gather(self, node: Node) -> None:
        """Rows of the variable's device buffer into a new buffer (a snapshot)."""
        name, t, var_slot = self._var_slot(node, "read")
        indices = self._use(node.inputs[1])
        src = self.pad_of.get(node.inputs[1])
        try:
            kernel = gather_kernel(t, node.inputs[1].type, kernel_name(node, self.clock),
                                   counted=src is not None)
        except Unsupported as e:
            raise Ineligible(f"{node.op} '{node.name}': {e}") from None
        out = self._tmp(node.outputs[0])
        count = [self._count(src)] if src is not None else []
        self._emit(Launch(node, kernel, [var_slot, indices, *count, out],
                                   self._sparse_errors(node, name, t), self._status(kernel)))

    def _plan_scatter(self, node: Node) -> None:
        """A stable sort of the index positions by row, then each row's run applied in
        place by one thread per column (`sparse.py`: bitwise the reference's result)."""
        name, t, var_slot = self._var_slot(node, "read")
        self.assigned.add(name)
        it = node.inputs[1].type
        src = self.pad_of.get(node.inputs[1])
        base = kernel_name(node, self.clock)
        try:
            passes = order_passes(t, it, base + "_order", counted=src is not None)
            second = apply_kernel(node.op, t, it, base, counted=src is not None)
        except Unsupported as e:
            raise Ineligible(f"{node.op} '{node.name}': {e}") from None
        indices = self._use(node.inputs[1])
        n = int(np.prod([int(s) for s in it.shape], dtype=np.int64))
        order = self._scratch(int32, n)
        count = [self._count(src)] if src is not None else []
        self._plan_sort(node, passes, indices, order, count,
                        self._sparse_errors(node, name, t))
        self._keep(order)
        updates = self._use(node.inputs[2])
        self._use(node.inputs[1])
        count = [self._count(src)] if src is not None else []
        self._emit(Launch(node, second, [var_slot, indices, updates, order, *count]))

    def _status(self, kernel: Kernel) -> int:
        """Reserve `kernel`'s entries of the step's status array."""
        index = self.n_status
        self.n_status += kernel.status_width
        return index

    def _plan_compute(self, node: Node) -> None:
        ins = [self._use(v) for v in node.inputs]
        padded = any(v in self.pad_of for v in node.inputs)
        try:
            lowered = lower(node, kernel_name(node, self.clock))
            if padded and lowered.kernel.can_fail:  # its padding rows could fail
                raise Ineligible(f"{node.op} '{node.name}' can fail on the padding rows of "
                                 f"DeduplicateSlices")
        except Unsupported as e:
            if padded:
                raise Ineligible(f"{node.op} '{node.name}' reads DeduplicateSlices' padded "
                                 f"rows and has no GPU kernel: {e}") from None
            self._no_kernel_in_loop(node, str(e))
            self.fallbacks[node.name] = f"{node.op}: {e}"
            outs = [self._tmp(v) for v in node.outputs]
            self._emit(HostCall(node, str(e), ins, outs))
            return
        for table in lowered.tables:
            self.consts.append(table)
            ins.append(Slot(Storage("const", len(self.consts) - 1), _index_dtype(table),
                            table.shape))
        outs = [self._tmp(v) for v in node.outputs]
        for init in lowered.init:
            self._emit(Launch(node, init, list(outs)))
        for v in node.inputs:  # read by the main kernel, after the init kernels
            self._use(v)
        status = None
        if lowered.kernel.can_fail:
            status = self.n_status
            self.n_status += lowered.kernel.status_width
        self._emit(Launch(node, lowered.kernel, ins + outs, lowered.errors, status,
                                   lowered.call_index))


def placed_on_host(graph: Graph) -> set[Node]:
    """The nodes of `graph` placed on a CPU of the task of its GPU, which the step runs as
    host calls. Raises `Ineligible` when the graph spans several GPUs or tasks, or has
    nodes on a CPU and none on a GPU (the dataflow executor runs those)."""
    specs = {d: DeviceSpec.from_string(d) for d in {n.assigned_device for n in graph.nodes}
             if d}
    gpus = sorted(d for d, s in specs.items() if s.device_type != "CPU")
    if len(gpus) > 1:
        raise Ineligible(f"the graph spans several devices ({', '.join(gpus)})")
    if len({(s.job, s.replica, s.task) for s in specs.values()}) > 1:
        raise Ineligible("the graph spans several tasks")
    host = {n for n in graph.nodes if n.assigned_device and n.op not in _NOTHING_TO_RUN
            and n.op not in ("Const", "Send", "Recv")
            and specs[n.assigned_device].device_type == "CPU"}
    if host and not gpus:
        raise Ineligible(f"every node is placed on {', '.join(sorted(specs))}")
    return host


def _order_with_transfers(graph: Graph, sends: dict[str, Node]) -> list[Node]:
    """`graph`'s nodes in topological order, each Recv after its Send (a Recv has no
    input, so the graph's own order may put it first), stable otherwise."""
    import heapq
    order = graph.topological_order()
    if not sends:
        return order
    position = {n: i for i, n in enumerate(order)}
    deps: dict[Node, set[Node]] = {}
    for n in order:
        d = {v.producer for v in n.inputs if v.producer in position}
        d |= {c for c in n.control_inputs if c in position}
        if n.op == "Recv" and sends.get(str(n.attrs["key"])) in position:
            d.add(sends[str(n.attrs["key"])])
        deps[n] = d
    users: dict[Node, list[Node]] = {}
    for n, d in deps.items():
        for p in d:
            users.setdefault(p, []).append(n)
    pending = {n: len(d) for n, d in deps.items()}
    ready = [(position[n], n.name, n) for n in order if not pending[n]]
    heapq.heapify(ready)
    out: list[Node] = []
    while ready:
        n = heapq.heappop(ready)[2]
        out.append(n)
        for u in users.get(n, ()):
            pending[u] -= 1
            if not pending[u]:
                heapq.heappush(ready, (position[u], u.name, u))
    if len(out) != len(order):
        raise Ineligible("the Send/Recv pairs form a cycle")
    return out


def _host_reason(node: Node) -> str:
    """Why a node placed on the CPU is there: an op without a GPU kernel says so (as where
    nothing is placed); others were put there by a request or colocation: the placement's
    reason. A Fusion (of nodes placed on the CPU), or a product with its epilogue,
    answers for its members."""
    members = [m for r in node.regions for m in r.nodes if m.op != "Const"] \
        if node.op in ("Fusion", "FusedMatMul", "FusedConv2D") else [node]
    for m in members:
        why = kernel_reason(m, "GPU", in_gpu_step=True)
        if why is not None:
            return why
    first = members[0] if members else node
    return f"placed on {node.assigned_device} ({first.attrs.get(REASON_ATTR) or 'requested'})"


def _captured(node: Node) -> list[Value]:
    """The outer values `node`'s regions read."""
    if not node.regions:
        return []
    from ...passes._rewrite import outer_uses
    return list(outer_uses(node))


def _index_dtype(table: np.ndarray) -> DType:
    return int32 if table.dtype == np.int32 else int64


def plan_step(graph: Graph) -> StepPlan:
    """Plan `graph` (static shapes) as one GPU step. Raises `Ineligible`."""
    if any(n.op == "DeduplicateSlices" for n in graph.nodes):
        graph = graph.copy()  # the planner gives its padded values static types
    return _Planner(graph).run()


__all__ = ["ROW_ALIGN", "Action", "Branch", "Copy", "HostCall", "Ineligible", "Launch", "Loop", "Offset",
           "Slot",
           "StepPlan", "Storage", "plan_step", "row_stride", "walk_actions"]
