"""``tw.sparse.SparseTensor``: TensorFlow's COO sparse tensor, a composite of three tensors.

`indices` (int64 ``[N, rank]``) lists the coordinates of the stored entries, `values`
(``[N]``) their values and `dense_shape` (int64 ``[rank]``) the shape of the dense tensor
it stands for. It is not an IR type: every sparse op is a composition of dense ops on the
three components, so each target runs it and autodiff differentiates it.

`nest.flatten` expands a SparseTensor (and a `SparseTensorSpec`) into its components
(`_tw_components`), so ``tw.compile`` takes and returns SparseTensors, and a v1 Session
fetches them as `SparseTensorValue` and feeds them (`session_support.py`).
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from ..compiler.dtypes import DType, as_dtype, int64
from ..errors import ShapeError
from ..frontend.building import convert_to_tensor
from ..frontend.call_site import user_location
from ..frontend.function import TensorSpec
from ..frontend.ops.array import _const_array
from ..frontend.tensor import EagerTensor, Tensor
from ..frontend.tensor_shape import TensorShape

SparseTensorValue = collections.namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])
SparseTensorValue.__doc__ = ("A fetched SparseTensor (TensorFlow 1's ``tf.SparseTensorValue``): "
                             "NumPy arrays `indices`, `values` and `dense_shape`.")


def sparse_error(op: str, message: str) -> ShapeError:
    """A ShapeError naming the sparse op and the user's line."""
    loc = user_location()
    return ShapeError(message, op=op, location=str(loc) if loc else None)


def _component(value: Any, dtype: DType | None) -> Any:
    # kept as given: tensors (traced or eager), arrays (tw.compile results), TensorSpecs
    # (an input signature's SparseTensorSpec rebuilt by nest.unflatten)
    if isinstance(value, (Tensor, EagerTensor, TensorSpec)):
        return value
    if isinstance(value, np.ndarray):
        if dtype is int64 and value.dtype.kind in "iu" and value.dtype != np.int64:
            return value.astype(np.int64)
        return value
    return convert_to_tensor(value, dtype=dtype)


class SparseTensor:
    """A sparse tensor of shape `dense_shape` whose entry ``indices[i]`` is ``values[i]``
    and every other entry is zero (TensorFlow's ``tf.sparse.SparseTensor``)."""

    def __init__(self, indices: Any, values: Any, dense_shape: Any) -> None:
        self.indices = _component(indices, int64)
        self.values = _component(values, None)
        self.dense_shape = _component(dense_shape, int64)
        for what, c in (("indices", self.indices), ("dense_shape", self.dense_shape)):
            if as_dtype(c.dtype) is not int64:
                raise sparse_error("tw.sparse.SparseTensor",
                                   f"{what} must be int64, got {as_dtype(c.dtype).name}")
        ranks = (len(self.indices.shape), len(self.values.shape), len(self.dense_shape.shape))
        if ranks != (2, 1, 1):
            raise sparse_error("tw.sparse.SparseTensor",
                               f"indices, values and dense_shape must have ranks 2, 1 and 1, "
                               f"got shapes {list(self.indices.shape)}, "
                               f"{list(self.values.shape)} and {list(self.dense_shape.shape)}")

    # the composite protocol of nest.flatten: (the class that rebuilds it, components)
    def _tw_components(self) -> tuple[type, tuple[Any, Any, Any]]:
        return SparseTensor, (self.indices, self.values, self.dense_shape)

    @property
    def dtype(self) -> DType:
        """The dtype of the values."""
        return as_dtype(self.values.dtype)

    @property
    def shape(self) -> TensorShape:
        """The static dense shape: the known value of `dense_shape`, or None where it is
        known only at run time (its length is the rank, when known)."""
        known = static_dense_shape(self.dense_shape, self.indices)
        hint = getattr(self, "_shape_hint", None)  # a sparse_placeholder's declared shape
        if hint is None or known.rank is not None and None not in known:
            return known
        return TensorShape([k if k is not None else h for k, h in zip(known, hint)]
                           if known.rank is not None else hint)

    @property
    def rank(self) -> int | None:
        """The rank of the dense tensor, when known."""
        s = self.shape
        return None if s.rank is None else len(s)

    def get_shape(self) -> TensorShape:
        """`shape` (TensorFlow 1's spelling)."""
        return self.shape

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self.indices!r}, values={self.values!r}, "
                f"dense_shape={self.dense_shape!r})")


def static_dense_shape(dense_shape: Any, indices: Any = None) -> TensorShape:
    """The dense shape known when the graph is built (None dims: known at run time)."""
    known = None if isinstance(dense_shape, TensorSpec) else (
        np.asarray(dense_shape) if isinstance(dense_shape, (np.ndarray, EagerTensor))
        else _const_array(dense_shape))
    if known is not None:
        return TensorShape([int(d) for d in np.asarray(known).reshape(-1)])
    rank = dense_shape.shape[0]
    if rank is None and indices is not None:
        rank = indices.shape[1]
    return TensorShape(None) if rank is None else TensorShape([None] * rank)


class SparseTensorSpec:
    """The type of a SparseTensor argument in an input signature:
    ``SparseTensorSpec([None, 100], tw.float32)``; a call passes a SparseTensor."""

    def __init__(self, shape: Any = None, dtype: DType | str = "float32") -> None:
        self.shape = TensorShape(shape)
        self.dtype = as_dtype(dtype)

    def _tw_components(self) -> tuple[type, tuple[TensorSpec, TensorSpec, TensorSpec]]:
        rank = None if self.shape.rank is None else len(self.shape)
        return SparseTensor, (TensorSpec([None, rank], int64), TensorSpec([None], self.dtype),
                              TensorSpec([rank], int64))

    def __repr__(self) -> str:
        return f"SparseTensorSpec(shape={self.shape}, dtype={self.dtype!r})"


def is_sparse(x: Any) -> bool:
    """Whether `x` is a SparseTensor or a SparseTensorValue."""
    return isinstance(x, (SparseTensor, SparseTensorValue))


def as_sparse(x: Any, op: str) -> SparseTensor:
    """`x` as a SparseTensor (a SparseTensorValue is converted), or an error naming `op`."""
    if isinstance(x, SparseTensor):
        return x
    if isinstance(x, SparseTensorValue):
        return SparseTensor(*x)
    raise sparse_error(op, f"expected a SparseTensor, got {type(x).__name__}")


__all__ = ["SparseTensor", "SparseTensorValue", "SparseTensorSpec", "static_dense_shape",
           "is_sparse", "as_sparse", "sparse_error"]
