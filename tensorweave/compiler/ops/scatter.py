"""Sparse updates of variables: ResourceScatterAdd and ResourceScatterSub (TensorFlow's
names). They change only the rows `indices` names, in place, so applying a sparse
gradient (``tw.IndexedSlices``) to an embedding touches and moves only those rows.

Repeated indices add up, as they do in the dense gradient. The ops have a resource input,
so the cpu target runs graphs that use them on the dataflow executor.
"""

from __future__ import annotations

import numpy as np

from ...errors import DTypeError, FailedPreconditionError, InvalidArgumentError, ShapeError
from ...runtime.resources import VariableState
from ..dtypes import int32, int64
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
        raise DTypeError(f"variable holds {vt.dtype.name}, updates are {u.dtype.name}")
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


def _scatter(var: VariableState, indices: np.ndarray, updates: np.ndarray, sign: int) -> None:
    with var.lock:
        if var.value is None:
            raise FailedPreconditionError(f"attempting to update uninitialized variable "
                                          f"'{var.name}'")
        value = var.value
        n = value.shape[0]
        flat = indices.reshape(-1)
        bad = (flat < 0) | (flat >= n)
        if bad.any():
            k = int(np.argwhere(bad)[0][0])
            raise InvalidArgumentError(f"indices[{k}] = {flat[k]} is not in [0, {n}) (rows of "
                                       f"variable '{var.name}', shape "
                                       f"{format_shape(value.shape)})")
        rows, where = np.unique(flat, return_inverse=True)
        wide = _accumulator(value.dtype)
        # sum the updates of each row first, then change every touched row once
        delta = np.zeros((rows.size,) + value.shape[1:], dtype=wide)
        np.add.at(delta, where.reshape(-1),
                  updates.reshape((flat.size,) + value.shape[1:]).astype(wide))
        old = value[rows].astype(wide)
        value[rows] = (old + delta if sign > 0 else old - delta).astype(value.dtype)


def _declare(name: str, sign: int, doc: str) -> OpDef:
    op = def_op(name, ["resource", "indices", "updates"], stateful=True, doc=doc)
    op.infer(_scatter_infer)

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
not_differentiable("ResourceScatterAdd", "ResourceScatterSub")
