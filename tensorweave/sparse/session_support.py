"""TensorFlow 1's sparse placeholders, and the Session's sparse fetches and feeds.

A fetched SparseTensor comes back as a `SparseTensorValue` of arrays; a fed one takes a
SparseTensorValue, a SparseTensor of arrays or an ``(indices, values, dense_shape)``
tuple, which feed its three tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compiler.dtypes import DType, as_dtype, int64
from ..errors import InvalidArgumentError
from ..frontend import nest
from ..frontend.tensor_shape import TensorShape
from .sparse_tensor import SparseTensor, SparseTensorValue


def sparse_placeholder(dtype: DType | str, shape: Any = None, name: str | None = None) -> SparseTensor:
    """A SparseTensor to feed (``tf.compat.v1.sparse_placeholder``): placeholders for
    `indices` (int64 ``[None, rank]``) and `values` (``[None]``), and a `dense_shape` that
    must be fed when `shape` is None and otherwise defaults to `shape` (-1 for its None
    dims), as in TensorFlow."""
    from ..compat.v1.graph import placeholder, placeholder_with_default
    from ..frontend.context import name_scope

    dtype = as_dtype(dtype)
    with name_scope(name or "SparsePlaceholder"):
        if shape is None:
            rank = None
            dense_shape = placeholder(int64, [None], name="shape")
        else:
            declared = TensorShape(shape)
            rank = len(declared)
            default = np.asarray([-1 if d is None else d for d in declared], np.int64)
            dense_shape = placeholder_with_default(default, [rank], name="shape")
        sp = SparseTensor(placeholder(int64, [None, rank], name="indices"),
                          placeholder(dtype, [None], name="values"), dense_shape)
    if shape is not None:
        sp._shape_hint = TensorShape(shape)
    return sp


def session_fetches(fetches: Any) -> Any:
    """`fetches` with each SparseTensor replaced by a SparseTensorValue of its tensors,
    which the Session fetches as arrays."""
    def as_value(x: Any) -> Any:
        if isinstance(x, SparseTensor):
            return SparseTensorValue(x.indices, x.values, x.dense_shape)
        return x
    return nest.map_structure(as_value, fetches, expand_composites=False)


def session_feeds(feed_dict: dict) -> dict:
    """`feed_dict` with each SparseTensor key replaced by its three tensors."""
    if not any(isinstance(k, SparseTensor) for k in feed_dict):
        return feed_dict
    out: dict = {}
    for key, value in feed_dict.items():
        if not isinstance(key, SparseTensor):
            out[key] = value
            continue
        if isinstance(value, SparseTensor):
            value = (value.indices, value.values, value.dense_shape)
        if not isinstance(value, tuple) or len(value) != 3:
            raise InvalidArgumentError(
                f"cannot feed {type(value).__name__} to SparseTensor {key!r}: feed a "
                f"SparseTensorValue or an (indices, values, dense_shape) tuple")
        indices, values, dense_shape = (np.asarray(v) for v in value)
        hint = key.shape
        if dense_shape.ndim == 1 and hint.rank is not None and (
                len(dense_shape) != len(hint) or any(
                    h is not None and h != d for h, d in zip(hint, dense_shape))):
            raise InvalidArgumentError(
                f"cannot feed dense_shape {dense_shape.tolist()} to a SparseTensor of shape "
                f"{hint}")
        if indices.size == 0:  # (an empty list: no entries of the sparse tensor's rank)
            indices = indices.reshape(0, len(dense_shape) if dense_shape.ndim == 1 else 0)
        out[key.indices] = indices
        out[key.values] = values
        out[key.dense_shape] = dense_shape
    return out


__all__ = ["sparse_placeholder", "session_fetches", "session_feeds"]
