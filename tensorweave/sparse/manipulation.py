"""``tw.sparse.reorder``, ``retain``, ``slice``, ``reshape``, ``add`` and ``reduce_sum``:
compositions of gathers, masks, sorts and scatter-adds on the component tensors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..frontend.building import constant, convert_to_tensor
from ..frontend.context import control_dependencies, name_scope
from ..frontend.ops import array as a
from ..frontend.ops import math as m
from ..frontend.ops.indexing import argsort, boolean_mask, tensor_scatter_nd_add, unique
from ..frontend.ops.segments import segment_min, segment_sum
from .dense_shape import zeros_of_dense_shape
from .sparse_tensor import SparseTensor, as_sparse, is_sparse, sparse_error


def _rank(sp: SparseTensor, op: str) -> int:
    if sp.rank is None:
        raise sparse_error(op, "the rank of the SparseTensor must be known when the graph is "
                               "built (give sparse_placeholder a shape)")
    return sp.rank


def linear_keys(sp: SparseTensor) -> Any:
    """Each entry's row-major position in the dense tensor (int64)."""
    strides = m.cumprod(sp.dense_shape, exclusive=True, reverse=True)
    return m.reduce_sum(sp.indices * a.expand_dims(strides, 0), axis=1)


def reorder(sp_input: Any, name: str | None = None) -> SparseTensor:
    """The same SparseTensor with its entries in row-major order (``tf.sparse.reorder``;
    entries with a repeated index stay, in their order)."""
    sp = as_sparse(sp_input, "tw.sparse.reorder")
    _rank(sp, "tw.sparse.reorder")
    with name_scope(name or "SparseReorder"):
        order = argsort(linear_keys(sp), stable=True)
        return SparseTensor(a.gather(sp.indices, order),
                            a.gather(convert_to_tensor(sp.values), order), sp.dense_shape)


def retain(sp_input: Any, to_retain: Any) -> SparseTensor:
    """The entries of `sp_input` where the bool vector `to_retain` is True
    (``tf.sparse.retain``)."""
    sp = as_sparse(sp_input, "tw.sparse.retain")
    keep = convert_to_tensor(to_retain)
    if keep.ndim != 1 or not keep.dtype.is_bool:
        raise sparse_error("tw.sparse.retain", f"to_retain must be a bool vector, got {keep.type}")
    return SparseTensor(boolean_mask(sp.indices, keep),
                        boolean_mask(convert_to_tensor(sp.values), keep), sp.dense_shape)


def slice(sp_input: Any, start: Sequence[int], size: Sequence[int],  # noqa: A001
          name: str | None = None) -> SparseTensor:
    """The entries inside the box ``[start, start + size)``, with indices relative to
    `start`; the dense shape is ``min(size, dense_shape - start)`` (``tf.sparse.slice``)."""
    op = "tw.sparse.slice"
    sp = as_sparse(sp_input, op)
    rank = _rank(sp, op)
    start_a, size_a = np.asarray(start, np.int64), np.asarray(size, np.int64)
    if start_a.shape != (rank,) or size_a.shape != (rank,):
        raise sparse_error(op, f"start and size must have {rank} entries (the rank), got "
                               f"{list(start_a)} and {list(size_a)}")
    with name_scope(name or "SparseSlice"):
        lo = constant(start_a)
        inside = m.reduce_all(m.logical_and(m.greater_equal(sp.indices, lo),
                                            m.less(sp.indices, lo + constant(size_a))), axis=1)
        shape = m.maximum(m.minimum(constant(size_a), sp.dense_shape - lo),
                          a.zeros_like(lo))
        return SparseTensor(boolean_mask(sp.indices, inside) - lo,
                            boolean_mask(convert_to_tensor(sp.values), inside), shape)


def reshape(sp_input: Any, shape: Sequence[int], name: str | None = None) -> SparseTensor:
    """The same entries in a dense tensor of `shape` (static ints; one may be -1), in
    row-major order as a dense reshape (``tf.sparse.reshape``)."""
    op = "tw.sparse.reshape"
    sp = as_sparse(sp_input, op)
    _rank(sp, op)
    dims = [int(d) for d in shape]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise sparse_error(op, f"shape may have one -1 and no other negative dim, got {dims}")
    with name_scope(name or "SparseReshape"):
        total = m.reduce_prod(sp.dense_shape)
        if -1 in dims:
            known = int(np.prod([d for d in dims if d != -1]))
            missing = total // max(known, 1)
            new_shape = a.stack([missing if d == -1 else constant(np.int64(d)) for d in dims])
        else:
            new_shape = constant(np.asarray(dims, np.int64))
        check = _assert_same_size(total, m.reduce_prod(new_shape), dims)
        key = linear_keys(sp)
        coords = []
        for i in reversed(range(len(dims))):
            d = a.gather(new_shape, i)
            coords.append(m.floormod(key, d))
            key = m.floordiv(key, d)
        with control_dependencies([check]):
            indices = a.identity(a.stack(coords[::-1], axis=1))
        return SparseTensor(indices, sp.values, new_shape)


