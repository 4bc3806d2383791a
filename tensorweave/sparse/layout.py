"""``tw.sparse.transpose``, ``concat`` and ``fill_empty_rows``: new index columns,
offsets and rows for the entries, compositions of gathers, concatenations and a stable
sort on the component tensors (so gradients reach the values through them).

Output order is TensorFlow's: transpose and concat return their entries in row-major
order; fill_empty_rows orders them by row, keeping the input order within a row (its
kernel's counting sort), each new ``[row, 0, ..., 0]`` entry in its empty row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..compiler.dtypes import bool_, int64
from ..frontend.building import constant, convert_to_tensor
from ..frontend.context import control_dependencies, name_scope
from ..frontend.ops import array as a
from ..frontend.ops import math as m
from ..frontend.ops.indexing import argsort, boolean_mask, tensor_scatter_nd_add
from .dense_shape import zeros_of_dense_shape
from .manipulation import reorder
from .sparse_tensor import SparseTensor, as_sparse, sparse_error


def _rank(sp: SparseTensor, op: str) -> int:
    if sp.rank is None:
        raise sparse_error(op, "the rank of the SparseTensor must be known when the graph is "
                               "built (give sparse_placeholder a shape)")
    return sp.rank


def transpose(sp_input: Any, perm: Sequence[int] | None = None,
              name: str | None = None) -> SparseTensor:
    """The SparseTensor with its dimensions permuted by `perm` (default: reversed), its
    entries in row-major order (``tf.sparse.transpose``)."""
    op = "tw.sparse.transpose"
    sp = as_sparse(sp_input, op)
    rank = _rank(sp, op)
    order = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(order) != list(range(rank)):
        raise sparse_error(op, f"perm must be a permutation of 0..{rank - 1}, got {order}")
    with name_scope(name or "SparseTranspose"):
        return reorder(SparseTensor(a.gather(sp.indices, order, axis=1),
                                    convert_to_tensor(sp.values),
                                    a.gather(sp.dense_shape, order)))


def _assert_equal_dims(shapes: list[Any], dims: list[int], op: str) -> list[Any]:
    """Run-time checks that every shape has the first one's `dims`."""
    from ..frontend.ops.debugging import _assert
    first = a.gather(shapes[0], dims)
    checks = []
    for k, s in enumerate(shapes[1:], 1):
        checks.append(_assert(m.reduce_all(m.equal(a.gather(s, dims), first)),
                              f"{op}: input {k}'s dense shape must match input 0's except in "
                              f"the concat dimension (or pass expand_nonconcat_dims=True)",
                              None, [("input 0 dense_shape", shapes[0]),
                                     (f"input {k} dense_shape", s)]))
    return [c for c in checks if c is not None]


def concat(axis: int, sp_inputs: Sequence[Any], expand_nonconcat_dims: bool = False,
           name: str | None = None) -> SparseTensor:
    """The SparseTensors of `sp_inputs` joined along `axis` (``tf.sparse.concat``): entry
    ``k`` of input ``i`` moves by the sizes of the inputs before it along `axis`; the
    result is in row-major order. The other dims must be equal, unless
    `expand_nonconcat_dims`, when the result takes their maximum (each input's entries
    keep their coordinates)."""
    op = "tw.sparse.concat"
    sps = [as_sparse(s, op) for s in sp_inputs]
    if not sps:
        raise sparse_error(op, "sp_inputs must hold at least one SparseTensor")
    ranks = {_rank(s, op) for s in sps}
    if len(ranks) != 1:
        raise sparse_error(op, f"the inputs must have the same rank, got ranks "
                               f"{[s.rank for s in sps]}")
    rank = ranks.pop()
    if not -rank <= int(axis) < rank:
        raise sparse_error(op, f"axis {axis} is out of range for rank {rank}")
    ax = int(axis) % rank
    dtypes = {s.dtype for s in sps}
    if len(dtypes) != 1:
        raise sparse_error(op, f"the values' dtypes differ: {[s.dtype.name for s in sps]}")
    others = [d for d in range(rank) if d != ax]
    if not expand_nonconcat_dims:
        known = [tuple(s.shape[d] for d in others) for s in sps]
        for k, dims in enumerate(known[1:], 1):
            if all(x is not None for x in dims + known[0]) and dims != known[0]:
                raise sparse_error(op, f"input {k} (dense shape {list(sps[k].shape)}) must "
                                       f"match input 0 ({list(sps[0].shape)}) except in "
                                       f"dimension {ax}; pass expand_nonconcat_dims=True to "
                                       f"take the largest")
    with name_scope(name or "SparseConcat"):
        shapes = [s.dense_shape for s in sps]
        checks = [] if expand_nonconcat_dims or not others else \
            _assert_equal_dims(shapes, others, op)
        sizes = a.stack([a.gather(s, ax) for s in shapes])                 # [n_inputs]
        offsets = m.cumsum(sizes, exclusive=True)
        column = constant(np.eye(rank, dtype=np.int64)[ax])                # moves axis only
        indices = a.concat([s.indices + a.gather(offsets, k) * column
                            for k, s in enumerate(sps)], 0)
        values = a.concat([convert_to_tensor(s.values) for s in sps], 0)
        out_shape = m.reduce_max(a.stack(shapes), axis=0) if expand_nonconcat_dims \
            else shapes[0]
        out_shape = out_shape * (1 - column) + m.reduce_sum(sizes) * column
        with control_dependencies(checks):
            out_shape = a.identity(out_shape)
        return reorder(SparseTensor(indices, values, out_shape))


