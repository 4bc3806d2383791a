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
        raise _usage_error(fn, f"data must be floating point, got {data.dtype.name}; "
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


__all__ = ["unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod",
           "unsorted_segment_mean", "unsorted_segment_sqrt_n"]
