"""Placement: choose the device every node runs on (`Node.assigned_device`).

Decisions, strongest first:

1. **Colocation.** An op that uses a resource (``ReadVariable``, ``Assign*``, queue ops,
   any op with a resource operand, or a region capturing one) sits with the node that
   makes the resource, and that node (``VarHandle``) goes where the resource lives: its
   requested device, else the default device (CPU:0). A ``Gather`` whose params come from
   a ``ReadVariable`` sits with the variable. ``tw.colocate_with(x)`` adds the private
   attribute ``_colocate_with`` (node names). Colocated nodes form one group that gets
   one device.
2. **Requests.** ``with tw.device(...)`` sets `Node.device`, a full or partial spec
   (``/cpu:1``, ``/device:GPU:*``, ``/job:localhost``); the node may go on any device that
   matches it and has a kernel for the op (the reference kernels run every op on a CPU;
   on a GPU, the gpu target must have a kernel for it: `kernel_reason` says why not).
   Nodes without a request, or whose request names no device type (``/job:ps``), go to
   the CPUs (the devices of `auto_device_types`), unless
   ``tw.config.set_auto_gpu_placement(True)`` lets the cost model put them on GPUs too.
3. **Soft placement.** A request no device can satisfy falls back to the default device
   when `soft_placement` is on, and raises `InvalidArgumentError` (op, node, source line,
   available devices) when it is off.
4. **Cost model.** The remaining choices come from a simulated execution, as in the
   TensorFlow paper: nodes in topological order each go to the candidate device where
   they would finish first, given when their inputs arrive there (a transfer costs a
   latency plus bytes over bandwidth) and when the device is free (per-op time from FLOP
   estimates: matmul ``2mnk``, convolution output size times kernel volume, other ops one
   per element; unknown dims count as `CostModel.default_dim`). GPUs compute 100
   times faster than a CPU but pay a kernel launch per op, and a tensor crossing
   between host and GPU pays a PCIe copy, so small ops stay next to their data and only
   big ones move. A node leaves the device
   that holds most of its inputs only when that wins more than it would cost to send its
   result back, so chains of cheap ops stay together. Inputs-free, stateless nodes
   (constants) follow their first consumer. Graph arguments are available everywhere at
   time 0. Ties go to the earlier device, so placement is deterministic.

Nodes inside regions run where their parent runs. Each node's reason is kept as the
string attribute ``_placement_reason`` (printed in the IR; `tw.debugging.placement_report`
shows it). A node that already has an assigned device that exists keeps it, so placing
twice changes nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..compiler.ir import Graph, Node, Value
from ..compiler.types import ResourceType, TensorType, Type
from ..errors import InvalidArgumentError
from ..runtime.devices import Device, DeviceSpec, as_devices, device_names
from ._rewrite import is_stateful, needs_context, outer_uses

REASON_ATTR = "_placement_reason"
COLOCATE_ATTR = "_colocate_with"

KERNEL_TARGETS: dict[str, tuple[str, ...]] = {"CPU": ("reference", "cpu"), "GPU": ("gpu", "cuda")}
"""Which kernel targets run an op on a device type (an op registering a kernel for one
of them runs there); GPUs also run what the gpu target generates kernels for."""


def kernel_reason(node: Node, device_type: str, in_gpu_step: bool = False) -> str | None:
    """None when `node` (and every node of its regions) can run on `device_type`, else
    a one-line reason. Every op runs on a CPU (the reference kernels are the fallback of
    every target); on a GPU, what the gpu target has kernels for
    (`targets.gpu.support.gpu_kernel_reason`; `in_gpu_step`: in the gpu target's own
    step, where device loops exist)."""
    if device_type == "CPU":
        return None
    targets = KERNEL_TARGETS.get(device_type, ())
    if any(t in node.opdef.kernels for t in targets):
        return next((why for r in node.regions for n in r.nodes
                     if (why := kernel_reason(n, device_type, in_gpu_step)) is not None), None)
    if device_type == "GPU":
        from ..targets.gpu.support import gpu_kernel_reason
        return gpu_kernel_reason(node, in_gpu_step)
    return f"op {node.op} has no kernel for {device_type}"


def has_kernel(node: Node, device_type: str, in_gpu_step: bool = False) -> bool:
    """True when `node` (and every node of its regions) can run on `device_type`."""
    return kernel_reason(node, device_type, in_gpu_step) is None


AUTO_DEVICE_TYPES = ("CPU",)
"""Where nodes without a device request may go: the CPUs. GPUs take requested nodes, and
any node after ``tw.config.set_auto_gpu_placement(True)`` (`set_auto_gpu_placement`)."""
_auto_gpu = False


def set_auto_gpu_placement(enabled: bool) -> None:
    """Let the cost model place nodes without a device request on GPUs as well."""
    global _auto_gpu
    _auto_gpu = bool(enabled)


def auto_device_types() -> tuple[str, ...]:
    """The device types nodes without a request may go to (see `AUTO_DEVICE_TYPES`)."""
    return AUTO_DEVICE_TYPES + (("GPU",) if _auto_gpu else ())


# ----------------------------------------------------------------------- cost model

FlopsFn = Callable[[Node, "CostModel"], float]
_FLOPS: dict[str, FlopsFn] = {}
_FREE_OPS = frozenset({"Const", "VarHandle", "NoOp", "Placeholder", "Shape", "Size", "Identity",
                       "StopGradient", "Reshape", "ReshapeLike", "ExpandDims", "Squeeze",
                       "Send", "Recv"})


def register_flops(op_name: str) -> Callable[[FlopsFn], FlopsFn]:
    """Decorator: ``fn(node, cost_model) -> float`` estimates the FLOPs of `op_name`."""
    def deco(fn: FlopsFn) -> FlopsFn:
        _FLOPS[op_name] = fn
        return fn
    return deco


@dataclass
class CostModel:
    """Time estimates for the simulated execution (seconds). Logical CPU devices of one
    process share the host, so the numbers only need to be right relative to each other.

    A GPU computes `flops_per_second` ["GPU"] (100 times a CPU) but pays a kernel launch
    (`launch_overhead`) per op; a tensor moving between the host and a GPU of the same
    task pays a PCIe copy (`pcie_latency` plus bytes over `pcie_bytes_per_second`, a
    PCIe 4.0 x16 link from pinned memory), between GPUs a peer copy over the same bus."""

    default_dim: int = 32
    op_overhead: float = 2e-6
    flops_per_second: Mapping[str, float] = field(
        default_factory=lambda: {"CPU": 1e10, "GPU": 1e12})
    transfer_latency: float = 1e-5
    bytes_per_second: float = 5e9
    remote_latency: float = 1e-4
    remote_bytes_per_second: float = 1e9
    launch_overhead: Mapping[str, float] = field(default_factory=lambda: {"GPU": 5e-6})
    pcie_latency: float = 1e-5
    pcie_bytes_per_second: float = 2.4e10

    def dims(self, t: Type) -> list[int]:
        """The shape of `t` with unknown dims replaced by `default_dim`."""
        if not isinstance(t, TensorType):
            return []
        return [self.default_dim if d is None else d for d in t.shape]

    def elements(self, t: Type) -> int:
        return math.prod(self.dims(t)) if isinstance(t, TensorType) else 0

    def nbytes(self, t: Type) -> int:
        return self.elements(t) * t.dtype.itemsize if isinstance(t, TensorType) else 0

    def flops(self, node: Node) -> float:
        """Estimated floating-point operations of one run of `node` (regions included)."""
        fn = _FLOPS.get(node.op)
        if fn is not None:
            own = fn(node, self)
        elif node.op in _FREE_OPS:
            own = 0.0
        else:  # one operation per element of the largest operand or result
            own = float(max((self.elements(v.type) for v in [*node.outputs, *node.inputs]),
                            default=0))
        return own + sum(self.flops(n) for r in node.regions for n in r.nodes)

    def compute_time(self, node: Node, device: Device) -> float:
        """Time to run `node` once on `device`: overheads plus FLOPs over its rate
        (views and constants launch no kernel)."""
        kind = device.device_type
        rate = self.flops_per_second.get(kind, self.flops_per_second["CPU"])
        flops = self.flops(node)
        launch = 0.0 if node.op in _FREE_OPS else self.launch_overhead.get(kind, 0.0)
        return self.op_overhead + launch + flops / rate

    def transfer_time(self, nbytes: int, src: Device, dst: Device) -> float:
        """Time to move `nbytes` from `src` to `dst` (0 on the same device): in-process
        between CPUs, over PCIe when a GPU is at either end, over the network between
        tasks."""
        if src == dst:
            return 0.0
        a, b = src.spec, dst.spec
        if (a.job, a.replica, a.task) != (b.job, b.replica, b.task):
            return self.remote_latency + nbytes / self.remote_bytes_per_second
        if "GPU" in (src.device_type, dst.device_type):
            return self.pcie_latency + nbytes / self.pcie_bytes_per_second
        return self.transfer_latency + nbytes / self.bytes_per_second


@register_flops("MatMul")
def _matmul_flops(node: Node, cm: CostModel) -> float:
    a = cm.dims(node.inputs[0].type)
    k = a[-2] if node.attrs.get("transpose_a") else a[-1]
    return 2.0 * cm.elements(node.outputs[0].type) * k


def _kernel_volume(dims: Sequence[int]) -> int:
    """kh * kw * in_channels of an HWIO filter shape."""
    return math.prod(dims[:3])


@register_flops("Conv2D")
def _conv_flops(node: Node, cm: CostModel) -> float:
    return 2.0 * cm.elements(node.outputs[0].type) * _kernel_volume(cm.dims(node.inputs[1].type))


@register_flops("Conv2DBackpropInput")
def _conv_input_grad_flops(node: Node, cm: CostModel) -> float:
    filt, dy = node.inputs[0].type, node.inputs[1].type
    return 2.0 * cm.elements(dy) * _kernel_volume(cm.dims(filt))


@register_flops("Conv2DBackpropFilter")
def _conv_filter_grad_flops(node: Node, cm: CostModel) -> float:
    shape = [cm.default_dim if d is None else d for d in node.attrs["filter_shape"]]
    return 2.0 * cm.elements(node.inputs[1].type) * _kernel_volume(shape)


def _pool_flops(grad_input: int | None) -> FlopsFn:
    def flops(node: Node, cm: CostModel) -> float:
        t = node.outputs[0].type if grad_input is None else node.inputs[grad_input].type
        return float(cm.elements(t) * math.prod(node.attrs["ksize"]))
    return flops


register_flops("MaxPool")(_pool_flops(None))
register_flops("AvgPool")(_pool_flops(None))
register_flops("MaxPoolGrad")(_pool_flops(2))
register_flops("AvgPoolGrad")(_pool_flops(0))


# ------------------------------------------------------------------------- the pass

def place(graph: Graph, devices: Sequence[Device | str] | None = None,
          soft_placement: bool = True, cost_model: CostModel | None = None,
          default_task: DeviceSpec | None = None,
          auto_device_types: Sequence[str] | None = None, gpu_target: bool = False) -> None:
    """Set `assigned_device` (a canonical device name) and the ``_placement_reason``
    attribute on every node of `graph`, nested regions included. `devices` defaults to
    this process's devices (`tw.config.list_logical_devices()`).

    With `default_task` (a spec naming a job, replica and task: the client's task in a
    cluster), a node without a request may go only to that task's devices, and a request
    that names no job (``/gpu:0``) means that task's device, as in TensorFlow; requests
    naming a job (``/job:ps``) may go to any matching task. Nodes without a request go
    to devices of `auto_device_types` (default: `auto_device_types()`, the CPUs unless
    ``tw.config.set_auto_gpu_placement(True)``).

    With `gpu_target` (compiling for ``target="gpu"``, as TensorFlow places when a GPU
    exists) nodes without a request go to the first GPU when it has a kernel for them
    (and for every node colocated with them), else to the default CPU with the reason;
    requests are honoured as always. Rewrites in place and returns None."""
    _Placer(graph, as_devices(devices), soft_placement, cost_model or CostModel(),
            default_task, auto_device_types, gpu_target).run()


@dataclass(frozen=True)
class PlacementScope:
    """The devices of a cluster and the client's task, for compiling a graph that runs
    on several tasks (see `placement_scope`)."""

    devices: tuple[Device, ...]
    default_task: DeviceSpec


_scope: contextvars.ContextVar[PlacementScope | None] = contextvars.ContextVar(
    "tw_placement_scope", default=None)


@contextlib.contextmanager
def placement_scope(devices: Sequence[Device | str], default_task: DeviceSpec | str) -> Iterator[None]:
    """Within the block, the ``placed`` stage places on `devices` (every device of a
    cluster) with `default_task` as the home of unconstrained nodes."""
    default = DeviceSpec.from_string(default_task)
    default = DeviceSpec(default.job, default.replica or 0, default.task or 0)
    token = _scope.set(PlacementScope(tuple(as_devices(devices)), default))
    try:
        yield
    finally:
        _scope.reset(token)


def place_with_config(graph: Graph) -> None:
    """The ``placed`` pipeline stage: `place` on this process's devices (or, inside a
    `placement_scope`, on the cluster's), with soft placement as
    `tw.config.set_soft_device_placement` says."""
    from ..compiler.pipeline import pipeline_target
    from ..config import get_soft_device_placement
    scope = _scope.get()
    if scope is None and pipeline_target() == "gpu":
        place(graph, gpu_target_devices(), get_soft_device_placement(), gpu_target=True)
    elif scope is None:
        place(graph, soft_placement=get_soft_device_placement())
    else:
        place(graph, list(scope.devices), get_soft_device_placement(),
              default_task=scope.default_task)


def gpu_target_devices() -> list[Device]:
    """The devices the gpu target places on: this process's, with a GPU:0 added when
    there is none, so that ``tensorweave dump --target gpu`` and the planner (which need
    no GPU) show what runs on a machine with one; calling still needs a GPU."""
    devices = as_devices(None)
    if not any(d.device_type == "GPU" for d in devices):
        cpu = devices[0].spec
        devices = devices + [Device(replace(cpu, device_type="GPU", device_index=0))]
    return devices


def placement_reasons(graph: Graph) -> list[tuple[Node, str]]:
    """Every node of a placed graph (regions included) with the reason for its device."""
    return [(n, str(n.attrs.get(REASON_ATTR, ""))) for n in graph.walk()]


@dataclass
class _Group:
    """Nodes that must share a device, and what is known about that device."""

    members: list[Node]
    candidates: list[Device]
    leader: Node | None = None  # whose constraint decided the candidates
    notes: dict[Node, str] = field(default_factory=dict)  # member -> its own constraint
    ignored: dict[Node, str] = field(default_factory=dict)  # member -> request overruled
    device: Device | None = None


class _Placer:
    def __init__(self, graph: Graph, devices: list[Device], soft: bool, cost: CostModel,
                 default_task: DeviceSpec | None = None,
                 auto_types: Sequence[str] | None = None, gpu_target: bool = False) -> None:
        self.graph = graph
        self.gpu_target = gpu_target
        self.auto_types = frozenset(t.upper() for t in (auto_types or auto_device_types()))
        self.devices = devices
        self.soft = soft
        self.cost = cost
        self.default_task = default_task
        home = [d for d in devices if default_task is None or default_task.matches(d.spec)]
        if not home:
            raise InvalidArgumentError(f"the client's task {default_task} has no device among "
                                       f"{device_names(devices)}")
        self.default = next((d for d in home if d.device_type == "CPU"), home[0])
        # the gpu target's home for nodes without a request (None: other targets)
        self.preferred = next((d for d in home if d.device_type == "GPU"), None) \
            if gpu_target else None
        self.order = graph.topological_order()
        self.position = {n: i for i, n in enumerate(self.order)}
        self.group_of: dict[Node, _Group] = {}
        self.deferred: set[Node] = set()
        self.device_of: dict[Node, Device] = {}

    def run(self) -> None:
        for members in self._colocation_sets():
            group = self._resolve_group(members)
            for m in members:
                self.group_of[m] = group
        self._simulate()
        self._place_deferred()
        for n in self.order:
            self._assign(n, self.device_of[n], self._reason(n))

    # -------------------------------------------------------------- colocation
    def _colocation_sets(self) -> list[list[Node]]:
        """The colocation groups, each in topological order, ordered by first member."""
        parent: dict[Node, Node] = {n: n for n in self.order}

        def find(n: Node) -> Node:
            while parent[n] is not n:
                parent[n] = parent[parent[n]]
                n = parent[n]
            return n

        def union(a: Node, b: Node) -> None:
            ra, rb = find(a), find(b)
            if ra is not rb:
                first, second = sorted((ra, rb), key=self.position.__getitem__)
                parent[second] = first

        by_name = {n.name: n for n in self.order}
        for n in self.order:
            for v in _operands(n):
                if isinstance(v.type, ResourceType) and self._local(v):
                    union(n, v.producer)
            if n.op == "Gather" and self._local(n.inputs[0]) \
                    and n.inputs[0].producer.op == "ReadVariable":
                union(n, n.inputs[0].producer)
            for name in _colocate_names(n):
                if name in by_name:
                    union(n, by_name[name])
        sets: dict[Node, list[Node]] = {}
        for n in self.order:
            sets.setdefault(find(n), []).append(n)
        return list(sets.values())

    def _local(self, v: Value) -> bool:
        return v.producer is not None and v.producer in self.position

    # ------------------------------------------------------------ constraints
    def _requested(self, node: Node) -> tuple[list[Device] | None, str]:
        """The devices `node`'s own request allows (None: no request) and the reason."""
        pre = next((d for d in self.devices if d.name == node.assigned_device), None)
        if pre is not None:
            return [pre], str(node.attrs.get(REASON_ATTR) or "pre-assigned")
        held = self._task_of_region_variables(node)
        if held is not None:  # a region runs whole on one task: the one its variables are on
            matching = [d for d in self.devices if held.matches(d.spec)
                        and d.device_type in self.auto_types]
            if not matching:
                return self._fallback(node, f"its regions update variables on {held}, "
                                            f"no device of this cluster")
            return matching, "where the variables its regions update live"
        if not node.device:
            return None, ""
        try:
            spec = DeviceSpec.from_string(node.device)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(e.message, **node.error_context()) from None
        t = self.default_task
        if t is not None and (spec.job is None or (spec.job == t.job and spec.task is None)):
            # "/gpu:0" or "/job:worker" in worker 1's session: worker 1's device.
            spec = replace(spec, job=t.job, replica=t.replica, task=t.task)
        matching = [d for d in self.devices if spec.matches(d.spec)]
        if spec.device_type is None:  # "/job:ps": that task's CPUs, GPUs only when allowed
            matching = [d for d in matching if d.device_type in self.auto_types] or matching
        if not matching and t is not None and _makes_resource(node):
            # State lives where it was asked for: anywhere else it is a second, separate
            # resource (a worker training its own copy of a PS variable), never a soft
            # placement. Another device type of that task is still the same task.
            task = DeviceSpec(spec.job, spec.replica, spec.task)
            matching = [d for d in self.devices if task.matches(d.spec)
                        and d.device_type in self.auto_types]
            if not matching:
                raise InvalidArgumentError(
                    f"cannot place {node.op} '{node.attrs.get('shared_name', node.name)}' on "
                    f"'{node.device}': this session reaches no such task (its tasks: "
                    f"{sorted({d.spec.to_string().split('/device:')[0] for d in self.devices})}"
                    f"; are device_filters leaving it out?), and the resource anywhere else "
                    f"would be a separate one", **node.error_context())
        usable = [d for d in matching if self._has_kernel(node, d.device_type)]
        if spec.device_type is None and self.preferred in usable:
            return [self.preferred], "requested (gpu target: its GPU)"
        if usable:
            return usable, "requested"
        if matching:
            kinds = sorted({d.device_type for d in matching})
            why = "; ".join(dict.fromkeys(str(self._kernel_reason(node, k)) for k in kinds))
        else:
            why = "no such device"
        return self._fallback(node, f"requested device '{node.device}': {why}")

    def _task_of_region_variables(self, node: Node) -> DeviceSpec | None:
        """In a cluster, the task holding the variables that `node`'s regions make
        handles of (a tf.cond/tf.while_loop body updating one): a handle placed on another
        task would name a second variable there. None: no such variable, or one process
        (where every device shares the variables)."""
        if self.default_task is None or not node.regions:
            return None
        t = self.default_task
        tasks: dict[tuple, list[str]] = {}
        for region in node.regions:
            for inner in region.walk():
                if inner.op != "VarHandle":
                    continue
                try:
                    spec = DeviceSpec.from_string(inner.device or "")
                except InvalidArgumentError as e:
                    raise InvalidArgumentError(e.message, **inner.error_context()) from None
                if spec.job is None:  # no request, or no job: the client's task
                    spec = replace(spec, job=t.job, replica=t.replica, task=t.task)
                key = (spec.job, spec.replica or 0, spec.task or 0)
                tasks.setdefault(key, []).append(str(inner.attrs.get("shared_name", inner.name)))
        if len(tasks) > 1:
            where = "; ".join(f"/job:{j}/task:{k}: {', '.join(names)}"
                              for (j, _, k), names in tasks.items())
            raise InvalidArgumentError(
                f"this conditional or loop runs whole on one task, but its body updates "
                f"variables of several tasks ({where}); update them in separate "
                f"tf.cond/tf.while_loop calls, or place the variables on one task",
                **node.error_context())
        if not tasks:
            return None
        ((job, replica, task),) = tasks
        return DeviceSpec(job, replica, task)

    def _fallback(self, node: Node, why: str) -> tuple[list[Device], str]:
        if not self.soft:
            raise InvalidArgumentError(
                f"cannot place the op: {why}; available devices: {device_names(self.devices)}"
                f" (soft placement is off: tw.config.set_soft_device_placement(True) would "
                f"put it on {self.default.name})", **node.error_context())
        return [self.default], f"soft placement ({why}), default device"

    def _kernel_reason(self, node: Node, device_type: str) -> str | None:
        return kernel_reason(node, device_type, self.gpu_target)

    def _has_kernel(self, node: Node, device_type: str) -> bool:
        return self._kernel_reason(node, device_type) is None

    def _unrequested(self, members: list[Node], allowed: list[Device],
                     what: str) -> tuple[list[Device], str]:
        """The gpu target's device for a group with no request: its GPU when that has a
        kernel for every member, else the default CPU, with the reason."""
        if self.preferred in allowed:
            return [self.preferred], f"gpu target: {what}on its GPU"
        why = next((r for m in members
                    if (r := self._kernel_reason(m, self.preferred.device_type))), "")
        return [self.default], f"soft placement (gpu target: {why}), default device"

    def _resolve_group(self, members: list[Node]) -> _Group:
        allowed = [d for d in self.devices
                   if all(self._has_kernel(m, d.device_type) for m in members)]
        allowed = allowed or [self.default]
        owner = next((m for m in members if _makes_resource(m)), None)
        if owner is not None:
            cands, note = self._requested(owner)
            if cands is None and self.preferred is not None and self.default_task is None:
                cands, note = self._unrequested(members, allowed, "resource ")
            elif cands is None:
                cands, note = [self.default], "resource on the default device"
            group = _Group(members, [cands[0]], owner, {owner: note})
        else:
            group = self._resolve_requests(members, allowed)
        if not any(d in allowed for d in group.candidates):
            names = ", ".join(m.name for m in members)
            cands, note = self._fallback(group.leader or members[0], f"no device with a kernel "
                                         f"for every op colocated with it ({names})")
            group.candidates, group.notes = cands, {group.leader or members[0]: note}
        group.candidates = [d for d in group.candidates if d in allowed] or group.candidates
        self._check_member_requests(group)
        return group

    def _resolve_requests(self, members: list[Node], allowed: list[Device]) -> _Group:
        """A group without a resource owner: the intersection of its members' requests."""
        group = _Group(members, list(allowed))
        for m in members:
            cands, note = self._requested(m)
            if cands is None:
                continue
            if group.leader is None:
                group.leader, group.candidates = m, list(cands)
                group.notes[m] = note
            elif any(d in group.candidates for d in cands):
                group.candidates = [d for d in group.candidates if d in cands]
                group.notes[m] = note
        if group.leader is None and self.default_task is not None:
            # Nothing requested: the client's task, as TensorFlow places such ops.
            home = [d for d in group.candidates if self.default_task.matches(d.spec)]
            group.candidates = home or [self.default]
        if group.leader is None and self.preferred is not None:
            group.candidates, note = self._unrequested(members, allowed, "")
            group.notes[members[0]] = note
        elif group.leader is None:  # nothing requested: the CPUs (and GPUs when allowed)
            group.candidates = [d for d in group.candidates
                                if d.device_type in self.auto_types] or [self.default]
        return group

    def _check_member_requests(self, group: _Group) -> None:
        """Members whose own request the group's devices cannot honour: an error without
        soft placement, else a note in their reason."""
        for m in group.members:
            if m is group.leader or not m.device:
                continue
            cands, _ = self._requested(m)
            if cands is not None and not any(d in group.candidates for d in cands):
                if not self.soft:
                    raise InvalidArgumentError(
                        f"cannot honour the requested device '{m.device}': the op must be "
                        f"colocated with '{group.leader.name}' on "
                        f"{device_names(group.candidates)}", **m.error_context())
                group.notes.pop(m, None)
                group.ignored[m] = f"requested '{m.device}' ignored"

    # -------------------------------------------------------------- simulation
    def _simulate(self) -> None:
        free = {d: 0.0 for d in self.devices}
        done: dict[Node, float] = {}
        for n in self.order:
            group = self.group_of[n]
            if group.device is None and self._deferrable(n, group):
                self.deferred.add(n)
                continue
            cands = [group.device] if group.device is not None else group.candidates
            finish = {d: max(free[d], self._ready(n, d, done)) + self.cost.compute_time(n, d)
                      for d in cands}
            device = self._choose(n, cands, finish)
            group.device = self.device_of[n] = device
            free[device] = done[n] = finish[device]

    def _deferrable(self, node: Node, group: _Group) -> bool:
        """Constants and other input-free, stateless nodes without a constraint are placed
        next to their first consumer instead of competing for a device."""
        return (len(group.members) == 1 and group.leader is None and not node.inputs
                and not node.control_inputs and not node.regions and not is_stateful(node)
                and not needs_context(node))

    def _ready(self, node: Node, device: Device, done: Mapping[Node, float]) -> float:
        """When every input (and control input) of `node` could be on `device`."""
        t = 0.0
        for v in _operands(node):
            p = v.producer
            if p is None or p not in self.device_of:  # argument, outer value or deferred
                continue
            t = max(t, done[p] + self.cost.transfer_time(self.cost.nbytes(v.type),
                                                         self.device_of[p], device))
        for c in node.control_inputs:
            if c in self.device_of:
                t = max(t, done[c] + self.cost.transfer_time(0, self.device_of[c], device))
        return t

    def _choose(self, node: Node, cands: list[Device], finish: Mapping[Device, float]) -> Device:
        best = min(cands, key=lambda d: (finish[d], cands.index(d)))
        home = self._home(node, cands)
        if best is home:
            return best
        out_bytes = sum(self.cost.nbytes(v.type) for v in node.outputs)
        gain = finish[home] - finish[best]
        return best if gain > self.cost.transfer_time(out_bytes, best, home) else home

    def _home(self, node: Node, cands: list[Device]) -> Device:
        """The candidate already holding most of `node`'s input bytes (else the default
        device, else the first candidate)."""
        held: dict[Device, int] = {}
        for v in _operands(node):
            p = v.producer
            if p is not None and self.device_of.get(p) in cands:
                d = self.device_of[p]
                held[d] = held.get(d, 0) + max(self.cost.nbytes(v.type), 1)
        if held:
            return max(cands, key=lambda d: (held.get(d, -1), -cands.index(d)))
        return self.default if self.default in cands else cands[0]

    def _place_deferred(self) -> None:
        for n in self.order:
            if n in self.deferred:
                continue
            for p in [v.producer for v in _operands(n)] + list(n.control_inputs):
                if p in self.deferred and p not in self.device_of:
                    self.device_of[p] = self.device_of[n]
        for n in self.deferred:
            self.device_of.setdefault(n, self.default)

    # ------------------------------------------------------------------ output
    def _reason(self, node: Node) -> str:
        group = self.group_of[node]
        if node in self.deferred:
            return "cost model (constant, next to its first consumer)"
        note = group.notes.get(node)
        if note:  # the node's own constraint holds
            if note == "requested" and len(group.candidates) > 1:
                return f"requested (cost model among {len(group.candidates)} devices)"
            return note
        leader = group.leader or group.members[0]
        if node is leader:
            return "cost model"
        ignored = group.ignored.get(node)
        return f"colocated with {leader.name}" + (f"; {ignored}" if ignored else "")

    def _assign(self, node: Node, device: Device, reason: str) -> None:
        node.assigned_device = device.name
        node.attrs[REASON_ATTR] = reason
        for region in node.regions:
            for inner in region.walk():
                inner.assigned_device = device.name
                inner.attrs[REASON_ATTR] = f"in a region of {node.name}"


def _operands(node: Node) -> Iterable[Value]:
    """The values `node` reads: its inputs and what its regions capture."""
    yield from node.inputs
    if node.regions:
        yield from outer_uses(node)


def _makes_resource(node: Node) -> bool:
    return any(isinstance(v.type, ResourceType) for v in node.outputs)


def _colocate_names(node: Node) -> tuple[str, ...]:
    names = node.attrs.get(COLOCATE_ATTR, ())
    return (names,) if isinstance(names, str) else tuple(names)


__all__ = ["AUTO_DEVICE_TYPES", "COLOCATE_ATTR", "KERNEL_TARGETS", "REASON_ATTR", "CostModel",
           "auto_device_types", "has_kernel", "kernel_reason", "place", "place_with_config",
           "placement_reasons", "placement_scope", "register_flops", "set_auto_gpu_placement",
           "PlacementScope"]
