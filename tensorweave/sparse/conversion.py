"""Between sparse and dense: ``tw.sparse.from_dense``, ``to_dense`` and TensorFlow 1's
``sparse_tensor_to_dense`` and ``sparse_to_dense``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import bool_, int64
from ..frontend.building import constant, convert_to_tensor
from ..frontend.context import control_dependencies, name_scope
from ..frontend.ops import array as a
from ..frontend.ops import math as m
from ..frontend.ops.debugging import _assert
from ..frontend.ops.indexing import gather_nd, tensor_scatter_nd_update
from .dense_shape import zeros_of_dense_shape
from .sparse_tensor import SparseTensor, as_sparse, sparse_error


def from_dense(tensor: Any, name: str | None = None) -> SparseTensor:
    """The SparseTensor of `tensor`'s nonzero entries, in row-major order
    (``tf.sparse.from_dense``)."""
    with name_scope(name or "dense_to_sparse"):
        t = convert_to_tensor(tensor)
        if None in t.shape:
            raise sparse_error("tw.sparse.from_dense", f"the shape of the tensor must be known "
                                                       f"when the graph is built, got {t.type}")
        zero = a.zeros_like(t)
        nonzero = m.not_equal(t, zero) if t.dtype is not bool_ else t
        indices = m.where(nonzero)
        return SparseTensor(indices, gather_nd(t, indices),
                            constant(np.asarray(t.shape, np.int64)))


def validity_check(sp: SparseTensor, op: str) -> Any:
    """An Assert that `sp`'s indices are within its dense shape, in row-major order and
    not repeated (TensorFlow's ``validate_indices``)."""
    idx = sp.indices
    shape = sp.dense_shape
    in_bounds = m.logical_and(m.reduce_all(m.greater_equal(idx, a.zeros_like(idx))),
                              m.reduce_all(m.less(idx, a.expand_dims(shape, 0))))
    # row-major order and no repeats: each entry's index, compared with the entry before
    # it lexicographically (the first axis that differs decides)
    prev, cur = idx[:-1], idx[1:]
    later = m.greater(cur, prev)
    differ = m.not_equal(cur, prev)
    rank = sp.rank
    if rank is None:
        raise sparse_error(op, "the rank of the SparseTensor must be known to validate its "
                               "indices (give sparse_placeholder a shape)")
    first_differ = m.argmax(m.cast(differ, "int32"), axis=1) if rank else None
    if rank:
        ordered = m.logical_and(m.reduce_any(differ, axis=1),
                                a.gather(later, first_differ, batch_dims=1))
        ok = m.logical_and(in_bounds, m.reduce_all(ordered))
    else:
        ok = in_bounds
    return _assert(ok, f"{op}: indices must be within dense_shape (0 <= index < dense_shape), "
                       f"in row-major order and not repeated; use tw.sparse.reorder to sort them",
                   None, [("indices", idx), ("dense_shape", shape)])


def to_dense(sp_input: SparseTensor, default_value: Any = None, validate_indices: bool = True,
             name: str | None = None) -> Any:
    """The dense tensor `sp_input` stands for, `default_value` (default 0) where it has no
    entry (``tf.sparse.to_dense``). With `validate_indices`, indices out of the dense
    shape, out of row-major order or repeated are an InvalidArgumentError when the graph
    runs; without, a repeated index takes its last value."""
    op = "tw.sparse.to_dense"
    sp = as_sparse(sp_input, op)
    with name_scope(name or "SparseToDense"):
        base = zeros_of_dense_shape(sp, sp.dtype, op)
        if default_value is not None:
            base = base + convert_to_tensor(default_value, dtype=sp.dtype)
        values = convert_to_tensor(sp.values)
        if not validate_indices:
            return tensor_scatter_nd_update(base, sp.indices, values)
        check = validity_check(sp, op)
        with control_dependencies([check] if check is not None else []):
            return tensor_scatter_nd_update(base, a.identity(sp.indices), values)


def sparse_tensor_to_dense(sp_input: SparseTensor, default_value: Any = None,
                           validate_indices: bool = True, name: str | None = None) -> Any:
    """TensorFlow 1's ``tf.sparse_tensor_to_dense``: `to_dense`."""
    return to_dense(sp_input, default_value, validate_indices, name)


def sparse_to_dense(sparse_indices: Any, output_shape: Any, sparse_values: Any,
                    default_value: Any = 0, validate_indices: bool = True,
                    name: str | None = None) -> Any:
    """TensorFlow 1's ``tf.sparse_to_dense``: `sparse_indices` (a scalar, a vector of
    indices into a 1-D output, or ``[N, rank]`` coordinates) set to `sparse_values` (a
    scalar for all, or one each), `default_value` elsewhere, in `output_shape`."""
    op = "tf.sparse_to_dense"
    with name_scope(name or "SparseToDense"):
        idx = m.cast(convert_to_tensor(sparse_indices), int64)
        if idx.ndim == 0:
            idx = a.reshape(idx, [1, 1])
        elif idx.ndim == 1:
            idx = a.expand_dims(idx, 1)
        elif idx.ndim != 2:
            raise sparse_error(op, f"sparse_indices must have rank 0, 1 or 2, got {idx.type}")
        shape = m.cast(convert_to_tensor(output_shape), int64)
        if shape.ndim == 0:
            shape = a.reshape(shape, [1])
        values = convert_to_tensor(sparse_values)
        if values.ndim == 0:
            values = values + a.zeros_like(m.cast(idx[:, 0], values.dtype))
        return to_dense(SparseTensor(idx, values, shape), default_value, validate_indices)


__all__ = ["from_dense", "to_dense", "sparse_tensor_to_dense", "sparse_to_dense"]
