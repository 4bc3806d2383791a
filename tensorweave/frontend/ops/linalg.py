"""Linear algebra with TensorFlow's names and semantics (``tf.linalg``): solvers,
factorizations, determinants, norms, diagonals and bands. Every function works on the last
two axes and treats leading axes as a batch. The factorizations and solvers take float32
or float64 (their reference kernels are LAPACK, through numpy.linalg).

Gradients (TensorFlow's formulas; `tensorweave/frontend/grads/linalg.py`) exist for
`inv`, `solve`, `cholesky`, `triangular_solve`, `det`, `slogdet`, `logdet`, `qr`, `svd`,
`eigh`, `eigvalsh`, `norm`, `diag_part`, `diag`, `set_diag`, `trace` and `band_part`, with
the restrictions each docstring states (distinct singular values or eigenvalues, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ..building import apply_op, apply_op1, convert_operands, convert_to_tensor
from ..call_site import user_location
from ..context import name_scope
from ..tensor import EagerTensor, Tensor
from . import array as _array
from . import math as _math

TensorLike = Any  # a tensor, variable, NumPy array or Python value
Result = Tensor | EagerTensor


def _loc() -> str | None:
    loc = user_location()
    return str(loc) if loc else None


def _usage_error(fn: str, message: str) -> ShapeError:
    """A ShapeError for a misuse of `fn` found in Python, at the user's line."""
    loc = user_location()
    return ShapeError(message, op=f"tw.linalg.{fn}", location=str(loc) if loc else None)


def _static_int(value: Any, fn: str, arg: str) -> int:
    """`value` as a Python int: band widths and diagonal sizes are attributes, known when
    the graph is built."""
    if isinstance(value, Tensor):
        raise DTypeError(f"{arg} must be known when the graph is built (a Python int), got "
                         f"the symbolic tensor {value.name}", op=f"tw.linalg.{fn}",
                         location=_loc())
    arr = np.asarray(value.numpy() if isinstance(value, EagerTensor) else value)
    if arr.ndim != 0 or arr.dtype.kind not in "iu":
        raise DTypeError(f"{arg} must be an int, got {value!r}", op=f"tw.linalg.{fn}",
                         location=_loc())
    return int(arr)


_ALIGNMENTS = ("LEFT_LEFT", "LEFT_RIGHT", "RIGHT_LEFT", "RIGHT_RIGHT")


def _diagonal_index(fn: str, k: Any, align: str) -> int:
    """A single diagonal index `k` (TensorFlow also takes a pair (low, high) for a band of
    diagonals; not supported). `align` only matters for bands, so it is only checked."""
    if align not in _ALIGNMENTS:
        raise InvalidArgumentError(f"align must be one of {list(_ALIGNMENTS)}, got {align!r}",
                                   op=f"tw.linalg.{fn}", location=_loc())
    if isinstance(k, (tuple, list)) or np.ndim(k) > 0:
        raise NotImplementedError(f"tw.linalg.{fn}: only a single diagonal (an int k) is "
                                  f"supported, got k={k!r}")
    return _static_int(k, fn, "k")


# ------------------------------------------------------------------ products, transposes

def matrix_transpose(a: TensorLike, name: str | None = None, conjugate: bool = False) -> Result:
    """Swap the last two axes of `a` (rank >= 2): ``tf.linalg.matrix_transpose``, also
    ``tw.linalg.transpose``. `conjugate` changes nothing for real dtypes."""
    a = convert_to_tensor(a)
    rank = len(a.shape)
    if rank < 2:
        raise _usage_error("matrix_transpose", f"a must be a matrix or a batch of them "
                           f"(rank >= 2), got a of shape {list(a.shape)}")
    return _array.transpose(a, list(range(rank - 2)) + [rank - 1, rank - 2], name=name)


def adjoint(matrix: TensorLike, name: str | None = None) -> Result:
    """The conjugate transpose of the last two axes (``tf.linalg.adjoint``): for real
    dtypes, `matrix_transpose`."""
    return matrix_transpose(matrix, name=name, conjugate=True)


