"""Gradients of the linalg ops against central finite differences (float64).

Inputs are built so that finite differences are valid: well-conditioned matrices for the
inverse and solves, A A^T + n I for Cholesky (whose gradient, as TensorFlow's, is with
respect to a symmetric input, so it is checked through a symmetric construction), and
prescribed, well-separated singular values / eigenvalues for SVD and eigh. Singular and
eigen vectors are unique only up to sign, so, as in TensorFlow's tests, the functions of
them checked are sign invariant: |u|, |v| and u diag(s) v^T.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.grads.strategies import check_unknown_dims, seeds, spec, values
from tests.helpers import check_gradients

batches = st.sampled_from([(), (2,)])
sides = st.integers(1, 3)
EXAMPLES = settings(max_examples=6)


def general(seed: int, shape) -> np.ndarray:
    """Standard normal plus n I: far from singular."""
    n = shape[-1]
    return np.random.default_rng(seed).standard_normal(shape) + n * np.eye(n)


def triangular_ok(seed: int, shape) -> np.ndarray:
    """Standard normal off the diagonal, |diagonal| in [1, 2]."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    idx = np.arange(shape[-1])
    x[..., idx, idx] = rng.choice([-1.0, 1.0], shape[:-1]) * rng.uniform(1, 2, shape[:-1])
    return x


def orthogonal(rng: np.random.Generator, batch, n: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def with_singular_values(seed: int, batch, m: int, n: int) -> np.ndarray:
    """A random [m, n] matrix whose singular values are about 1, 2, 3, ... (at least 0.8
    apart), so u and v are unique up to sign and the gradient is well conditioned."""
    rng = np.random.default_rng(seed)
    k = min(m, n)
    s = np.arange(1, k + 1) + rng.uniform(-0.1, 0.1, batch + (k,))
    u, v = orthogonal(rng, batch, m)[..., :k], orthogonal(rng, batch, n)[..., :k]
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


def with_eigenvalues(seed: int, batch, n: int) -> np.ndarray:
    """A random symmetric matrix with eigenvalues about -2, -1, 0, 1, ... (0.8 apart),
    with junk above the diagonal (the op reads only the lower triangle)."""
    rng = np.random.default_rng(seed)
    e = np.arange(n) - 2.0 + rng.uniform(-0.1, 0.1, batch + (n,))
    q = orthogonal(rng, batch, n)
    sym = (q * e[..., None, :]) @ np.swapaxes(q, -1, -2)
    return np.tril(sym) + np.triu(rng.standard_normal(batch + (n, n)), 1)


def _transpose(x):
    return tw.linalg.matrix_transpose(x)


# ------------------------------------------------------------------ inverse and solves

@EXAMPLES
@given(batch=batches, n=sides, adjoint=st.booleans(), seed=seeds)
def test_inv_grad(batch, n, adjoint, seed):
    check_gradients(lambda x: tw.linalg.inv(x, adjoint=adjoint), general(seed, batch + (n, n)))


@EXAMPLES
@given(batch=batches, n=sides, k=st.integers(1, 2), adjoint=st.booleans(), seed=seeds)
def test_solve_grad(batch, n, k, adjoint, seed):
    a, b = general(seed, batch + (n, n)), values(seed + 1, batch + (n, k))
    check_gradients(lambda x, y: tw.linalg.solve(x, y, adjoint=adjoint), a, b)


@EXAMPLES
@given(shapes=st.sampled_from([((), ()), ((2,), (2,)), ((2,), ()), ((), (2,)), ((1,), (2,))]),
       n=sides, lower=st.booleans(), adjoint=st.booleans(), seed=seeds)
def test_triangular_solve_grad_with_broadcast_batch(shapes, n, lower, adjoint, seed):
    a = triangular_ok(seed, shapes[0] + (n, n))
    b = values(seed + 1, shapes[1] + (n, 2))
    # the triangle not read gets a zero gradient, as finite differences say
    check_gradients(lambda x, y: tw.linalg.triangular_solve(x, y, lower=lower, adjoint=adjoint),
                    a, b)


# ------------------------------------------------------------- Cholesky, determinants

@EXAMPLES
@given(batch=batches, n=sides, seed=seeds)
def test_cholesky_grad_through_a_symmetric_input(batch, n, seed):
    a = values(seed, batch + (n, n))
    eye = n * np.eye(n)
    check_gradients(lambda x: tw.linalg.cholesky(tw.matmul(x, x, transpose_b=True) + eye), a)
    # a symmetric function of an arbitrary matrix, as TensorFlow's test does
    check_gradients(lambda x: tw.linalg.cholesky(x + _transpose(x) + 4 * eye),
                    0.2 * a)


def test_cholesky_grad_is_symmetric_and_right_along_symmetric_directions():
    # TensorFlow's convention: the gradient with respect to the input as a symmetric
    # matrix, so it is symmetric and <G, E> is the derivative along any symmetric E
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 3, 3))
    x = a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3)
    w = rng.standard_normal((2, 3, 3))

    def loss(t):
        return tw.reduce_sum(tw.linalg.cholesky(t) * w)

    g = np.asarray(tw.grad(loss)(x))
    np.testing.assert_allclose(g, np.swapaxes(g, -1, -2), rtol=1e-12, atol=1e-12)
    f = tw.compile(loss)
    for _ in range(3):
        e = rng.standard_normal((2, 3, 3))
        e = e + np.swapaxes(e, -1, -2)
        eps = 1e-6
        numeric = (float(f(x + eps * e)) - float(f(x - eps * e))) / (2 * eps)
        np.testing.assert_allclose(np.sum(g * e), numeric, rtol=1e-6)


