"""``tw.nn.embedding_lookup_sparse`` (also ``tf.compat.v1.nn``'s): the weighted
combination of the embeddings of each row's ids of a SparseTensor."""

from __future__ import annotations

from typing import Any

from ..compiler.dtypes import int32
from ..frontend.building import convert_to_tensor
from ..frontend.context import name_scope
from ..frontend.ops import array as a
from ..frontend.ops import math as m
from ..frontend.ops.embedding import embedding_lookup
from ..frontend.ops.indexing import boolean_mask, tensor_scatter_nd_add
from ..frontend.ops.segments import segment_sum
from .dense_shape import zeros_of_dense_shape
from .sparse_tensor import as_sparse, sparse_error


def _div_no_nan(x: Any, y: Any) -> Any:
    zero = m.equal(y, a.zeros_like(y))
    safe = m.where(zero, a.ones_like(y), y)
    return m.where(zero, a.zeros_like(x), x / safe)


def embedding_lookup_sparse(params: Any, sp_ids: Any, sp_weights: Any,
                            partition_strategy: str = "mod", name: str | None = None,
                            combiner: str | None = None, max_norm: Any = None) -> Any:
    """Row ``r`` of the result combines the embeddings ``params[id]`` of the ids in row
    ``r`` of the rank-2 SparseTensor `sp_ids` (weighted by `sp_weights`' values, or 1):
    ``"sum"``, ``"mean"`` (the default; divided by the sum of the weights) or ``"sqrtn"``
    (divided by the root of the sum of squared weights); a row without ids is zeros. As in
    TensorFlow, `sp_ids`' rows must be sorted, and the result has ``max(row) + 1`` rows
    (a trailing row without ids is not in it). `params` is a table, a list of shards or
    a partitioned variable, looked up with `partition_strategy` as in `embedding_lookup`,
    so a variable's gradient is IndexedSlices of the rows used."""
    op = "tw.nn.embedding_lookup_sparse"
    combiner = combiner or "mean"
    if combiner not in ("mean", "sum", "sqrtn"):
        raise sparse_error(op, f"combiner must be 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    sp = as_sparse(sp_ids, op)
    with name_scope(name or "embedding_lookup_sparse"):
        segments = m.cast(a.gather(sp.indices, 0, axis=1), int32)
        rows = embedding_lookup(params, convert_to_tensor(sp.values),
                                partition_strategy=partition_strategy, max_norm=max_norm)
        if sp_weights is None:
            total = segment_sum(rows, segments)
            if combiner == "sum":
                return total
            count = segment_sum(a.ones_like(m.cast(segments, rows.dtype)), segments)
            denom = count if combiner == "mean" else m.sqrt(count)
            return _div_no_nan(total, a.expand_dims(denom, 1))
        w = as_sparse(sp_weights, op)
        weights = convert_to_tensor(w.values)
        if weights.dtype is not rows.dtype:
            raise sparse_error(op, f"sp_weights' values ({weights.dtype.name}) must have "
                                   f"params' dtype ({rows.dtype.name})")
        total = segment_sum(rows * a.expand_dims(weights, 1), segments)
        if combiner == "sum":
            return total
        denom = (segment_sum(weights, segments) if combiner == "mean"
                 else m.sqrt(segment_sum(weights * weights, segments)))
        return _div_no_nan(total, a.expand_dims(denom, 1))


def embedding_lookup_sparse_v2(params: Any, sp_ids: Any, sp_weights: Any,
                               combiner: str | None = None, max_norm: Any = None,
                               name: str | None = None) -> Any:
    """TensorFlow 2's ``tf.nn.embedding_lookup_sparse`` (no partition_strategy: "div")."""
    return embedding_lookup_sparse(params, sp_ids, sp_weights, "div", name, combiner,
                                   max_norm)




def safe_embedding_lookup_sparse(embedding_weights: Any, sparse_ids: Any,
                                 sparse_weights: Any = None, combiner: str = "mean",
                                 default_id: int | None = None, max_norm: Any = None,
                                 name: str | None = None, partition_strategy: str = "div",
                                 allow_fast_lookup: bool = False) -> Any:
    """``tf.nn.safe_embedding_lookup_sparse`` for a rank-2 `sparse_ids`: ids < 0 (and,
    with weights and a combiner other than "sum", entries of weight <= 0) are dropped,
    and the result has one row per row of the dense shape: a row left without ids is the
    embedding of `default_id`, or zeros. `allow_fast_lookup` changes nothing here."""
    op = "tw.nn.safe_embedding_lookup_sparse"
    if combiner not in ("mean", "sum", "sqrtn"):
        raise sparse_error(op, f"combiner must be 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    sp = as_sparse(sparse_ids, op)
    if sp.rank is not None and sp.rank != 2:
        raise sparse_error(op, f"sparse_ids must have rank 2 here, got dense shape {sp.shape}")
    with name_scope(name or "embedding_lookup"):
        ids = convert_to_tensor(sp.values)
        keep = m.greater_equal(ids, a.zeros_like(ids))
        weights = None
        if sparse_weights is not None:
            weights = convert_to_tensor(as_sparse(sparse_weights, op).values)
            if combiner != "sum":  # (TensorFlow keeps weights <= 0 for "sum")
                keep = m.logical_and(keep, m.greater(weights, a.zeros_like(weights)))
            weights = boolean_mask(weights, keep)
        ids = boolean_mask(ids, keep)
        rows_of = a.expand_dims(boolean_mask(a.gather(sp.indices, 0, axis=1), keep), 1)
        emb = embedding_lookup(embedding_weights, ids, partition_strategy=partition_strategy,
                               max_norm=max_norm)
        if weights is None:
            weights = a.ones_like(m.cast(ids, emb.dtype))
        elif weights.dtype is not emb.dtype:
            raise sparse_error(op, f"sparse_weights' values ({weights.dtype.name}) must have "
                                   f"the embeddings' dtype ({emb.dtype.name})")
        dim = emb.shape[1]

        def per_row(data: Any, trailing: tuple[int, ...]) -> Any:
            base = zeros_of_dense_shape(sp, emb.dtype, op, trailing=trailing, axes=(0,))
            return tensor_scatter_nd_add(base, rows_of, data)

        total = per_row(emb * a.expand_dims(weights, 1), (dim,))
        count = per_row(a.ones_like(weights), ())
        if combiner == "sum":
            out = total
        else:
            denom = (per_row(weights, ()) if combiner == "mean"
                     else m.sqrt(per_row(weights * weights, ())))
            out = _div_no_nan(total, a.expand_dims(denom, 1))
        if default_id is None:
            return out
        empty = a.expand_dims(m.equal(count, a.zeros_like(count)), 1)
        default = embedding_lookup(embedding_weights, [default_id],
                                   partition_strategy=partition_strategy, max_norm=max_norm)
        return m.where(empty, default + a.zeros_like(out), out)


__all__ = ["embedding_lookup_sparse", "embedding_lookup_sparse_v2", "safe_embedding_lookup_sparse"]
