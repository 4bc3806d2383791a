"""Variable ops: a handle to runtime-owned state, reads and in-place updates.

A variable lives in the runtime's `ResourceManager` under its `shared_name`;
``VarHandle`` looks it up, ``ReadVariable`` copies its value out, and the ``Assign*``
ops update it in place. The frontend orders the stateful ops on one resource by
control edges in program order, as TensorFlow 2 does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ..dtypes import bool_
from ..registry import OpDef, attr, def_op
from ..types import ResourceType, TensorType, format_shape
from .common import expect_resource, expect_tensor

VarHandle = def_op("VarHandle", [], {"shared_name": attr("str"), "dtype": attr("dtype"),
                                     "shape": attr("shape")},
                   doc="The handle of the variable named `shared_name`.")


@VarHandle.infer
def _handle_infer(*, shared_name, dtype, shape):
    return ResourceType(TensorType(dtype, shape))


@VarHandle.kernel("reference", context=True)
def _handle_kernel(ctx, *, shared_name, dtype, shape):
    return ctx.resources.variable(shared_name)


ReadVariable = def_op("ReadVariable", ["resource"], stateful=True, side_effects=False,
                      doc="The current value of a variable (a copy).")


@ReadVariable.infer
def _read_infer(r):
    r = expect_resource(r)
    if r.value_type is None:
        raise DTypeError("ReadVariable needs a variable handle, got a non-variable resource")
    return r.value_type


@ReadVariable.kernel("reference", context=True)
def _read_kernel(ctx, var):
    return var.read()


def _update_infer(r, value):
    r = expect_resource(r)
    value = expect_tensor(value, "value")
    vt = r.value_type
    if vt is None:
        raise DTypeError("the first operand must be a variable handle")
    if value.dtype is not vt.dtype:
        raise DTypeError(f"variable holds {vt.dtype.ir_name}, value is {value.dtype.ir_name}")
    if value.rank != vt.rank or any(a is not None and b is not None and a != b
                                    for a, b in zip(vt.shape, value.shape)):
        raise ShapeError(f"variable has shape {vt}, value has shape {value}")
    return []


def _arithmetic_update_infer(r, value):
    out = _update_infer(r, value)
    if expect_tensor(value, "value").dtype is bool_:
        # TensorFlow has no kernel for it either; NumPy would OR (add) or raise (sub), and
        # a native step's byte add made bools of 2, 3, ... that wrap to False at 256
        raise DTypeError("adding to or subtracting from a bool variable is not defined "
                         "(use assign with tw.logical_or / tw.logical_xor)")
    return out


def _declare_update(name: str, doc: str, update: Callable | None) -> OpDef:
    op = def_op(name, ["resource", "value"], stateful=True, doc=doc)
    op.infer(_update_infer if update is None else _arithmetic_update_infer)

    @op.kernel("reference", context=True)
    def _kernel(ctx, var, value):
        if update is None:
            var.assign(value)
        else:
            value = np.asarray(value)
            old = var.value
            # TensorFlow's "shapes must be equal": NumPy would broadcast a value of shape
            # [1] into every element (a shape left unknown when tracing is checked here)
            if old is not None and value.shape != old.shape:
                raise InvalidArgumentError(
                    f"variable '{var.name}' has shape {format_shape(old.shape)}, got a "
                    f"value of shape {format_shape(value.shape)} (shapes must be equal)")
            var.update(update, value)
        return ()

    return op


AssignVariable = _declare_update("AssignVariable", "Store `value` into the variable.", None)
AssignAddVariable = _declare_update("AssignAddVariable", "Add `value` to the variable.",
                                    lambda old, new: old + new)
AssignSubVariable = _declare_update("AssignSubVariable", "Subtract `value` from the variable.",
                                    lambda old, new: old - new)


VarIsInitialized = def_op("VarIsInitialized", ["resource"], stateful=True, side_effects=False,
                          doc="Whether the variable has been assigned a value (an i1 "
                              "scalar): how a worker waits for the chief to initialize.")


@VarIsInitialized.infer
def _is_initialized_infer(r):
    r = expect_resource(r)
    if r.value_type is None:
        raise DTypeError("VarIsInitialized needs a variable handle, got a non-variable resource")
    return TensorType(bool_, ())


@VarIsInitialized.kernel("reference", context=True)
def _is_initialized_kernel(ctx, var):
    return np.array(var.initialized)
