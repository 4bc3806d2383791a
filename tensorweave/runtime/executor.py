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

Dataflow control flow (graphs lowered by ``passes.lower_control_flow``; the static side
is `frames.FrameLayout`), as in TensorFlow's executor:
- dead tensors: a `Switch` outputs `frames.DEAD` on its untaken side; a node with a dead
  input (data or control) does not run and its outputs are dead; a `Merge` takes the
  first live input and is dead only when all its inputs are (or a dead Enter reaches
  it); a Send of a dead value sends the `DEAD` marker, and its Recv's outputs are dead.
  A dead graph result is an `InternalError`.
- frames: an `Enter` starts (or joins) the instance of its child frame that belongs to
  the current iteration of the enclosing frame; `NextIteration` moves a value to the
  next iteration, started at once if fewer than ``parallel_iterations`` iterations are
  in flight, else when the oldest one is done; `Exit` hands a value back to the
  enclosing iteration. Each iteration keeps its own values and pending counts, dropped
  as soon as it is done (in order), so a loop of any length runs in memory bounded by
  the iterations in flight, and everything is iterative (no recursion).
- Send/Recv inside a frame use keys that also name the frame instance and iteration.
Graphs without control flow take a shorter path: one iteration, nothing dead.
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
from ..errors import CancelledError, DeadlineExceededError, InternalError, TensorWeaveError
from .cancellation import CancellationManager
from .frames import (
    DEAD,
    ENTER,
    EXIT,
    MERGE,
    NEXT_ITERATION,
    NORMAL,
    RECV,
    ROOT,
    SEND,
    SWITCH,
    Edge,
    FrameLayout,
    StaticFrame,
)
from .kernel_context import CallCounters, StepContext
from .rendezvous import Rendezvous, make_key
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
    start: float  # time.perf_counter() of this process
    end: float
    transfer: str = ""  # a Send's or Recv's rendezvous key: pairs them in a timeline


class PartitionExecutor:
    """Runs the nodes of one partition (a graph on one device) as their inputs become
    ready. Immutable after construction: any number of steps may use it at once.

    A partition with dataflow control flow (lowered loops and conditionals) also has a
    `FrameLayout`: its nodes run once per iteration of their loop frame, and values are
    kept per iteration (see `PartitionRun`)."""

    def __init__(self, graph: Graph, prepare: Callable[[Node], Kernel], resources: ResourceManager,
                 counters: CallCounters, device: str = "", runtime: Any = None) -> None:
        self.graph = graph
        self.device = device
        # a device that is not the host (`devices.device_runtime`): its Sends download,
        # its Recvs upload
        self.runtime = runtime
        self.resources = resources
        self.counters = counters
        self.nodes = graph.topological_order()
        defined = set(graph.args)
        for n in self.nodes:
            defined.update(n.outputs)
        # Values of this graph that a node's regions read: they are inputs too.
        self.capture_values = [tuple(dict.fromkeys(v for v in region_reads(n) if v in defined))
                               for n in self.nodes]
        layout = FrameLayout(graph, self.nodes,
                             [[*n.inputs, *c] for n, c in zip(self.nodes, self.capture_values)])
        self.layout = layout
        self.control_flow = layout.control_flow
        self.frames = layout.frames
        self.kinds = layout.kinds
        self.local = layout.local
        self.out_frame = layout.out_frame
        self.num_args = layout.num_args
        self.in_slots = layout.in_slots
        self.out_slots = layout.out_slots
        self.result_slots = layout.result_slots
        self.capture_slots = [tuple(layout.slot[v] for v in c) for c in self.capture_values]
        self.successors = layout.successors
        self.edges = layout.edges
        self.source_of = layout.source_of
        self.roots = layout.roots
        self.constant_enter = [k == ENTER and bool(n.attrs["is_constant"])
                               for k, n in zip(self.kinds, self.nodes)]
        self.kernels = [prepare(n) for n in self.nodes]
        self.blocking = [is_blocking(n) for n in self.nodes]
        # Control-flow primitives only move references: always run them inline.
        self.cheap = [k not in (NORMAL, SEND, RECV) or is_cheap(n)
                      for k, n in zip(self.kinds, self.nodes)]

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


# ------------------------------------------------------------- frames and iterations

