"""Ops whose output size is a count of the data: Unique (and its counts), Bincount, and
the sorted segment reductions SegmentSum/Mean/Max/Min/Prod, with TensorFlow's semantics.

Their dim 0 is known only at run time (the number of distinct values, the largest value
or segment id plus one), so the cpu target runs graphs that use them on the dataflow
executor with these reference kernels (as for DynamicPartition); the gpu target declines
such graphs.
"""

from __future__ import annotations

import numpy as np

from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ..dtypes import NUMERIC_DTYPES, as_dtype, int32, int64
from ..registry import attr, def_op, not_differentiable
from ..types import TensorType
from .array import _accumulator
from .common import check_dtype, expect_tensor

_INDEX_DTYPES = (int32, int64)


# ------------------------------------------------------------------------------- Unique

Unique = def_op(
    "Unique", ["x"], {"out_idx": attr("dtype", int32)},
    doc="The distinct values of the 1-D `x` in order of first occurrence (y), for each "
        "element of x the index of its value in y (idx, of dtype out_idx), and how often "
        "each value occurs (count, of dtype out_idx): TensorFlow's UniqueWithCounts; "
        "tw.unique drops the count.")


@Unique.infer
def _unique_infer(x, *, out_idx):
    t = expect_tensor(x, "x")
    if t.rank != 1:
        raise ShapeError(f"x must be 1-D, got {t}")
    if out_idx not in _INDEX_DTYPES:
        raise DTypeError(f"out_idx must be i32 or i64, got {out_idx.ir_name}")
    n = t.shape[0]
    rows = 0 if n == 0 else None
    return [t.with_shape((rows,)), TensorType(out_idx, (n,)), TensorType(out_idx, (rows,))]


@Unique.kernel("reference")
def _unique_kernel(x, *, out_idx):
    _unique_infer(TensorType(as_dtype(x.dtype), x.shape), out_idx=out_idx)
    # np.unique sorts: reorder its values by their first occurrence
    _, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                          return_counts=True, equal_nan=False)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    y = np.ascontiguousarray(x[first[order]])
    idx = rank[inverse.reshape(-1)].astype(out_idx.np)
    return [y, idx, counts[order].astype(out_idx.np)]


not_differentiable("Unique")


# ----------------------------------------------------------------------------- Bincount

Bincount = def_op(
    "Bincount", ["arr", "*weights"],
    {"minlength": attr("int", -1), "maxlength": attr("int", -1), "dtype": attr("dtype")},
    doc="Counts of each value of the non-negative int32/int64 `arr` (any shape): bin v "
        "holds the number of entries equal to v, or with `weights` (arr's shape) their sum. "
        "The result has max(max(arr) + 1, minlength) bins, at most maxlength (values at or "
        "past maxlength are dropped); -1 means no bound. tf.math.bincount.")


@Bincount.infer
def _bincount_infer(arr, *weights, minlength, maxlength, dtype):
    a = expect_tensor(arr, "arr")
    check_dtype(a, _INDEX_DTYPES, "arr")
    if len(weights) > 1:
        raise ShapeError(f"Bincount takes at most one weights tensor, got {len(weights)}")
    if weights:
        w = expect_tensor(weights[0], "weights")
        if w.dtype is not dtype:
            raise DTypeError(f"weights are {w.dtype.ir_name}, the result dtype is {dtype.ir_name}")
        if w.rank != a.rank or any(p is not None and q is not None and p != q
                                   for p, q in zip(w.shape, a.shape)):
            raise ShapeError(f"weights ({w}) must have the shape of arr ({a})")
    if dtype not in NUMERIC_DTYPES:
        raise DTypeError(f"dtype must be numeric, got {dtype.ir_name}")
    size = None
    if maxlength == 0 or (minlength >= 0 and minlength == maxlength):
        size = maxlength
    elif 0 in a.shape and minlength >= 0:
        size = minlength if maxlength < 0 else min(minlength, maxlength)
    return TensorType(dtype, (size,))


@Bincount.kernel("reference")
def _bincount_kernel(arr, *weights, minlength, maxlength, dtype):
    flat = arr.reshape(-1)
    if (flat < 0).any():
        k = int(np.argwhere(flat < 0)[0][0])
        raise InvalidArgumentError(f"arr must be non-negative, got arr[{k}] = {flat[k]} "
                                   f"(flattened)")
    size = int(flat.max()) + 1 if flat.size else 0
    size = max(size, minlength)
    if maxlength >= 0:
        size = min(size, maxlength)
    keep = flat < size
    wide = _accumulator(dtype.np)
    out = np.zeros(size, wide)
    add = weights[0].reshape(-1)[keep].astype(wide) if weights else 1
    np.add.at(out, flat[keep], add)
    return out.astype(dtype.np)


