"""The dataflow executor: runs a partition's nodes as soon as their inputs are ready.

Per partition, `PartitionExecutor` precomputes (once) where each node reads its inputs
and writes its outputs in a flat slot array, its successors, and how many distinct
predecessors (data and control) it waits for. A step (`run_step`) copies those counts,
and every finished node decrements its successors' counts; a node whose count reaches
zero is ready.

Where ready nodes run (TensorFlow's policy):
- blocking ops (``Recv``, ops tagged ``"blocking"`` such as queue dequeues) go to an
  unbounded pool of threads, so an op that waits can never starve the ops it waits for;
- cheap ops (small known shapes) run inline on the thread that made them ready;
- of the expensive ones, one runs inline when nothing cheap is queued there, the others
  go to the process-wide inter-op pool (``max(4, 2 * cores)`` threads). NumPy and native
  kernels release the GIL, so independent branches and partitions run in parallel.

The first error of a step cancels it: its `CancellationManager` fires, which aborts the
rendezvous (waking every blocked Recv) and runs the callbacks of blocked queue ops;
nodes not started yet are skipped, and `run_step` re-raises the first error, which
already names its op, node and source line.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compiler.ir import Graph, Node
from ..compiler.types import TensorType
from ..errors import CancelledError, DeadlineExceededError, TensorWeaveError
from .cancellation import CancellationManager
from .kernel_context import CallCounters, StepContext
from .rendezvous import Rendezvous
from .resources import ResourceManager

# An op touching at most this many elements (inputs plus outputs, all shapes known) is
# cheap: dispatching it to another thread would cost more than running it.
CHEAP_ELEMENTS = 1 << 15

# Ops that may wait for another op (of this or another partition) to run.
BLOCKING_OPS = frozenset({"Recv"})

# After a step's deadline passed and it was cancelled, how long to wait for kernels
# still running before giving up on them.
CANCEL_GRACE_S = 2.0

# Prepared kernel of one node: (inputs, resources, counters, step) -> outputs, checked.
Kernel = Callable[[Sequence[Any], ResourceManager, CallCounters, StepContext], list[Any]]

_step_ids = itertools.count(1)
_log = logging.getLogger(__name__)


def new_step_id() -> int:
    """A step id unique in this process."""
    return next(_step_ids)


# ------------------------------------------------------------------------ thread pools

class ThreadPool:
    """A pool of daemon threads running ``fn(*args)`` tasks.

    Threads start on demand, up to `max_threads` (None: without bound, for tasks that
    may block). With `idle_timeout`, a thread idle that long exits. A task reserves an
    idle thread when one exists, so an unbounded pool starts a thread only when every
    thread is busy.
    """

    def __init__(self, name: str, max_threads: int | None, idle_timeout: float | None = None
                 ) -> None:
        self.name = name
        self.max_threads = max_threads
        self.idle_timeout = idle_timeout
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0       # threads waiting for a task, none promised to them yet
        self._backlog = 0    # tasks queued while every thread was busy (bounded pool)
        self._ids = itertools.count()
        self._members: set[int] = set()

    @property
    def num_threads(self) -> int:
        return self._threads

    def owns_current_thread(self) -> bool:
        """True when called from one of this pool's threads."""
        return threading.get_ident() in self._members

    def submit(self, fn: Callable, *args: Any) -> None:
        """Run ``fn(*args)`` on a pool thread."""
        task = (fn, args)
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                self._queue.put(task)
                return
            if self.max_threads is not None and self._threads >= self.max_threads:
                self._backlog += 1
                self._queue.put(task)
                return
            self._threads += 1
        threading.Thread(target=self._work, args=(task,), daemon=True,
                         name=f"{self.name}-{next(self._ids)}").start()

    def _work(self, task: tuple | None) -> None:
        self._members.add(threading.get_ident())
        try:
            if task is None:  # started to take a queued task (see `lend_current_thread`)
                task = self._queue.get()
            while task is not None:
                fn, args = task
                try:
                    fn(*args)
                except BaseException:  # noqa: BLE001  (a task must not kill its thread)
                    # Executor tasks report their errors to their step; anything reaching
                    # here is a bug in the task itself.
                    _log.exception("task %r on %s failed", fn, threading.current_thread().name)
                task = self._next_task()
        finally:
            self._members.discard(threading.get_ident())

    @contextlib.contextmanager
    def lend_current_thread(self) -> Iterator[None]:
        """While a pool thread waits for other tasks of this pool (a nested step), let
        one more thread run, starting it at once if tasks are queued: nested waits can
        then never exhaust the pool."""
        if self.max_threads is None or not self.owns_current_thread():
            yield
            return
        with self._lock:
            self.max_threads += 1
            start = self._backlog > 0
            if start:
                self._backlog -= 1
                self._threads += 1
        if start:
            threading.Thread(target=self._work, args=(None,), daemon=True,
                             name=f"{self.name}-{next(self._ids)}").start()
        try:
            yield
        finally:
            with self._lock:
                self.max_threads -= 1

    def _next_task(self) -> tuple | None:
        """The next task for this thread, or None when it should exit (idle too long)."""
        with self._lock:
            if self._backlog > 0:
                self._backlog -= 1  # that task is this thread's to take
            else:
                self._idle += 1
        while True:
            try:
                return self._queue.get(timeout=self.idle_timeout)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:
                        # No task was promised to an idle thread beyond those still
                        # waiting: this one can go.
                        self._idle -= 1
                        self._threads -= 1
                        return None
                # A task was just promised to the idle threads: wait for it.