@EXAMPLES
@given(batch=batches, n=sides, seed=seeds)
def test_det_slogdet_logdet_grads(batch, n, seed):
    x = general(seed, batch + (n, n)) * np.random.default_rng(seed).choice([-1, 1])
    check_gradients(tw.linalg.det, x)
    check_gradients(lambda t: tw.linalg.slogdet(t)[1], x)
    a = values(seed + 1, batch + (n, n))
    check_gradients(lambda t: tw.linalg.logdet(tw.matmul(t, t, transpose_b=True) + np.eye(n)), a)


def test_slogdet_sign_carries_no_gradient():
    x = general(0, (3, 3))
    g = tw.grad(lambda t: tw.reduce_sum(tw.linalg.slogdet(t)[0]))(x)
    np.testing.assert_array_equal(g, np.zeros((3, 3)))


# --------------------------------------------------------------------------------- QR

@EXAMPLES
@given(batch=batches, mn=st.sampled_from([(1, 1), (2, 2), (3, 3), (3, 2), (4, 2), (3, 1),
                                          (2, 3), (1, 3), (2, 4)]),
       seed=seeds)
def test_qr_grad(batch, mn, seed):
    # QR from Householder reflections is a smooth function of the input (signs included)
    # away from rank deficiency, so q and r themselves are checked, as in TensorFlow
    x = values(seed, batch + mn)
    check_gradients(lambda t: tw.linalg.qr(t)[0], x, seed=seed)
    check_gradients(lambda t: tw.linalg.qr(t)[1], x, seed=seed)
    w = values(seed + 1, batch + mn)
    check_gradients(lambda t: tw.add_n([tw.reduce_sum(q) for q in tw.linalg.qr(t)]) +
                    tw.reduce_sum(tw.matmul(*tw.linalg.qr(t)) * w), x)


def test_qr_grad_full_matrices_square_and_wide():
    for shape in ((3, 3), (2, 3)):
        x = values(0, shape)
        check_gradients(lambda t: tw.linalg.qr(t, full_matrices=True)[0], x)
        check_gradients(lambda t: tw.linalg.qr(t, full_matrices=True)[1], x)


# -------------------------------------------------------------------------------- SVD

svd_dims = st.sampled_from([(1, 1), (2, 2), (3, 3), (3, 2), (4, 2), (2, 3), (1, 3)])


@EXAMPLES
@given(batch=batches, mn=svd_dims, seed=seeds)
def test_svd_grad_of_singular_values(batch, mn, seed):
    x = with_singular_values(seed, batch, *mn)
    check_gradients(lambda t: tw.linalg.svd(t, compute_uv=False), x)
    check_gradients(lambda t: tw.linalg.svd(t)[0], x)