not_differentiable("Bincount")


# --------------------------------------------------------- sorted segment reductions

_SORTED_RULES = {
    # reduction ufunc, the value of an empty segment (TensorFlow's sorted ops: 0 for an
    # empty max/min/mean/sum, 1 for prod), what
    "SegmentSum": (np.add, 0, "sum"),
    "SegmentMean": (np.add, 0, "mean"),
    "SegmentMax": (np.maximum, 0, "maximum"),
    "SegmentMin": (np.minimum, 0, "minimum"),
    "SegmentProd": (np.multiply, 1, "product"),
}


def _sorted_segment_infer(data, segment_ids):
    d = expect_tensor(data, "data")
    i = expect_tensor(segment_ids, "segment_ids")
    check_dtype(i, _INDEX_DTYPES, "segment_ids")
    if d.dtype not in NUMERIC_DTYPES:
        raise DTypeError(f"data must be numeric, got {d.dtype.ir_name}")
    if i.rank != 1 or d.rank < 1 or (i.shape[0] is not None and d.shape[0] is not None
                                     and i.shape[0] != d.shape[0]):
        raise ShapeError(f"segment_ids ({i}) must be 1-D with one id per row of data ({d})")
    rows = 0 if i.shape[0] == 0 else None
    return d.with_shape((rows,) + tuple(d.shape[1:]))


def _check_sorted(ids: np.ndarray) -> None:
    if ids.size and ids[0] < 0:
        raise InvalidArgumentError(f"segment ids must be >= 0, got segment_ids[0] = {ids[0]}")
    down = np.flatnonzero(np.diff(ids) < 0)
    if down.size:
        k = int(down[0]) + 1
        raise InvalidArgumentError(f"segment ids are not increasing: segment_ids[{k}] = "
                                   f"{ids[k]} follows {ids[k - 1]}")


def _def_sorted_segment(name: str):
    ufunc, empty, what = _SORTED_RULES[name]
    op = def_op(
        name, ["data", "segment_ids"],
        doc=f"output[s] = {what} of the rows data[i] with segment_ids[i] == s; segment_ids "
            f"is 1-D, sorted and non-negative (InvalidArgumentError otherwise); the result "
            f"has segment_ids[-1] + 1 rows, an empty segment holds {empty} (TensorFlow's "
            f"{name}).")
    op.infer(_sorted_segment_infer)

    @op.kernel("reference")
    def _kernel(data, segment_ids):
        _sorted_segment_infer(TensorType(as_dtype(data.dtype), data.shape),
                              TensorType(as_dtype(segment_ids.dtype), segment_ids.shape))
        _check_sorted(segment_ids)
        n = int(segment_ids[-1]) + 1 if segment_ids.size else 0
        wide = _accumulator(data.dtype)
        out = np.zeros((n,) + data.shape[1:], wide)
        present = np.zeros(n, bool)
        present[segment_ids] = True
        if ufunc is not np.add:
            # start each non-empty segment from its first row (no identity for max/min)
            starts = np.r_[0, np.flatnonzero(np.diff(segment_ids)) + 1] if n else []
            out[segment_ids[starts]] = data[starts].astype(wide)
            rest = np.ones(segment_ids.size, bool)
            rest[starts] = False
            ufunc.at(out, segment_ids[rest], data[rest].astype(wide))
        else:
            ufunc.at(out, segment_ids, data.astype(wide))
            if name == "SegmentMean":
                count = np.bincount(segment_ids, minlength=n).reshape((n,) + (1,) * (
                    data.ndim - 1))
                count = np.maximum(count, 1)
                # integers divide as C++ does (towards zero), floats as floats
                out = out / count.astype(wide) if data.dtype.kind in "fV" else \
                    np.sign(out) * (np.abs(out) // count)
        out[~present] = empty
        return out.astype(data.dtype)

    return op


SegmentSum = _def_sorted_segment("SegmentSum")
SegmentMean = _def_sorted_segment("SegmentMean")
SegmentMax = _def_sorted_segment("SegmentMax")
SegmentMin = _def_sorted_segment("SegmentMin")
SegmentProd = _def_sorted_segment("SegmentProd")
