"""Routing slices of a tensor by index: DynamicPartition and DynamicStitch, with
TensorFlow's semantics.

They are the two halves of a sharded lookup (the paper's Part -> Gather -> Stitch):
DynamicPartition sends each slice of `data` to the output its `partitions` entry names,
and DynamicStitch puts slices from several tensors back into one, at the rows their
`indices` name. Both have data-dependent output sizes: dim 0 of every output is unknown
until run time, so the cpu target runs graphs that use them on the dataflow executor.
FlatIndexLike (the positions of a tensor's elements) serves DynamicPartition's gradient
and sharded lookups over ids whose number is known only at run time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import InvalidArgumentError, ShapeError
from ..dtypes import as_dtype, int32, int64
from ..registry import attr, def_op
from ..types import TensorType, format_shape
from .common import check_dtype, expect_tensor, same_dtype

Dim = int | None

_INDEX_DTYPES = (int32, int64)


def _merge(a: Dim, b: Dim) -> Dim:
    """The dim two compatible dims both are (ValueError when they differ)."""
    if a is None:
        return b
    if b is not None and a != b:
        raise ValueError
    return a


def _prefix_rest(index: TensorType, data: TensorType, index_role: str,
                 data_role: str) -> tuple[Dim, ...]:
    """The dims of `data` after the prefix that must equal `index`'s shape."""
    try:
        if index.rank > data.rank:
            raise ValueError
        for a, b in zip(index.shape, data.shape):
            _merge(a, b)
    except ValueError:
        raise ShapeError(f"the shape of {index_role} ({index}) must be a prefix of the shape "
                         f"of {data_role} ({data})") from None
    return tuple(data.shape[index.rank:])


def _as_shape_error(fn, *arrays: np.ndarray, **attrs) -> None:
    """Re-run inference on concrete shapes: a mismatch becomes InvalidArgumentError."""
    try:
        fn(*[TensorType(as_dtype(a.dtype), a.shape) for a in arrays], **attrs)
    except ShapeError as e:
        raise InvalidArgumentError(e.message) from None


def _first_bad(bad: np.ndarray) -> str:
    return ",".join(str(int(k)) for k in np.argwhere(bad)[0])


# ------------------------------------------------------------------ DynamicPartition

DynamicPartition = def_op(
    "DynamicPartition", ["data", "partitions"], {"num_partitions": attr("int")},
    doc="Split `data` into `num_partitions` tensors: output i holds, in row-major order, "
        "the slices data[j...] whose partitions[j...] == i. `partitions`' shape is a prefix "
        "of `data`'s; output i has shape [count of i] + data.shape[partitions.ndim:].")


@DynamicPartition.infer
def _dynamic_partition_infer(data, partitions, *, num_partitions):
    d = expect_tensor(data, "data")
    p = expect_tensor(partitions, "partitions")
    check_dtype(p, _INDEX_DTYPES, "partitions")
    if num_partitions < 1:
        raise ShapeError(f"num_partitions must be >= 1, got {num_partitions}")
    rest = _prefix_rest(p, d, "partitions", "data")
    # an empty partitions tensor leaves every output empty; otherwise counts are run-time
    rows: Dim = 0 if 0 in p.shape else None
    return [d.with_shape((rows,) + rest) for _ in range(num_partitions)]


@DynamicPartition.kernel("reference")
def _dynamic_partition_kernel(data, partitions, *, num_partitions):
    _as_shape_error(_dynamic_partition_infer, data, partitions, num_partitions=num_partitions)
    bad = (partitions < 0) | (partitions >= num_partitions)
    if bad.any():
        where = _first_bad(bad)
        raise InvalidArgumentError(
            f"partitions[{where}] = {partitions[tuple(np.argwhere(bad)[0])]} is not in "
            f"[0, {num_partitions})")
    flat = partitions.reshape(-1)
    rows = data.reshape((flat.size,) + data.shape[partitions.ndim:])
    # boolean indexing copies, in row-major order: TensorFlow's order within a partition
    return [np.ascontiguousarray(rows[flat == i]) for i in range(num_partitions)]


# --------------------------------------------------------------------- DynamicStitch

