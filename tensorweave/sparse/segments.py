"""``tw.sparse.segment_sum``, ``segment_mean`` and ``segment_sqrt_n``: segment reductions
of the rows ``data[indices]`` (TensorFlow's SparseSegment* ops), a gather followed by the
segment ops, so the gradient in `data` is the gather's (rows scattered back, repeated
rows adding up).

As TensorFlow's kernels: `segment_ids` must be non-negative and increasing (also with
`num_segments`), an id must be below `num_segments` when given, and `indices` must index
rows of `data`; otherwise InvalidArgumentError at run time. Without `num_segments` the
result has ``segment_ids[-1] + 1`` rows; empty segments are 0 (mean and sqrt_n too).
"""

from __future__ import annotations

from typing import Any

from ..frontend.building import convert_to_tensor
from ..frontend.context import control_dependencies, name_scope
from ..frontend.ops import array as a
from ..frontend.ops import math as m
from ..frontend.ops.segments import segment_sum as _dense_segment_sum
from .sparse_tensor import sparse_error


def _rows(fn: str, data: Any, indices: Any, segment_ids: Any, num_segments: Any) -> tuple:
    """(data[indices] with the ids checked, the ids, num_segments as an int or None)."""
    op = f"tw.sparse.{fn}"
    data = convert_to_tensor(data)
    indices = convert_to_tensor(indices)
    ids = convert_to_tensor(segment_ids)
    for what, t in (("indices", indices), ("segment_ids", ids)):
        if t.ndim != 1 or not t.dtype.is_integer:
            raise sparse_error(op, f"{what} must be an integer vector, got {t.type}")
    if indices.shape[0] is not None and ids.shape[0] is not None \
            and indices.shape[0] != ids.shape[0]:
        raise sparse_error(op, f"indices and segment_ids must have the same length, got "
                               f"{indices.shape[0]} and {ids.shape[0]}")
    if data.ndim < 1:
        raise sparse_error(op, f"data must have at least one dimension, got {data.type}")
    n = None
    if num_segments is not None:
        from ..frontend.ops.array import _const_array
        known = _const_array(convert_to_tensor(num_segments))
        if known is None or known.ndim != 0:
            raise sparse_error(op, "num_segments must be an integer known when the graph is "
                                   "built (it is the result's number of rows)")
        n = int(known)
        if n < 0:
            raise sparse_error(op, f"num_segments must be non-negative, got {n}")
    from ..frontend.ops.debugging import _assert
    ids64 = m.cast(ids, "int64")
    ok = m.logical_and(m.reduce_all(m.greater_equal(ids64, 0)),
                       m.reduce_all(m.greater_equal(ids64[1:], ids64[:-1])))
    checks = [_assert(ok, f"{op}: segment ids must be non-negative and increasing", None,
                      [("segment_ids", ids)])]
    if n is not None:
        checks.append(_assert(m.reduce_all(m.less(ids64, n)),
                              f"{op}: segment ids must be below num_segments ({n})", None,
                              [("segment_ids", ids)]))
    with control_dependencies([c for c in checks if c is not None]):
        ids = a.identity(ids)
    return a.gather(data, indices), ids, n


def _sum(rows: Any, ids: Any, n: int | None) -> Any:
    return _dense_segment_sum(rows, ids) if n is None else a.unsorted_segment_sum(rows, ids, n)


def _sum_and_count(fn: str, data: Any, indices: Any, segment_ids: Any,
                   num_segments: Any) -> tuple[Any, Any]:
    rows, ids, n = _rows(fn, data, indices, segment_ids, num_segments)
    if not rows.dtype.is_floating:
        raise sparse_error(f"tw.sparse.{fn}", f"data must be floating point, got "
                                              f"{rows.dtype.name}")
    total = _sum(rows, ids, n)
    count = _sum(a.ones_like(m.cast(ids, rows.dtype)), ids, n)
    count = a.reshape(m.maximum(count, a.ones_like(count)), [-1] + [1] * (rows.ndim - 1))
    return total, count


def segment_sum(data: Any, indices: Any, segment_ids: Any, num_segments: Any = None,
                name: str | None = None, sparse_gradient: bool = False) -> Any:
    """``output[s]`` = the sum of the rows ``data[indices[i]]`` with ``segment_ids[i] == s``
    (``tf.sparse.segment_sum``); `num_segments` (a static int) fixes the number of rows.
    `sparse_gradient` is accepted; the gradient in `data` is a gather's."""
    del sparse_gradient
    with name_scope(name or "SparseSegmentSum"):
        rows, ids, n = _rows("segment_sum", data, indices, segment_ids, num_segments)
        return _sum(rows, ids, n)


def segment_mean(data: Any, indices: Any, segment_ids: Any, num_segments: Any = None,
                 name: str | None = None, sparse_gradient: bool = False) -> Any:
    """`segment_sum` divided by each segment's number of rows (``tf.sparse.segment_mean``;
    floating-point data; 0 for an empty segment)."""
    del sparse_gradient
    with name_scope(name or "SparseSegmentMean"):
        total, count = _sum_and_count("segment_mean", data, indices, segment_ids,
                                      num_segments)
        return total / count


def segment_sqrt_n(data: Any, indices: Any, segment_ids: Any, num_segments: Any = None,
                   name: str | None = None, sparse_gradient: bool = False) -> Any:
    """`segment_sum` divided by the square root of each segment's number of rows
    (``tf.sparse.segment_sqrt_n``; floating-point data; 0 for an empty segment)."""
    del sparse_gradient
    with name_scope(name or "SparseSegmentSqrtN"):
        total, count = _sum_and_count("segment_sqrt_n", data, indices, segment_ids,
                                      num_segments)
        return total / m.sqrt(count)


def _v1(fn: Any) -> Any:
    """TensorFlow 1's argument order: `name` before `num_segments`."""
    def v1(data: Any, indices: Any, segment_ids: Any, name: str | None = None,
           num_segments: Any = None, sparse_gradient: bool = False) -> Any:
        return fn(data, indices, segment_ids, num_segments, name, sparse_gradient)
    v1.__name__ = fn.__name__
    v1.__doc__ = f"TensorFlow 1's ``tf.sparse.{fn.__name__}`` (`name` before `num_segments`)."
    return v1


segment_sum_v1 = _v1(segment_sum)
segment_mean_v1 = _v1(segment_mean)
segment_sqrt_n_v1 = _v1(segment_sqrt_n)

__all__ = ["segment_sum", "segment_mean", "segment_sqrt_n"]
