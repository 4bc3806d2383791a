"""Linear-algebra ops (``tw.linalg``), with TensorFlow's op names and semantics.

Every op works on the last two axes ("the matrices") and treats leading axes as a batch,
as TensorFlow does. The reference kernels are NumPy's `numpy.linalg` (LAPACK), so float32
inputs are factored in single precision and float64 in double, as in TensorFlow.

Conventions:
- Only float32 and float64 are accepted for the factorizations and solvers (TensorFlow
  also has half and complex kernels; tensorweave has no complex dtype and LAPACK no half).
  The structural ops (diagonals, band parts) take any dtype.
- Ops that need square matrices check it at trace time when the dims are known and at
  run time otherwise; the error names the op, the user's line and the shape that came.
- A singular matrix given to `MatrixInverse`, `MatrixSolve` or `MatrixTriangularSolve`
  (an exactly zero pivot), or a matrix that is not positive definite given to
  `Cholesky`, is an `InvalidArgumentError`, as in TensorFlow on the CPU.
- `Cholesky` and `SelfAdjointEigV2` read only the lower triangle of their input.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import DTypeError, InvalidArgumentError, ShapeError
from ..dtypes import ALL_DTYPES, float32, float64
from ..registry import attr, def_op
from ..types import TensorType
from .common import broadcast_shapes, expect_tensor

_LAPACK_DTYPES = (float32, float64)


# ------------------------------------------------------------------------------ helpers

def _matrices(t, role: str, *, square: bool = False, dtypes=_LAPACK_DTYPES,
              what: str = "float32 or float64") -> TensorType:
    """`t` as a (batch of) matrices: rank >= 2, an allowed dtype, square if asked."""
    t = expect_tensor(t, role)
    if t.dtype not in dtypes:
        raise DTypeError(f"{role} must be {what}, got {role} is {t}")
    if t.rank < 2:
        kind = "square matrix" if square else "matrix"
        raise ShapeError(f"{role} must be a {kind} or a batch of them (rank >= 2), "
                         f"got {role} is {t}")
    rows, cols = t.shape[-2:]
    if square and rows is not None and cols is not None and rows != cols:
        raise ShapeError(f"{role} must be a square matrix or a batch of them, got {role} "
                         f"is {t} ({rows} rows, {cols} columns)")
    return t


def _square_dim(t: TensorType):
    """The side of the square matrices of `t` (known if either dim is known)."""
    rows, cols = t.shape[-2:]
    return rows if rows is not None else cols


def _check_square(x: np.ndarray, role: str = "input") -> None:
    """Run-time square check, for dims that were unknown at trace time."""
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise InvalidArgumentError(f"{role} must be a square matrix or a batch of them, "
                                   f"got shape {list(x.shape)}")


def _out(result, dtype: np.dtype) -> np.ndarray:
    """`result` as an array of exactly `dtype` (NumPy returns scalars for 0-d results)."""
    return np.asarray(result).astype(dtype, copy=False)


def _lapack(what: str, fn: Callable, *args) -> object:
    """Call `fn` (a numpy.linalg routine), turning LAPACK's failures into TensorFlow's
    InvalidArgumentError with the reason instead of a NumPy traceback."""
    try:
        with np.errstate(all="ignore"):
            return fn(*args)
    except np.linalg.LinAlgError as e:
        shape = list(args[0].shape)
        if not all(np.isfinite(a).all() for a in args):
            raise InvalidArgumentError(f"{what} failed: the input contains NaN or Inf "
                                       f"(input shape {shape})") from None
        raise InvalidArgumentError(f"{what} failed: {_why(str(e))} "
                                   f"(input shape {shape})") from None


def _why(numpy_message: str) -> str:
    if "Singular" in numpy_message:
        return "the input matrix is not invertible (it is singular: a zero pivot)"
    if "positive definite" in numpy_message:
        return "the input is not symmetric positive definite"
    if "converge" in numpy_message:
        return "the iteration did not converge"
    return numpy_message


def _runtime(check: Callable, *args):
    """`check(*args)`, its ShapeError (for dims unknown at trace time) as TensorFlow's
    run-time InvalidArgumentError."""
    try:
        return check(*args)
    except ShapeError as e:
        raise InvalidArgumentError(e.message) from None


def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


# ------------------------------------------------------------------------ MatrixInverse

MatrixInverse = def_op("MatrixInverse", ["input"], {"adjoint": attr("bool", False)},
                       doc="The inverse of each square matrix (of its adjoint if `adjoint`); "
                           "a singular matrix is an InvalidArgumentError.")


@MatrixInverse.infer
def _inverse_infer(x, *, adjoint):
    x = _matrices(x, "input", square=True)
    n = _square_dim(x)
    return x.with_shape(x.shape[:-2] + (n, n))


@MatrixInverse.kernel("reference")
def _inverse_kernel(x, *, adjoint):
    _check_square(x)
    return _out(_lapack("matrix inverse", np.linalg.inv, _swap(x) if adjoint else x), x.dtype)


# -------------------------------------------------------------------------- MatrixSolve

MatrixSolve = def_op("MatrixSolve", ["matrix", "rhs"], {"adjoint": attr("bool", False)},
                     doc="X with matrix @ X = rhs (adjoint(matrix) @ X = rhs if `adjoint`) "
                         "for square matrices; batch dims must be equal (no broadcasting, "
                         "as in TensorFlow's MatrixSolve).")


def _same_batch(a: TensorType, b: TensorType) -> tuple:
    """The common batch shape of `a` and `b` (equal ranks, dims equal where known)."""
    if a.rank != b.rank or any(x is not None and y is not None and x != y
                               for x, y in zip(a.shape[:-2], b.shape[:-2])):
        raise ShapeError(f"matrix and rhs must have the same batch dimensions, got matrix "
                         f"is {a}, rhs is {b}")
    return tuple(x if x is not None else y for x, y in zip(a.shape[:-2], b.shape[:-2]))


def _check_rows(matrix: TensorType, rhs: TensorType) -> None:
    n, m = _square_dim(matrix), rhs.shape[-2]
    if n is not None and m is not None and n != m:
        raise ShapeError(f"rhs must have as many rows as matrix, got matrix is {matrix}, "
                         f"rhs is {rhs}")


@MatrixSolve.infer
def _solve_infer(matrix, rhs, *, adjoint):
    matrix = _matrices(matrix, "matrix", square=True)
    rhs = _matrices(rhs, "rhs")
    if rhs.dtype is not matrix.dtype:
        raise DTypeError(f"operands must have the same dtype: matrix is {matrix}, rhs is {rhs}")
    batch = _same_batch(matrix, rhs)
    _check_rows(matrix, rhs)
    n = _square_dim(matrix) if rhs.shape[-2] is None else rhs.shape[-2]
    return rhs.with_shape(batch + (n, rhs.shape[-1]))


def _check_rhs(matrix: np.ndarray, rhs: np.ndarray, *, broadcast: bool) -> None:
    _check_square(matrix, "matrix")
    if rhs.shape[-2] != matrix.shape[-1]:
        raise InvalidArgumentError(f"rhs must have as many rows as matrix, got matrix shape "
                                   f"{list(matrix.shape)}, rhs shape {list(rhs.shape)}")
    if broadcast:
        try:
            np.broadcast_shapes(matrix.shape[:-2], rhs.shape[:-2])
        except ValueError:
            raise InvalidArgumentError(
                f"batch dimensions cannot be broadcast together: matrix shape "
                f"{list(matrix.shape)}, rhs shape {list(rhs.shape)}") from None
    elif matrix.shape[:-2] != rhs.shape[:-2]:
        raise InvalidArgumentError(f"matrix and rhs must have the same batch dimensions, got "
                                   f"matrix shape {list(matrix.shape)}, rhs shape "
                                   f"{list(rhs.shape)}")


@MatrixSolve.kernel("reference")
def _solve_kernel(matrix, rhs, *, adjoint):
    _check_rhs(matrix, rhs, broadcast=False)
    a = _swap(matrix) if adjoint else matrix
    return _out(_lapack("matrix solve", np.linalg.solve, a, rhs), rhs.dtype)


# ---------------------------------------------------------------- MatrixTriangularSolve

MatrixTriangularSolve = def_op(
    "MatrixTriangularSolve", ["matrix", "rhs"],
    {"lower": attr("bool", True), "adjoint": attr("bool", False)},
    doc="X with T @ X = rhs (adjoint(T) @ X = rhs if `adjoint`), T the lower (`lower`) or "
        "upper triangle of each square matrix: the other triangle is never read. Batch "
        "dims broadcast (TensorFlow 2). A zero on a diagonal is an InvalidArgumentError.")


@MatrixTriangularSolve.infer
def _triangular_solve_infer(matrix, rhs, *, lower, adjoint):
    matrix = _matrices(matrix, "matrix", square=True)
    rhs = _matrices(rhs, "rhs")
    if rhs.dtype is not matrix.dtype:
        raise DTypeError(f"operands must have the same dtype: matrix is {matrix}, rhs is {rhs}")
    try:
        batch = broadcast_shapes(matrix.shape[:-2], rhs.shape[:-2])
    except ShapeError:
        raise ShapeError(f"batch dimensions cannot be broadcast together: matrix is "
                         f"{matrix}, rhs is {rhs}") from None
    _check_rows(matrix, rhs)
    n = _square_dim(matrix) if rhs.shape[-2] is None else rhs.shape[-2]
    return rhs.with_shape(batch + (n, rhs.shape[-1]))


@MatrixTriangularSolve.kernel("reference")
def _triangular_solve_kernel(matrix, rhs, *, lower, adjoint):
    _check_rhs(matrix, rhs, broadcast=True)
    t = np.tril(matrix) if lower else np.triu(matrix)
    # a triangular matrix is singular exactly when a diagonal entry is zero; checking that
    # here gives TensorFlow's error instead of whatever LU pivoting makes of it
    if matrix.size and not np.all(np.diagonal(matrix, axis1=-2, axis2=-1)):
        raise InvalidArgumentError(f"triangular solve failed: the input matrix is not "
                                   f"invertible (a zero on its diagonal) (matrix shape "
                                   f"{list(matrix.shape)})")
    a = _swap(t) if adjoint else t
    batch = np.broadcast_shapes(matrix.shape[:-2], rhs.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(rhs, batch + rhs.shape[-2:])
    return _out(_lapack("triangular solve", np.linalg.solve, a, b), rhs.dtype)


# ----------------------------------------------------------------------------- Cholesky

Cholesky = def_op("Cholesky", ["input"],
                  doc="The lower-triangular L with L @ L^T = input for symmetric positive "
                      "definite matrices (only the lower triangle of the input is read); "
                      "an input that is not positive definite is an InvalidArgumentError.")


@Cholesky.infer
def _cholesky_infer(x):
    x = _matrices(x, "input", square=True)
    n = _square_dim(x)
    return x.with_shape(x.shape[:-2] + (n, n))


@Cholesky.kernel("reference")
def _cholesky_kernel(x):
    _check_square(x)
    # numpy.linalg.cholesky (LAPACK potrf with 'L') reads only the lower triangle
    return _out(_lapack("Cholesky decomposition", np.linalg.cholesky, x), x.dtype)


# ------------------------------------------------------------ determinants

MatrixDeterminant = def_op("MatrixDeterminant", ["input"],
                           doc="The determinant of each square matrix (1 for 0x0).")


@MatrixDeterminant.infer
def _det_infer(x):
    x = _matrices(x, "input", square=True)
    return x.with_shape(x.shape[:-2])


@MatrixDeterminant.kernel("reference")
def _det_kernel(x):
    _check_square(x)
    return _out(_lapack("determinant", np.linalg.det, x), x.dtype)


LogMatrixDeterminant = def_op(
    "LogMatrixDeterminant", ["input"],
    doc="(sign, log_abs_determinant) of each square matrix: det = sign * "
        "exp(log_abs_determinant); a singular matrix gives (0, -inf).")


@LogMatrixDeterminant.infer
def _slogdet_infer(x):
    x = _matrices(x, "input", square=True)
    out = x.with_shape(x.shape[:-2])
    return [out, out]


@LogMatrixDeterminant.kernel("reference")
def _slogdet_kernel(x):
    _check_square(x)
    sign, logdet = _lapack("log determinant", np.linalg.slogdet, x)
    return _out(sign, x.dtype), _out(logdet, x.dtype)


# -------------------------------------------------------------------------------- Qr

Qr = def_op("Qr", ["input"], {"full_matrices": attr("bool", False)},
            doc="The QR decomposition input = Q @ R of each [M, N] matrix: Q has orthonormal "
                "columns, R is upper triangular. Reduced (Q [M, P], R [P, N], P = min(M, N)) "
                "unless `full_matrices` (Q [M, M], R [M, N]). Signs as LAPACK's geqrf gives "
                "them (R's diagonal may be negative), as in TensorFlow.")


@Qr.infer
def _qr_infer(x, *, full_matrices):
    x = _matrices(x, "input")
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    if full_matrices:
        return [x.with_shape(batch + (m, m)), x.with_shape(batch + (m, n))]
    p = None if m is None or n is None else min(m, n)
    return [x.with_shape(batch + (m, p)), x.with_shape(batch + (p, n))]


@Qr.kernel("reference")
def _qr_kernel(x, *, full_matrices):
    q, r = _lapack("QR decomposition", lambda a: np.linalg.qr(
        a, mode="complete" if full_matrices else "reduced"), x)
    return _out(q, x.dtype), _out(r, x.dtype)


# ------------------------------------------------------------------------------- Svd

Svd = def_op("Svd", ["input"], {"full_matrices": attr("bool", False),
                                "compute_uv": attr("bool", True)},
             doc="The singular values s (descending) of each [M, N] matrix and, if "
                 "`compute_uv`, u and v with input = u @ diag(s) @ v^T (TensorFlow's order "
                 "s, u, v, and v, not v^T). Reduced (u [M, P], v [N, P]) unless "
                 "`full_matrices` (u [M, M], v [N, N]).")


@Svd.infer
def _svd_infer(x, *, full_matrices, compute_uv):
    x = _matrices(x, "input")
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    p = None if m is None or n is None else min(m, n)
    s = x.with_shape(batch + (p,))
    if not compute_uv:
        return [s]
    if full_matrices:
        return [s, x.with_shape(batch + (m, m)), x.with_shape(batch + (n, n))]
    return [s, x.with_shape(batch + (m, p)), x.with_shape(batch + (n, p))]


@Svd.kernel("reference")
def _svd_kernel(x, *, full_matrices, compute_uv):
    if not compute_uv:
        s = _lapack("SVD", lambda a: np.linalg.svd(a, compute_uv=False), x)
        return _out(s, x.dtype)
    u, s, vh = _lapack("SVD", lambda a: np.linalg.svd(a, full_matrices=full_matrices), x)
    return _out(s, x.dtype), _out(u, x.dtype), _out(_swap(vh), x.dtype)


# ------------------------------------------------------------------- SelfAdjointEigV2

SelfAdjointEigV2 = def_op(
    "SelfAdjointEigV2", ["input"], {"compute_v": attr("bool", True)},
    doc="The eigenvalues e (ascending) of each symmetric matrix and, if `compute_v`, the "
        "eigenvectors v (columns) with input @ v = v @ diag(e). Only the lower triangle of "
        "the input is read.")


@SelfAdjointEigV2.infer
def _eigh_infer(x, *, compute_v):
    x = _matrices(x, "input", square=True)
    n = _square_dim(x)
    e = x.with_shape(x.shape[:-2] + (n,))
    return [e, x.with_shape(x.shape[:-2] + (n, n))] if compute_v else [e]


@SelfAdjointEigV2.kernel("reference")
def _eigh_kernel(x, *, compute_v):
    _check_square(x)
    if not compute_v:
        return _out(_lapack("eigendecomposition", np.linalg.eigvalsh, x), x.dtype)
    e, v = _lapack("eigendecomposition", np.linalg.eigh, x)
    return _out(e, x.dtype), _out(v, x.dtype)


# ---------------------------------------------------------------- diagonals and bands

def _diag_len(rows, cols, k: int):
    """The length of diagonal `k` (0 main, > 0 above, < 0 below) of a [rows, cols] matrix
    (None if a dim is unknown); 0 when it lies outside the matrix."""
    if rows is None or cols is None:
        return None
    return max(0, min(rows + min(k, 0), cols - max(k, 0)))


def _check_k(rows, cols, k: int, where: str) -> None:
    """A diagonal index must touch the matrix: -rows <= k <= cols. (TensorFlow's bound is
    strict; the two diagonals of length 0 at the ends are allowed here so that gradients
    of empty diagonals work.)"""
    if rows is not None and cols is not None and not -rows <= k <= cols:
        raise ShapeError(f"diagonal k = {k} is outside the matrices of {where}: it must be in "
                         f"[{-rows}, {cols}]")


def _diag_index(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) indices of the first `n` entries of diagonal `k`."""
    i = np.arange(n)
    return (i, i + k) if k >= 0 else (i - k, i)


