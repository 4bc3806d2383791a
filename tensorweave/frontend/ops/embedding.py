"""Embedding lookups over one table or a table sharded by rows (``tw.nn.embedding_lookup``).

A sharded lookup is the TensorFlow paper's Part -> Gather -> Stitch (section 4.2):
DynamicPartition sends each id to the shard that holds its row, one Gather per shard runs
colocated with that shard (so on a parameter server only the looked-up rows leave the
task), and DynamicStitch puts the rows back in the order of the ids. The two partition
strategies and `max_norm` follow TensorFlow 1's ``tf.nn.embedding_lookup`` exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...compiler.dtypes import int32
from ...errors import ShapeError
from ..building import apply_op1, convert_to_tensor
from ..context import colocate_with
from . import array as a
from . import math as m

TensorLike = Any

PARTITION_STRATEGIES = ("mod", "div")


def shard_list(params: Any) -> list[Any]:
    """The shards of `params`: a list or tuple of tables, anything list-like that says it
    holds shards (a partitioned variable: ``_shard_list()``), or one table."""
    if isinstance(params, (list, tuple)):
        shards = list(params)
    elif hasattr(params, "_shard_list"):
        partitions = list(getattr(params, "_get_partitions", lambda: [])())
        if any(p != 1 for p in partitions[1:]):
            # its shards hold columns, not rows: looked up as rows they give wrong values
            raise ValueError(f"embedding_lookup needs a table partitioned by rows (axis 0); "
                             f"'{getattr(params, 'name', params)}' is partitioned "
                             f"{partitions}")
        shards = list(params._shard_list())
    else:
        shards = [params]
    if not shards:
        raise ValueError("embedding_lookup needs at least one table in params")
    return shards


def _rows(shard: Any) -> int | None:
    shape = tuple(shard.shape)
    if not shape:
        raise ShapeError(f"an embedding table must have rank >= 1, got a scalar ({shard!r})")
    return shape[0]


def _assign(flat_ids: TensorLike, shards: Sequence[Any], strategy: str) -> tuple[Any, Any]:
    """For each id: the shard that holds its row, and the row's index in that shard."""
    n = len(shards)
    if strategy == "mod":
        # id i lives in shard i % n, at row i // n
        return m.floormod(flat_ids, n), m.floordiv(flat_ids, n)
    sizes = [_rows(s) for s in shards]
    if None in sizes:
        raise ShapeError(f"partition_strategy='div' needs the number of rows of every shard "
                         f"when the graph is built, got {sizes}")
    # contiguous blocks: the first `extras` shards hold q + 1 rows, the others q (the shard
    # shapes a partitioner makes; TensorFlow assumes them the same way)
    q, extras = divmod(sum(sizes), n)
    layout = [q + 1 if k < extras else q for k in range(n)]
    if sizes != layout:  # other sizes would map ids to the rows of other ids, silently
        raise ShapeError(f"partition_strategy='div' needs shards of {layout} rows for a "
                         f"table of {sum(sizes)} rows (the first {extras} one row more), "
                         f"got {sizes}")
    if q == 0:
        return flat_ids, a.zeros_like(flat_ids)
    shard = m.maximum(m.floordiv(flat_ids, q + 1), m.floordiv(flat_ids - extras, q))
    row = m.where(shard < extras, m.floormod(flat_ids, q + 1), m.floormod(flat_ids - extras, q))
    return shard, row


def _clip_rows(rows: TensorLike, first_axis: int, max_norm: Any) -> TensorLike:
    """`rows` with each embedding (the axes from `first_axis` on) scaled down to an L2 norm
    of at most `max_norm` (TensorFlow's clip_by_norm, safe for all-zero rows)."""
    if max_norm is None:
        return rows
    axes = list(range(first_axis, rows.ndim))
    if not axes:
        raise ShapeError("max_norm needs embeddings of rank >= 1 (params of rank >= 2)")
    return m.clip_by_norm(rows, max_norm, axes)