# ------------------------------------------------------------------------------ solvers

def inv(input: TensorLike, adjoint: bool = False, name: str | None = None) -> Result:  # noqa: A002
    """The inverse of each square matrix [..., M, M] (``tf.linalg.inv``); of its
    transpose if `adjoint`. A singular matrix is an InvalidArgumentError."""
    return apply_op1("MatrixInverse", [convert_to_tensor(input)], {"adjoint": bool(adjoint)},
                     name=name)


def solve(matrix: TensorLike, rhs: TensorLike, adjoint: bool = False,
          name: str | None = None) -> Result:
    """X [..., M, K] with ``matrix @ X = rhs`` (``adjoint(matrix) @ X = rhs`` if
    `adjoint`) for square `matrix` [..., M, M] (``tf.linalg.solve``). Batch dims must be
    equal, as in TensorFlow. A singular matrix is an InvalidArgumentError."""
    matrix, rhs = convert_operands(matrix, rhs)
    return apply_op1("MatrixSolve", [matrix, rhs], {"adjoint": bool(adjoint)}, name=name)


def triangular_solve(matrix: TensorLike, rhs: TensorLike, lower: bool = True,
                     adjoint: bool = False, name: str | None = None) -> Result:
    """X with ``T @ X = rhs`` (``adjoint(T) @ X = rhs`` if `adjoint`), T the lower
    (`lower=True`) or upper triangle of each square `matrix`; the other triangle is not
    read (``tf.linalg.triangular_solve``). Batch dims broadcast. A zero on the diagonal is
    an InvalidArgumentError."""
    matrix, rhs = convert_operands(matrix, rhs)
    return apply_op1("MatrixTriangularSolve", [matrix, rhs],
                     {"lower": bool(lower), "adjoint": bool(adjoint)}, name=name)


def cholesky(input: TensorLike, name: str | None = None) -> Result:  # noqa: A002
    """The lower-triangular Cholesky factor L, ``L @ L^T = input``, of each symmetric
    positive definite matrix (``tf.linalg.cholesky``). Only the lower triangle of `input`
    is read; one that is not positive definite is an InvalidArgumentError. The gradient
    (Murray 2016, as TensorFlow's) is symmetric: it is the gradient with respect to a
    symmetric input, so differentiate through a symmetric construction (``A A^T``, ...)."""
    return apply_op1("Cholesky", [convert_to_tensor(input)], name=name)


# ------------------------------------------------------------------------- determinants

def det(input: TensorLike, name: str | None = None) -> Result:  # noqa: A002
    """The determinant of each square matrix: [..., M, M] -> [...] (``tf.linalg.det``).
    Its gradient ``g det(A) A^-T`` needs an invertible matrix."""
    return apply_op1("MatrixDeterminant", [convert_to_tensor(input)], name=name)


def slogdet(input: TensorLike, name: str | None = None) -> tuple[Result, Result]:  # noqa: A002
    """``(sign, log_abs_determinant)`` of each square matrix (``tf.linalg.slogdet``):
    ``det = sign * exp(log_abs_determinant)`` without overflow; a singular matrix gives
    (0, -inf). The gradient flows through `log_abs_determinant` (``g A^-T``)."""
    sign, log_abs = apply_op("LogMatrixDeterminant", [convert_to_tensor(input)], name=name)
    return sign, log_abs


def logdet(matrix: TensorLike, name: str | None = None) -> Result:
    """The log of the determinant of each symmetric positive definite matrix
    (``tf.linalg.logdet``): ``2 * sum(log(diag(cholesky(matrix))))``."""
    with name_scope(name or "logdet"):
        chol = cholesky(matrix)
        return 2.0 * _math.reduce_sum(_math.log(diag_part(chol)), axis=-1)


# ----------------------------------------------------------------------- factorizations

