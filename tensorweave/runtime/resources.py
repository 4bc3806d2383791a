"""Runtime-owned state: variables and other resources (queues), looked up by name.

A `VariableState` owns one buffer. Updates happen in place under a lock so a reader never
sees a torn buffer; `read` returns a copy so a value handed to a user or a kernel never
changes behind its back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
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

    def unique_variable_name(self, base: str) -> str:
        """Reserve a variable name not used yet (``w``, ``w_1``, ...)."""
        with self._lock:
            if base not in self._variables:
                name = base
            else:
                i = self._counters.get(base, 0)
                while True:
                    i += 1
                    name = f"{base}_{i}"
                    if name not in self._variables:
                        break
                self._counters[base] = i
            return name

    def create_variable(self, name: str, dtype: DType, shape: tuple,
                        exist_ok: bool = False) -> VariableState:
        """Create the state of a variable (uninitialized until assigned)."""
        with self._lock:
            if name in self._variables:
                if exist_ok:
                    return self._variables[name]
                raise InvalidArgumentError(f"a variable named '{name}' already exists")
            state = VariableState(name, dtype, tuple(shape))
            self._variables[name] = state
            return state

    def variable(self, name: str) -> VariableState:
        try:
            return self._variables[name]
        except KeyError:
            raise NotFoundError(f"no variable named '{name}' exists in this runtime") from None

    def variables(self) -> dict[str, VariableState]:
        return dict(self._variables)

    def delete_variable(self, name: str) -> None:
        with self._lock:
            self._variables.pop(name, None)

    # -- other resources (queues, ...) ---------------------------------------------------
    def unique_resource_name(self, base: str) -> str:
        """Reserve a name for a non-variable resource (``q``, ``q_1``, ...)."""
        with self._lock:
            name, i = base, 0
            while name in self._resources or name in self._variables:
                i += 1
                name = f"{base}_{i}"
            self._resources[name] = None  # reserved until created
            return name

    def get_or_create(self, name: str, factory: Callable[[], Any]) -> Any:
        """The resource named `name`, made by ``factory()`` if it does not exist yet (the
        factory runs under the manager's lock, so concurrent steps create it once)."""
        with self._lock:
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
        with self._lock:
            self._resources.pop(name, None)

    def reset(self) -> int:
        """Drop every value held here (TensorFlow's ``Session.reset`` of a container): the
        variables become uninitialized, keeping their states (compiled steps hold those:
        they read the reset too), and the other resources are dropped, so their handle
        ops make them anew, empty. Close queues first to wake their waiters
        (`queues.close_all_queues`). Returns how many were reset."""
        with self._lock:
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