MatrixDiagPart = def_op("MatrixDiagPart", ["input"], {"k": attr("int", 0)},
                        doc="Diagonal `k` of each [M, N] matrix (0: the main diagonal, > 0 "
                            "above it, < 0 below), [..., its length].")


@MatrixDiagPart.infer
def _diag_part_infer(x, *, k):
    x = _matrices(x, "input", dtypes=ALL_DTYPES, what="of any dtype")
    m, n = x.shape[-2:]
    _check_k(m, n, k, f"input {x}")
    return x.with_shape(x.shape[:-2] + (_diag_len(m, n, k),))


@MatrixDiagPart.kernel("reference")
def _diag_part_kernel(x, *, k):
    m, n = x.shape[-2:]
    _runtime(_check_k, m, n, k, f"shape {list(x.shape)}")
    rows, cols = _diag_index(_diag_len(m, n, k), k)
    return np.ascontiguousarray(x[..., rows, cols])


MatrixDiag = def_op("MatrixDiag", ["diagonal"],
                    {"k": attr("int", 0), "num_rows": attr("int", -1),
                     "num_cols": attr("int", -1), "padding_value": attr("float", 0.0)},
                    doc="Matrices [..., R, C] with `diagonal` [..., N] as their diagonal `k` "
                        "and `padding_value` elsewhere. R and C are at least N + max(-k, 0) and "
                        "N + max(k, 0), one of them exactly, as in TensorFlow's MatrixDiagV3; "
                        "-1 (the default) takes the smallest square that fits.")