@EXAMPLES
@given(batch=batches, mn=svd_dims, seed=seeds)
def test_svd_grad_of_sign_invariant_functions_of_u_and_v(batch, mn, seed):
    x = with_singular_values(seed, batch, *mn)
    check_gradients(lambda t: tw.abs(tw.linalg.svd(t)[1]), x)
    check_gradients(lambda t: tw.abs(tw.linalg.svd(t)[2]), x)

    def rebuilt(t):
        s, u, v = tw.linalg.svd(t)
        return tw.matmul(u * s[..., None, :], v, transpose_b=True)

    check_gradients(rebuilt, x)


@pytest.mark.parametrize("mn", [(2, 2), (3, 2), (2, 3)])
def test_svd_grad_full_matrices_when_dims_differ_by_at_most_one(mn):
    x = with_singular_values(3, (2,), *mn)
    for out in (1, 2):
        check_gradients(lambda t, out=out: tw.abs(tw.linalg.svd(t, full_matrices=True)[out]), x)


# ------------------------------------------------------------------------------- eigh

@EXAMPLES
@given(batch=batches, n=sides, seed=seeds)
def test_eigh_grad(batch, n, seed):
    # the op reads only the lower triangle: the gradient above the diagonal is zero, as
    # finite differences find
    x = with_eigenvalues(seed, batch, n)
    check_gradients(tw.linalg.eigvalsh, x)
    check_gradients(lambda t: tw.linalg.eigh(t)[0], x)
    check_gradients(lambda t: tw.abs(tw.linalg.eigh(t)[1]), x)

    def rebuilt(t):
        e, v = tw.linalg.eigh(t)
        return tw.matmul(v * e[..., None, :], v, transpose_b=True)

    check_gradients(rebuilt, x)


# ------------------------------------------------------------------------------ norms

@EXAMPLES
@given(shape=st.sampled_from([(3,), (2, 3), (2, 1, 3)]), data=st.data(),
       keepdims=st.booleans(), seed=seeds)
def test_vector_norm_grads(shape, data, keepdims, seed):
    ord = data.draw(st.sampled_from(["euclidean", 1, 2, np.inf, 3, 0.5]))
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    # distinct values: no ties for the max (inf), no zeros for |x| and its powers
    x = values(seed, shape, "distinct")
    x = np.where(np.abs(x) < 0.1, x + 0.3, x)
    check_gradients(lambda t: tw.linalg.norm(t, ord=ord, axis=axis, keepdims=keepdims), x)


@EXAMPLES
@given(shape=st.sampled_from([(2, 3), (3, 3), (2, 2, 3)]), data=st.data(),
       keepdims=st.booleans(), seed=seeds)
def test_matrix_norm_grads(shape, data, keepdims, seed):
    ord = data.draw(st.sampled_from(["euclidean", "fro", 1, np.inf, 2]))
    rank = len(shape)
    axis = tuple(data.draw(st.permutations(range(rank)))[:2])
    x = values(seed, shape, "distinct")
    x = np.where(np.abs(x) < 0.1, x + 0.3, x)
    if ord == 2:  # a distinct largest singular value in every matrix
        rest = tuple(shape[i] for i in range(rank) if i not in axis)
        mats = with_singular_values(seed, rest, shape[axis[0]], shape[axis[1]])
        x = np.moveaxis(mats, [-2, -1], list(axis))
    check_gradients(lambda t: tw.linalg.norm(t, ord=ord, axis=axis, keepdims=keepdims), x)


# ------------------------------------------------------------------ diagonals, bands

@EXAMPLES
@given(batch=batches, mn=st.tuples(sides, sides), data=st.data(), seed=seeds)
def test_diagonal_trace_band_transpose_grads(batch, mn, data, seed):
    k = data.draw(st.integers(-mn[0], mn[1]))
    x = values(seed, batch + mn)
    length = np.diagonal(np.zeros(mn), k).shape[-1]
    d = values(seed + 1, batch + (length,))
    check_gradients(lambda t: tw.linalg.diag_part(t, k=k), x)
    check_gradients(tw.linalg.trace, x)
    check_gradients(lambda t, u: tw.linalg.set_diag(t, u, k=k), x, d)
    check_gradients(tw.linalg.transpose, x)
    for lower, upper in ((-1, 0), (0, -1), (1, 0), (0, 0), (-1, -1)):
        check_gradients(lambda t, lo=lower, up=upper: tw.linalg.band_part(t, lo, up), x)


