"""TensorFlow 1's sparse names for ``tensorweave.compat.v1``: ``tf.sparse`` (each function
building in the default graph), ``tf.SparseTensor``, ``tf.SparseTensorValue``,
``tf.sparse_placeholder``, ``tf.sparse_tensor_dense_matmul``, ``tf.sparse_tensor_to_dense``,
``tf.sparse_to_dense`` and, where defined, ``tf.sparse_reduce_sum``, ``tf.sparse_add``, ...
and ``tf.nn.embedding_lookup_sparse``."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import tensorweave.sparse as _sparse

from . import layout, segments
from .embedding import embedding_lookup_sparse, safe_embedding_lookup_sparse
from .session_support import sparse_placeholder

# TensorFlow 1's top-level name -> the tw.sparse function
_TOP_LEVEL = {"sparse_tensor_dense_matmul": "sparse_dense_matmul",
              "sparse_tensor_to_dense": "to_dense", "sparse_to_dense": "sparse_to_dense",
              "sparse_reduce_sum": "reduce_sum", "sparse_add": "add",
              "sparse_reorder": "reorder", "sparse_retain": "retain",
              "sparse_reshape": "reshape", "sparse_slice": "slice",
              "sparse_transpose": "transpose", "sparse_fill_empty_rows": "fill_empty_rows",
              "sparse_maximum": "maximum", "sparse_minimum": "minimum",
              "sparse_softmax": "softmax"}

# TensorFlow 1's own signatures, in tf.sparse and at the top level (tf.sparse_concat, ...):
# `name` comes before the arguments TensorFlow 2 moved ahead of it
_V1_SIGNATURES = {"concat": ("sparse_concat", layout.concat_v1),
                  "segment_sum": ("sparse_segment_sum", segments.segment_sum_v1),
                  "segment_mean": ("sparse_segment_mean", segments.segment_mean_v1),
                  "segment_sqrt_n": ("sparse_segment_sqrt_n", segments.segment_sqrt_n_v1)}


def _safe_v1(embedding_weights: Any, sparse_ids: Any, sparse_weights: Any = None,
             combiner: str = "mean", default_id: int | None = None, name: str | None = None,
             partition_strategy: str = "div", max_norm: Any = None) -> Any:
    """TensorFlow 1's ``tf.nn.safe_embedding_lookup_sparse`` (its argument order)."""
    return safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights,
                                        combiner, default_id, max_norm, name,
                                        partition_strategy)


# (TensorFlow 1's embedding_lookup_sparse: partition_strategy "mod" by default)
_NN = {"embedding_lookup_sparse": embedding_lookup_sparse,
       "safe_embedding_lookup_sparse": _safe_v1}


def v1_names(in_default_graph: Callable[[Any], Any], nn: types.ModuleType) -> dict[str, Any]:
    """The names compat.v1 binds (functions wrapped by `in_default_graph`); also adds
    the sparse embedding lookups to its `nn` module."""
    namespace = types.ModuleType("tensorweave.compat.v1.sparse", _sparse.__doc__)
    for name in _sparse.__all__:
        obj = getattr(_sparse, name)
        setattr(namespace, name, obj if isinstance(obj, type) or not callable(obj)
                else in_default_graph(obj))
    namespace.__all__ = list(_sparse.__all__)
    names: dict[str, Any] = {"sparse": namespace, "SparseTensor": _sparse.SparseTensor,
                             "SparseTensorValue": _sparse.SparseTensorValue,
                             "sparse_placeholder": in_default_graph(sparse_placeholder)}
    for v1_name, name in _TOP_LEVEL.items():
        if hasattr(_sparse, name):
            names[v1_name] = in_default_graph(getattr(_sparse, name))
    for name, (v1_name, fn) in _V1_SIGNATURES.items():
        setattr(namespace, name, in_default_graph(fn))
        names[v1_name] = in_default_graph(fn)
    for name, fn in _NN.items():
        setattr(nn, name, in_default_graph(fn))
    return names


__all__ = ["v1_names"]