def _diag_rows_cols(n, k: int, num_rows: int, num_cols: int) -> tuple:
    """(rows, cols) of MatrixDiag's result for a diagonal of length `n` (None: unknown)."""
    if n is None:
        return (num_rows if num_rows >= 0 else None, num_cols if num_cols >= 0 else None)
    min_rows, min_cols = n + max(-k, 0), n + max(k, 0)
    if num_rows < 0 and num_cols < 0:
        return (max(min_rows, min_cols),) * 2
    rows = num_rows if num_rows >= 0 else min_rows
    cols = num_cols if num_cols >= 0 else min_cols
    if not (rows >= min_rows and cols >= min_cols and (rows == min_rows or cols == min_cols)):
        raise ShapeError(f"num_rows = {num_rows}, num_cols = {num_cols} do not fit a diagonal "
                         f"of length {n} at k = {k}: rows must be >= {min_rows} and columns "
                         f">= {min_cols}, one of them exactly")
    return rows, cols


@MatrixDiag.infer
def _diag_infer(d, *, k, num_rows, num_cols, padding_value):
    d = expect_tensor(d, "diagonal")
    if d.rank < 1:
        raise ShapeError(f"diagonal must have rank >= 1, got diagonal is {d}")
    rows, cols = _diag_rows_cols(d.shape[-1], k, num_rows, num_cols)
    return d.with_shape(d.shape[:-1] + (rows, cols))