@EXAMPLES
@given(batch=batches, n=sides, k=st.integers(-2, 2), extra=st.integers(0, 2), seed=seeds)
def test_diag_grad(batch, n, k, extra, seed):
    d = values(seed, batch + (n,))
    check_gradients(lambda t: tw.linalg.diag(t, k=k), d)
    check_gradients(lambda t: tw.linalg.diag(t, k=k, num_rows=n + max(-k, 0) + extra,
                                              padding_value=3), d)
    check_gradients(lambda t: tw.linalg.diag(t, k=k, num_cols=n + max(k, 0) + extra), d)


# ---------------------------------------------------------------- cpu target, unknown dims

def test_grads_on_the_cpu_target():
    a = general(0, (2, 3, 3))
    b = values(1, (2, 3, 2))

    def f(x, y):
        sym = tw.matmul(x, x, transpose_b=True)
        s, u, v = tw.linalg.svd(y)
        return (tw.linalg.trace(tw.linalg.inv(x)) + tw.linalg.det(x)
                + tw.reduce_sum(tw.linalg.solve(x, y) * tw.linalg.triangular_solve(x, y))
                + tw.reduce_sum(tw.linalg.cholesky(sym), axis=[-1, -2])
                + tw.reduce_sum(tw.linalg.qr(y)[1], axis=[-1, -2])
                + tw.reduce_sum(s, axis=-1) + tw.reduce_sum(tw.abs(u), axis=[-1, -2])
                + tw.reduce_sum(tw.linalg.eigvalsh(x) * [1.0, 2.0, 3.0], axis=-1)
                + tw.linalg.norm(y, axis=[-2, -1]) + tw.linalg.slogdet(x)[1])

    check_gradients(f, a, b, target="cpu")


def test_grads_with_unknown_dims():
    a, b = general(0, (2, 3, 3)), values(1, (2, 3, 2))
    check_unknown_dims(lambda x: tw.linalg.inv(x), [spec(None, None, None)], a)
    check_unknown_dims(lambda x, y: tw.linalg.solve(x, y), [spec(None, 3, 3), spec(None, 3, None)],
                       a, b)
    # broadcast batch dims known only at run time: the gradient of the matrix is summed
    check_unknown_dims(lambda x, y: tw.linalg.triangular_solve(x, y),
                       [spec(None, 3, 3), spec(None, 3, 2)], a[:1], b)
    check_unknown_dims(lambda x: tw.linalg.cholesky(tw.matmul(x, x, transpose_b=True)
                                                    + 3 * np.eye(3)),
                       [spec(None, 3, 3)], a)
    check_unknown_dims(lambda x: tw.linalg.det(x) + tw.linalg.slogdet(x)[1],
                       [spec(None, None, None)], a)
    check_unknown_dims(lambda x: tw.linalg.band_part(x, 1, 0) + tw.linalg.diag(
        tw.linalg.diag_part(x)), [spec(None, None, None)], a)
    check_unknown_dims(lambda x: tw.linalg.eigvalsh(x), [spec(None, None, None)],
                       with_eigenvalues(0, (2,), 3))


@pytest.mark.parametrize("case", ["qr-unknown", "svd-unknown", "qr-full-tall", "svd-full-wide"])
def test_gradients_outside_the_supported_cases_are_clear_errors(case):
    tall, wide = values(0, (4, 2)), values(0, (2, 5))
    cases = {
        "qr-unknown": ([spec(None, None)], tall, lambda t: tw.linalg.qr(t)[1],
                       "needs the matrix dims known"),
        "svd-unknown": ([spec(None, None)], tall, lambda t: tw.abs(tw.linalg.svd(t)[1]),
                        "needs the matrix dims known"),
        "qr-full-tall": ([spec(4, 2)], tall, lambda t: tw.linalg.qr(t, full_matrices=True)[0],
                         "full_matrices=True"),
        "svd-full-wide": ([spec(2, 5)], wide,
                          lambda t: tw.abs(tw.linalg.svd(t, full_matrices=True)[2]),
                          "differ by at most 1"),
    }
    specs, x, fn, message = cases[case]
    grad = tw.compile(tw.grad(lambda t: tw.reduce_sum(fn(t))), input_signature=specs)
    with pytest.raises(tw.errors.UnimplementedError, match=message):
        grad(x)
