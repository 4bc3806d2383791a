"""Runtime-owned state: variables and other resources (queues), looked up by name.

A `VariableState` owns one buffer. Updates happen in place under a lock so a reader never
sees a torn buffer; `read` returns a copy so a value handed to a user or a kernel never
changes behind its back.

An eager `tw.Variable`'s state is released when the variable is garbage-collected (see
`ResourceManager.schedule_release`): its finalizer only queues the release, and the
manager drains the queue the next time it takes its lock, because a finalizer can run
inside a collection anywhere, even inside `create_variable` on a thread holding the lock.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..compiler.dtypes import DType, native_byte_order
from ..compiler.types import TensorType, format_shape
from ..errors import FailedPreconditionError, InvalidArgumentError, NotFoundError


class VariableState:
    """The buffer behind one variable."""

    def __init__(self, name: str, dtype: DType, shape: tuple) -> None:
        self.name = name
        self.type = TensorType(dtype, shape)
        self.value: np.ndarray | None = None
        self.lock = threading.Lock()

    @property
    def initialized(self) -> bool:
        return self.value is not None

    def _check(self, value: np.ndarray) -> np.ndarray:
        if value.dtype != self.type.dtype.np:
            raise InvalidArgumentError(
                f"variable '{self.name}' holds {self.type.dtype.ir_name}, got a value of dtype "
                f"{value.dtype}")
        if not self.type.accepts(self.type.dtype, value.shape):
            raise InvalidArgumentError(
                f"variable '{self.name}' has shape {format_shape(self.type.shape)}, got a value "
                f"of shape {format_shape(value.shape)}")
        return value

    def read(self) -> np.ndarray:
        """A copy of the current value; raises if the variable was never initialized."""
        with self.lock:
            if self.value is None:
                raise FailedPreconditionError(
                    f"attempting to use uninitialized variable '{self.name}'")
            return self.value.copy()

    def assign(self, value: np.ndarray) -> None:
        """Store a copy of `value` (dtype and shape must match; a big-endian array is
        converted by value)."""
        value = self._check(native_byte_order(np.asarray(value)))
        with self.lock:
            if self.value is not None and self.value.shape == value.shape:
                np.copyto(self.value, value)
            else:
                # C order: native steps take C-contiguous buffers only, and in-place
                # updates keep the layout (a Fortran copy sent every step of the
                # variable's life to the dataflow executor)
                self.value = np.array(value, copy=True, order="C")

    def update(self, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], arg: np.ndarray) -> None:
        """Replace the value by ``fn(old, arg)``, in place and atomically."""
        with self.lock:
            if self.value is None:
                raise FailedPreconditionError(
                    f"attempting to update uninitialized variable '{self.name}'")
            new = self._check(np.asarray(fn(self.value, arg), dtype=self.value.dtype))
            np.copyto(self.value, new)


class ResourceManager:
    """All named state of one process (or of one task, in a cluster)."""

    def __init__(self) -> None:
        self._variables: dict[str, VariableState] = {}
        self._resources: dict[str, Any] = {}  # other named state: queues, ...
        self._lock = threading.Lock()
        self._counters: dict[str, int] = {}
        # names of released variables: never given out again, so a graph that still
        # names one finds no variable (an error), never a newer variable of that name
        self._retired: set[str] = set()
        # (name, state) of variables whose tw.Variable was collected, waiting to be
        # dropped. Filled by finalizers, which may run in a collection on a thread that
        # holds `_lock` (inside create_variable): they only append (atomic, never waits);
        # whoever takes `_lock` next drains it (`_drain_released`)
        self._released: deque[tuple[str, VariableState]] = deque()

    # -- releasing collected variables --------------------------------------------------
    def schedule_release(self, name: str, state: VariableState) -> None:
        """Drop `state` (registered as `name`): its eager `tw.Variable` was collected, so
        nothing uses it (compiled functions hold the variables they trace). Safe from a
        finalizer on any thread, even one inside this manager's lock: it never takes the
        lock, it queues the release for the next call that does."""
        self._released.append((name, state))

    def _drain_released(self) -> list[VariableState]:
        """Drop the states queued by `schedule_release` and retire their names (call
        under `_lock`). Returns the dropped states: the caller lets them go after
        releasing the lock, so whatever their collection runs (a device mirror's
        finalizer) runs outside it."""
        dropped = []
        while True:
            try:  # (a finalizer may append meanwhile: popleft is atomic)
                name, state = self._released.popleft()
            except IndexError:
                return dropped
            if self._variables.get(name) is state:  # (not a newer state of that name)
                del self._variables[name]
                self._retired.add(name)
            dropped.append(state)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold `_lock`, the released variables drained first (every locked method takes
        the lock this way, so a queued release waits at most for the next one)."""
        with self._lock:
            dropped = self._drain_released()
            yield
        del dropped  # (after the lock is released)

    def _drain_released_if_free(self) -> None:
        """`_drain_released` for the lock-free lookups: only if the lock is free now
        (a lookup never waits for it; a busy lock's holder drains instead)."""
        if not self._released or not self._lock.acquire(blocking=False):
            return
        try:
            dropped = self._drain_released()
        finally:
            self._lock.release()
        del dropped  # (after the lock is released)

    def _taken(self, name: str) -> bool:
        return name in self._variables or name in self._retired

    # -- variables ------------------------------------------------------------------------
    def unique_variable_name(self, base: str) -> str:
        """Reserve a variable name not used yet, nor by a released variable (``w``,
        ``w_1``, ...)."""
        with self._locked():
            if not self._taken(base):
                name = base
            else:
                i = self._counters.get(base, 0)
                while True:
                    i += 1
                    name = f"{base}_{i}"
                    if not self._taken(name):
                        break
                self._counters[base] = i
            return name

    def create_variable(self, name: str, dtype: DType, shape: tuple,
                        exist_ok: bool = False) -> VariableState:
        """Create the state of a variable (uninitialized until assigned)."""
        with self._locked():
            if name in self._variables:
                if exist_ok:
                    return self._variables[name]
                raise InvalidArgumentError(f"a variable named '{name}' already exists")
            state = VariableState(name, dtype, tuple(shape))
            self._variables[name] = state
            return state

    def variable(self, name: str) -> VariableState:
        """The state of the variable named `name` (NotFoundError if there is none)."""
        self._drain_released_if_free()
        try:
            return self._variables[name]
        except KeyError:
            raise NotFoundError(f"no variable named '{name}' exists in this runtime") from None

    def variables(self) -> dict[str, VariableState]:
        """Every variable's state, by name (released ones dropped first when the lock is
        free)."""
        self._drain_released_if_free()
        return dict(self._variables)

    def delete_variable(self, name: str) -> None:
        """Forget the variable named `name` (its name may be used again)."""
        with self._locked():
            self._variables.pop(name, None)

    # -- other resources (queues, ...) ---------------------------------------------------
    def unique_resource_name(self, base: str) -> str:
        """Reserve a name for a non-variable resource (``q``, ``q_1``, ...)."""
        with self._locked():
            name, i = base, 0
            while name in self._resources or name in self._variables:
                i += 1
                name = f"{base}_{i}"
            self._resources[name] = None  # reserved until created
            return name

    def get_or_create(self, name: str, factory: Callable[[], Any]) -> Any:
        """The resource named `name`, made by ``factory()`` if it does not exist yet (the
        factory runs under the manager's lock, so concurrent steps create it once)."""
        with self._locked():
            res = self._resources.get(name)
            if res is None:
                res = self._resources[name] = factory()
            return res

    def lookup(self, name: str) -> Any:
        """The non-variable resource named `name`."""
        res = self._resources.get(name)
        if res is None:
            raise NotFoundError(f"no resource named '{name}' exists in this runtime")
        return res

    def resources(self) -> dict[str, Any]:
        """Every non-variable resource, by name."""
        return {k: v for k, v in self._resources.items() if v is not None}

    def delete_resource(self, name: str) -> None:
        with self._locked():
            self._resources.pop(name, None)

    def reset(self) -> int:
        """Drop every value held here (TensorFlow's ``Session.reset`` of a container): the
        variables become uninitialized, keeping their states (compiled steps hold those:
        they read the reset too), and the other resources are dropped, so their handle
        ops make them anew, empty. Close queues first to wake their waiters
        (`queues.close_all_queues`). Returns how many were reset."""
        with self._locked():
            states = list(self._variables.values())
            dropped = [k for k, v in self._resources.items() if v is not None]
            for k in dropped:
                del self._resources[k]
        for st in states:
            with st.lock:
                st.value = None
        return len(states) + len(dropped)


def create_graph_resources(graph: Any, resources: ResourceManager) -> None:
    """Create, in `resources`, the variables, queues and accumulators that `graph`'s handle
    ops name
    (existing ones of the same name are shared, not replaced): what a v1 `Session` or a
    task of a cluster does before running a graph."""
    from ..compiler.ops.accumulator import accumulator_from_attrs
    from ..compiler.ops.queue import queue_from_attrs
    for n in graph.walk():
        if n.op == "VarHandle":
            resources.create_variable(n.attrs["shared_name"], n.attrs["dtype"],
                                      n.attrs["shape"], exist_ok=True)
        elif n.op == "QueueHandle":
            resources.get_or_create(n.attrs["shared_name"],
                                    lambda a=n.attrs: queue_from_attrs(a))
        elif n.op == "AccumulatorHandle":
            resources.get_or_create(n.attrs["shared_name"],
                                    lambda a=n.attrs: accumulator_from_attrs(a))


_default = ResourceManager()


def default_resource_manager() -> ResourceManager:
    """The process-wide resource manager that `tw.Variable`s live in."""
    return _default
