"""Gradients of the linear-algebra ops, after TensorFlow's linalg_grad.py: Giles 2008
("Collected matrix derivative results for forward and reverse mode AD") for the inverse,
solves and determinants, Murray 2016 for the Cholesky factor, Seeger et al. 2017 /
Townsend 2016 for QR, SVD and the symmetric eigendecomposition.

Everything is real here, so TensorFlow's adjoints are transposes. Batch dims broadcast
only in MatrixTriangularSolve, whose gradients are summed back with `unbroadcast`.
"""

from __future__ import annotations

from typing import Any

from ...compiler.registry import register_gradient
from ...errors import UnimplementedError
from ..ops import array as a
from ..ops import linalg as la
from ..ops import math as m
from .common import unbroadcast


def _t(x: Any) -> Any:
    return la.matrix_transpose(x)


def _expand2(x: Any) -> Any:
    """[...] -> [..., 1, 1], to scale a batch of matrices."""
    return a.expand_dims(a.expand_dims(x, -1), -1)


def _safe_reciprocal(x: Any, epsilon: float = 1e-20) -> Any:
    # TensorFlow's _SafeReciprocal: 1/x away from 0 and 0 (not inf) at x == 0, so the
    # diagonal of the eigenvalue-difference matrix, masked out anyway, stays finite
    return x * m.reciprocal(x * x + epsilon)


def _eigen_gaps(e: Any) -> Any:
    """F[..., i, j] = 1 / (e_j - e_i) off the diagonal, 0 on it."""
    f = _safe_reciprocal(a.expand_dims(e, -2) - a.expand_dims(e, -1))
    return la.set_diag(f, a.zeros_like(e))


def _static_dims(op_type: str, x: Any) -> tuple[int, int]:
    rows, cols = x.shape[-2:]
    if rows is None or cols is None:
        raise UnimplementedError(f"the gradient of {op_type} needs the matrix dims known when "
                                 f"the graph is built, got shape {list(x.shape)}")
    return rows, cols


# ---------------------------------------------------------------- inverse and solves

@register_gradient("MatrixInverse")
def _matrix_inverse(op, g):
    # Y = A^-1: dY = -Y dA Y, so dL/dA = -Y^T G Y^T (with `adjoint`, Y = A^-T: -Y G^T Y)
    y = op.outputs[0]
    if op.attrs["adjoint"]:
        return [-m.matmul(y, m.matmul(g, y, transpose_a=True))]
    return [-m.matmul(y, m.matmul(g, y, transpose_b=True), transpose_a=True)]


def _solve_grads(op, g, solve_fn):
    a_, b_ = op.inputs
    c = op.outputs[0]
    adjoint = op.attrs["adjoint"]
    grad_b = solve_fn(a_, g, not adjoint)
    if adjoint:
        grad_a = -m.matmul(c, grad_b, transpose_b=True)
    else:
        grad_a = -m.matmul(grad_b, c, transpose_b=True)
    return grad_a, grad_b


@register_gradient("MatrixSolve")
def _matrix_solve(op, g):
    return list(_solve_grads(op, g, lambda x, y, adj: la.solve(x, y, adjoint=adj)))


@register_gradient("MatrixTriangularSolve")
def _matrix_triangular_solve(op, g):
    lower = op.attrs["lower"]
    grad_a, grad_b = _solve_grads(
        op, g, lambda x, y, adj: la.triangular_solve(x, y, lower=lower, adjoint=adj))
    # only the triangle that the op reads has a gradient
    grad_a = la.band_part(grad_a, -1, 0) if lower else la.band_part(grad_a, 0, -1)
    x, y = op.inputs
    return [unbroadcast(grad_a, x), unbroadcast(grad_b, y)]


# --------------------------------------------------------------------------- Cholesky