def _default_pool_size() -> int:
    return max(4, 2 * (os.cpu_count() or 1))


_pools_lock = threading.Lock()
_inter_op_pool: ThreadPool | None = None
_blocking_pool: ThreadPool | None = None


def inter_op_pool() -> ThreadPool:
    """The process-wide pool that runs ops (``TW_INTER_OP_THREADS`` overrides its size)."""
    global _inter_op_pool
    if _inter_op_pool is None:
        with _pools_lock:
            if _inter_op_pool is None:
                size = int(os.environ.get("TW_INTER_OP_THREADS", 0)) or _default_pool_size()
                _inter_op_pool = ThreadPool("tw-inter-op", size, idle_timeout=60.0)
    return _inter_op_pool


def blocking_pool() -> ThreadPool:
    """The process-wide pool for ops that may block (Recv, queue ops): unbounded, so a
    waiting op never holds a thread that the op it waits for needs."""
    global _blocking_pool
    if _blocking_pool is None:
        with _pools_lock:
            if _blocking_pool is None:
                _blocking_pool = ThreadPool("tw-blocking", None, idle_timeout=30.0)
    return _blocking_pool


# ------------------------------------------------------------------------- one step

class Step:
    """What the partitions of one running step share: its id, rendezvous and
    cancellation (as a `StepContext` for kernels), the count of nodes scheduled but not
    finished, and the first error."""

    __slots__ = ("cancellation", "ctx", "lock", "outstanding", "error", "trace", "_done",
                 "_abort_token")

    def __init__(self, step_id: int, rendezvous: Rendezvous,
                 cancellation: CancellationManager | None = None,
                 trace: list | None = None) -> None:
        self.cancellation = cancellation or CancellationManager()
        self.ctx = StepContext(step_id, rendezvous, self.cancellation)
        self.lock = threading.Lock()
        self.outstanding = 0
        self.error: BaseException | None = None
        self.trace = trace
        # Held until the step is done: a one-shot latch, cheaper than an Event.
        self._done = threading.Lock()
        self._done.acquire()
        # Cancelling the step releases every Recv blocked on its rendezvous.
        self._abort_token = self.cancellation.add_callback(rendezvous.abort)

    def close(self) -> None:
        """Detach from the cancellation manager (it may outlive the step)."""
        self.cancellation.remove_callback(self._abort_token)

    def first_error(self) -> BaseException | None:
        """The error the step fails with: its first op error, or the error it was
        cancelled with from outside (its skipped nodes left no results)."""
        if self.error is not None:
            return self.error
        return self.cancellation.error

    @property
    def step_id(self) -> int:
        return self.ctx.step_id

    def fail(self, error: BaseException) -> None:
        """Record `error` if it is the step's first, and cancel the step."""
        with self.lock:
            if self.error is None:
                self.error = error
        self.cancellation.cancel(error)

    def finished(self, newly_scheduled: int) -> None:
        """One node finished (or was skipped) after scheduling `newly_scheduled` more."""
        with self.lock:
            self.outstanding += newly_scheduled - 1
            if self.outstanding == 0:
                self.set_done()

    def set_done(self) -> None:
        """Called once, under `lock`, when nothing is outstanding any more."""
        self._done.release()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the step is done (at most `timeout` seconds); True if it is."""
        if self._done.acquire(timeout=-1 if timeout is None else timeout):
            self._done.release()  # stays "done" for any later wait
            return True
        return False


@dataclass
class NodeTrace:
    """Where and when one node of a traced step ran."""

    node: str
    op: str
    device: str
    thread: int
    start: float
    end: float


class PartitionExecutor:
    """Runs the nodes of one partition (a graph on one device) as their inputs become
    ready. Immutable after construction: any number of steps may use it at once."""

    def __init__(self, graph: Graph, prepare: Callable[[Node], Kernel], resources: ResourceManager,
                 counters: CallCounters, device: str = "") -> None:
        self.graph = graph
        self.device = device
        self.resources = resources
        self.counters = counters
        self.nodes = graph.topological_order()
        index = {id(n): i for i, n in enumerate(self.nodes)}
        slot: dict[Any, int] = {v: i for i, v in enumerate(graph.args)}
        for n in self.nodes:
            for v in n.outputs:
                slot[v] = len(slot)
        self.num_slots = len(slot)
        self.slot_values = list(slot)  # slot index -> IR value
        self.num_args = len(graph.args)
        self.in_slots = [tuple(slot[v] for v in n.inputs) for n in self.nodes]
        self.out_slots = [tuple(slot[v] for v in n.outputs) for n in self.nodes]
        self.result_slots = [slot[v] for v in graph.results]
        # Values of this graph that a node's regions read: they are inputs too.
        self.capture_slots = [tuple(dict.fromkeys(slot[v] for v in region_reads(n) if v in slot))
                              for n in self.nodes]
        self.successors: list[list[int]] = [[] for _ in self.nodes]
        self.num_deps: list[int] = []
        for i, n in enumerate(self.nodes):
            reads = [*n.inputs, *(v for v in region_reads(n) if v in slot)]
            deps = {index[id(v.producer)] for v in reads if v.producer is not None}
            deps |= {index[id(c)] for c in n.control_inputs if id(c) in index}
            self.num_deps.append(len(deps))
            for d in sorted(deps):
                self.successors[d].append(i)
        self.roots = [i for i, k in enumerate(self.num_deps) if k == 0]
        self.kernels = [prepare(n) for n in self.nodes]
        self.blocking = [is_blocking(n) for n in self.nodes]
        self.cheap = [is_cheap(n) for n in self.nodes]

    def start(self, step: Step, args: Sequence[Any]) -> PartitionRun:
        """The state of this partition in `step`, fed with `args` (one per graph arg)."""
        return PartitionRun(self, step, args)


def region_reads(node: Node) -> list[Any]:
    """Every value read inside `node`'s regions, at any depth (captures among them)."""
    out: list[Any] = []
    for region in node.regions:
        out += region.results
        for n in region.nodes:
            out += n.inputs
            out += region_reads(n)
    return out