def qr(input: TensorLike, full_matrices: bool = False,  # noqa: A002
       name: str | None = None) -> tuple[Result, Result]:
    """``(q, r)`` with ``input = q @ r`` for each [..., M, N] matrix (``tf.linalg.qr``):
    q has orthonormal columns, r is upper triangular. Reduced (q [M, P], r [P, N],
    P = min(M, N)) unless `full_matrices` (q [M, M], r [M, N]). Signs are LAPACK's (r's
    diagonal may be negative), as in TensorFlow. Gradient: for M >= N when not
    `full_matrices` (any `full_matrices` when M = N), and for M < N; the dims must be
    known when the graph is built."""
    q, r = apply_op("Qr", [convert_to_tensor(input)], {"full_matrices": bool(full_matrices)},
                    name=name)
    return q, r


def svd(tensor: TensorLike, full_matrices: bool = False, compute_uv: bool = True,
        name: str | None = None) -> Result | tuple[Result, Result, Result]:
    """The singular value decomposition of each [..., M, N] matrix (``tf.linalg.svd``):
    ``s`` (descending, [..., P], P = min(M, N)) if not `compute_uv`, else ``(s, u, v)``
    with ``tensor = u @ diag(s) @ transpose(v)`` (note: v, not its transpose, as in
    TensorFlow). Reduced (u [M, P], v [N, P]) unless `full_matrices` (u [M, M], v [N, N]).

    The gradient (Townsend 2016 / Seeger et al., TensorFlow's) needs distinct nonzero
    singular values when u or v are used (repeated ones make u and v non-unique and the
    gradient infinite), |M - N| <= 1 if `full_matrices`, and known M, N. Singular vectors
    are unique only up to sign: a differentiable function of them must not depend on it."""
    outs = apply_op("Svd", [convert_to_tensor(tensor)],
                    {"full_matrices": bool(full_matrices), "compute_uv": bool(compute_uv)},
                    name=name)
    if not compute_uv:
        return outs[0]
    s, u, v = outs
    return s, u, v


def eigh(tensor: TensorLike, name: str | None = None) -> tuple[Result, Result]:
    """``(e, v)``: the eigenvalues (ascending) and eigenvectors (columns) of each symmetric
    matrix, ``tensor @ v = v @ diag(e)`` (``tf.linalg.eigh``). Only the lower triangle is
    read. The gradient (TensorFlow's) is lower triangular, like what the op reads, and
    needs distinct eigenvalues when v is used; eigenvectors are unique only up to sign."""
    e, v = apply_op("SelfAdjointEigV2", [convert_to_tensor(tensor)], {"compute_v": True},
                    name=name)
    return e, v


def eigvalsh(tensor: TensorLike, name: str | None = None) -> Result:
    """The eigenvalues (ascending) of each symmetric matrix (``tf.linalg.eigvalsh``); only
    the lower triangle is read."""
    return apply_op1("SelfAdjointEigV2", [convert_to_tensor(tensor)], {"compute_v": False},
                     name=name)


# -------------------------------------------------------------------------------- norms

_MATRIX_ORDS = ("euclidean", "fro", 1, 2, np.inf)


