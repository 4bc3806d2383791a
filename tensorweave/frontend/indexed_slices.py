"""Sparse gradients: ``tw.IndexedSlices``, TensorFlow's representation of a tensor whose
only non-zero slices along dim 0 are listed.

The gradient of a Gather (axis 0) from a variable is one: `values` holds one slice per
looked-up id and `indices` the ids, so an optimizer can update just those rows
(``ResourceScatterSub``) and, on a parameter server, only those rows cross the network.
Everything else sees a dense tensor: converting (`to_dense`, ``tw.convert_to_tensor``, or
using it as an op operand) sums the slices into zeros of `dense_shape`, with a warning
when that tensor is large, as TensorFlow warns.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

# TensorFlow's threshold (_LARGE_SPARSE_NUM_ELEMENTS) for warning about a dense conversion
LARGE_SPARSE_NUM_ELEMENTS = 100_000_000


class SparseToDenseWarning(UserWarning):
    """A sparse gradient was converted to a dense tensor of many elements."""


class IndexedSlices:
    """A sparse representation of a tensor of shape `dense_shape`: row ``indices[i]`` is
    ``values[i]`` (repeated indices add up), every other row is zero. `values` has shape
    ``[len(indices)] + dense_shape[1:]``; `indices` is a 1-D integer tensor."""

    def __init__(self, values: Any, indices: Any, dense_shape: Sequence[int | None]) -> None:
        self.values = values
        self.indices = indices
        self.dense_shape = tuple(dense_shape)

    @property
    def dtype(self) -> Any:
        """The dtype of the values (and of the dense tensor)."""
        return self.values.dtype

    @property
    def shape(self) -> tuple:
        """The dense shape."""
        return self.dense_shape

    def __repr__(self) -> str:
        return (f"tw.IndexedSlices(values={self.values!r}, indices={self.indices!r}, "
                f"dense_shape={list(self.dense_shape)})")

    def _as_tensor(self) -> Any:
        return to_dense(self)


def to_dense(slices: IndexedSlices) -> Any:
    """The dense tensor `slices` stands for (an UnsortedSegmentSum of the values into
    zeros); warns (SparseToDenseWarning) when it has more than LARGE_SPARSE_NUM_ELEMENTS
    elements."""
    from .ops import array as a

    shape = slices.dense_shape
    if not shape or shape[0] is None:
        raise ValueError(f"cannot convert IndexedSlices of dense shape {list(shape)} to a "
                         f"tensor: the number of rows must be known")
    if None not in shape and math.prod(shape) > LARGE_SPARSE_NUM_ELEMENTS:
        warnings.warn(f"Converting sparse IndexedSlices to a dense Tensor with "
                      f"{math.prod(shape)} elements. This may consume a large amount of "
                      f"memory.", SparseToDenseWarning, stacklevel=3)
    return a.unsorted_segment_sum(slices.values, slices.indices, shape[0])


def aggregate(grads: Sequence[Any]) -> Any:
    """The sum of several gradients of one tensor: IndexedSlices stay sparse when all of
    them are (their slices concatenated, as TensorFlow does); otherwise everything is
    made dense and added."""
    from .building import apply_op1
    from .ops import array as a

    grads = list(grads)
    if len(grads) == 1:
        return grads[0]
    if all(isinstance(g, IndexedSlices) for g in grads):
        indices = [g.indices for g in grads]
        if len({i.dtype for i in indices}) > 1:
            from .ops import math as m
            indices = [m.cast(i, "int64") for i in indices]
        return IndexedSlices(a.concat([g.values for g in grads], 0), a.concat(indices, 0),
                             grads[0].dense_shape)
    return apply_op1("AddN", [dense(g) for g in grads])


def dense(g: Any) -> Any:
    """`g` itself, or the dense tensor of an IndexedSlices."""
    return to_dense(g) if isinstance(g, IndexedSlices) else g


__all__ = ["IndexedSlices", "SparseToDenseWarning", "LARGE_SPARSE_NUM_ELEMENTS", "to_dense",
           "aggregate", "dense"]