@MatrixDiag.kernel("reference")
def _diag_kernel(d, *, k, num_rows, num_cols, padding_value):
    n = d.shape[-1]
    rows, cols = _runtime(_diag_rows_cols, n, k, num_rows, num_cols)
    out = np.full(d.shape[:-1] + (rows, cols), padding_value).astype(d.dtype)
    r, c = _diag_index(n, k)
    out[..., r, c] = d
    return out


MatrixSetDiag = def_op("MatrixSetDiag", ["input", "diagonal"], {"k": attr("int", 0)},
                       doc="`input` [..., M, N] with its diagonal `k` (0: the main one) "
                           "replaced by `diagonal` [..., its length].")


@MatrixSetDiag.infer
def _set_diag_infer(x, d, *, k):
    x = _matrices(x, "input", dtypes=ALL_DTYPES, what="of any dtype")
    d = expect_tensor(d, "diagonal")
    if d.dtype is not x.dtype:
        raise DTypeError(f"operands must have the same dtype: input is {x}, diagonal is {d}")
    _check_k(*x.shape[-2:], k, f"input {x}")
    want = x.shape[:-2] + (_diag_len(*x.shape[-2:], k),)
    if d.rank != len(want) or any(a is not None and b is not None and a != b
                                  for a, b in zip(want, d.shape)):
        raise ShapeError(f"diagonal must have shape {_fmt(want)} for input {x} and k = {k}, "
                         f"got diagonal is {d}")
    batch = tuple(a if a is not None else b for a, b in zip(x.shape[:-2], d.shape[:-1]))
    return x.with_shape(batch + x.shape[-2:])