class Iteration:
    """One iteration of one frame instance in one step: the values of the frame's slots,
    the pending-input count and deadness of each of its nodes, how many of its node runs
    are scheduled and not finished, how many child frames it started that are not done
    (`children`, by static frame index)."""

    __slots__ = ("frame", "number", "values", "pending", "dead", "outstanding_ops",
                 "outstanding_frames", "children")

    def __init__(self, info: StaticFrame, frame: Frame | None, number: int,
                 track_dead: bool = True) -> None:
        self.frame = frame
        self.number = number
        self.values: list[Any] = [None] * info.num_slots
        self.pending = list(info.pending)
        self.dead = [False] * len(info.pending) if track_dead else None
        self.outstanding_ops = 0
        self.outstanding_frames = 0
        self.children: dict[int, Frame] | None = None


class Frame:
    """One instance of a loop frame (the root frame: the whole step): the iterations in
    flight, the NextIteration values waiting for a free iteration (`next_roots`), the
    loop invariants (values of constant Enters, given to every iteration), the Exits
    that were dead in the last iteration, and how many Enters have not delivered yet.
    `tag` names the instance in rendezvous keys (frame names and enclosing iterations)."""

    __slots__ = ("info", "parent_iteration", "tag", "iterations", "iteration_count",
                 "outstanding_iterations", "pending_inputs", "next_roots", "invariants",
                 "dead_exits")

    def __init__(self, info: StaticFrame, parent_iteration: Iteration | None, tag: str) -> None:
        self.info = info
        self.parent_iteration = parent_iteration
        self.tag = tag
        self.iterations: dict[int, Iteration] = {0: Iteration(info, self, 0)}
        self.iteration_count = 0
        self.outstanding_iterations = 1
        self.pending_inputs = info.num_enters
        self.next_roots: list[tuple[int, Any]] = []
        self.invariants: list[tuple[int, list[Any] | None]] = []
        self.dead_exits: list[int] = []


def _read_only_index(i: int) -> np.ndarray:
    a = np.array(i, np.int32)
    a.flags.writeable = False
    return a


_INDICES = [_read_only_index(i) for i in range(8)]


def _index_value(i: int) -> np.ndarray:
    """The i32 scalar `i` (read-only, shared for the usual few inputs): a Merge's
    value_index output."""
    return _INDICES[i] if i < len(_INDICES) else _read_only_index(i)


