"""Runtime queues: bounded, thread-safe buffers of tuples of tensors shared between steps.

A queue holds *elements*; an element is a tuple with one array per component, each of the
component's dtype and a shape compatible with the component's shape (dims may be None).
Enqueue blocks while the queue is full (back-pressure on producers), dequeue blocks
while it is empty. ``close()`` stops new enqueues; dequeuers then drain what is left and
get `OutOfRangeError` when too few elements remain.

Blocking calls take turns: concurrent enqueuers (and, separately, dequeuers) are served
in arrival order, so an ``enqueue_many``'s elements stay contiguous and a
``dequeue_many`` gets consecutive elements, as in TensorFlow. Each blocking call also
wakes up when its step is cancelled (the executor's cancellation manager) or its
deadline passes.

Three kinds, as TensorFlow's: `FIFOQueue`, `RandomShuffleQueue` (dequeues a uniformly
random element, keeping at least `min_after_dequeue` behind until closed) and
`PaddingFIFOQueue` (``dequeue_many`` pads components to the largest shape in the batch).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..compiler.dtypes import DType, as_dtype
from ..compiler.types import format_shape
from ..errors import (
    CancelledError,
    DeadlineExceededError,
    FailedPreconditionError,
    InvalidArgumentError,
    OutOfRangeError,
)

Shape = tuple  # of int | None
Element = tuple  # one array per component

# How long a blocked call sleeps between checks of its cancellation and deadline when the
# cancellation manager cannot call us back (and as a safety net when it can).
_POLL_S = 0.05
_POLL_WITH_CALLBACK_S = 0.5


class Waiter:
    """How one blocking call waits: until an optional deadline, and until its step is
    cancelled. `cancellation` is the kernel context's cancellation manager (anything with
    ``is_cancelled`` and, optionally, ``add_callback``/``remove_callback``)."""

    def __init__(self, cancellation: Any = None, deadline: float | None = None) -> None:
        self.cancellation = cancellation
        self.deadline = deadline

    @classmethod
    def from_context(cls, ctx: Any, timeout_ms: int = -1) -> Waiter:
        """The waiter of a kernel: the context's cancellation manager (if the executor
        provides one) and the earlier of the op's ``timeout_ms`` and the step deadline."""
        deadline = getattr(ctx, "deadline", None)
        if timeout_ms is not None and timeout_ms >= 0:
            own = time.monotonic() + timeout_ms / 1000.0
            deadline = own if deadline is None else min(deadline, own)
        return cls(getattr(ctx, "cancellation", None), deadline)

    def check(self, what: str) -> None:
        """Raise if the step was cancelled or the deadline has passed."""
        c = self.cancellation
        if c is not None and getattr(c, "is_cancelled", False):
            cause = getattr(c, "error", None)
            detail = f" by {type(cause).__name__}: {getattr(cause, 'message', cause)}" if cause else ""
            raise CancelledError(f"{what} was cancelled (the step was aborted{detail})")
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise DeadlineExceededError(f"{what} timed out")

    @contextmanager
    def wake_on_cancel(self, wake: Callable[[], None]) -> Iterator[float]:
        """Register `wake` with the cancellation manager for the block; yields how long a
        single wait may sleep before re-checking."""
        add = getattr(self.cancellation, "add_callback", None)
        token = None
        if add is not None:
            # the callback may run at once (already cancelled): `wake` takes the queue's
            # lock, so this is entered before the lock is held
            token = add(lambda *_: wake())
        try:
            yield _POLL_WITH_CALLBACK_S if token is not None else _POLL_S
        finally:
            remove = getattr(self.cancellation, "remove_callback", None)
            if token is not None and remove is not None:
                remove(token)

    def timeout(self, poll: float) -> float:
        """How long the next wait may sleep: `poll`, cut short by the deadline."""
        if self.deadline is None:
            return poll
        return max(0.0, min(poll, self.deadline - time.monotonic()))


def _norm_shapes(shapes: Sequence[Any] | None, n: int) -> list[Shape | None]:
    if shapes is None:
        return [None] * n
    shapes = list(shapes)
    if len(shapes) != n:
        raise InvalidArgumentError(f"{n} component dtypes but {len(shapes)} shapes")
    return [None if s is None else tuple(None if d in (None, -1) else int(d) for d in s)
            for s in shapes]


