"""Dense tensors of a SparseTensor's shape, also where the shape is known only at run time.

tensorweave's ops take static shapes; a dim of `dense_shape` known only at run time (a
fed ``sparse_placeholder``, a SparseTensor argument of ``tw.compile``) becomes a vector of
that length by a SequenceMask of the dim's value, and the zeros of the whole shape are a
broadcast sum of one such vector (or static size) per axis.
"""

from __future__ import annotations

from typing import Any

from ..compiler.dtypes import DType, int32
from ..frontend.ops import array as a
from ..frontend.ops import math as m
from ..frontend.ops.indexing import sequence_mask
from .sparse_tensor import SparseTensor, sparse_error


def dim_size(sp: SparseTensor, axis: int) -> int | None:
    """Dim `axis` of `sp`'s dense shape when known statically."""
    return sp.shape[axis]


def zeros_of_dense_shape(sp: SparseTensor, dtype: DType, op: str,
                         trailing: tuple[int, ...] = (), axes: tuple[int, ...] | None = None) -> Any:
    """Zeros of `dtype` with the dense shape's dims `axes` (all by default) followed by the
    static dims `trailing`; dims known only at run time are taken from `dense_shape`."""
    shape = sp.shape
    if axes is None:
        if shape.rank is None:
            raise sparse_error(op, "the rank of the SparseTensor's dense_shape must be known "
                                   "when the graph is built (give sparse_placeholder a shape)")
        axes = tuple(range(len(shape)))
    if None in trailing:
        raise sparse_error(op, f"the dense operand's dims {list(trailing)} must be known when "
                               f"the graph is built")
    dims = [None if shape.rank is None else shape[i] for i in axes] + list(trailing)
    if None not in dims:
        return a.zeros(dims, dtype)
    n = len(dims)
    total = a.zeros([1] * n, int32)
    dense_shape = m.cast(sp.dense_shape, int32)
    for k, d in enumerate(dims):
        one_hot_shape = [1] * n
        if d is not None:
            one_hot_shape[k] = d
            total = total + a.zeros(one_hot_shape, int32)
            continue
        length = a.reshape(a.gather(dense_shape, [axes[k]]), [1])
        ones = a.reshape(m.cast(sequence_mask(length), int32), [-1])  # [dense_shape[axis]]
        one_hot_shape[k] = -1
        total = total + a.reshape(ones, one_hot_shape) * 0
    return m.cast(total, dtype) if dtype is not int32 else total


__all__ = ["dim_size", "zeros_of_dense_shape"]
