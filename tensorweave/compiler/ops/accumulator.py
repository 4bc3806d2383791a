"""Conditional-accumulator ops (TensorFlow's ``Accumulator*`` family): the handle, apply a
gradient at a local step, take the mean of `num_required` gradients (blocking), set the
global step, count. The state lives in the runtime (`runtime.accumulators`)."""

from __future__ import annotations

import numpy as np

from ...errors import DTypeError, InvalidArgumentError
from ...runtime.accumulators import (
    ConditionalAccumulator,
    SparseConditionalAccumulator,
    check_same_accumulator,
)
from ...runtime.queues import Waiter
from ..dtypes import int32, int64
from ..registry import attr, def_op, not_differentiable
from ..types import RESOURCE, TensorType
from .common import expect_resource, expect_tensor

_ACC = {"dtype": attr("dtype"), "shape": attr("shape")}

AccumulatorHandle = def_op(
    "AccumulatorHandle", [], {"shared_name": attr("str"), **_ACC,
                              "reduction_type": attr("str", "MEAN"),
                              "sparse": attr("bool", False)},
    doc="The handle of the accumulator named `shared_name` (created on first use); a "
        "`sparse` one accumulates IndexedSlices.")


@AccumulatorHandle.infer
def _handle_infer(*, shared_name, dtype, shape, reduction_type, sparse):
    if not dtype.is_floating:
        raise DTypeError(f"accumulators hold floating-point gradients, got {dtype.ir_name}")
    return RESOURCE


def accumulator_from_attrs(attrs: dict) -> ConditionalAccumulator:
    """A new runtime accumulator as an `AccumulatorHandle` with these attributes says."""
    cls = SparseConditionalAccumulator if attrs.get("sparse") else ConditionalAccumulator
    return cls(attrs["shared_name"], attrs["dtype"], attrs["shape"], attrs["reduction_type"])


@AccumulatorHandle.kernel("reference", context=True)
def _handle_kernel(ctx, *, shared_name, dtype, shape, reduction_type, sparse):
    attrs = {"shared_name": shared_name, "dtype": dtype, "shape": shape,
             "reduction_type": reduction_type, "sparse": sparse}
    acc = ctx.resources.get_or_create(shared_name, lambda: accumulator_from_attrs(attrs))
    acc = check_same_accumulator(acc, dtype, shape)
    if sparse != isinstance(acc, SparseConditionalAccumulator):
        raise InvalidArgumentError(f"accumulator '{shared_name}' exists as a "
                                   f"{'dense' if sparse else 'sparse'} accumulator")
    return acc


def _step_infer(step) -> None:
    step = expect_tensor(step, "the step")
    if step.rank != 0 or not step.dtype.is_integer:
        raise DTypeError(f"the step must be an integer scalar, got {step}")


AccumulatorApplyGradient = def_op(
    "AccumulatorApplyGradient", ["handle", "local_step", "gradient"], stateful=True,
    doc="Add a gradient computed at `local_step` (dropped if older than the accumulator's "
        "global step).")


@AccumulatorApplyGradient.infer
def _apply_infer(handle, local_step, gradient):
    expect_resource(handle)
    _step_infer(local_step)
    expect_tensor(gradient, "the gradient")
    return []


@AccumulatorApplyGradient.kernel("reference")
def _apply_kernel(acc, local_step, gradient):
    acc.apply_grad(int(local_step), gradient)
    return ()


AccumulatorTakeGradient = def_op(
    "AccumulatorTakeGradient", ["handle", "num_required"], _ACC, stateful=True,
    tags=["blocking"],
    doc="Wait for `num_required` fresh gradients and return their mean; resets the "
        "accumulator and advances its global step.")


@AccumulatorTakeGradient.infer
def _take_infer(handle, num_required, *, dtype, shape):
    expect_resource(handle)
    _step_infer(num_required)
    return TensorType(dtype, shape)


@AccumulatorTakeGradient.kernel("reference", context=True)
def _take_kernel(ctx, acc, num_required, *, dtype, shape):
    return acc.take_grad(int(num_required), Waiter.from_context(ctx))


SparseAccumulatorApplyGradient = def_op(
    "SparseAccumulatorApplyGradient", ["handle", "local_step", "indices", "values"],
    stateful=True,
    doc="Add a sparse gradient (rows `indices` hold `values`) computed at `local_step`.")


@SparseAccumulatorApplyGradient.infer
def _sparse_apply_infer(handle, local_step, indices, values):
    expect_resource(handle)
    _step_infer(local_step)
    i = expect_tensor(indices, "indices")
    if i.rank != 1 or not i.dtype.is_integer:
        raise DTypeError(f"indices must be a vector of integers, got {i}")
    expect_tensor(values, "values")
    return []


@SparseAccumulatorApplyGradient.kernel("reference")
def _sparse_apply_kernel(acc, local_step, indices, values):
    acc.apply_indexed_slices(int(local_step), indices, values)
    return ()


SparseAccumulatorTakeGradient = def_op(
    "SparseAccumulatorTakeGradient", ["handle", "num_required"], _ACC, stateful=True,
    tags=["blocking"],
    doc="Wait for `num_required` fresh sparse gradients; the rows they touched (unique "
        "indices) and their averages.")


@SparseAccumulatorTakeGradient.infer
def _sparse_take_infer(handle, num_required, *, dtype, shape):
    expect_resource(handle)
    _step_infer(num_required)
    return [TensorType(int64, (None,)), TensorType(dtype, (None, *tuple(shape)[1:]))]


@SparseAccumulatorTakeGradient.kernel("reference", context=True)
def _sparse_take_kernel(ctx, acc, num_required, *, dtype, shape):
    return acc.take_indexed_slices(int(num_required), Waiter.from_context(ctx))


AccumulatorSetGlobalStep = def_op(
    "AccumulatorSetGlobalStep", ["handle", "new_global_step"], stateful=True,
    doc="Set the accumulator's global step (gradients from earlier steps become stale).")


@AccumulatorSetGlobalStep.infer
def _set_infer(handle, new_global_step):
    expect_resource(handle)
    _step_infer(new_global_step)
    return []


@AccumulatorSetGlobalStep.kernel("reference")
def _set_kernel(acc, new_global_step):
    acc.set_global_step(int(new_global_step))
    return ()


AccumulatorNumAccumulated = def_op(
    "AccumulatorNumAccumulated", ["handle"], stateful=True, side_effects=False,
    doc="How many gradients the accumulator holds.")


@AccumulatorNumAccumulated.infer
def _num_infer(handle):
    expect_resource(handle)
    return TensorType(int32, ())


@AccumulatorNumAccumulated.kernel("reference")
def _num_kernel(acc):
    return np.int32(acc.num_accumulated())


for _op in ("AccumulatorHandle", "AccumulatorApplyGradient", "AccumulatorTakeGradient",
            "AccumulatorSetGlobalStep", "AccumulatorNumAccumulated",
            "SparseAccumulatorApplyGradient", "SparseAccumulatorTakeGradient"):
    not_differentiable(_op)