def _gather_from(shard: Any, ids: TensorLike, max_norm: Any) -> TensorLike:
    """Rows `ids` of `shard`, computed on the shard's device."""
    colocate = shard if hasattr(shard, "handle") or hasattr(shard, "producer") else None
    with colocate_with(colocate):
        rows = a.gather(shard, ids)
        return _clip_rows(rows, ids.ndim, max_norm)


def embedding_lookup(params: Any, ids: TensorLike, partition_strategy: str = "div",
                     name: str | None = None, validate_indices: bool = True,
                     max_norm: Any = None) -> TensorLike:
    """The rows of the embedding table `params` at `ids`: shape ``ids.shape +
    params.shape[1:]``.

    `params` is one table (a variable or tensor), a list of shards of one table split by
    rows, or a partitioned variable (``tf.get_variable(..., partitioner=...)``). With
    several shards, ``partition_strategy="div"`` (the default: TensorFlow 2's
    ``tf.nn.embedding_lookup`` always uses it, and it is a partitioned variable's layout)
    puts ids in contiguous blocks (the first ``total % n`` shards hold one row more);
    ``"mod"`` (``tf.compat.v1.nn.embedding_lookup``'s default, TensorFlow 1's) puts id
    ``i`` in shard ``i % n`` at row ``i // n``. Each shard's Gather runs on that shard's
    device. With `max_norm`, each embedding whose L2 norm exceeds it is scaled down to
    norm `max_norm`. `validate_indices` is accepted for TensorFlow compatibility (ids are
    always checked).
    """
    if partition_strategy not in PARTITION_STRATEGIES:
        hint = ("; TensorFlow 2's third argument is max_norm: pass it as max_norm="
                if isinstance(partition_strategy, (int, float)) else "")
        raise ValueError(f"embedding_lookup: partition_strategy must be 'mod' or 'div', got "
                         f"{partition_strategy!r}{hint}")
    shards = shard_list(params)
    ids = convert_to_tensor(ids)
    if not ids.dtype.is_integer:
        raise TypeError(f"embedding_lookup: ids must be integers, got {ids.dtype.ir_name}")
    if len(shards) == 1:
        return a.identity(_gather_from(shards[0], ids, max_norm), name=name)

    flat_ids = a.reshape(ids, [-1])
    shard_of, row_of = _assign(flat_ids, shards, partition_strategy)
    if shard_of.dtype is not int32:
        # an out-of-range id's shard number stays out of range in int32 (DynamicPartition
        # names it) instead of wrapping into [0, n) and reading another id's row
        shard_of = m.minimum(m.maximum(shard_of, -1), len(shards))
    shard_of = m.cast(shard_of, "int32")
    positions = apply_op1("FlatIndexLike", [flat_ids])
    rows_per_shard = a.dynamic_partition(row_of, shard_of, len(shards))
    positions_per_shard = a.dynamic_partition(positions, shard_of, len(shards))
    found = [_gather_from(s, r, max_norm) for s, r in zip(shards, rows_per_shard)]
    stitched = a.dynamic_stitch(positions_per_shard, found)
    return a.identity(_unflatten(stitched, ids, tuple(shards[0].shape)[1:]), name=name)


def _unflatten(rows: TensorLike, ids: TensorLike, element: tuple) -> TensorLike:
    """`rows` (one per flattened id) in the shape ``ids.shape + element``."""
    if ids.ndim == 1:
        return rows
    dims = list(ids.shape)
    if dims.count(None) <= 1 and None not in element:
        return a.reshape(rows, [-1 if d is None else d for d in dims] + list(element))
    # dims known only at run time: reshape like a tensor of the result's shape (row 0 for
    # every id; a rare case, so the extra gather is acceptable)
    return apply_op1("ReshapeLike", [rows, a.gather(rows, a.zeros_like(ids))])


__all__ = ["embedding_lookup"]