def _is_real_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def norm(tensor: TensorLike, ord: Any = "euclidean", axis: int | Sequence[int] | None = None,  # noqa: A002
         keepdims: bool | None = None, name: str | None = None) -> Result:
    """The norm of vectors or matrices in `tensor` (``tf.norm``, ``tf.linalg.norm``).

    `axis` None: the vector norm of all elements (a scalar); an int: vector norms along it;
    a pair of distinct ints: matrix norms over those two axes. `ord`: for vectors
    'euclidean' (= 2), 1, ``np.inf`` or any real p > 0 (``sum(|x|^p)^(1/p)``); for
    matrices 'euclidean'/'fro' (Frobenius), 1 (max column sum), ``np.inf`` (max row sum)
    or 2 (largest singular value). `keepdims` keeps the reduced axes as size 1. Built from
    other ops, so its gradient is theirs, as in TensorFlow: NaN where a 'euclidean' norm is
    0, shared between ties for 1 and inf, distinct largest singular values for 2.
    float16/bfloat16 are computed in float32 and the norm rounded back."""
    x = convert_to_tensor(tensor)
    rank = len(x.shape)
    is_matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if is_matrix:
        ax = tuple(axis)
        if not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in ax) \
                or not all(-rank <= a < rank for a in ax) or ax[0] % rank == ax[1] % rank:
            raise _usage_error("norm", f"axis must be None, an int, or a pair of distinct ints "
                               f"in [-{rank}, {rank}), got {axis!r} for a tensor of rank {rank}")
        if not any(ord is o or (ord == o and type(ord) is not bool) for o in _MATRIX_ORDS):
            raise _usage_error("norm", f"ord must be a matrix norm in {list(_MATRIX_ORDS)}, "
                               f"got {ord!r}")
        axes = [a % rank for a in ax]
    else:
        if axis is not None and (not isinstance(axis, (int, np.integer)) or isinstance(axis, bool)):
            raise _usage_error("norm", f"axis must be None, an int, or a pair of distinct "
                               f"ints, got {axis!r}")
        if axis is not None and not -rank <= axis < rank:
            raise _usage_error("norm", f"axis {axis} is out of range for a tensor of rank {rank}")
        if ord != "euclidean" and not (_is_real_number(ord) and ord > 0):
            raise _usage_error("norm", f"ord must be a vector norm ('euclidean', 1, 2, np.inf "
                               f"or a real p > 0), got {ord!r}")
        axes = None if axis is None else [int(axis) % rank]
    if not x.dtype.is_floating:
        raise _usage_error("norm", f"tensor must be floating point, got {x.dtype.ir_name}")
    keep = bool(keepdims)
    out_dtype = x.dtype
    if _math._is_half(x.dtype):
        # in float16 the squares (powers) of ordinary values overflow or underflow where
        # the norm does not: compute in float32 and round the norm back
        x = _math.cast(x, "float32")
    with name_scope(name or "norm"):
        result = _norm(x, ord, axes, is_matrix)
        if result.dtype is not out_dtype:
            result = _math.cast(result, out_dtype)
        if keep:
            return result
        return _array.reshape(result, []) if axes is None else \
            _array.squeeze(result, axis=axes)


def _norm(x: Result, ord: Any, axes: list[int] | None, is_matrix: bool) -> Result:  # noqa: A002
    """`norm`'s value with the reduced axes kept (as size 1), in x's dtype."""
    if is_matrix and ord == 2:
        result = _matrix_2_norm(x, axes)
    elif ord in ("euclidean", "fro", 2):
        result = _math.sqrt(_math.reduce_sum(x * x, axis=axes, keepdims=True))
    elif ord == 1:
        result = _math.reduce_sum(_math.abs(x), axis=None if axes is None else axes[0],
                                  keepdims=True)
        if is_matrix:
            result = _math.reduce_max(result, axis=axes[1], keepdims=True)
    elif ord == np.inf:
        result = _math.abs(x)
        if is_matrix:
            result = _math.reduce_sum(result, axis=axes[1], keepdims=True)
        result = _math.reduce_max(result, axis=None if axes is None else axes[0],
                                  keepdims=True)
    else:
        p = float(ord)
        result = _math.pow(_math.reduce_sum(_math.pow(_math.abs(x), p), axis=axes,
                                            keepdims=True), 1.0 / p)
    return result


def _matrix_2_norm(x: Result, axes: list[int]) -> Result:
    """The largest singular value of the matrices over `axes`, with those axes kept as
    size 1 (TensorFlow moves them last, takes the SVD and moves the result back)."""
    rank = len(x.shape)
    rest = [i for i in range(rank) if i not in axes]
    permed = _array.transpose(x, rest + axes)
    s = svd(permed, compute_uv=False)
    top = _array.expand_dims(_math.reduce_max(s, axis=-1, keepdims=True), -1)
    # `top` has the axes in the order rest + axes; put each back where it came from
    order = rest + axes
    return _array.transpose(top, [order.index(i) for i in range(rank)])