def is_blocking(node: Node) -> bool:
    """True for ops that may wait on another op: they get a thread of their own. A node
    whose regions hold such an op waits too (regions run inside their node's kernel)."""
    if node.op in BLOCKING_OPS or "blocking" in node.opdef.tags:
        return True
    return any(is_blocking(n) for region in node.regions for n in region.nodes)


def is_cheap(node: Node) -> bool:
    """True for ops small enough to run inline (all shapes known, few elements)."""
    total = 0
    for v in (*node.inputs, *node.outputs):
        t = v.type
        if not isinstance(t, TensorType):
            continue
        if any(d is None for d in t.shape):
            return False
        total += int(np.prod(t.shape, dtype=np.int64))
    return total <= CHEAP_ELEMENTS


class PartitionRun:
    """One partition's part of one step: the values computed so far and the pending
    input counts."""

    __slots__ = ("executor", "step", "values", "pending")

    def __init__(self, executor: PartitionExecutor, step: Step, args: Sequence[Any]) -> None:
        self.executor = executor
        self.step = step
        self.values: list[Any] = [None] * executor.num_slots
        self.values[:executor.num_args] = args
        self.pending = list(executor.num_deps)

    def results(self) -> list[Any]:
        return [self.values[s] for s in self.executor.result_slots]

    def execute(self, i: int, inline: deque) -> None:
        """Run node `i` (unless the step is cancelled) and schedule the successors it
        makes ready: cheap ones onto `inline`, for this thread to run next."""
        ex = self.executor
        step = self.step
        if step.cancellation.is_cancelled:
            step.finished(0)  # skipped: successors are never scheduled
            return
        values = self.values
        start = time.perf_counter() if step.trace is not None else 0.0
        try:
            if ex.capture_slots[i]:
                outs = ex.kernels[i]([values[s] for s in ex.in_slots[i]], ex.resources,
                                     ex.counters, step.ctx, captures=self._captures(i))
            else:
                outs = ex.kernels[i]([values[s] for s in ex.in_slots[i]], ex.resources,
                                     ex.counters, step.ctx)
        except BaseException as e:  # noqa: BLE001  (re-raised by run_step)
            if not isinstance(e, TensorWeaveError):
                # Kernels' own errors already name the node; say where anything else
                # came from, since it is re-raised far from the thread it happened on.
                node = ex.nodes[i]
                e.add_note(f"raised by the kernel of {node.op} '{node.name}'"
                           + (f" ({node.loc})" if node.loc else ""))
            step.fail(e)
            step.finished(0)
            return
        if step.trace is not None:
            self._record(i, start)
        for s, v in zip(ex.out_slots[i], outs):
            values[s] = v
        ready = []
        succ = ex.successors[i]
        pending = self.pending
        with step.lock:
            for j in succ:
                pending[j] -= 1
                if pending[j] == 0:
                    ready.append(j)
            # This node is done, the ready ones are now outstanding (Step.finished).
            step.outstanding += len(ready) - 1
            if step.outstanding == 0:
                step.set_done()
        if ready:
            schedule(self, ready, inline)

    def _captures(self, i: int) -> dict[Any, Any]:
        """The values of this graph that node `i`'s regions read, by IR value."""
        ex = self.executor
        return {ex.slot_values[s]: self.values[s] for s in ex.capture_slots[i]}

    def _record(self, i: int, start: float) -> None:
        node = self.executor.nodes[i]
        self.step.trace.append(NodeTrace(node.name, node.op, self.executor.device,
                                         threading.get_ident(), start, time.perf_counter()))


