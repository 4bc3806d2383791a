"""Sparse reads and updates of variables: ResourceScatterAdd, ResourceScatterSub,
ResourceScatterUpdate and ResourceGather (TensorFlow's names), and DeduplicateSlices.
They touch only the rows `indices` names, in place, so applying a sparse gradient
(``tw.IndexedSlices``) to an embedding and its optimizer slots reads and writes only
those rows.

Repeated indices add up in the scatter-add/sub ops, as they do in the dense gradient;
DeduplicateSlices sums them first where an update rule is not linear (Adagrad,
Momentum). The ops have a resource input (or data-dependent shapes), so the cpu target
runs graphs that use them on the dataflow executor.
"""

from __future__ import annotations

import numpy as np

from ...errors import DTypeError, FailedPreconditionError, InvalidArgumentError, ShapeError
from ...runtime.resources import VariableState
from ..dtypes import NUMERIC_DTYPES, int32, int64
from ..registry import OpDef, def_op, not_differentiable
from ..types import format_shape
from .common import check_dtype, expect_resource, expect_tensor


def _scatter_infer(resource, indices, updates):
    r = expect_resource(resource)
    vt = r.value_type
    if vt is None:
        raise DTypeError("the first operand must be a variable handle")
    i = expect_tensor(indices, "indices")
    u = expect_tensor(updates, "updates")
    check_dtype(i, (int32, int64), "indices")
    if u.dtype is not vt.dtype:
        raise DTypeError(f"variable holds {vt.dtype.ir_name}, updates are {u.dtype.ir_name}")
    if vt.rank < 1:
        raise ShapeError(f"cannot scatter into a scalar variable ({vt})")
    want = tuple(i.shape) + tuple(vt.shape[1:])
    if u.rank != len(want) or any(a is not None and b is not None and a != b
                                  for a, b in zip(u.shape, want)):
        raise ShapeError(f"updates ({u}) must have shape indices.shape + "
                         f"variable.shape[1:] = {format_shape(want)}")
    return []


def _accumulator(dtype: np.dtype) -> np.dtype:
    """Sums of half-precision floats accumulate in float32 (NumPy's add.at does not
    handle bfloat16, and it loses less precision)."""
    d = np.dtype(dtype)
    return np.dtype(np.float32) if d.kind in "fV" and d.itemsize < 4 else d


def _checked_rows(var: VariableState, indices: np.ndarray, what: str) -> np.ndarray:
    """The flattened `indices`, each a row of the (initialized) variable; call under its
    lock."""
    if var.value is None:
        raise FailedPreconditionError(f"attempting to {what} uninitialized variable "
                                      f"'{var.name}'")
    n = var.value.shape[0]
    flat = indices.reshape(-1)
    bad = (flat < 0) | (flat >= n)
    if bad.any():
        k = int(np.argwhere(bad)[0][0])
        raise InvalidArgumentError(f"indices[{k}] = {flat[k]} is not in [0, {n}) (rows of "
                                   f"variable '{var.name}', shape "
                                   f"{format_shape(var.value.shape)})")
    return flat


def _scatter(var: VariableState, indices: np.ndarray, updates: np.ndarray, sign: int) -> None:
    with var.lock:
        flat = _checked_rows(var, indices, "update")
        value = var.value
        if sign == 0:
            # an assignment: where an index repeats, the last update wins
            rows, last_from_end = np.unique(flat[::-1], return_index=True)
            slices = updates.reshape((flat.size,) + value.shape[1:])
            value[rows] = slices[flat.size - 1 - last_from_end]
            return
        rows, where = np.unique(flat, return_inverse=True)
        wide = _accumulator(value.dtype)
        # sum the updates of each row first, then change every touched row once
        delta = np.zeros((rows.size,) + value.shape[1:], dtype=wide)
        np.add.at(delta, where.reshape(-1),
                  updates.reshape((flat.size,) + value.shape[1:]).astype(wide))
        old = value[rows].astype(wide)
        value[rows] = (old + delta if sign > 0 else old - delta).astype(value.dtype)


def _numeric_scatter_infer(resource, indices, updates):
    """`_scatter_infer`, for the ops that add: numeric variables only (TensorFlow's)."""
    out = _scatter_infer(resource, indices, updates)
    dtype = expect_resource(resource).value_type.dtype
    if dtype not in NUMERIC_DTYPES:
        raise DTypeError(f"adds into the variable, which needs a numeric dtype (integer "
                         f"or floating point), got {dtype.ir_name}")
    return out


def _declare(name: str, sign: int, doc: str) -> OpDef:
    op = def_op(name, ["resource", "indices", "updates"], stateful=True, doc=doc)
    op.infer(_scatter_infer if sign == 0 else _numeric_scatter_infer)

    @op.kernel("reference", context=True)
    def _kernel(ctx, var, indices, updates):
        _scatter(var, np.asarray(indices), np.asarray(updates), sign)
        return ()

    return op


ResourceScatterAdd = _declare(
    "ResourceScatterAdd", +1,
    "variable[indices[i...], ...] += updates[i..., ...] in place; repeated indices add up.")
ResourceScatterSub = _declare(
    "ResourceScatterSub", -1,
    "variable[indices[i...], ...] -= updates[i..., ...] in place; repeated indices add up.")
ResourceScatterUpdate = _declare(
    "ResourceScatterUpdate", 0,
    "variable[indices[i...], ...] = updates[i..., ...] in place; where an index repeats, "
    "the last update wins.")