DynamicStitch = def_op(
    "DynamicStitch", ["*inputs"], {"N": attr("int")},
    doc="Interleave N data tensors by N index tensors (inputs: the N indices, then the N "
        "data): merged[indices[m][i...], ...] = data[m][i..., ...]; where an index repeats, "
        "the later value wins (m, then i in row-major order). data[m]'s shape is "
        "indices[m]'s plus a common trailing shape; the result has max(index) + 1 rows, and "
        "rows no index names are zeros.")


def _split_inputs(inputs: Sequence, n: int) -> tuple[Sequence, Sequence]:
    if n < 1 or len(inputs) != 2 * n:
        raise ShapeError(f"DynamicStitch takes N = {n} index tensors and N data tensors, "
                         f"got {len(inputs)} inputs")
    return inputs[:n], inputs[n:]


@DynamicStitch.infer
def _dynamic_stitch_infer(*inputs, N):
    indices, data = _split_inputs(inputs, N)
    idx = [expect_tensor(t, f"indices[{m}]") for m, t in enumerate(indices)]
    dat = [expect_tensor(t, f"data[{m}]") for m, t in enumerate(data)]
    for m, t in enumerate(idx):
        check_dtype(t, _INDEX_DTYPES, f"indices[{m}]")
    dtype = same_dtype(dat, [f"data[{m}]" for m in range(N)])
    rest: list[Dim] | None = None
    for m, (i, d) in enumerate(zip(idx, dat)):
        r = _prefix_rest(i, d, f"indices[{m}]", f"data[{m}]")
        try:
            if rest is None:
                rest = list(r)
            elif len(r) != len(rest):
                raise ValueError
            else:
                rest = [_merge(a, b) for a, b in zip(rest, r)]
        except ValueError:
            raise ShapeError(
                f"data[{m}] ({d}) must have the shape of indices[{m}] ({i}) followed by the "
                f"trailing shape of data[0] ({dat[0]} after {idx[0]}), "
                f"{format_shape(rest or ())}") from None
    rows: Dim = 0 if all(0 in i.shape for i in idx) else None
    return TensorType(dtype, (rows,) + tuple(rest or ()))


@DynamicStitch.kernel("reference")
def _dynamic_stitch_kernel(*inputs, N):
    _check_stitch(inputs, N)
    indices, data = inputs[:N], inputs[N:]
    rest = tuple(data[0].shape[indices[0].ndim:])
    rows = max((int(i.max()) + 1 for i in indices if i.size), default=0)
    out = np.zeros((rows,) + rest, dtype=data[0].dtype)
    for i, d in zip(indices, data):
        flat = i.reshape(-1)
        values = d.reshape((flat.size,) + rest)
        # the last occurrence of an index wins (NumPy's fancy assignment does not promise
        # an order for repeated indices)
        uniq, first_from_end = np.unique(flat[::-1], return_index=True)
        out[uniq] = values[flat.size - 1 - first_from_end]
    return out


def _check_stitch(inputs: Sequence[np.ndarray], n: int) -> None:
    """Shapes and index values valid at run time (InvalidArgumentError otherwise)."""
    _as_shape_error(_dynamic_stitch_infer, *inputs, N=n)
    for m, i in enumerate(inputs[:n]):
        bad = i < 0
        if bad.any():
            raise InvalidArgumentError(f"indices[{m}][{_first_bad(bad)}] = "
                                       f"{i[tuple(np.argwhere(bad)[0])]} is negative")


# --------------------------------------------------------------------- FlatIndexLike

FlatIndexLike = def_op(
    "FlatIndexLike", ["like"], {"dtype": attr("dtype", int32)},
    doc="The row-major flat index of every element of `like` (``arange(like.size)`` "
        "reshaped to like's shape): the positions that DynamicPartition scatters and "
        "DynamicStitch gathers back, for tensors whose size is known only at run time.")


@FlatIndexLike.infer
def _flat_index_like_infer(like, *, dtype):
    t = expect_tensor(like, "like")
    if dtype not in _INDEX_DTYPES:
        raise ShapeError(f"dtype must be i32 or i64, got {dtype.ir_name}")
    return TensorType(dtype, t.shape)


@FlatIndexLike.kernel("reference")
def _flat_index_like_kernel(like, *, dtype):
    return np.arange(like.size, dtype=dtype.np).reshape(like.shape)