def schedule(run: PartitionRun, ready: Sequence[int], inline: deque) -> None:
    """Send ready nodes of `run` where they should run (see the module docstring). The
    caller has already counted them as outstanding."""
    ex = run.executor
    expensive = None
    for j in ready:
        if ex.blocking[j]:
            blocking_pool().submit(_run_one, run, j)
        elif ex.cheap[j]:
            inline.append((run, j))
        else:
            if expensive is not None:
                inter_op_pool().submit(_run_one, run, expensive)
            expensive = j
    if expensive is not None:
        if inline:
            inter_op_pool().submit(_run_one, run, expensive)
        else:
            inline.append((run, expensive))


def drain(inline: deque) -> None:
    """Run queued (run, node) pairs, and those they make ready, on this thread."""
    # NumPy kernels report floating-point problems as values (inf, nan), not warnings;
    # set once here rather than around every kernel.
    with np.errstate(all="ignore"):
        while inline:
            run, i = inline.popleft()
            run.execute(i, inline)


def _run_one(run: PartitionRun, i: int) -> None:
    drain(deque([(run, i)]))


# ------------------------------------------------------------------------ run a step

def run_step(step: Step, parts: Sequence[tuple[PartitionExecutor, Sequence[Any]]],
             timeout: float | None = None) -> list[list[Any]]:
    """Run one step over all partitions at once; returns each partition's results.

    Without a timeout the calling thread runs cheap ops itself; with one it only waits,
    so it can cancel the step at the deadline (raising `DeadlineExceededError`).
    """
    runs = [ex.start(step, args) for ex, args in parts]
    step.outstanding = sum(len(r.executor.roots) for r in runs) + 1  # +1: the start itself
    inline: deque = deque()
    for run in runs:
        if run.executor.roots:
            schedule(run, run.executor.roots, inline)
    if timeout is None:
        drain(inline)
    elif inline:
        inter_op_pool().submit(drain, inline)
    step.finished(0)
    try:
        _wait(step, timeout)
    finally:
        step.close()
    error = step.first_error()
    if error is not None:
        raise error
    return [r.results() for r in runs]


def _wait(step: Step, timeout: float | None) -> None:
    """Wait for the step to finish; at the deadline, cancel it and wait a little more."""
    pool = inter_op_pool()
    if pool.owns_current_thread():
        with pool.lend_current_thread():
            _wait_for(step, timeout)
    else:
        _wait_for(step, timeout)


def _wait_for(step: Step, timeout: float | None) -> None:
    try:
        if step.wait(timeout):
            return
        step.fail(DeadlineExceededError(
            f"step {step.step_id} did not finish within its timeout of {timeout:g} s"))
        step.wait(CANCEL_GRACE_S)
    except BaseException:
        # Interrupted (KeyboardInterrupt): stop the step's other ops as well.
        step.fail(CancelledError(f"step {step.step_id} was interrupted"))
        raise
