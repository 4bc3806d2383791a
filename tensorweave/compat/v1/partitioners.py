"""TensorFlow 1's variable partitioners and the shard layout they imply.

A partitioner is ``fn(shape, dtype) -> partitions``: one count per dimension, more than 1
in at most one. `shard_layout` turns that into the shard shapes and offsets TensorFlow
uses (the first ``dim % n`` shards get one slice more), which is also the layout
``embedding_lookup(..., partition_strategy="div")`` assumes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ...compiler.dtypes import as_dtype

Partitioner = Callable[..., list[int]]


def _element_bytes(dtype: Any, bytes_per_string_element: int) -> int:
    d = as_dtype(dtype)
    return bytes_per_string_element if d.ir_name == "string" else d.np.itemsize


def _full_shape(shape: Any, who: str) -> list[int]:
    dims = list(getattr(shape, "as_list", lambda: shape)())
    if any(d is None for d in dims):
        raise ValueError(f"{who} needs a fully defined shape, got {dims}")
    return [int(d) for d in dims]


def fixed_size_partitioner(num_shards: int, axis: int = 0) -> Partitioner:
    """A partitioner that splits `axis` into `num_shards` shards (fewer when the dimension
    is smaller)."""
    if num_shards < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}")

    def _partitioner(shape: Any, dtype: Any = None, **_: Any) -> list[int]:
        dims = _full_shape(shape, "fixed_size_partitioner")
        partitions = [1] * len(dims)
        partitions[axis] = min(num_shards, dims[axis])
        return partitions

    return _partitioner


def variable_axis_size_partitioner(max_shard_bytes: int, axis: int = 0,
                                   bytes_per_string_element: int = 16,
                                   max_shards: int | None = None) -> Partitioner:
    """A partitioner that splits `axis` so that each shard holds at most `max_shard_bytes`
    (at least one slice per shard), into at most `max_shards` shards."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("max_shard_bytes and bytes_per_string_element must be positive")
    if max_shards is not None and max_shards < 1:
        raise ValueError(f"max_shards must be positive, got {max_shards}")

    def _partitioner(shape: Any, dtype: Any, **_: Any) -> list[int]:
        dims = _full_shape(shape, "variable_axis_size_partitioner")
        partitions = [1] * len(dims)
        if dims[axis] == 0:
            return partitions
        bytes_per_slice = math.prod(dims) / dims[axis] * _element_bytes(
            dtype, bytes_per_string_element)
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice)) \
            if bytes_per_slice else dims[axis]
        shards = int(math.ceil(dims[axis] / slices_per_shard))
        partitions[axis] = min(max_shards, shards) if max_shards else shards
        return partitions

    return _partitioner


def min_max_variable_partitioner(max_partitions: int = 1, axis: int = 0,
                                 min_slice_size: int = 256 << 10,
                                 bytes_per_string_element: int = 16) -> Partitioner:
    """A partitioner that gives each shard at least `min_slice_size` bytes, with at most
    `max_partitions` shards along `axis`."""

    def _partitioner(shape: Any, dtype: Any, **_: Any) -> list[int]:
        dims = _full_shape(shape, "min_max_variable_partitioner")
        if axis >= len(dims):
            raise ValueError(f"cannot partition a variable of rank {len(dims)} along axis {axis}")
        total = math.prod(dims) * _element_bytes(dtype, bytes_per_string_element)
        partitions = [1] * len(dims)
        partitions[axis] = max(1, min(dims[axis], max_partitions,
                                      int(math.ceil(total / min_slice_size))))
        return partitions

    return _partitioner


def shard_layout(shape: Sequence[int], partitions: Sequence[int]) -> tuple[int, list[tuple]]:
    """The axis split by `partitions` and, per shard, its (offset, shape): TensorFlow's
    layout, where the first ``shape[axis] % n`` shards hold one slice more."""
    shape, partitions = list(shape), [int(p) for p in partitions]
    if len(partitions) != len(shape) or any(p < 1 for p in partitions):
        raise ValueError(f"a partitioner must give one count >= 1 per dimension of {shape}, "
                         f"got {partitions}")
    split = [i for i, p in enumerate(partitions) if p > 1]
    if len(split) > 1:
        raise ValueError(f"can only partition along one axis, got partitions {partitions}")
    axis = split[0] if split else 0
    n = partitions[axis]
    if n > max(shape[axis], 1):
        raise ValueError(f"cannot make {n} shards of {shape[axis]} slices")
    base, extra = divmod(shape[axis], n)
    layout, offset = [], 0
    for k in range(n):
        size = base + (1 if k < extra else 0)
        layout.append((offset, tuple(shape[:axis]) + (size,) + tuple(shape[axis + 1:])))
        offset += size
    return axis, layout