class PartitionRun:
    """One partition's part of one step: the root frame (whose single iteration holds
    the graph's arguments and results) and, under it, the loop frames in flight.

    Scheduling state (pending counts, frames, iterations) changes only under the step's
    lock; kernels run outside it. A node is *dead* when it does not run because an input
    is dead (a Merge: when every input is); its outputs are then `DEAD`. When an
    iteration has nothing left to run and the one before it is done, its state is
    dropped (at most ``parallel_iterations`` iterations of a frame are alive), and a
    frame whose iterations and Enters are all done is dropped, after passing its dead
    Exits on to the enclosing frame."""

    __slots__ = ("executor", "step", "top")

    def __init__(self, executor: PartitionExecutor, step: Step, args: Sequence[Any]) -> None:
        self.executor = executor
        self.step = step
        info = executor.frames[ROOT]
        if executor.control_flow:
            # The root frame has one iteration for the whole step: nothing retires it,
            # so the frame need not list it (and the two hold no cycle).
            self.top = Frame(info, None, "").iterations.pop(0)
        else:  # one iteration, nothing dead: no frame to keep
            self.top = Iteration(info, None, 0, track_dead=False)
        self.top.values[:executor.num_args] = args
        self.top.outstanding_ops = len(executor.roots)

    def results(self) -> list[Any]:
        ex = self.executor
        values = self.top.values
        out = [values[s] for s in ex.result_slots]
        if ex.control_flow and any(v is DEAD for v in out):
            k = next(k for k, v in enumerate(out) if v is DEAD)
            raise InternalError(f"result {k} ('{ex.graph.result_names[k]}') of "
                                f"'{ex.graph.name}' is dead: it depends on a conditional "
                                f"branch that did not run")
        return out

    # --------------------------------------------------------------------- running
    def execute(self, i: int, it: Iteration, inline: deque) -> None:
        """Run node `i` in iteration `it` (unless the step is cancelled) and schedule the
        successors it makes ready: cheap ones onto `inline`, for this thread to run next.

        The hot path of every step: graphs without control flow take the short branches
        (no deadness, one iteration), written out here rather than in helpers."""
        ex = self.executor
        step = self.step
        if step.cancellation.is_cancelled:
            step.finished(0)  # skipped: successors are never scheduled
            return
        start = time.perf_counter() if step.trace is not None else 0.0
        values = it.values
        try:
            kind = ex.kinds[i]
            if kind != NORMAL:
                outs = self._primitive(i, kind, it)
            elif it.dead is not None and it.dead[ex.local[i]]:
                outs = None  # a dead input: the kernel does not run
            elif ex.capture_slots[i]:
                outs = ex.kernels[i]([values[s] for s in ex.in_slots[i]], ex.resources,
                                     ex.counters, step.ctx, captures=self._captures(i, it))
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
        ready: list[tuple[int, Iteration]] = []
        if ex.control_flow:
            with step.lock:
                self._propagate(i, kind, it, outs, ready)
                step.outstanding += len(ready) - 1
                if step.outstanding == 0:
                    step.set_done()
        else:
            for s, v in zip(ex.out_slots[i], outs):
                values[s] = v
            pending = it.pending
            with step.lock:
                for j in ex.successors[i]:
                    pending[j] -= 1
                    if pending[j] == 0:
                        ready.append((j, it))
                # This node is done, the ready ones are now outstanding (Step.finished).
                step.outstanding += len(ready) - 1
                if step.outstanding == 0:
                    step.set_done()
        if ready:
            schedule(self, ready, inline)

    def _captures(self, i: int, it: Iteration) -> dict[Any, Any]:
        """The values of this graph that node `i`'s regions read, by IR value."""
        ex = self.executor
        values = it.values
        return {v: values[s] for v, s in zip(ex.capture_values[i], ex.capture_slots[i])}

    def _primitive(self, i: int, kind: int, it: Iteration) -> list[Any] | None:
        """What a control-flow primitive (or a Send/Recv in a graph with control flow)
        outputs; None when the node is dead."""
        ex = self.executor
        values = it.values
        if kind == MERGE:  # its outputs were chosen when it became ready
            return None if it.dead[ex.local[i]] else [values[s] for s in ex.out_slots[i]]
        if it.dead[ex.local[i]]:
            if kind == SEND:  # the receiving side must learn that the value is dead
                self._transfer_send(i, it, DEAD)
            return None
        if kind == SWITCH:
            data, pred = (values[s] for s in ex.in_slots[i])
            return [DEAD, data] if bool(pred) else [data, DEAD]
        if kind == SEND:
            self._transfer_send(i, it, values[ex.in_slots[i][0]])
            return []
        if kind == RECV:
            return self._transfer_recv(i, it)
        # Enter, Exit, LoopCond and NextIteration forward their (first) input.
        return [values[ex.in_slots[i][0]]]

    # ------------------------------------------------------------ Send and Recv
    def _transfer_key(self, i: int, it: Iteration) -> str:
        """The rendezvous key of Send/Recv node `i` in iteration `it`: the plain key of
        the transfer in the root frame; inside a loop, the frame instance and the
        iteration too, so that each iteration has its own transfer."""
        key = make_key(self.executor.nodes[i].attrs["key"], self.step.step_id)
        frame = it.frame
        return key if frame.parent_iteration is None else f"{key};{frame.tag}{it.number}"

    def _transfer_send(self, i: int, it: Iteration, value: Any) -> None:
        runtime = self.executor.runtime
        if runtime is not None:
            value = runtime.to_host(value)
        self.step.ctx.rendezvous.send(self._transfer_key(i, it), value)

    def _transfer_recv(self, i: int, it: Iteration) -> list[Any] | None:
        node = self.executor.nodes[i]
        value = self.step.ctx.rendezvous.recv(self._transfer_key(i, it))
        if value is DEAD:
            return None
        arr = np.asarray(value)
        t = node.outputs[0].type
        if arr.dtype != t.dtype.np or not t.accepts(t.dtype, arr.shape):
            raise InternalError(f"received {arr.dtype}{list(arr.shape)}, the Recv expects {t}",
                                **node.error_context())
        runtime = self.executor.runtime
        return [arr] if runtime is None else [runtime.to_device(arr)]

    # ------------------------------------------------------- propagation (locked)
    def _propagate(self, i: int, kind: int, it: Iteration, outs: list[Any] | None,
                   ready: list[tuple[int, Iteration]]) -> None:
        """Deliver node `i`'s outputs from iteration `it` (None: the node is dead) where
        its kind sends them, collect the nodes that become ready, and retire `i`'s run
        (which may complete iterations and frames). Called under the step's lock."""
        ex = self.executor
        if kind == ENTER:
            child = self._child_frame(it, ex.out_frame[i])
            if ex.constant_enter[i]:
                child.invariants.append((i, outs))
                for t in list(child.iterations.values()):
                    self._deliver(i, outs, t, ready)
            else:
                self._deliver(i, outs, child.iterations[0], ready)
            child.pending_inputs -= 1
            if child.pending_inputs == 0:
                self._cleanup(child, 0, ready)
        elif kind == EXIT:
            frame = it.frame
            if outs is not None:
                self._deliver(i, outs, frame.parent_iteration, ready)
            elif it.number == frame.iteration_count:
                # Dead in what is so far the last iteration: if no iteration follows,
                # the enclosing frame gets it dead once this frame is done.
                frame.dead_exits.append(i)
        elif kind == NEXT_ITERATION:
            if outs is not None:  # a dead value ends the loop instead of going round
                self._next_iteration(i, outs[0], it, ready)
        else:
            self._deliver(i, outs, it, ready)
        it.outstanding_ops -= 1
        if it.outstanding_ops == 0 and it.outstanding_frames == 0:
            self._cleanup(it.frame, it.number, ready)

    def _deliver(self, i: int, outs: list[Any] | None, t: Iteration,
                 ready: list[tuple[int, Iteration]]) -> None:
        """Store node `i`'s outputs in iteration `t` and count them as arrived at its
        successors there: a non-Merge is ready when all its inputs arrived (dead if one
        is dead); a Merge as soon as one live input arrives (it takes that one), or dead
        when all are dead or a dead one comes from an Enter."""
        ex = self.executor
        values = t.values
        slots = ex.out_slots[i]
        if outs is None:
            for s in slots:
                values[s] = DEAD
        else:
            for s, v in zip(slots, outs):
                values[s] = v
        node_dead = outs is None
        pending = t.pending
        dead = t.dead
        kinds = ex.kinds
        local = ex.local
        for e in ex.edges[i]:
            j = e.dst
            loc = local[j]
            if kinds[j] == MERGE:
                if pending[loc] < 0 or not self._merge_input(j, loc, e, slots, t,
                                                             kinds[i] == ENTER):
                    continue  # fired already, or still waiting
            else:
                if node_dead or any(values[slots[k]] is DEAD for k in e.outputs):
                    dead[loc] = True
                pending[loc] -= 1
                if pending[loc]:
                    continue
            ready.append((j, t))
            t.outstanding_ops += 1

    def _merge_input(self, j: int, loc: int, e: Edge, slots: tuple[int, ...], t: Iteration,
                     from_enter: bool) -> bool:
        """Inputs of Merge `j` arrived through edge `e`; True when it fires now (its
        outputs, or its deadness, set)."""
        ex = self.executor
        values = t.values
        for pos, k in e.merge_inputs:
            v = values[slots[k]]
            if v is not DEAD:
                out = ex.out_slots[j]
                values[out[0]] = v
                values[out[1]] = _index_value(pos)
                t.pending[loc] = -1
                return True
            t.pending[loc] -= 1
        # A dead Enter kills the Merge at once: a loop entered with dead values (in an
        # untaken branch) must not wait for a NextIteration that never comes.
        if t.pending[loc] <= 0 or from_enter:
            t.pending[loc] = -1
            t.dead[loc] = True
            return True
        return False

    def _next_iteration(self, i: int, value: Any, it: Iteration,
                        ready: list[tuple[int, Iteration]]) -> None:
        """NextIteration `i` of iteration `it` passes `value` on: to its source in the
        next iteration, started now if fewer than ``parallel_iterations`` are in flight,
        else once one is done."""
        frame = it.frame
        source = self.executor.source_of[i]
        t = frame.iterations.get(it.number + 1)
        if t is None:
            if frame.outstanding_iterations >= frame.info.parallel_iterations:
                frame.next_roots.append((source, value))
                return
            t = self._new_iteration(frame, ready)
        self._deliver(source, [value, None], t, ready)

    def _new_iteration(self, frame: Frame, ready: list[tuple[int, Iteration]]) -> Iteration:
        """Start the next iteration of `frame`: the values waiting for it and the loop
        invariants arrive in it."""
        frame.iteration_count += 1
        t = Iteration(frame.info, frame, frame.iteration_count)
        frame.iterations[t.number] = t
        frame.outstanding_iterations += 1
        frame.dead_exits.clear()  # an Exit dead in an earlier iteration is not the loop's
        roots, frame.next_roots = frame.next_roots, []
        for source, value in roots:
            self._deliver(source, [value, None], t, ready)
        for i, outs in frame.invariants:
            self._deliver(i, outs, t, ready)
        return t

    def _child_frame(self, it: Iteration, index: int) -> Frame:
        """The instance of static frame `index` that iteration `it` runs (made on the
        first Enter into it)."""
        children = it.children
        if children is None:
            children = it.children = {}
        frame = children.get(index)
        if frame is None:
            info = self.executor.frames[index]
            frame = children[index] = Frame(info, it, f"{it.frame.tag}{info.name}@{it.number}/")
            it.outstanding_frames += 1
        return frame

    def _cleanup(self, frame: Frame, n: int, ready: list[tuple[int, Iteration]]) -> None:
        """Iteration `n` of `frame` may be done: drop the done iterations from `n` on
        (starting waiting ones in their place); if that completes the frame, drop it and
        go on with the enclosing iteration (a loop, not a recursion)."""
        while frame.parent_iteration is not None:
            while n <= frame.iteration_count and _iteration_done(frame, n):
                del frame.iterations[n]
                frame.outstanding_iterations -= 1
                n += 1
                if frame.next_roots:
                    self._new_iteration(frame, ready)
            if frame.pending_inputs or frame.outstanding_iterations:
                return
            parent = frame.parent_iteration
            for i in frame.dead_exits:
                self._deliver(i, None, parent, ready)
            del parent.children[frame.info.index]
            parent.outstanding_frames -= 1
            if parent.outstanding_ops or parent.outstanding_frames:
                return
            frame, n = parent.frame, parent.number

    # -------------------------------------------------------------------- tracing
    def _record(self, i: int, start: float) -> None:
        node = self.executor.nodes[i]
        key = str(node.attrs.get("key", "")) if node.op in ("Send", "Recv") else ""
        self.step.trace.append(NodeTrace(node.name, node.op, self.executor.device,
                                         threading.get_ident(), start, time.perf_counter(),
                                         key))


