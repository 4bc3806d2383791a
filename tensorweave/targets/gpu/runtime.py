"""GPU devices inside the dataflow executor: what runs the nodes that placement put on
``/GPU:i`` of a graph that spans several devices (``with tw.device("/GPU:0")`` in a
function of any target, or in a v1 `Session`).

`GpuRuntime` is the device runtime that `runtime.devices.device_runtime` gives the
dataflow executor for a GPU partition:

- ``prepare(node)``: the node's kernel. A node the gpu target has a kernel for runs as a
  one-node step (the node alone in a graph specialized to its input shapes, fused when
  elementwise, planned and bound once per input signature by `step`/`runner`) on device
  inputs, leaving fresh device outputs (`interop.DeviceTensor`). Constants are uploaded
  once. Anything else (variable reads and updates, random ops, ops the gpu target has
  no kernel for) runs its reference kernel on the host: inputs down, outputs up.
- ``to_device``/``to_host``: the host<->device copies of the partition's transfers. A
  Recv on a GPU uploads the received tensor, a Send from a GPU downloads it, once per
  tensor per device per step (the partition pass makes one Send/Recv pair per tensor
  and destination); the partition's arguments are uploaded and its results downloaded
  the same way. Copies go through page-locked (pinned) host buffers, kept in a pool by
  shape and dtype, so the DMA engine reads and writes them directly.

Values between the GPU nodes of a step never leave the device.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...compiler.dtypes import as_dtype
from ...compiler.ir import Graph, Node, Value
from ...compiler.types import TensorType
from ...runtime.kernel_context import CallCounters
from ...runtime.resources import ResourceManager
from . import transfer
from .interop import DeviceTensor

_log = logging.getLogger(__name__)
_HOST_OPS = frozenset({"VarHandle", "ReadVariable", "AssignVariable", "AssignAddVariable",
                       "AssignSubVariable", "NoOp", "Send", "Recv"})


class _PinnedPool:
    """Page-locked host buffers by (shape, dtype), reused across steps."""

    def __init__(self, cuda: Any) -> None:
        self._cuda = cuda
        self._free: dict[tuple, list[np.ndarray]] = {}
        self._lock = threading.Lock()

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        with self._lock:
            free = self._free.get((shape, dtype.str))
            if free:
                return free.pop()
        return self._cuda.pinned_array(shape, dtype)

    def give(self, buf: np.ndarray) -> None:
        with self._lock:
            self._free.setdefault((buf.shape, buf.dtype.str), []).append(buf)


class GpuRuntime:
    """The device runtime of GPU partitions (see the module docstring)."""

    def __init__(self) -> None:
        from .allocator import default_allocator
        from .device import require
        self.cuda = require()
        self.allocator = default_allocator()
        self._pinned = _PinnedPool(self.cuda)
        self._lock = threading.Lock()
        self.uploads = 0
        self.downloads = 0
        # compute nodes of GPU partitions that run on the host instead, with the reason
        self.fallbacks: dict[str, str] = {}

    def note_fallback(self, node: Node, reason: str) -> None:
        """Record (and log at INFO) that `node` runs its reference kernel on the host."""
        with self._lock:
            known = self.fallbacks.get(node.name) == reason
            self.fallbacks[node.name] = reason
        if not known:
            _log.info("gpu: %s '%s' (%s) runs on the host: %s", node.op, node.name,
                      node.loc, reason)

    # ------------------------------------------------------------- transfers
    def to_device(self, value: Any) -> Any:
        """A host tensor as a `DeviceTensor` (one host-to-device copy through a pinned
        buffer); device tensors and other values (resource handles) as they are."""
        if not isinstance(value, (np.ndarray, np.generic)):
            return value
        arr = np.asarray(value)
        blk = self.allocator.allocate(max(1, arr.nbytes))
        dev = blk.view(arr.dtype, arr.shape)
        if arr.size:
            buf = self._pinned.take(arr.shape, arr.dtype)
            np.copyto(buf, arr)
            transfer.to_device(dev, buf)
            self._pinned.give(buf)
        with self._lock:
            self.uploads += 1
        return DeviceTensor(dev, blk, self.allocator)

    def to_host(self, value: Any) -> Any:
        """A `DeviceTensor` as a fresh host array (one device-to-host copy through a
        pinned buffer); anything else as it is."""
        if not isinstance(value, DeviceTensor):
            return value
        with self._lock:
            self.downloads += 1
        if not value.size:
            return np.empty(value.shape, value.dtype)
        buf = self._pinned.take(value.shape, value.dtype)
        transfer.to_host(value.array, buf)
        out = np.array(buf, copy=True)
        self._pinned.give(buf)
        return out

    # ---------------------------------------------------------------- kernels
    def prepare(self, node: Node) -> GpuNodeKernel:
        """The kernel of `node` on this GPU (``kernel(inputs, resources, counters,
        step)``)."""
        return GpuNodeKernel(node, self)

    def stats(self) -> dict[str, int]:
        """Host-to-device and device-to-host copies made so far."""
        with self._lock:
            return {"uploads": self.uploads, "downloads": self.downloads}


class GpuNodeKernel:
    """One node of a GPU partition: a one-node GPU step per input signature, a cached
    upload for a constant, or its reference kernel on the host (see the module
    docstring)."""

    def __init__(self, node: Node, runtime: GpuRuntime) -> None:
        from ..reference.executor import PreparedKernel
        from .support import gpu_kernel_reason
        self.node = node
        self.runtime = runtime
        self.host = PreparedKernel(node)
        self.reason = ("a resource op runs on the host" if node.op in _HOST_OPS
                       else gpu_kernel_reason(node) if node.op != "Fusion" else None)
        if self.reason is not None and node.op not in _HOST_OPS and node.op != "Const":
            runtime.note_fallback(node, self.reason)
        self._steps: dict[tuple, Any] = {}
        self._const: DeviceTensor | None = None
        self._lock = threading.Lock()

    def __call__(self, inputs: Sequence[Any], resources: ResourceManager, counters: CallCounters,
                 step: Any = None, *, captures: Mapping[Value, Any] | None = None) -> list[Any]:
        node = self.node
        if node.op == "Const":
            if self._const is None:  # consumers never write their inputs: one upload
                with self._lock:
                    if self._const is None:
                        t = node.outputs[0].type
                        self._const = self.runtime.to_device(
                            np.asarray(node.attrs["value"], dtype=t.dtype.np))
            return [self._const]
        if self.reason is None and all(isinstance(x, (DeviceTensor, np.ndarray)) for x in inputs):
            gpu_step = self._step(inputs, resources, counters)
            if gpu_step is not None:
                from .runner import Mismatch
                # host inputs are uploaded, and their DeviceTensors held, until the step
                # has copied them: a dead one's block is back in the allocator's pool,
                # where the next upload (or another thread) takes it and overwrites it
                on_device = [self.runtime.to_device(x) for x in inputs]
                try:
                    return gpu_step([t.array for t in on_device], keep_on_device=True)
                except Mismatch:
                    pass
        host_inputs = [self.runtime.to_host(x) for x in inputs]
        with np.errstate(all="ignore"):
            outs = self.host(host_inputs, resources, counters, step, captures=captures)
        return [self.runtime.to_device(o) for o in outs]

    def _step(self, inputs: Sequence[Any], resources: ResourceManager,
              counters: CallCounters) -> Any:
        key = tuple((tuple(x.shape), np.dtype(x.dtype).str) for x in inputs)
        if key in self._steps:
            return self._steps[key]
        with self._lock:
            if key not in self._steps:
                self._steps[key] = self._build(inputs, resources, counters)
            return self._steps[key]

    def _build(self, inputs: Sequence[Any], resources: ResourceManager,
               counters: CallCounters) -> Any:
        """A bound GPU step running the node alone, or None when it cannot."""
        from ...errors import TensorWeaveError
        from ...passes.fusion import fuse
        from .executable import specialized
        from .runner import GpuStep
        from .step import Ineligible, plan_step
        node = self.node
        g = Graph(f"{node.name}_gpu")
        args = [g.add_arg(TensorType(as_dtype(np.dtype(x.dtype)), tuple(x.shape)), f"in{i}")
                for i, x in enumerate(inputs)]
        copy = g.add_node(node.op, args, dict(node.attrs), name=node.name, loc=node.loc,
                          output_types=[v.type for v in node.outputs],
                          regions=[r.copy_with_map()[0] for r in node.regions])
        g.set_results(list(copy.outputs), [f"out{i}" for i in range(len(copy.outputs))])
        try:
            g = specialized(g, [tuple(x.shape) for x in inputs])
            if node.op != "Fusion":
                fuse(g)
            plan = plan_step(g)
        except (Ineligible, TensorWeaveError) as e:
            self.runtime.note_fallback(node, str(e))
            return None
        for reason in plan.fallbacks.values():  # a host call inside the one-node step
            self.runtime.note_fallback(node, reason)
        return GpuStep(plan, resources, counters, self.runtime.cuda, self.runtime.allocator)


_runtime: GpuRuntime | None = None
_runtime_lock = threading.Lock()


def gpu_runtime() -> GpuRuntime:
    """The process's GPU device runtime (made on first use; UnavailableError with no
    GPU and no simulator)."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = GpuRuntime()
        return _runtime


__all__ = ["GpuNodeKernel", "GpuRuntime", "gpu_runtime"]