@register_gradient("Cholesky")
def _cholesky(op, g):
    # Murray 2016, eq. 10 (TensorFlow's _CholeskyGrad): with Phi the lower triangle with a
    # halved diagonal, dA = 1/2 (S + S^T), S = L^-T Phi(L^T G) L^-1: symmetric, the
    # gradient with respect to a symmetric input
    chol = op.outputs[0]
    eye = la.diag(a.ones_like(la.diag_part(chol)))
    chol_inv = la.triangular_solve(chol, eye, lower=True)
    middle = m.matmul(chol, g, transpose_a=True)
    middle = la.set_diag(middle, 0.5 * la.diag_part(middle))
    middle = la.band_part(middle, -1, 0)
    grad_a = m.matmul(m.matmul(chol_inv, middle, transpose_a=True), chol_inv)
    return [0.5 * (grad_a + _t(grad_a))]


# ----------------------------------------------------------------------- determinants

@register_gradient("MatrixDeterminant")
def _matrix_determinant(op, g):
    # d det(A) = det(A) tr(A^-1 dA): dL/dA = g det(A) A^-T (needs an invertible A)
    return [_expand2(g * op.outputs[0]) * la.inv(op.inputs[0], adjoint=True)]


@register_gradient("LogMatrixDeterminant")
def _log_matrix_determinant(op, g_sign, g_log_abs):
    # the sign is piecewise constant: only log|det| carries a gradient, A^-T
    return [_expand2(g_log_abs) * la.inv(op.inputs[0], adjoint=True)]


# --------------------------------------------------------------------------------- QR

def _solve_r_right(x: Any, r: Any) -> Any:
    """x @ R^-T for upper-triangular R (TensorFlow's _TriangularSolve in _QrGrad)."""
    return _t(la.triangular_solve(r, _t(x), lower=False))


def _qr_grad_deep(q: Any, r: Any, dq: Any, dr: Any) -> Any:
    """The QR gradient for M >= N, reduced (Seeger et al. 2017; TensorFlow)."""
    qdq = m.matmul(q, dq, transpose_a=True)
    qdq_ = qdq - _t(qdq)
    rdr = m.matmul(r, dr, transpose_b=True)
    rdr_ = rdr - _t(rdr)
    tril = la.band_part(qdq_ + rdr_, -1, 0)
    grad_a = m.matmul(q, dr + _solve_r_right(tril, r))
    grad_b = _solve_r_right(dq - m.matmul(q, qdq), r)
    return grad_a + grad_b


@register_gradient("Qr")
def _qr(op, dq, dr):
    x = op.inputs[0]
    q, r = op.outputs
    rows, cols = _static_dims("Qr", x)
    if rows > cols and op.attrs["full_matrices"]:
        raise UnimplementedError(
            f"the gradient of Qr with full_matrices=True is defined only for matrices with "
            f"no more rows than columns (the extra columns of q are not unique), got shape "
            f"{list(x.shape)}; use full_matrices=False")
    if rows >= cols:
        return [_qr_grad_deep(q, r, dq, dr)]
    # wide matrices: A = [X | Y] with X square, Q R = [Q U | Q V] (TensorFlow's split)
    y = x[..., :, rows:]
    u = r[..., :, :rows]
    dv = dr[..., :, rows:]
    du = dr[..., :, :rows]
    dy = m.matmul(q, dv)
    dx = _qr_grad_deep(q, u, dq + m.matmul(y, dv, transpose_b=True), du)
    return [a.concat([dx, dy], axis=-1)]


# -------------------------------------------------------------------------------- SVD

