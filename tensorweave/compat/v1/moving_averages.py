"""``tf.train.ExponentialMovingAverage`` of TensorFlow 1: shadow variables that track
exponential moving averages of variables (or tensors), updated by the op `apply`
returns, and restored in place of the model's variables through
`variables_to_restore`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ...compiler import ir
from ...compiler.dtypes import float32
from ...frontend.building import apply_op1, convert_to_tensor
from ...frontend.context import colocate_with, control_dependencies, current_builder, name_scope
from ...frontend.control_flow import cond
from ...frontend.grouping import group
from ...frontend.ops import math as _math
from ...frontend.tensor import Tensor
from .graph import (
    GraphKeys,
    Variable,
    get_collection,
    get_default_graph,
    global_variables,
    in_default_graph,
    is_variable_initialized,
    trainable_variables,
)

_AVERAGED_DTYPES = ("bf16", "f16", "f32", "f64")


@contextlib.contextmanager
def _outside_control_dependencies() -> Iterator[None]:
    """Build the block with no control dependencies (TensorFlow's ``init_scope`` for
    variables): a shadow variable's initializer must not wait for, say, the training
    step whose ``control_dependencies`` block `apply` is called in."""
    b = current_builder()
    saved, b.control_stack = b.control_stack, []
    try:
        yield
    finally:
        b.control_stack = saved


def _op_name(x: Any) -> str:
    """A variable's or tensor's name without the ``:0``."""
    return x.shared_name if isinstance(x, Variable) else x.name.rsplit(":", 1)[0]


@in_default_graph
def assign_moving_average(variable: Variable, value: Any, decay: Any,
                          zero_debias: bool = True, name: str | None = None) -> Any:
    """``variable -= (variable - value) * (1 - decay)``; returns the assignment op.
    With `zero_debias`, the average is kept unbiased by the zero start of a tensor's
    average (Adam's bias correction): a biased average and a step count live beside
    `variable` as ``variable/biased`` and ``variable/local_step``."""
    with name_scope(name or "AssignMovingAvg"):
        one_minus = _math.subtract(1.0, convert_to_tensor(decay))
        if one_minus.dtype is not variable.dtype:
            one_minus = _math.cast(one_minus, variable.dtype)
        value = convert_to_tensor(value)
        if not zero_debias:
            return variable.assign_sub((variable.read_value() - value) * one_minus,
                                       read_value=False)
        with _outside_control_dependencies():
            biased = variable._create_slot("biased", _zeros_like_var(variable))
            step = variable._create_slot("local_step", _math.cast(0.0, variable.dtype))
        new_biased = biased.assign_sub((biased.read_value() - value) * one_minus)
        new_step = step.assign_add(_math.cast(1.0, variable.dtype))
        bias_factor = 1 - _math.pow(1 - one_minus, new_step)
        return variable.assign(new_biased / bias_factor, read_value=False)


def _read_in_branch(v: Variable) -> Tensor:
    """`v`'s value, read inside the cond branch being built. A branch that only reads a
    variable gets the read hoisted before the cond (frontend/control_flow), where it
    would run, and fail for an uninitialized `v`, whichever branch is taken; a second
    use of the variable's handle in the branch keeps the read there."""
    initialized = apply_op1("VarIsInitialized", [v.handle()])
    with control_dependencies([initialized]):
        return v.read_value()


def _zeros_like_var(v: Variable) -> Any:
    from ...frontend.ops.array import zeros
    return zeros(v.shape, v.dtype)


class ExponentialMovingAverage:
    """Moving averages ``shadow = decay * shadow + (1 - decay) * value`` of variables
    or tensors (TensorFlow 1's ``tf.train.ExponentialMovingAverage``).

    ``apply(var_list)`` creates a shadow variable per entry (``var/ExponentialMovingAverage``,
    not trainable, a global variable beside it; a variable's starts at its value, a
    tensor's at zeros) and returns the op that updates them all. With `num_updates`
    (usually the global step) the decay is ``min(decay, (1 + n) / (10 + n))``. With
    `zero_debias`, tensors' averages are debiased from their zero start."""

    def __init__(self, decay: Any, num_updates: Any = None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage") -> None:
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict[int, tuple[Any, Variable]] = {}  # id(var) -> (var, shadow)

    @property
    def name(self) -> str:
        """The suffix of the shadow variables' names."""
        return self._name

    @in_default_graph
    def apply(self, var_list: Any = None) -> ir.Node:
        """Create shadows for `var_list` (default: the trainable variables) that have
        none yet, and return an op updating every shadow of `var_list`. The values are
        read when the op runs: build it under ``control_dependencies([train_op])`` to
        average the values after the step."""
        if var_list is None:
            var_list = trainable_variables()
        var_list = list(var_list)
        for v in var_list:
            if not isinstance(v, (Variable, Tensor)):
                raise TypeError(f"ExponentialMovingAverage.apply: {v!r} is neither a "
                                f"variable nor a tensor")
            if v.dtype.ir_name not in _AVERAGED_DTYPES:
                raise TypeError(f"ExponentialMovingAverage.apply: the variables must be "
                                f"half, float, or double: '{_op_name(v)}' is "
                                f"{v.dtype.ir_name}")
        debiased = set()
        with _outside_control_dependencies():
            for v in var_list:
                if id(v) in self._averages:
                    continue
                self._averages[id(v)] = (v, self._make_shadow(v))
                if isinstance(v, Variable):
                    get_default_graph().add_to_collection(
                        GraphKeys.MOVING_AVERAGE_VARIABLES, v)
                elif self._zero_debias:
                    debiased.add(id(v))
        with name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, dtype=float32)
            if decay.dtype is not float32:
                decay = _math.cast(decay, float32)
            if self._num_updates is not None:
                n = _math.cast(convert_to_tensor(self._num_updates), float32)
                decay = _math.minimum(decay, (1.0 + n) / (10.0 + n))
            updates = []
            for v in var_list:
                shadow = self._averages[id(v)][1]
                value = v.read_value() if isinstance(v, Variable) else v
                with colocate_with(shadow):
                    updates.append(assign_moving_average(shadow, value, decay,
                                                         zero_debias=id(v) in debiased))
        # named as the scope (made unique: ``ExponentialMovingAverage_1`` the second
        # time), as TensorFlow's group(..., name=scope)
        return group(*updates, name=scope)

    def _make_shadow(self, v: Any) -> Variable:
        if isinstance(v, Variable):
            # the variable's value if it has one, else its initial value (TensorFlow's
            # `initialized_value`): one global initializer run gives both the same value
            def initial() -> Any:
                return cond(is_variable_initialized(v), lambda: _read_in_branch(v),
                            lambda: v.initial_value)
            return v._create_slot(self._name, initial())
        if any(d is None for d in v.shape):
            raise ValueError(f"ExponentialMovingAverage.apply: tensor '{v.name}' has shape "
                             f"{list(v.shape)}; averaging it needs every dim known")
        with colocate_with(v):
            return Variable(_zeros_like_var(v), trainable=False,
                            name=f"{_op_name(v)}/{self._name}", _absolute_name=True)

    def average(self, var: Any) -> Variable | None:
        """The shadow variable of `var` (None if `apply` was not given it)."""
        entry = self._averages.get(id(var))
        return entry[1] if entry is not None else None

    def average_name(self, var: Any) -> str:
        """The checkpoint name of `var`'s shadow: ``var_name/ExponentialMovingAverage``."""
        shadow = self.average(var)
        if shadow is not None:
            return shadow.shared_name
        return f"{_op_name(var)}/{self._name}"

    def variables_to_restore(self, moving_avg_variables: Any = None) -> dict[str, Any]:
        """A Saver's `var_list` that loads each averaged variable from its shadow's
        checkpoint entry (and every other global variable from its own): restoring the
        averages into the model, for evaluation. Default: the trainable and
        ``MOVING_AVERAGE_VARIABLES`` variables are the averaged ones."""
        if moving_avg_variables is None:
            moving_avg_variables = (trainable_variables()
                                    + get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES))
        averaged = list({id(v): v for v in moving_avg_variables}.values())
        name_map = {self.average_name(v): v for v in averaged}
        averaged_names = {v.shared_name for v in averaged}
        for v in global_variables():
            if v.shared_name not in averaged_names and v.shared_name not in name_map:
                name_map[v.shared_name] = v
        return name_map


def moving_average_variables(scope: str | None = None) -> list[Any]:
    """The variables that an `ExponentialMovingAverage` averages (the graph's
    ``MOVING_AVERAGE_VARIABLES``: the model's variables, not their shadows)."""
    return get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


__all__ = ["ExponentialMovingAverage", "assign_moving_average", "moving_average_variables"]