def _assert_same_size(total: Any, new_total: Any, dims: list[int]) -> Any:
    from ..frontend.ops.debugging import _assert
    return _assert(m.equal(total, new_total),
                   f"tw.sparse.reshape: the dense shape and {dims} must have the same number "
                   f"of elements", None, [("elements", total), ("requested", new_total)])


def add(a_: Any, b: Any, threshold: Any = 0, name: str | None = None) -> Any:
    """``tf.sparse.add``: a SparseTensor plus a dense tensor is dense (each entry added at
    its index; repeated indices add up); two SparseTensors give a SparseTensor of their
    entries together, in row-major order, with repeated indices summed (a sum of two
    entries whose magnitude is below `threshold` is dropped, as in TensorFlow)."""
    op = "tw.sparse.add"
    with name_scope(name or "SparseAdd"):
        if is_sparse(a_) and is_sparse(b):
            return _add_sparse(as_sparse(a_, op), as_sparse(b, op), threshold)
        sp, dense = (a_, b) if is_sparse(a_) else (b, a_)
        if not is_sparse(sp):
            raise sparse_error(op, "one of the operands must be a SparseTensor")
        sp = as_sparse(sp, op)
        dense = convert_to_tensor(dense, dtype=sp.dtype)
        if sp.rank is not None and sp.rank != dense.ndim:
            raise sparse_error(op, f"the SparseTensor (dense shape {sp.shape}) and the dense "
                                   f"tensor ({dense.type}) must have the same rank")
        return tensor_scatter_nd_add(dense, sp.indices, convert_to_tensor(sp.values))


def _add_sparse(x: SparseTensor, y: SparseTensor, threshold: Any) -> SparseTensor:
    if x.dtype is not y.dtype:
        raise sparse_error("tw.sparse.add", f"the values' dtypes differ: {x.dtype.name} and "
                                            f"{y.dtype.name}")
    both = SparseTensor(a.concat([x.indices, y.indices], 0),
                        a.concat([convert_to_tensor(x.values), convert_to_tensor(y.values)], 0),
                        x.dense_shape)
    both = reorder(both)
    # the keys are sorted, so each distinct index's position among them (unique's second
    # output) is a sorted segment id: segment sums give one entry per distinct index
    _, which = unique(linear_keys(both))
    values = segment_sum(convert_to_tensor(both.values), which)
    indices = segment_min(both.indices, which)  # (the rows of one segment are equal)
    # as TensorFlow's kernel: the threshold applies to sums of two entries only
    count = segment_sum(a.ones_like(which), which)
    keep = m.logical_or(m.equal(count, a.ones_like(count)),
                        m.greater_equal(m.abs(values),
                                        convert_to_tensor(threshold, dtype=values.dtype)))
    return SparseTensor(boolean_mask(indices, keep), boolean_mask(values, keep),
                        x.dense_shape)


def reduce_sum(sp_input: Any, axis: Any = None, keepdims: bool = False,
               output_is_sparse: bool = False, name: str | None = None) -> Any:
    """The sum of the entries over `axis` (an int, a list, or None for all) as a dense
    tensor (``tf.sparse.reduce_sum``); repeated indices add up."""
    op = "tw.sparse.reduce_sum"
    if output_is_sparse:
        raise sparse_error(op, "output_is_sparse=True is not supported; use "
                               "tw.sparse.from_dense of the result")
    sp = as_sparse(sp_input, op)
    rank = _rank(sp, op)
    with name_scope(name or "SparseReduceSum"):
        values = convert_to_tensor(sp.values)
        axes = list(range(rank)) if axis is None else (
            [axis] if isinstance(axis, (int, np.integer)) else list(axis))
        bad = [x for x in axes if not -rank <= x < rank]
        if bad:
            raise sparse_error(op, f"axis {bad} is out of range for rank {rank}")
        axes = sorted({x % rank for x in axes})
        kept = [i for i in range(rank) if i not in axes]
        if not kept:
            out = m.reduce_sum(values)
        else:
            out = zeros_of_dense_shape(sp, sp.dtype, op, axes=tuple(kept))
            out = tensor_scatter_nd_add(out, a.gather(sp.indices, kept, axis=1), values)
        if keepdims:
            for x in axes:
                out = a.expand_dims(out, x)
        return out


__all__ = ["reorder", "retain", "slice", "reshape", "add", "reduce_sum", "linear_keys"]
