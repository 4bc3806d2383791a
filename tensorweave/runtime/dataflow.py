"""`DataflowExecutable`: a whole compiled graph, split by device, run step by step.

The pipeline's output graph is split into one partition per device (the ``partitioned``
stage already joined them with Send/Recv pairs); each partition gets a
`PartitionExecutor`. A call runs one step: a fresh step id, rendezvous and
cancellation, all partitions at once, results gathered back into the graph's order.
Any number of threads may call one executable at once: a step keeps all its state to
itself, and variables lock their own buffers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..compiler.ir import Graph, Node
from ..errors import CompileError, InvalidArgumentError
from .cancellation import CancellationManager
from .devices import default_device_manager, device_runtime
from .executor import Kernel, NodeTrace, PartitionExecutor, Step, new_step_id, run_step
from .kernel_context import CallCounters
from .rendezvous import LocalRendezvous, Rendezvous
from .resources import ResourceManager, default_resource_manager
from .threads import limit_blas_threads

_UNSET: Any = object()


def split_graph(graph: Graph) -> list[Any]:
    """The partitions of `graph` (`passes.partition.Partition`s), one per device. A graph
    with a single device (or none assigned) is one partition, used as is."""
    # Imported here: the passes import the runtime's device registry.
    from ..passes.partition import Partition, split_by_device
    devices = {n.assigned_device for n in graph.nodes}
    has_transfers = any(n.op in ("Send", "Recv") for n in graph.nodes)
    if len(devices - {None}) <= 1 and not has_transfers:
        device = next(iter(devices - {None}), None) or default_device_manager().default_device.name
        return [Partition(device, graph, list(range(len(graph.args))),
                          list(range(len(graph.results))))]
    return list(split_by_device(graph).values())


def result_sources(graph: Graph, partitions: Sequence[Any]) -> list[tuple[int, int]]:
    """For each result of `graph`: (partition, its result index) of the partition that
    returns it, or (-1, argument index) for a result that is an argument no partition
    returns. Raises `CompileError` for a result nobody computes."""
    sources: dict[int, tuple[int, int]] = {}
    for k, p in enumerate(partitions):
        for j, r in enumerate(p.result_indices):
            sources.setdefault(r, (k, j))
    out = []
    for r, value in enumerate(graph.results):
        if r in sources:
            out.append(sources[r])
        elif value.is_arg and value.graph is graph:
            out.append((-1, value.index))
        else:
            raise CompileError(f"no partition of '{graph.name}' computes result {r} "
                               f"({value.name})")
    return out


def _reference_kernels() -> tuple[Callable[[Node], Kernel], Callable]:
    from ..targets.reference.executor import PreparedKernel, check_arguments
    return PreparedKernel, check_arguments


# A target's kernel provider returns (prepare, check_arguments): ``prepare(node)`` gives
# the node's kernel ``(inputs, resources, counters, step) -> outputs`` (checked), and
# ``check_arguments(graph, args)`` converts and checks call arguments.
KernelProvider = Callable[[], tuple[Callable[[Node], Kernel], Callable]]

_KERNEL_PROVIDERS: dict[str, KernelProvider] = {"reference": _reference_kernels}


def register_kernel_provider(target: str, provider: KernelProvider) -> None:
    """Let `DataflowExecutable` run graphs compiled for `target` with `provider`'s
    per-node kernels (the first registration of a target wins)."""
    _KERNEL_PROVIDERS.setdefault(target, provider)


class DataflowExecutable:
    """A graph compiled for `target`, run by the dataflow executor: call it with one
    array per graph argument; returns the list of results.

    `timeout` (seconds) bounds each step (`tw.errors.DeadlineExceededError`); a call may
    override it with ``exe(*args, timeout=...)``. `rendezvous_factory` makes each step's
    rendezvous (in-process by default).
    """

    def __init__(self, graph: Graph, target: str = "reference",
                 resources: ResourceManager | None = None, timeout: float | None = None,
                 rendezvous_factory: Callable[[], Rendezvous] = LocalRendezvous) -> None:
        limit_blas_threads()
        if target not in _KERNEL_PROVIDERS:
            raise CompileError(f"the dataflow executor has no kernels for target {target!r} "
                               f"(known: {', '.join(sorted(_KERNEL_PROVIDERS))})")
        self.graph = graph
        self.target = target
        self.resources = resources or default_resource_manager()
        self.timeout = timeout
        self.rendezvous_factory = rendezvous_factory
        self.counters = CallCounters()
        prepare, self._check_arguments = _KERNEL_PROVIDERS[target]()
        self.partitions = split_graph(graph)
        # a partition on a GPU runs its nodes with the GPU's runtime (its kernels and
        # host<->device copies); the host's partitions with the target's kernels
        runtimes = [device_runtime(p.device) for p in self.partitions]
        self.executors = [PartitionExecutor(p.graph, prepare if rt is None else rt.prepare,
                                            self.resources, self.counters, p.device,
                                            runtime=rt)
                          for p, rt in zip(self.partitions, runtimes)]
        self._result_sources = self._locate_results()

    @property
    def devices(self) -> list[str]:
        """The devices this executable runs on, one per partition."""
        return [p.device for p in self.partitions]

    def _locate_results(self) -> list[tuple[int, int]]:
        return result_sources(self.graph, self.partitions)

    def __call__(self, *args: Any, timeout: float | None = _UNSET) -> list[Any]:
        """Run one step on `args`; returns the graph's results in order."""
        return self.run(args, timeout=self.timeout if timeout is _UNSET else timeout)

    def run(self, args: Sequence[Any], timeout: float | None = None,
            trace: list[NodeTrace] | None = None, *, step_id: int | None = None,
            cancellation: CancellationManager | None = None,
            rendezvous: Rendezvous | None = None) -> list[Any]:
        """Run one step. With a `trace` list, appends a `NodeTrace` per node run.

        A caller that coordinates this step with others (several executables or tasks
        running parts of one step) passes their shared `step_id`, which keys the
        rendezvous, and may pass the `cancellation` that cancels them all and the
        `rendezvous` they share (a task of a cluster passes its step's)."""
        arrays = self._check_arguments(self.graph, args)
        if timeout is not None and timeout <= 0:
            raise InvalidArgumentError(f"timeout must be positive, got {timeout}")
        step = Step(new_step_id() if step_id is None else step_id,
                    self.rendezvous_factory() if rendezvous is None else rendezvous,
                    cancellation, trace=trace)
        parts = [(ex, [arrays[i] if ex.runtime is None else ex.runtime.to_device(arrays[i])
                       for i in p.arg_indices])
                 for ex, p in zip(self.executors, self.partitions)]
        outputs = run_step(step, parts, timeout)
        for k, ex in enumerate(self.executors):
            if ex.runtime is not None:  # a device's results come back to the host
                outputs[k] = [ex.runtime.to_host(v) for v in outputs[k]]
        return [outputs[k][j] if k >= 0 else arrays[j] for k, j in self._result_sources]

    def __repr__(self) -> str:
        return (f"<DataflowExecutable {self.graph.name}: {len(self.partitions)} partition(s) "
                f"on {', '.join(self.devices)}>")