def fill_empty_rows(sp_input: Any, default_value: Any,
                    name: str | None = None) -> tuple[SparseTensor, Any]:
    """``(filled, empty_row_indicator)`` (``tf.sparse.fill_empty_rows``): every row (dim 0)
    without an entry gets one at ``[row, 0, ..., 0]`` holding `default_value`;
    `empty_row_indicator` is a bool vector, True for those rows. The entries are ordered
    by row, the input order kept within a row (as TensorFlow's kernel). Differentiable in
    the values and in `default_value`."""
    op = "tw.sparse.fill_empty_rows"
    sp = as_sparse(sp_input, op)
    rank = _rank(sp, op)
    if rank < 1:
        raise sparse_error(op, "the SparseTensor must have at least one dimension")
    with name_scope(name or "SparseFillEmptyRows"):
        values = convert_to_tensor(sp.values)
        default = convert_to_tensor(default_value, dtype=values.dtype)
        if default.ndim != 0:
            raise sparse_error(op, f"default_value must be a scalar, got shape "
                                   f"{list(default.shape)}")
        rows = a.gather(sp.indices, 0, axis=1)                             # [n] int64
        zeros = zeros_of_dense_shape(sp, int64, op, axes=(0,))              # [dense_shape[0]]
        counts = tensor_scatter_nd_add(zeros, a.expand_dims(rows, 1), a.ones_like(rows))
        empty = m.equal(counts, a.zeros_like(counts))
        row_ids = m.cumsum(a.ones_like(zeros), exclusive=True)              # 0, 1, 2, ...
        new_rows = boolean_mask(row_ids, empty)                             # [k]
        new_indices = a.concat([a.expand_dims(new_rows, 1),
                                a.zeros_like(a.tile(a.expand_dims(new_rows, 1),
                                                    [1, rank - 1]))], 1) \
            if rank > 1 else a.expand_dims(new_rows, 1)
        new_values = a.zeros_like(m.cast(new_rows, values.dtype)) + default
        all_indices = a.concat([sp.indices, new_indices], 0)
        all_values = a.concat([values, new_values], 0)
        # a stable sort by row: within a row, the input's order (a new entry is alone)
        order = argsort(a.gather(all_indices, 0, axis=1), stable=True)
        filled = SparseTensor(a.gather(all_indices, order), a.gather(all_values, order),
                              sp.dense_shape)
        return filled, m.cast(empty, bool_)


def concat_v1(axis: int | None, sp_inputs: Sequence[Any], name: str | None = None,
              expand_nonconcat_dim: bool = False, concat_dim: int | None = None,
              expand_nonconcat_dims: bool | None = None) -> SparseTensor:
    """TensorFlow 1's ``tf.sparse.concat`` / ``tf.sparse_concat``: `name` third, and the
    deprecated spellings `concat_dim` (for `axis`) and `expand_nonconcat_dim`."""
    if concat_dim is not None:
        if axis is not None:
            raise sparse_error("tw.sparse.concat", "give axis or concat_dim, not both")
        axis = concat_dim
    if axis is None:
        raise sparse_error("tw.sparse.concat", "axis (or concat_dim) is required")
    if expand_nonconcat_dims is not None and expand_nonconcat_dim:
        raise sparse_error("tw.sparse.concat", "give expand_nonconcat_dims or "
                                               "expand_nonconcat_dim, not both")
    expand = expand_nonconcat_dim if expand_nonconcat_dims is None else expand_nonconcat_dims
    return concat(axis, sp_inputs, bool(expand), name)


__all__ = ["transpose", "concat", "fill_empty_rows", "concat_v1"]
