"""`tw.Variable`: mutable state owned by the runtime, captured by traced functions."""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

import numpy as np

from ..compiler.dtypes import DType, as_dtype
from ..compiler.ir import Value
from ..compiler.types import format_shape
from ..errors import DTypeError, ShapeError, TracingError
from ..runtime.resources import ResourceManager, VariableState, default_resource_manager
from . import building
from .building import apply_op, apply_op1, convert_to_tensor
from .call_site import user_location
from .context import current_builder, name_scope
from .tensor import EagerTensor, TensorOps
from .tensor_shape import TensorShape, dimension_value, from_static


def declared_variable_shape(value_shape: tuple, shape: Any, variable: str
                            ) -> tuple[tuple, bool]:
    """The static shape of variable `variable` made from a value of `value_shape` with
    the ``shape`` argument `shape` (None: the value's; dims None or -1 are unknown, and
    the variable takes values of any size there), and whether `shape` was of unknown rank
    (``TensorShape(None)``). tensorweave's graphs need every rank, so a variable of
    unknown rank keeps its initial value's rank with every dim unknown (assigning another
    rank is refused, naming it). A `shape` the initial value does not fit is an error,
    as TensorFlow's. An initial value of unknown rank (a v1 placeholder made without a
    shape) needs a `shape` of known rank."""
    if getattr(value_shape, "rank", 0) is None:
        if shape is None or getattr(shape, "rank", 0) is None:
            loc = user_location()
            raise ShapeError(f"variable '{variable}': the initial value has an unknown rank "
                             f"(a tf.placeholder made without a shape, or computed from "
                             f"one), and tensorweave's variables need a rank: give the "
                             f"variable a shape (shape=[None, 3]: a None dim takes any "
                             f"size), or the placeholder one", op="Variable",
                             location=str(loc) if loc else None)
        return tuple(None if d in (None, -1) else d for d in (
            dimension_value(x) for x in ((shape,) if isinstance(shape, int) else shape))), False
    value_shape = tuple(value_shape)
    if shape is None:
        return value_shape, False
    if isinstance(shape, TensorShape) and shape.rank is None:
        return (None,) * len(value_shape), True
    if isinstance(shape, int):
        shape = (shape,)
    dims = tuple(None if d in (None, -1) else d
                 for d in (dimension_value(x) for x in shape))
    if len(dims) != len(value_shape) or any(
            d is not None and s is not None and d != s for d, s in zip(dims, value_shape)):
        loc = user_location()
        raise ShapeError(f"variable '{variable}': the initial value's shape "
                         f"{format_shape(value_shape)} is not compatible with the shape "
                         f"given, {format_shape(dims)}", op="Variable",
                         location=str(loc) if loc else None)
    return dims, False


