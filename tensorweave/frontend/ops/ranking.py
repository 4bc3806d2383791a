"""The largest entries of a tensor: ``tw.nn.top_k`` (op `TopK`) and ``tw.nn.in_top_k``."""

from __future__ import annotations

from typing import Any, NamedTuple

from ...compiler.dtypes import bool_, int32
from ...errors import ShapeError
from ..building import apply_op, convert_to_tensor, user_location
from ..context import name_scope
from ..tensor import Tensor
from . import math as m
from .array import one_hot

TensorLike = Any


class TopKV2(NamedTuple):
    """`top_k`'s result, as TensorFlow's: unpacks as ``(values, indices)``."""
    values: Tensor
    indices: Tensor


def top_k(input: TensorLike, k: int = 1, sorted: bool = True,  # noqa: A002
          name: str | None = None) -> TopKV2:
    """The `k` largest entries along the last axis, largest first, and their int32
    indices (``tf.math.top_k``), as ``.values`` and ``.indices``; equal values come in
    index order. `k` is a Python int. The gradient flows to the selected entries."""
    values, indices = apply_op("TopK", [convert_to_tensor(input)],
                               {"k": int(k), "sorted": bool(sorted)}, name=name)
    return TopKV2(values, indices)


def in_top_k(targets: TensorLike, predictions: TensorLike, k: int,
             name: str | None = None) -> Tensor:
    """Whether each example's target class is among its `k` highest predictions
    (``tf.math.in_top_k``, TensorFlow 2's argument order). `predictions` is
    ``[batch, classes]`` floats, `targets` ``[batch]`` int32/int64. As in TensorFlow,
    classes tied with the target count as below it (a tie at the k-th place is in the
    top k), and an out-of-range target or a non-finite prediction anywhere in the row (not
    only the target's: TensorFlow's kernel cannot rank it) gives False."""
    with name_scope(name or "in_top_k"):
        predictions = convert_to_tensor(predictions)
        targets = convert_to_tensor(targets)
        if len(predictions.shape) != 2 or len(targets.shape) != 1:
            raise ShapeError(f"in_top_k: predictions must be [batch, classes] and targets "
                             f"[batch], got {predictions.shape} and {targets.shape}",
                             location=str(user_location()))
        classes = predictions.shape[1]
        if classes is None:
            raise ShapeError("in_top_k: the number of classes must be known when the graph "
                             "is built", location=str(user_location()))
        is_target = one_hot(targets, classes, dtype=bool_)
        target_value = m.reduce_sum(m.where(is_target, predictions,
                                            m.cast(0, predictions.dtype)), axis=1)
        above = m.reduce_sum(m.cast(m.greater(predictions, target_value[:, None]), int32),
                             axis=1)
        # False for a row with an inf or nan anywhere, as TensorFlow's InTopKV2 kernel
        finite = m.reduce_all(m.less(m.abs(predictions), float("inf")), axis=1)
        in_range = m.logical_and(m.greater_equal(targets, 0), m.less(targets, classes))
        return m.logical_and(m.logical_and(m.less(above, k), finite), in_range)


__all__ = ["top_k", "in_top_k"]
