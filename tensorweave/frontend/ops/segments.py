"""Segment reductions with TensorFlow's names (``tf.math.unsorted_segment_max``, ``_min``,
``_prod``, ``_mean``, ``_sqrt_n``; ``unsorted_segment_sum`` is in `array`): reduce the
slices of `data` that share a segment id.

`segment_ids` (int32/int64) has a prefix of `data`'s shape; the result has shape
``[num_segments] + data.shape[segment_ids.ndim:]``. Negative ids are dropped; an id
``>= num_segments`` raises InvalidArgumentError when the graph runs. `num_segments` is a
static int. Mean and sqrt_n are compositions of sums, as in TensorFlow.
"""

from __future__ import annotations

from typing import Any

from ...compiler.dtypes import as_dtype, int32
from ..building import apply_op1, convert_to_tensor
from ..context import name_scope
from . import array as a
from . import math as m
from .array import _scalar, _usage_error

TensorLike = Any


def _segment(op: str, fn: str, data: Any, segment_ids: Any, num_segments: Any,
             name: str | None) -> Any:
    return apply_op1(op, [convert_to_tensor(data), convert_to_tensor(segment_ids)],
                     {"num_segments": _scalar(num_segments, fn, "num_segments")}, name=name)


def unsorted_segment_max(data: TensorLike, segment_ids: TensorLike, num_segments: int,
                         name: str | None = None) -> TensorLike:
    """The elementwise maximum of the slices of `data` in each segment; an empty segment
    holds the dtype's lowest finite value (TensorFlow's rule, not -inf)."""
    return _segment("UnsortedSegmentMax", "unsorted_segment_max", data, segment_ids,
                    num_segments, name)


def unsorted_segment_min(data: TensorLike, segment_ids: TensorLike, num_segments: int,
                         name: str | None = None) -> TensorLike:
    """The elementwise minimum of the slices of `data` in each segment; an empty segment
    holds the dtype's highest finite value (TensorFlow's rule, not inf)."""
    return _segment("UnsortedSegmentMin", "unsorted_segment_min", data, segment_ids,
                    num_segments, name)


def unsorted_segment_prod(data: TensorLike, segment_ids: TensorLike, num_segments: int,
                          name: str | None = None) -> TensorLike:
    """The elementwise product of the slices of `data` in each segment (1 when empty)."""
    return _segment("UnsortedSegmentProd", "unsorted_segment_prod", data, segment_ids,
                    num_segments, name)


def _sum_and_count(fn: str, data: Any, segment_ids: Any, num_segments: Any) -> tuple[Any, Any]:
    """Each segment's sum, and its number of slices (at least 1, shaped to broadcast)."""
    data = convert_to_tensor(data)
    segment_ids = convert_to_tensor(segment_ids)
    if not data.dtype.is_floating:
        raise _usage_error(fn, f"data must be floating point, got {data.dtype.ir_name}; "
                               f"use tw.cast")
    n = _scalar(num_segments, fn, "num_segments")
    total = a.unsorted_segment_sum(data, segment_ids, n)
    count = a.unsorted_segment_sum(a.ones_like(segment_ids, dtype=data.dtype), segment_ids, n)
    count = a.reshape(count, [n] + [1] * (data.ndim - segment_ids.ndim))
    # an empty segment divides its zero sum by 1: the result is 0, TensorFlow's rule
    return total, m.maximum(count, a.ones_like(count))


def unsorted_segment_mean(data: TensorLike, segment_ids: TensorLike, num_segments: int,
                          name: str | None = None) -> TensorLike:
    """The mean of the slices of floating-point `data` in each segment (0 when empty)."""
    with name_scope(name or "unsorted_segment_mean"):
        total, count = _sum_and_count("unsorted_segment_mean", data, segment_ids, num_segments)
        return total / count


def unsorted_segment_sqrt_n(data: TensorLike, segment_ids: TensorLike, num_segments: int,
                            name: str | None = None) -> TensorLike:
    """The sum of the slices of floating-point `data` in each segment divided by the
    square root of their number (0 when empty)."""
    with name_scope(name or "unsorted_segment_sqrt_n"):
        total, count = _sum_and_count("unsorted_segment_sqrt_n", data, segment_ids,
                                      num_segments)
        return total / m.sqrt(count)


