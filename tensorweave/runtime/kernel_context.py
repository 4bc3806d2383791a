"""What a kernel that asked for context (``kernel(..., context=True)``) receives."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import FailedPreconditionError
from .cancellation import CancellationManager
from .rendezvous import Rendezvous
from .resources import ResourceManager


@dataclass
class CallCounters:
    """How many times each stateful node of one executable has run; random ops use it as
    the counter of their counter-based generator, so every target draws the same numbers."""

    counts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, key: str) -> int:
        with self.lock:
            n = self.counts.get(key, 0)
            self.counts[key] = n + 1
            return n


class NoRendezvous(Rendezvous):
    """The rendezvous of code run outside a dataflow step (eager ops, constant folding,
    the reference oracle): there is nobody to exchange tensors with."""

    def _fail(self, key: str) -> FailedPreconditionError:
        return FailedPreconditionError(
            f"no rendezvous for key '{key}': Send/Recv only run inside a step of a "
            f"compiled, partitioned graph")

    def send(self, key: str, value: Any) -> None:
        raise self._fail(key)

    def recv(self, key: str, timeout: float | None = None) -> Any:
        raise self._fail(key)

    def abort(self, error: BaseException) -> None:
        pass


NO_RENDEZVOUS = NoRendezvous()


class StepContext:
    """What every kernel of one step shares: the step id, the rendezvous its Send/Recv
    pairs use, and its cancellation. (A plain class: one is made per step.)"""

    __slots__ = ("step_id", "rendezvous", "cancellation")

    def __init__(self, step_id: int = 0, rendezvous: Rendezvous = NO_RENDEZVOUS,
                 cancellation: CancellationManager | None = None) -> None:
        self.step_id = step_id
        self.rendezvous = rendezvous
        self.cancellation = cancellation if cancellation is not None else CancellationManager()


@dataclass
class KernelContext:
    """The node being run, the runtime's resources, per-executable counters, and the
    step it runs in: its id, its rendezvous (Send/Recv) and its cancellation.

    Blocking kernels must wake up when ``cancellation`` fires (register a callback with
    `CancellationManager.add_callback`) and then raise `CancelledError`.
    """

    node: Any
    resources: ResourceManager
    counters: CallCounters
    step_id: int = 0
    rendezvous: Rendezvous = NO_RENDEZVOUS
    cancellation: CancellationManager = field(default_factory=CancellationManager)
    # Values of the enclosing graph(s) that this node's regions read (captures).
    captures: Mapping[Any, Any] | None = None

    def next_call_index(self) -> int:
        """0 on this node's first run in this executable, then 1, 2, ..."""
        return self.counters.next(self.node.name)

    def run_region(self, graph: Any, args: Sequence[Any]) -> list[Any]:
        """Run a region graph (a branch or loop body of this node) on `args` and return
        its results, in this kernel's thread and step (same resources, counters,
        rendezvous and cancellation). Functional control flow calls this."""
        # Imported here: the reference target sits above the runtime in the layering.
        from ..targets.reference.executor import evaluate
        step = StepContext(self.step_id, self.rendezvous, self.cancellation)
        return evaluate(graph, list(args), self.resources, self.counters, step=step,
                        captures=self.captures)