class Variable(TensorOps):
    """A tensor whose value persists across calls and can be updated in place.

    The value lives in the runtime (one buffer per variable); compiled functions that read
    or assign it refer to it by name and update it in place. Use it like a tensor in
    expressions; ``assign``, ``assign_add`` and ``assign_sub`` change it.
    """

    def __init__(self, initial_value: Any = None, trainable: bool = True, name: str | None = None,
                 dtype: DType | str | None = None, shape: Any = None,
                 resources: ResourceManager | None = None) -> None:
        if current_builder() is not None and current_builder().kind == "function":
            raise TracingError("tw.Variable must be created outside @tw.compile functions "
                               "(create it once, then use it inside)")
        if initial_value is None:
            raise ValueError("tw.Variable needs an initial_value")
        if callable(initial_value):
            initial_value = initial_value()
        dtype = as_dtype(dtype) if dtype is not None else None
        value = convert_to_tensor(initial_value, dtype_hint=dtype)
        if dtype is not None and value.dtype is not dtype:
            raise TypeError(f"initial value has dtype {value.dtype.ir_name}, variable wants "
                            f"{dtype.ir_name}")
        self._init_state(np.asarray(value), shape, name or "Variable", trainable, resources)

    def _init_state(self, array: np.ndarray, shape: Any, name: str, trainable: bool,
                    resources: ResourceManager | None) -> None:
        self._resources = resources or default_resource_manager()
        self._shared_name = self._resources.unique_variable_name(name)
        var_shape, self._unknown_rank = declared_variable_shape(array.shape, shape,
                                                                self._shared_name)
        self._state: VariableState = self._resources.create_variable(
            self._shared_name, as_dtype(array.dtype), var_shape)
        # the state (and its value) goes when this object does: graphs that use the
        # variable hold this object (a trace's `variables`, an optimizer's slots). The
        # finalizer may run inside any garbage collection, even one under the manager's
        # lock: schedule_release only queues (never takes the lock)
        release = weakref.finalize(self, self._resources.schedule_release,
                                   self._shared_name, self._state)
        release.atexit = False  # (nothing to free at exit)
        self._type = self._state.type
        self._state.assign(array)
        self.trainable = trainable

    def _create_slot(self, slot_name: str, initial: np.ndarray) -> Variable:
        """A non-trainable variable beside this one (optimizer state such as Adam's
        moments); allowed while tracing because its initial value is concrete."""
        from .checkpoint import pending_slot_value
        slot = Variable.__new__(Variable)
        slot._init_state(np.asarray(initial, dtype=self.dtype.np), None,
                         f"{self._shared_name}/{slot_name}", False, self._resources)
        restored = pending_slot_value(slot.shared_name)
        if restored is not None:
            slot._state.assign(restored)
        return slot

    # -- identity and type ---------------------------------------------------------
    @property
    def name(self) -> str:
        return f"{self._shared_name}:0"

    @property
    def shared_name(self) -> str:
        """The name of the variable's state in the runtime."""
        return self._shared_name

    @property
    def dtype(self) -> DType:
        return self._type.dtype

    @property
    def shape(self) -> TensorShape:
        """The variable's static shape, a `TensorShape` (a tuple of ints and None)."""
        return from_static(self._type.shape)

    def get_shape(self) -> TensorShape:
        """The static shape (TensorFlow 1's spelling of `shape`)."""
        return self.shape

    @property
    def state(self) -> VariableState:
        return self._state

    # -- conversion -------------------------------------------------------------------
    def handle(self) -> Value:
        """The resource handle of this variable in the graph being built (made once)."""
        builder = current_builder()
        if builder is None:
            raise TracingError("Variable.handle() needs a graph being built")
        h = builder.var_handles.get(self._shared_name)
        if h is None:
            t = self._type
            node = builder.graph.add_node(
                "VarHandle", [], {"shared_name": self._shared_name, "dtype": t.dtype,
                                  "shape": t.shape},
                name=self._shared_name, device=builder.device)
            if builder.has_device_functions:
                node.device = builder.device_for(node)
            h = builder.var_handles[self._shared_name] = node.outputs[0]
            builder.variables[self._shared_name] = self
        return h

    def _resource_arg(self) -> Any:
        return self if current_builder() is None else self.handle()

    def _eager_resource(self) -> VariableState:
        return self._state

    def _as_tensor(self) -> Any:
        # (convert_to_tensor tells the eager tapes about this read itself)
        if current_builder() is None:
            return EagerTensor(self._state.read())
        return self.read_value()

    def read_value(self) -> Any:
        """The current value (a tensor in a graph, an eager tensor outside)."""
        if current_builder() is None:
            value = EagerTensor(self._state.read())
            for observer in list(building.eager_observers):  # differentiable, as traced
                observer.record_read(self, value)
            return value
        return apply_op1("ReadVariable", [self.handle()], name="read_" + self._shared_name)

    value = read_value

    def numpy(self) -> np.ndarray:
        """The current value as a NumPy array (outside graphs)."""
        return self._state.read()

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr.astype(dtype) if dtype is not None else arr

    # -- updates ------------------------------------------------------------------------
    def _converted(self, value: Any) -> Any:
        """`value` as a tensor of this variable's dtype; an error that names the variable
        and both dtypes if it is not one (no silent cast)."""
        try:
            return convert_to_tensor(value, dtype=self.dtype)
        except DTypeError as e:
            raise DTypeError(f"variable '{self.name}' is {self.dtype.ir_name}"
                             f"{format_shape(self.shape)}: {e.message}", op=e.op,
                             location=e.location) from None

    def _check_shape(self, value: Any) -> None:
        """Refuse a value whose static shape the variable's cannot take, naming the
        variable (TensorFlow's "Cannot assign value to variable: Shape mismatch"); dims
        unknown on either side (a v1 value's rank too) are checked when the step runs."""
        if value.shape.rank is None or self.shape.rank is None:
            return
        shape, got = tuple(self.shape), tuple(value.shape)
        if len(shape) == len(got) and all(
                d is None or g is None or d == g for d, g in zip(shape, got)):
            return
        why = ""
        if getattr(self, "_unknown_rank", False) and len(shape) != len(got):
            why = (f" (it was made with shape=TensorShape(None), an unknown rank, which "
                   f"tensorweave's graphs cannot hold: it keeps its initial value's rank "
                   f"{len(shape)} with every dim unknown, and cannot take a value of rank "
                   f"{len(got)})")
        loc = user_location()
        raise ShapeError(f"cannot assign a value of shape {format_shape(got)} to variable "
                         f"'{self.name}' of shape {format_shape(shape)}{why}",
                         op="AssignVariable", location=str(loc) if loc else None)

    def _update(self, op: str, value: Any, read_value: bool) -> Any:
        value = self._converted(value)
        self._check_shape(value)
        apply_op(op, [self._resource_arg(), value])
        return self.read_value() if read_value else None

    def _named_update(self, op: str, value: Any, read_value: bool, name: str | None) -> Any:
        # `name` opens a name scope for the update's ops, as ``tf.assign(..., name=)``
        if name is None:
            return self._update(op, value, read_value)
        with self._graph_context(), name_scope(name):
            return self._update(op, value, read_value)

    def _graph_context(self) -> Any:
        """Where the variable's update ops go when no graph is being built: nowhere for a
        `tw.Variable` (they run eagerly); a TensorFlow 1 variable's graph."""
        return contextlib.nullcontext()

    def assign(self, value: Any, use_locking: Any = None, name: str | None = None,
               read_value: bool = True) -> Any:
        """Store `value`; returns the new value (unless ``read_value=False``). The value
        must have the variable's shape, or fit its unknown dims. `use_locking` is
        accepted for TensorFlow's signature and ignored; `name` names the update's
        scope."""
        return self._named_update("AssignVariable", value, read_value, name)

    def assign_add(self, delta: Any, use_locking: Any = None, name: str | None = None,
                   read_value: bool = True) -> Any:
        """Add `delta` in place; returns the new value."""
        return self._named_update("AssignAddVariable", delta, read_value, name)

    def assign_sub(self, delta: Any, use_locking: Any = None, name: str | None = None,
                   read_value: bool = True) -> Any:
        """Subtract `delta` in place; returns the new value."""
        return self._named_update("AssignSubVariable", delta, read_value, name)

    def __repr__(self) -> str:
        shape = format_shape(self.shape)
        if self._state.initialized and current_builder() is None:
            val = np.array2string(self._state.read(), threshold=20)
            return f"<tw.Variable '{self.name}' shape={shape} dtype={self.dtype.tf_name}, numpy={val}>"
        return f"<tw.Variable '{self.name}' shape={shape} dtype={self.dtype.tf_name}>"