def _fmt(shape) -> str:
    return "[" + ",".join("?" if s is None else str(s) for s in shape) + "]"


@MatrixSetDiag.kernel("reference")
def _set_diag_kernel(x, d, *, k):
    _runtime(_check_k, *x.shape[-2:], k, f"shape {list(x.shape)}")
    n = _diag_len(*x.shape[-2:], k)
    if d.shape != x.shape[:-2] + (n,):
        raise InvalidArgumentError(f"diagonal must have shape {list(x.shape[:-2] + (n,))} for "
                                   f"input of shape {list(x.shape)} and k = {k}, got "
                                   f"{list(d.shape)}")
    out = np.array(x, copy=True)
    r, c = _diag_index(n, k)
    out[..., r, c] = d
    return out


MatrixBandPart = def_op("MatrixBandPart", ["input"],
                        {"num_lower": attr("int"), "num_upper": attr("int")},
                        doc="Each matrix with the entries outside a band set to zero: (i, j) "
                            "is kept when (num_lower < 0 or i - j <= num_lower) and "
                            "(num_upper < 0 or j - i <= num_upper). (-1, 0) is the lower "
                            "triangle, (0, -1) the upper, (0, 0) the diagonal.")


@MatrixBandPart.infer
def _band_part_infer(x, *, num_lower, num_upper):
    return _matrices(x, "input", dtypes=ALL_DTYPES, what="of any dtype")


def band_mask(rows: int, cols: int, num_lower: int, num_upper: int) -> np.ndarray:
    """The [rows, cols] bool mask of the entries MatrixBandPart keeps."""
    i = np.arange(rows)[:, None]
    j = np.arange(cols)[None, :]
    keep = np.ones((rows, cols), bool)
    if num_lower >= 0:
        keep &= i - j <= num_lower
    if num_upper >= 0:
        keep &= j - i <= num_upper
    return keep


@MatrixBandPart.kernel("reference")
def _band_part_kernel(x, *, num_lower, num_upper):
    keep = band_mask(x.shape[-2], x.shape[-1], num_lower, num_upper)
    return np.where(keep, x, np.zeros((), x.dtype)).astype(x.dtype, copy=False)


__all__ = ["MatrixInverse", "MatrixSolve", "MatrixTriangularSolve", "Cholesky",
           "MatrixDeterminant", "LogMatrixDeterminant", "Qr", "Svd", "SelfAdjointEigV2",
           "MatrixDiagPart", "MatrixDiag", "MatrixSetDiag", "MatrixBandPart", "band_mask"]