# ------------------------------------------------ sorted segment reductions, bincount

def _sorted(op: str, fn: str, data: Any, segment_ids: Any, name: str | None) -> Any:
    data, segment_ids = convert_to_tensor(data), convert_to_tensor(segment_ids)
    if segment_ids.ndim != 1 or data.ndim < 1:
        raise _usage_error(fn, f"segment_ids must be 1-D with one id per row of data, got "
                               f"{list(segment_ids.shape)} for data {list(data.shape)}")
    return apply_op1(op, [data, segment_ids], name=name)


def segment_sum(data: TensorLike, segment_ids: TensorLike, name: str | None = None) -> TensorLike:
    """``output[s]`` = the sum of the rows ``data[i]`` with ``segment_ids[i] == s``.
    `segment_ids` (int32/int64, one per row) must be sorted and non-negative
    (InvalidArgumentError when the graph runs otherwise); the result has
    ``segment_ids[-1] + 1`` rows, zeros for an empty segment (TensorFlow's
    ``tf.math.segment_sum``). Dim 0 is known only at run time."""
    return _sorted("SegmentSum", "segment_sum", data, segment_ids, name)


def segment_mean(data: TensorLike, segment_ids: TensorLike,
                 name: str | None = None) -> TensorLike:
    """`segment_sum` divided by each segment's number of rows (0 for an empty segment;
    integers divide towards zero, as TensorFlow's kernel)."""
    return _sorted("SegmentMean", "segment_mean", data, segment_ids, name)


def segment_max(data: TensorLike, segment_ids: TensorLike, name: str | None = None) -> TensorLike:
    """The elementwise maximum of each segment's rows (sorted ids, as `segment_sum`); an
    empty segment holds 0, TensorFlow's rule for the sorted op."""
    return _sorted("SegmentMax", "segment_max", data, segment_ids, name)


def segment_min(data: TensorLike, segment_ids: TensorLike, name: str | None = None) -> TensorLike:
    """The elementwise minimum of each segment's rows (sorted ids, as `segment_sum`); an
    empty segment holds 0, TensorFlow's rule for the sorted op."""
    return _sorted("SegmentMin", "segment_min", data, segment_ids, name)


def segment_prod(data: TensorLike, segment_ids: TensorLike,
                 name: str | None = None) -> TensorLike:
    """The elementwise product of each segment's rows (sorted ids, as `segment_sum`); 1
    for an empty segment."""
    return _sorted("SegmentProd", "segment_prod", data, segment_ids, name)


def bincount(arr: TensorLike, weights: TensorLike = None, minlength: int | None = None,
             maxlength: int | None = None, dtype: Any = int32,
             name: str | None = None) -> TensorLike:
    """How often each value of the non-negative integer tensor `arr` occurs: bin ``v``
    counts the entries equal to ``v`` (with `weights`, of `arr`'s shape, it adds their
    weights and has their dtype). The result has ``max(max(arr) + 1, minlength)`` bins,
    at most `maxlength` (values at or past it are dropped); a negative value is an
    InvalidArgumentError. TensorFlow 2's ``tf.math.bincount`` (no `axis`)."""
    arr = convert_to_tensor(arr)
    if not arr.dtype.is_integer:
        raise _usage_error("bincount", f"arr must be int32 or int64, got {arr.dtype.ir_name}")
    inputs = [arr]
    if weights is not None:
        weights = convert_to_tensor(weights)
        dtype = weights.dtype
        inputs.append(weights)
    bounds = {}
    for arg, value in (("minlength", minlength), ("maxlength", maxlength)):
        v = -1 if value is None else _scalar(value, "bincount", arg)
        if value is not None and (not isinstance(v, int) or v < 0):
            raise _usage_error("bincount", f"{arg} must be a non-negative int, got {value!r}")
        bounds[arg] = v
    return apply_op1("Bincount", inputs, {**bounds, "dtype": as_dtype(dtype)}, name=name)


__all__ = ["unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod",
           "unsorted_segment_mean", "unsorted_segment_sqrt_n", "segment_sum", "segment_mean",
           "segment_max", "segment_min", "segment_prod", "bincount"]