def _iteration_done(frame: Frame, n: int) -> bool:
    """Nothing of iteration `n` can run any more: none of its nodes is scheduled, none
    of its child frames is alive, and the iteration before it is done (for iteration 0:
    every Enter into the frame has delivered)."""
    t = frame.iterations[n]
    if t.outstanding_ops or t.outstanding_frames:
        return False
    if n == 0:
        return frame.pending_inputs == 0
    return n - 1 not in frame.iterations


def schedule(run: PartitionRun, ready: Sequence[tuple[int, Iteration]], inline: deque) -> None:
    """Send ready (node, iteration) pairs of `run` where they should run (see the module
    docstring). The caller has already counted them as outstanding."""
    ex = run.executor
    expensive = None
    for item in ready:
        j = item[0]
        if ex.blocking[j]:
            blocking_pool().submit(_run_one, run, item)
        elif ex.cheap[j]:
            inline.append((run, item))
        else:
            if expensive is not None:
                inter_op_pool().submit(_run_one, run, expensive)
            expensive = item
    if expensive is not None:
        if inline:
            inter_op_pool().submit(_run_one, run, expensive)
        else:
            inline.append((run, expensive))


def drain(inline: deque) -> None:
    """Run queued (run, (node, iteration)) pairs, and those they make ready, on this
    thread."""
    # NumPy kernels report floating-point problems as values (inf, nan), not warnings;
    # set once here rather than around every kernel.
    with np.errstate(all="ignore"):
        while inline:
            run, (i, it) = inline.popleft()
            run.execute(i, it, inline)


def _run_one(run: PartitionRun, item: tuple[int, Iteration]) -> None:
    drain(deque([(run, item)]))


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
            schedule(run, [(i, run.top) for i in run.executor.roots], inline)
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
