"""What `@tw.compile(target="gpu")` runs: one planned GPU step per tuple of argument
shapes (`step.plan_step` on the graph specialized to those shapes, bound to the device by
`runner.GpuStep`); graphs the planner declines run on the reference dataflow executor,
and `native_reason` says why.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ...compiler.ir import Graph
from ...compiler.types import TensorType
from ...errors import TensorWeaveError
from ...runtime.kernel_context import CallCounters
from ...runtime.resources import ResourceManager, default_resource_manager
from ..step_cache import StepCache
from . import transfer
from .device import require
from .interop import DeviceTensor, as_device_array, is_device_object, to_host
from .runner import GpuStep, Mismatch
from .step import Ineligible, StepPlan, plan_step

_log = logging.getLogger(__name__)
MAX_SHAPES = 16  # argument-shape tuples remembered per executable


def specialized(graph: Graph, shapes: list[tuple[int, ...]]) -> Graph:
    """`graph` with its argument shapes fixed to `shapes` (itself when already static)."""
    if all(isinstance(v.type, TensorType) and tuple(v.type.shape) == tuple(s)
           for v, s in zip(graph.args, shapes)) and not _has_unknown(graph):
        return graph
    from ...passes.shape_inference import specialize
    return specialize(graph, [TensorType(v.type.dtype, s) for v, s in zip(graph.args, shapes)])


def _has_unknown(graph: Graph) -> bool:
    """Whether a value of `graph` has a dim not known, nested regions included: a fused
    node's outer types can be static while its region still has the traced unknown dim
    (a FusedMatMul in a step run node by node failed to lower, its batch dim None)."""
    def unknown(v) -> bool:
        return isinstance(v.type, TensorType) and not v.type.is_fully_defined
    return any(unknown(v) for n in graph.walk()
               for v in (*n.outputs, *(a for r in n.regions for a in r.args)))


class GpuExecutable:
    """A graph compiled for the gpu target; call it like a `DataflowExecutable`:
    ``exe(*arrays) -> list of results``."""

    owns_results = True  # results are fresh host arrays

    def __init__(self, graph: Graph, resources: ResourceManager | None = None) -> None:
        self.cuda = require()
        from .allocator import default_allocator
        self.allocator = default_allocator()
        self.graph = graph
        self.resources = resources or default_resource_manager()
        self.counters = CallCounters()
        self._cache = StepCache(MAX_SHAPES)
        self._steps = self._cache.steps  # shape tuple -> step (None: not native)
        self._dataflow: Any = None
        self.native_reason: str | None = None

    @property
    def dataflow(self) -> Any:
        """The reference dataflow executable of the same graph (made on first use)."""
        if self._dataflow is None:
            from ...runtime.dataflow import DataflowExecutable
            exe = DataflowExecutable(self.graph, "reference", self.resources)
            exe.counters = self.counters
            for ex in exe.executors:
                ex.counters = self.counters
            self._dataflow = exe
        return self._dataflow

    def plan(self, shapes: list[tuple[int, ...]]) -> StepPlan:
        """The step plan for arguments of `shapes` (raises `Ineligible`)."""
        return plan_step(specialized(self.graph, shapes))

    def step(self, arrays: list[Any]) -> GpuStep | None:
        """The bound step for these arguments' shapes (built on first use), or None."""
        key = tuple(tuple(a.shape) for a in arrays)
        return self._cache.get(key, lambda: self._build(arrays))

    def _build(self, arrays: list[Any]) -> GpuStep | None:
        if len(arrays) != len(self.graph.args):
            return None
        try:
            plan = self.plan([tuple(a.shape) for a in arrays])
        except (Ineligible, TensorWeaveError) as e:
            self.native_reason = str(e)
            _log.debug("gpu: %s runs on the reference executor: %s", self.graph.name, e)
            return None
        for name, reason in plan.fallbacks.items():
            _log.info("gpu: %s runs on the host: %s", name, reason)
        return GpuStep(plan, self.resources, self.counters, self.cuda, self.allocator)

    def __call__(self, *args: Any, timeout: float | None = None,
                 keep_on_device: bool = False) -> list[Any]:
        """Run one step on `args`: host arrays or GPU arrays (numba device arrays,
        `DeviceTensor`s, objects with ``__cuda_array_interface__`` or CUDA DLPack
        producers: copied device-to-device, never through the host). Returns NumPy
        arrays, or with `keep_on_device` `interop.DeviceTensor`s."""
        arrays = [as_device_array(a) if is_device_object(a) else np.asarray(a) for a in args]
        step = self.step(arrays)
        # a loop run on the host cannot be interrupted: with a deadline, such steps go to
        # the dataflow executor, which enforces it (as the cpu target does)
        if step is not None and (timeout is None or not step.has_loops):
            try:
                return step(arrays, keep_on_device)
            except Mismatch:
                pass
        host = [a if isinstance(a, np.ndarray) else to_host(a) for a in arrays]
        results = [np.array(r, copy=True) for r in self.dataflow.run(host, timeout=timeout)]
        return [self._upload(r) for r in results] if keep_on_device else results

    def _upload(self, value: np.ndarray) -> DeviceTensor:
        """A host result as a `DeviceTensor` (graphs run on the dataflow executor)."""
        blk = self.allocator.allocate(max(1, value.nbytes))
        out = blk.view(value.dtype, value.shape)
        if value.size:
            transfer.to_device(out, value)
        return DeviceTensor(out, blk, self.allocator)

    def run(self, args: Any, timeout: float | None = None, **kw: Any) -> list[Any]:
        """The dataflow executor's `run` (node traces, shared step ids)."""
        return self.dataflow.run(args, timeout=timeout, **kw)

    @property
    def fallbacks(self) -> dict[str, str]:
        """Nodes of the built steps that run on the host, with the reason."""
        out: dict[str, str] = {}
        for step in self._steps.values():
            if step is not None:
                out.update(step.plan.fallbacks)
        return out


__all__ = ["GpuExecutable", "specialized"]