def _svd_of_grads(s: Any, u: Any, v: Any, grad_s: Any, grad_u: Any, grad_v: Any,
                  m_: int, n_: int, full_matrices: bool) -> Any:
    """TensorFlow's _SvdGrad (Townsend 2016) for M <= N: the gradient of the input."""
    s_mat = la.diag(s)
    f = _eigen_gaps(m.square(s))
    s_inv_mat = la.diag(_safe_reciprocal(s))
    v1 = v[..., :, :m_]
    grad_v1 = grad_v[..., :, :m_]
    u_gu = m.matmul(u, grad_u, transpose_a=True)
    v_gv = m.matmul(v1, grad_v1, transpose_a=True)
    f_u = f * u_gu
    f_v = f * v_gv
    term1_nouv = (la.diag(grad_s) + m.matmul(f_u + _t(f_u), s_mat)
                  + m.matmul(s_mat, f_v + _t(f_v)))
    term1 = m.matmul(u, m.matmul(term1_nouv, v1, transpose_b=True))
    if m_ == n_:
        return term1
    gv1t = _t(grad_v1)
    term2_nous = gv1t - m.matmul(m.matmul(gv1t, v1), v1, transpose_b=True)
    if full_matrices:
        v2 = v[..., :, m_:n_]
        grad_v2 = grad_v[..., :, m_:n_]
        term2_nous = term2_nous - m.matmul(m.matmul(v1, grad_v2, transpose_a=True), v2,
                                           transpose_b=True)
    term2 = m.matmul(m.matmul(u, s_inv_mat), term2_nous)
    return term1 + term2


@register_gradient("Svd")
def _svd(op, grad_s, *grad_uv):
    x = op.inputs[0]
    if not op.attrs["compute_uv"]:
        # ds_i = u_i^T dA v_i: recompute the vectors (TensorFlow does the same)
        _, u, v = la.svd(x, full_matrices=False, compute_uv=True)
        return [m.matmul(u, m.matmul(la.diag(grad_s), v, transpose_b=True))]
    rows, cols = _static_dims("Svd", x)
    full = op.attrs["full_matrices"]
    if full and abs(rows - cols) > 1:
        raise UnimplementedError(
            f"the gradient of Svd with full_matrices=True is defined only when the matrix "
            f"dims differ by at most 1 (the extra singular vectors are not unique), got "
            f"shape {list(x.shape)}; use full_matrices=False")
    s, u, v = op.outputs
    grad_u, grad_v = grad_uv
    if rows > cols:
        # the gradient of A^T = V S U^T, transposed back
        return [_t(_svd_of_grads(s, v, u, grad_s, grad_v, grad_u, cols, rows, full))]
    return [_svd_of_grads(s, u, v, grad_s, grad_u, grad_v, rows, cols, full)]


# ------------------------------------------------------------------ SelfAdjointEigV2

@register_gradient("SelfAdjointEigV2")
def _self_adjoint_eig(op, grad_e, *grad_v):
    e = op.outputs[0]
    if op.attrs["compute_v"]:
        v = op.outputs[1]
        inner = la.diag(grad_e) + _eigen_gaps(e) * m.matmul(v, grad_v[0], transpose_a=True)
    else:
        _, v = la.eigh(op.inputs[0])
        inner = la.diag(grad_e)
    grad_a = m.matmul(v, m.matmul(inner, v, transpose_b=True))
    # the op reads only the lower triangle: symmetrize, keep that triangle and count the
    # diagonal once
    grad_a = la.band_part(grad_a + _t(grad_a), -1, 0)
    return [la.set_diag(grad_a, 0.5 * la.diag_part(grad_a))]


# ------------------------------------------------------------------ diagonals, bands

@register_gradient("MatrixDiagPart")
def _matrix_diag_part(op, g):
    return [la.set_diag(a.zeros_like(op.inputs[0]), g, k=op.attrs["k"])]


@register_gradient("MatrixDiag")
def _matrix_diag(op, g):
    return [la.diag_part(g, k=op.attrs["k"])]


@register_gradient("MatrixSetDiag")
def _matrix_set_diag(op, g):
    k = op.attrs["k"]
    return [la.set_diag(g, a.zeros_like(op.inputs[1]), k=k), la.diag_part(g, k=k)]


@register_gradient("MatrixBandPart")
def _matrix_band_part(op, g):
    return [la.band_part(g, op.attrs["num_lower"], op.attrs["num_upper"])]