# -------------------------------------------------------------------- diagonals, bands

def diag_part(input: TensorLike, name: str | None = None, k: int = 0,  # noqa: A002
              padding_value: Any = 0, align: str = "RIGHT_LEFT") -> Result:
    """Diagonal `k` of each [..., M, N] matrix (``tf.linalg.diag_part``): 0 is the main
    diagonal ([..., min(M, N)]), k > 0 above it, k < 0 below; -M <= k <= N. A single
    diagonal only (no (low, high) band of them), so `padding_value` and `align` change
    nothing."""
    k = _diagonal_index("diag_part", k, align)
    return apply_op1("MatrixDiagPart", [convert_to_tensor(input)], {"k": k}, name=name)


def diag(diagonal: TensorLike, name: str | None = None, k: int = 0, num_rows: int = -1,
         num_cols: int = -1, padding_value: Any = 0, align: str = "RIGHT_LEFT") -> Result:
    """Matrices with `diagonal` [..., N] as their diagonal `k` (0 main, > 0 above, < 0
    below) and `padding_value` elsewhere (``tf.linalg.diag``). By default the smallest
    square that fits, [..., N + |k|, N + |k|]; `num_rows`/`num_cols` ask for more rows or
    columns (one of them must be the least that fits). A single diagonal only."""
    from .array import _fill_value
    k = _diagonal_index("diag", k, align)
    diagonal = convert_to_tensor(diagonal)
    padding = _fill_value(padding_value, diagonal.dtype, "linalg.diag", "padding_value")
    attrs = {"k": k, "num_rows": _static_int(num_rows, "diag", "num_rows"),
             "num_cols": _static_int(num_cols, "diag", "num_cols"),
             "padding_value": float(padding)}
    return apply_op1("MatrixDiag", [diagonal], attrs, name=name)


def set_diag(input: TensorLike, diagonal: TensorLike, name: str | None = None,  # noqa: A002
             k: int = 0, align: str = "RIGHT_LEFT") -> Result:
    """`input` [..., M, N] with its diagonal `k` replaced by `diagonal` (whose last dim is
    that diagonal's length; [..., min(M, N)] for k = 0) (``tf.linalg.set_diag``)."""
    k = _diagonal_index("set_diag", k, align)
    x, d = convert_operands(input, diagonal)
    return apply_op1("MatrixSetDiag", [x, d], {"k": k}, name=name)


def trace(x: TensorLike, name: str | None = None) -> Result:
    """The sum of the main diagonal of each [..., M, N] matrix: [...]
    (``tf.linalg.trace``)."""
    with name_scope(name or "trace"):
        return _math.reduce_sum(diag_part(x), axis=-1)


def band_part(input: TensorLike, num_lower: int, num_upper: int,  # noqa: A002
              name: str | None = None) -> Result:
    """Each matrix with the entries outside a band zeroed (``tf.linalg.band_part``):
    (i, j) is kept when ``(num_lower < 0 or i - j <= num_lower) and (num_upper < 0 or
    j - i <= num_upper)``; ``band_part(x, -1, 0)`` is the lower triangle. The band widths
    must be known when the graph is built (Python ints)."""
    attrs = {"num_lower": _static_int(num_lower, "band_part", "num_lower"),
             "num_upper": _static_int(num_upper, "band_part", "num_upper")}
    return apply_op1("MatrixBandPart", [convert_to_tensor(input)], attrs, name=name)


__all__ = ["matrix_transpose", "adjoint", "inv", "solve", "triangular_solve", "cholesky",
           "det", "slogdet", "logdet", "qr", "svd", "eigh", "eigvalsh", "norm", "diag_part",
           "diag", "set_diag", "trace", "band_part"]