def _compatible(shape: Shape | None, actual: Sequence[int]) -> bool:
    if shape is None:
        return True
    return len(shape) == len(actual) and all(d is None or d == a for d, a in zip(shape, actual))


class QueueBase:
    """A bounded FIFO of elements; subclasses change which element a dequeue takes and
    how a batch is assembled."""

    kind = "fifo"
    type = None  # a resource handle carrying no tensor type (unlike a variable's)

    def __init__(self, capacity: int, dtypes: Sequence[DType | str],
                 shapes: Sequence[Any] | None = None, name: str = "queue") -> None:
        if not isinstance(capacity, (int, np.integer)) or capacity <= 0:
            raise InvalidArgumentError(f"queue '{name}': capacity must be a positive int, "
                                       f"got {capacity!r}")
        self.name = name
        self.capacity = int(capacity)
        self.dtypes: tuple[DType, ...] = tuple(as_dtype(d) for d in dtypes)
        if not self.dtypes:
            raise InvalidArgumentError(f"queue '{name}' needs at least one component dtype")
        self.shapes: list[Shape | None] = _norm_shapes(shapes, len(self.dtypes))
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._closed = False
        self._failure: str | None = None  # set by fail(): every later access raises it
        self._cancel_generation = 0  # bumped by close(cancel_pending_enqueues=True)
        self._enqueuers: collections.deque = collections.deque()  # turn order (tickets)
        self._dequeuers: collections.deque = collections.deque()
        self._init_storage()

    # -- storage (overridden by subclasses) ------------------------------------------
    def _init_storage(self) -> None:
        self._items: collections.deque = collections.deque()

    def _put(self, element: Element) -> None:
        self._items.append(element)

    def _take(self) -> Element:
        return self._items.popleft()

    def _restore(self, elements: list[Element]) -> None:
        """Put back elements a failed dequeue_many had taken, where they were."""
        self._items.extendleft(reversed(elements))

    def _available(self) -> int:
        """How many elements a dequeue may take now."""
        return len(self._items)

    def _batch(self, elements: list[Element], n: int) -> tuple[np.ndarray, ...]:
        return tuple(self._stack(i, [e[i] for e in elements], n)
                     for i in range(len(self.dtypes)))

    def _stack(self, i: int, parts: list[np.ndarray], n: int) -> np.ndarray:
        if not parts:
            shape = self.shapes[i]
            if shape is None or any(d is None for d in shape):
                return np.zeros((0,) + tuple(0 if d is None else d for d in (shape or ())),
                                self.dtypes[i].np)
            return np.zeros((0, *shape), self.dtypes[i].np)
        first = parts[0].shape
        for p in parts[1:]:
            if p.shape != first:
                raise InvalidArgumentError(
                    f"queue '{self.name}': dequeue_many needs elements of one shape, component "
                    f"{i} has shapes {format_shape(first)} and {format_shape(p.shape)}; give "
                    f"the queue fully defined shapes or use a PaddingFIFOQueue")
        return np.stack(parts)

    # -- state ----------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def size(self) -> int:
        """The number of elements in the queue now."""
        with self._lock:
            return len(self._items)

    def close(self, cancel_pending_enqueues: bool = False) -> None:
        """Refuse new enqueues. Blocked enqueues still complete unless
        `cancel_pending_enqueues`, which fails them with CancelledError."""
        with self._lock:
            self._closed = True
            if cancel_pending_enqueues:
                self._cancel_generation += 1
            self._changed.notify_all()

    def fail(self, message: str) -> None:
        """Close the queue for good with an error: pending and later enqueues and
        dequeues raise `FailedPreconditionError(message)`, even while elements remain.
        Used to release every task blocked on a barrier queue when the protocol it
        implements cannot go on (SyncReplicasOptimizer with too few live workers)."""
        with self._lock:
            self._closed = True
            self._failure = message
            self._cancel_generation += 1
            self._changed.notify_all()

    def reset(self) -> None:
        """Drop every element and open the queue again, after `close` or `fail` too: a
        barrier queue starting its protocol afresh (SyncReplicasOptimizer's chief
        putting in its first tokens, after a restart or a watchdog's `fail`)."""
        with self._lock:
            self._init_storage()
            self._closed = False
            self._failure = None
            self._changed.notify_all()

    def _check_failure(self) -> None:
        if self._failure is not None:
            raise FailedPreconditionError(self._failure)

    def _wake(self) -> None:
        with self._lock:
            self._changed.notify_all()

    # -- checks -------------------------------------------------------------------------
    def _check_components(self, components: Sequence[Any], batched: bool) -> tuple[list, int]:
        """Arrays of the components (checked against dtypes and shapes) and, for a batch,
        the number of elements in it."""
        what = "enqueue_many" if batched else "enqueue"
        if len(components) != len(self.dtypes):
            raise InvalidArgumentError(
                f"queue '{self.name}' has {len(self.dtypes)} components, {what} got "
                f"{len(components)} values")
        arrays = [np.asarray(c) for c in components]
        count = 1
        for i, (arr, dtype, shape) in enumerate(zip(arrays, self.dtypes, self.shapes)):
            if arr.dtype != dtype.np:
                raise InvalidArgumentError(
                    f"queue '{self.name}': component {i} has dtype {dtype.ir_name}, {what} got "
                    f"a value of dtype {as_dtype(arr.dtype).ir_name if _known(arr.dtype) else arr.dtype}")
            element_shape = arr.shape
            if batched:
                if arr.ndim == 0:
                    raise InvalidArgumentError(
                        f"queue '{self.name}': enqueue_many needs values with a leading batch "
                        f"dimension, component {i} is a scalar")
                element_shape = arr.shape[1:]
                if i == 0:
                    count = arr.shape[0]
                elif arr.shape[0] != count:
                    raise InvalidArgumentError(
                        f"queue '{self.name}': enqueue_many values disagree on the batch size: "
                        f"component 0 has {count} elements, component {i} has {arr.shape[0]}")
            if not _compatible(shape, element_shape):
                raise InvalidArgumentError(
                    f"queue '{self.name}': component {i} has shape {format_shape(shape)}, "
                    f"{what} got an element of shape {format_shape(element_shape)}")
        return arrays, count

    # -- enqueue ------------------------------------------------------------------------
    def enqueue(self, components: Sequence[Any], waiter: Waiter | None = None) -> None:
        """Add one element; blocks while the queue is full."""
        arrays, _ = self._check_components(components, batched=False)
        self._enqueue([tuple(np.array(a, copy=True) for a in arrays)], waiter or Waiter())

    def enqueue_many(self, components: Sequence[Any], waiter: Waiter | None = None) -> None:
        """Add the slices of `components` along their first dimension, in order; blocks
        while the queue is full (the elements go in as room appears)."""
        arrays, count = self._check_components(components, batched=True)
        # (a[j, ...]: a 0-d array, where a[j] of a string vector would be bytes -> 'S')
        elements = [tuple(np.array(a[j, ...], copy=True) for a in arrays) for j in range(count)]
        self._enqueue(elements, waiter or Waiter())

    def _enqueue(self, elements: list[Element], waiter: Waiter) -> None:
        what = f"enqueue to queue '{self.name}'"
        with waiter.wake_on_cancel(self._wake) as poll, self._lock:
            self._check_failure()
            if self._closed:
                raise CancelledError(f"queue '{self.name}' is closed")
            generation = self._cancel_generation
            ticket = object()
            self._enqueuers.append(ticket)
            try:
                done = 0
                while True:
                    if self._enqueuers[0] is ticket:
                        room = self.capacity - len(self._items)
                        for element in elements[done:done + room]:
                            self._put(element)
                        done = min(len(elements), done + max(room, 0))
                        if room > 0:
                            self._changed.notify_all()
                        if done == len(elements):
                            return
                    if self._cancel_generation != generation:
                        self._check_failure()
                        raise CancelledError(f"queue '{self.name}' was closed with "
                                             f"cancel_pending_enqueues: {what} cancelled")
                    waiter.check(what)
                    self._changed.wait(waiter.timeout(poll))
            finally:
                self._enqueuers.remove(ticket)
                self._changed.notify_all()

    # -- dequeue ------------------------------------------------------------------------
    def dequeue(self, waiter: Waiter | None = None) -> tuple[np.ndarray, ...]:
        """Remove and return one element; blocks while the queue is empty."""
        return self._dequeue(1, waiter or Waiter(), up_to=False, batched=False)

    def dequeue_many(self, n: int, waiter: Waiter | None = None) -> tuple[np.ndarray, ...]:
        """Remove `n` elements and return them batched along a new first dimension (a
        batch that cannot be assembled raises and leaves the elements in the queue)."""
        self._check_n(n)
        return self._dequeue(n, waiter or Waiter(), up_to=False, batched=True)

    def dequeue_up_to(self, n: int, waiter: Waiter | None = None) -> tuple[np.ndarray, ...]:
        """Like `dequeue_many`, but once the queue is closed return what is left (at least
        one element) instead of failing."""
        self._check_n(n)
        return self._dequeue(n, waiter or Waiter(), up_to=True, batched=True)

    def _check_n(self, n: int) -> None:
        if n < 0:
            raise InvalidArgumentError(f"queue '{self.name}': cannot dequeue {n} elements")

    def _dequeue(self, n: int, waiter: Waiter, up_to: bool, batched: bool
                 ) -> tuple[np.ndarray, ...]:
        """Take `n` elements (fewer with `up_to` once closed): one element, or with
        `batched` the batch of them. The batch is assembled before the lock is let go, so
        that a batch that fails (elements of two shapes) puts its elements back where they
        were instead of losing them."""
        what = f"dequeue from queue '{self.name}'"

        def result() -> tuple[np.ndarray, ...]:
            return self._batch(taken, len(taken)) if batched else taken[0]

        with waiter.wake_on_cancel(self._wake) as poll, self._lock:
            ticket = object()
            self._dequeuers.append(ticket)
            taken: list[Element] = []
            try:
                while True:
                    self._check_failure()
                    if self._dequeuers[0] is ticket:
                        for _ in range(min(n - len(taken), self._available())):
                            taken.append(self._take())
                        if len(taken) == n:
                            out = result()
                            self._changed.notify_all()
                            return out
                        if taken:
                            self._changed.notify_all()  # room for blocked enqueuers
                        if self._closed and self._available() == 0:
                            if up_to and taken:
                                return result()
                            raise OutOfRangeError(
                                f"queue '{self.name}' is closed and has insufficient elements "
                                f"(requested {n}, current size {len(self._items) + len(taken)})")
                    waiter.check(what)
                    self._changed.wait(waiter.timeout(poll))
            except BaseException:
                self._restore(taken)
                raise
            finally:
                self._dequeuers.remove(ticket)
                self._changed.notify_all()

    def __repr__(self) -> str:
        comps = ", ".join(f"{d.ir_name}{'' if s is None else format_shape(s)}"
                          for d, s in zip(self.dtypes, self.shapes))
        return f"<{type(self).__name__} '{self.name}' capacity={self.capacity} ({comps})>"


