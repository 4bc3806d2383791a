"""TensorFlow 1's top-level names of functions tensorweave has elsewhere (``tf.svd`` is
``tf.linalg.svd``, ``tf.matrix_inverse`` is ``tf.linalg.inv``, ``tf.segment_sum`` is
``tf.math.segment_sum``), ``tf.foldr``, built on ``tf.foldl``, and ``tf.make_template``.

Each alias is the tensorweave function with TensorFlow 1's parameters (checked against TF
2.21's ``tf.compat.v1`` signatures), building into the default graph outside a graph.
``tf.diag``/``tf.diag_part`` are not here: TensorFlow 1's are the general (rank 2k)
diagonal, not ``tf.linalg.diag``'s batched one."""

from __future__ import annotations

from typing import Any

from ... import math as _math
from ...frontend import nest as _nest
from ...frontend.control_flow import foldl as _foldl
from ...frontend.ops import debugging as _debugging
from ...frontend.ops import indexing as _indexing
from ...frontend.ops import linalg as _linalg
from .graph import in_default_graph
from .template import make_template  # noqa: F401  (tf.make_template)

svd = in_default_graph(_linalg.svd)
qr = in_default_graph(_linalg.qr)
cholesky = in_default_graph(_linalg.cholesky)
matrix_determinant = in_default_graph(_linalg.det)
matrix_band_part = in_default_graph(_linalg.band_part)
matrix_diag_part = in_default_graph(_linalg.diag_part)
matrix_set_diag = in_default_graph(_linalg.set_diag)
matrix_triangular_solve = in_default_graph(_linalg.triangular_solve)
trace = in_default_graph(_linalg.trace)
self_adjoint_eig = in_default_graph(_linalg.eigh)
self_adjoint_eigvals = in_default_graph(_linalg.eigvalsh)
check_numerics = in_default_graph(_debugging.check_numerics)
logical_xor = in_default_graph(_math.logical_xor)

for _name in ("segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod",
              "unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod",
              "unsorted_segment_mean", "unsorted_segment_sqrt_n"):
    globals()[_name] = in_default_graph(getattr(_math, _name))


@in_default_graph
def matrix_inverse(input: Any, adjoint: bool = False, name: str | None = None) -> Any:  # noqa: A002
    """TensorFlow 1's ``tf.matrix_inverse``: ``tf.linalg.inv``."""
    return _linalg.inv(input, adjoint=adjoint, name=name)


@in_default_graph
def matrix_solve(matrix: Any, rhs: Any, adjoint: bool = False, name: str | None = None) -> Any:
    """TensorFlow 1's ``tf.matrix_solve``: ``tf.linalg.solve``."""
    return _linalg.solve(matrix, rhs, adjoint=adjoint, name=name)


@in_default_graph
def matrix_diag(diagonal: Any, name: str = "diag", k: int = 0, num_rows: int = -1,
                num_cols: int = -1, padding_value: Any = 0, align: str = "RIGHT_LEFT") -> Any:
    """TensorFlow 1's ``tf.matrix_diag``: ``tf.linalg.diag`` (`name` second)."""
    return _linalg.diag(diagonal, name=name, k=k, num_rows=num_rows, num_cols=num_cols,
                        padding_value=padding_value, align=align)


@in_default_graph
def matrix_transpose(a: Any, name: str = "matrix_transpose", conjugate: bool = False) -> Any:
    """TensorFlow 1's ``tf.matrix_transpose``: the last two axes swapped."""
    return _linalg.matrix_transpose(a, name=name, conjugate=conjugate)


@in_default_graph
def norm(tensor: Any, ord: Any = "euclidean", axis: Any = None, keepdims: Any = None,  # noqa: A002
         name: str | None = None, keep_dims: Any = None) -> Any:
    """TensorFlow 1's ``tf.norm`` (``keep_dims``, its old name of `keepdims`, accepted)."""
    if keepdims is not None and keep_dims is not None:
        raise ValueError("tf.norm: give keepdims or keep_dims, not both")
    return _linalg.norm(tensor, ord=ord, axis=axis,
                        keepdims=keepdims if keepdims is not None else keep_dims, name=name)


@in_default_graph
def foldr(fn: Any, elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """``a = fn(a, x)`` for each slice ``x`` of `elems` along axis 0, right to left
    (TensorFlow's ``tf.foldr``); without `initializer` the last slice is the initial
    ``a``. `elems` may be a nest of tensors with the same first dim."""
    leaves, tree = _nest.flatten(elems)
    reversed_elems = _nest.unflatten(tree, [_indexing.reverse(x, [0]) for x in leaves])
    return _foldl(fn, reversed_elems, initializer, parallel_iterations, back_prop,
                  swap_memory, name=name or "foldr")


__all__ = sorted(n for n in globals() if not n.startswith("_") and n not in (
    "annotations", "Any", "in_default_graph"))