def _combine(var: VariableState, indices: np.ndarray, updates: np.ndarray, how: str) -> None:
    """``variable[indices[i]] = how(variable[indices[i]], updates[i])`` for each i in
    turn (TensorFlow's ScatterMul/Div/Min/Max): repeated indices apply every update."""
    with var.lock:
        flat = _checked_rows(var, indices, "update")
        value = var.value
        slices = updates.reshape((flat.size,) + value.shape[1:])
        if how == "div" and value.dtype.kind in "iu":
            zero = np.flatnonzero((slices == 0).reshape(flat.size, -1).any(axis=1))
            if zero.size:
                raise InvalidArgumentError(f"integer division by zero: updates[{zero[0]}] "
                                           f"has a zero (variable '{var.name}')")
            for k, row in enumerate(flat):  # one update per index, in order
                q = np.abs(value[row]) // np.abs(slices[k])
                # C++ integer division truncates towards zero
                value[row] = np.where((value[row] < 0) != (slices[k] < 0), -q, q)
            return
        wide = _accumulator(value.dtype)
        rows, where = np.unique(flat, return_inverse=True)
        acc = value[rows].astype(wide)
        ufunc = {"mul": np.multiply, "div": np.divide, "min": np.minimum,
                 "max": np.maximum}[how]
        ufunc.at(acc, where.reshape(-1), slices.astype(wide))
        value[rows] = acc.astype(value.dtype)


def _declare_combining(name: str, how: str, doc: str) -> OpDef:
    op = def_op(name, ["resource", "indices", "updates"], stateful=True, doc=doc)
    op.infer(_numeric_scatter_infer)

    @op.kernel("reference", context=True)
    def _kernel(ctx, var, indices, updates):
        _combine(var, np.asarray(indices), np.asarray(updates), how)
        return ()

    return op


ResourceScatterMul = _declare_combining(
    "ResourceScatterMul", "mul",
    "variable[indices[i...], ...] *= updates[i..., ...] in place; repeated indices multiply.")
ResourceScatterDiv = _declare_combining(
    "ResourceScatterDiv", "div",
    "variable[indices[i...], ...] /= updates[i..., ...] in place; repeated indices divide "
    "by each update (integers truncate towards zero; an integer zero divisor is an error).")
ResourceScatterMin = _declare_combining(
    "ResourceScatterMin", "min",
    "variable[indices[i...], ...] = min(variable[...], updates[i..., ...]) in place.")
ResourceScatterMax = _declare_combining(
    "ResourceScatterMax", "max",
    "variable[indices[i...], ...] = max(variable[...], updates[i..., ...]) in place.")


# ----------------------------------------------------------------- ResourceGather

ResourceGather = def_op(
    "ResourceGather", ["resource", "indices"], stateful=True, side_effects=False,
    doc="Rows `indices` of a variable (shape indices.shape + variable.shape[1:]), copied "
        "under the variable's lock without copying the whole variable.")


@ResourceGather.infer
def _resource_gather_infer(resource, indices):
    r = expect_resource(resource)
    vt = r.value_type
    if vt is None:
        raise DTypeError("the first operand must be a variable handle")
    i = expect_tensor(indices, "indices")
    check_dtype(i, (int32, int64), "indices")
    if vt.rank < 1:
        raise ShapeError(f"cannot gather rows of a scalar variable ({vt})")
    return vt.with_shape(tuple(i.shape) + tuple(vt.shape[1:]))


@ResourceGather.kernel("reference", context=True)
def _resource_gather_kernel(ctx, var, indices):
    indices = np.asarray(indices)
    with var.lock:
        flat = _checked_rows(var, indices, "read")
        rows = var.value[flat]
    return rows.reshape(indices.shape + rows.shape[1:])


# -------------------------------------------------------------- DeduplicateSlices

DeduplicateSlices = def_op(
    "DeduplicateSlices", ["values", "indices"],
    doc="The slices of a sparse tensor with repeated indices summed: (summed values, "
        "unique indices), in order of first occurrence (TensorFlow's "
        "_deduplicate_indexed_slices). values has shape [n] + rest, indices [n].")


@DeduplicateSlices.infer
def _dedupe_infer(values, indices):
    v = expect_tensor(values, "values")
    i = expect_tensor(indices, "indices")
    check_dtype(i, (int32, int64), "indices")
    if i.rank != 1 or v.rank < 1 or (None not in (i.shape[0], v.shape[0])
                                     and i.shape[0] != v.shape[0]):
        raise ShapeError(f"indices ({i}) must be a vector with one entry per slice of "
                         f"values ({v})")
    rows = 0 if i.shape[0] == 0 else None
    return [v.with_shape((rows,) + tuple(v.shape[1:])), i.with_shape((rows,))]


@DeduplicateSlices.kernel("reference")
def _dedupe_kernel(values, indices):
    uniq, first, where = np.unique(indices, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")       # first-occurrence order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    wide = _accumulator(values.dtype)
    summed = np.zeros((uniq.size,) + values.shape[1:], dtype=wide)
    np.add.at(summed, rank[where.reshape(-1)], values.astype(wide))
    return summed.astype(values.dtype), np.ascontiguousarray(uniq[order])


not_differentiable("ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterUpdate",
                   "ResourceGather", "DeduplicateSlices")