def _known(np_dtype: np.dtype) -> bool:
    try:
        as_dtype(np_dtype)
        return True
    except Exception:  # noqa: BLE001 - any unsupported NumPy dtype
        return False


class FIFOQueue(QueueBase):
    """Elements come out in the order they went in."""

    kind = "fifo"


class RandomShuffleQueue(QueueBase):
    """Dequeues a uniformly random element. Until the queue is closed, a dequeue waits
    until more than `min_after_dequeue` elements are in it, so that many stay behind to
    mix with later ones."""

    kind = "random_shuffle"

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes: Sequence[DType | str],
                 shapes: Sequence[Any] | None = None, seed: int | None = None,
                 name: str = "random_shuffle_queue") -> None:
        if not 0 <= min_after_dequeue < capacity:
            raise InvalidArgumentError(
                f"queue '{name}': min_after_dequeue ({min_after_dequeue}) must be >= 0 and "
                f"less than capacity ({capacity})")
        self.min_after_dequeue = int(min_after_dequeue)
        self.seed = seed
        super().__init__(capacity, dtypes, shapes, name)

    def _init_storage(self) -> None:
        self._items: list[Element] = []  # type: ignore[assignment]
        self._rng = np.random.default_rng(self.seed)

    def _take(self) -> Element:
        i = int(self._rng.integers(len(self._items)))
        # swap-remove: O(1), and the order left behind does not matter
        self._items[i], self._items[-1] = self._items[-1], self._items[i]
        return self._items.pop()

    def _restore(self, elements: list[Element]) -> None:
        self._items.extend(elements)

    def _available(self) -> int:
        if self._closed:
            return len(self._items)
        return max(0, len(self._items) - self.min_after_dequeue)


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose components may have unknown dims; ``dequeue_many`` pads each
    component with zeros to the largest size in the batch along every unknown dim."""

    kind = "padding_fifo"

    def __init__(self, capacity: int, dtypes: Sequence[DType | str], shapes: Sequence[Any],
                 name: str = "padding_fifo_queue") -> None:
        if shapes is None or any(s is None for s in shapes):
            raise InvalidArgumentError(f"PaddingFIFOQueue '{name}' needs the shape (rank) of "
                                       f"every component; use None for dims of any size")
        super().__init__(capacity, dtypes, shapes, name)

    def _stack(self, i: int, parts: list[np.ndarray], n: int) -> np.ndarray:
        shape = self.shapes[i]
        if not parts:
            return np.zeros((0,) + tuple(0 if d is None else d for d in shape), self.dtypes[i].np)
        target = tuple(max(p.shape[k] for p in parts) for k in range(len(shape)))
        out = np.zeros((len(parts), *target), self.dtypes[i].np)
        for j, p in enumerate(parts):
            out[(j, *(slice(0, s) for s in p.shape))] = p
        return out


KINDS = {"fifo": FIFOQueue, "random_shuffle": RandomShuffleQueue,
         "padding_fifo": PaddingFIFOQueue}


def make_queue(kind: str, capacity: int, dtypes: Sequence[DType | str],
               shapes: Sequence[Any] | None, name: str, min_after_dequeue: int = 0,
               seed: int | None = None) -> QueueBase:
    """A new queue of `kind` (``fifo``, ``random_shuffle`` or ``padding_fifo``)."""
    if kind == "fifo":
        return FIFOQueue(capacity, dtypes, shapes, name)
    if kind == "random_shuffle":
        return RandomShuffleQueue(capacity, min_after_dequeue, dtypes, shapes, seed, name)
    if kind == "padding_fifo":
        return PaddingFIFOQueue(capacity, dtypes, shapes, name)
    raise InvalidArgumentError(f"unknown queue kind {kind!r}; known: {', '.join(KINDS)}")


_UNCHECKED: Any = object()  # `check_same_queue`: a property the caller does not check


def _format_shapes(shapes: Sequence[Shape | None]) -> str:
    return "(" + ", ".join("unknown" if s is None else format_shape(s) for s in shapes) + ")"


def check_same_queue(queue: Any, kind: str, capacity: int, dtypes: Sequence[DType],
                     shapes: Any = _UNCHECKED, min_after_dequeue: int | None = None
                     ) -> QueueBase:
    """`queue` if it is a queue of this kind, capacity and dtypes, and of these component
    `shapes` and `min_after_dequeue` when given (what a second handle with the same
    shared name expects, as TensorFlow checks), else a clear error. A handle whose
    shapes differ would batch the queue's elements into other shapes: its dequeue_many
    took them, then its step failed on the result's shape and they were lost."""
    if not isinstance(queue, QueueBase):
        raise InvalidArgumentError(f"resource '{getattr(queue, 'name', queue)}' is not a queue")
    want = tuple(as_dtype(d) for d in dtypes)
    if queue.kind != kind or queue.capacity != capacity or queue.dtypes != want:
        raise InvalidArgumentError(
            f"shared queue '{queue.name}' is a {queue.kind} queue of capacity {queue.capacity} "
            f"with component dtypes ({', '.join(d.ir_name for d in queue.dtypes)}), but a "
            f"{kind} queue of capacity {capacity} with dtypes "
            f"({', '.join(d.ir_name for d in want)}) was requested")
    if shapes is not _UNCHECKED:
        want_shapes = _norm_shapes(shapes, len(want))
        if want_shapes != queue.shapes:
            raise InvalidArgumentError(
                f"shared queue '{queue.name}' has component shapes "
                f"{_format_shapes(queue.shapes)}, but shapes {_format_shapes(want_shapes)} "
                f"were requested")
    held = getattr(queue, "min_after_dequeue", 0)
    if min_after_dequeue is not None and held != min_after_dequeue:
        raise InvalidArgumentError(
            f"shared queue '{queue.name}' has min_after_dequeue {held}, but "
            f"{min_after_dequeue} was requested")
    return queue


def close_all_queues(resources: Any, cancel_pending_enqueues: bool = True) -> None:
    """Close every queue held by a ResourceManager (a Session closing), so that threads
    blocked on them wake up."""
    for res in resources.resources().values():
        if isinstance(res, QueueBase):
            res.close(cancel_pending_enqueues=cancel_pending_enqueues)
