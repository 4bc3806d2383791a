"""``tw.sparse``: TensorFlow's ``tf.sparse`` (SparseTensor and the ops on it).

Every op is a composition of dense ops (gather, segment sums, scatters, arithmetic) on
the SparseTensor's three component tensors, so it runs on every target and differentiates
through their gradients. See docs/sparse.md.
"""

from .conversion import from_dense, sparse_tensor_to_dense, sparse_to_dense, to_dense
from .elementwise import maximum, minimum, softmax
from .embedding import embedding_lookup_sparse_v2 as embedding_lookup_sparse
from .embedding import safe_embedding_lookup_sparse
from .layout import concat, fill_empty_rows, transpose
from .manipulation import add, reduce_sum, reorder, reshape, retain, slice  # noqa: A004
from .matmul import sparse_dense_matmul
from .segments import segment_mean, segment_sqrt_n, segment_sum
from .sparse_tensor import SparseTensor, SparseTensorSpec, SparseTensorValue

matmul = sparse_dense_matmul  # tf.sparse.matmul, TensorFlow's older alias

__all__ = ["SparseTensor", "SparseTensorSpec", "SparseTensorValue", "from_dense", "to_dense",
           "sparse_dense_matmul", "matmul", "embedding_lookup_sparse", "sparse_tensor_to_dense",
           "sparse_to_dense", "safe_embedding_lookup_sparse", "add", "reduce_sum", "reorder",
           "reshape", "retain", "slice", "transpose", "concat", "fill_empty_rows", "maximum",
           "minimum", "softmax", "segment_sum", "segment_mean", "segment_sqrt_n"]
