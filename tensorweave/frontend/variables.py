"""`tw.Variable`: mutable state owned by the runtime, captured by traced functions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import DType, as_dtype
from ..compiler.ir import Value
from ..compiler.types import format_shape
from ..errors import DTypeError, TracingError
from ..runtime.resources import ResourceManager, VariableState, default_resource_manager
from . import building
from .building import apply_op, apply_op1, convert_to_tensor
from .context import current_builder
from .tensor import EagerTensor, TensorOps
from .tensor_shape import TensorShape, from_static


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
        var_shape = tuple(array.shape) if shape is None else tuple(
            None if d in (None, -1) else d for d in shape)
        self._resources = resources or default_resource_manager()
        self._shared_name = self._resources.unique_variable_name(name)
        self._state: VariableState = self._resources.create_variable(
            self._shared_name, as_dtype(array.dtype), var_shape)
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

    def _update(self, op: str, value: Any, read_value: bool) -> Any:
        value = self._converted(value)
        apply_op(op, [self._resource_arg(), value])
        return self.read_value() if read_value else None

    def assign(self, value: Any, read_value: bool = True) -> Any:
        """Store `value`; returns the new value (unless ``read_value=False``)."""
        return self._update("AssignVariable", value, read_value)

    def assign_add(self, delta: Any, read_value: bool = True) -> Any:
        """Add `delta` in place; returns the new value."""
        return self._update("AssignAddVariable", delta, read_value)

    def assign_sub(self, delta: Any, read_value: bool = True) -> Any:
        """Subtract `delta` in place; returns the new value."""
        return self._update("AssignSubVariable", delta, read_value)

    def __repr__(self) -> str:
        shape = format_shape(self.shape)
        if self._state.initialized and current_builder() is None:
            val = np.array2string(self._state.read(), threshold=20)
            return f"<tw.Variable '{self.name}' shape={shape} dtype={self.dtype.tf_name}, numpy={val}>"
        return f"<tw.Variable '{self.name}' shape={shape} dtype={self.dtype.tf_name}>"
