"""The linalg family (``tw.linalg``) against NumPy: solvers, factorizations, determinants,
norms, diagonals and bands on random batches of well-conditioned matrices (eagerly, traced
on every target, across devices), the properties the decompositions promise, unknown dims
and the errors users see (which must name the op and the line of this file that made it)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tests.helpers import assert_same, check_against_numpy, line_of

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)

dtypes = st.sampled_from([F32, F64])
seeds = st.integers(0, 2**32 - 1)
batches = st.lists(st.integers(0, 3), min_size=0, max_size=2).map(tuple)
sides = st.integers(0, 4)
EXAMPLES = settings(max_examples=12)


def tol(dtype, f32: float = 1e-4, f64: float = 1e-10) -> dict:
    """Tolerances for comparing with an independent computation (another LAPACK routine or
    an explicit formula), not bit-for-bit with the kernel's own numpy.linalg call."""
    t = f32 if np.dtype(dtype) == F32 else f64
    return {"rtol": t, "atol": t}


def general(seed: int, shape, dtype) -> np.ndarray:
    """Random square matrices kept far from singular: a standard normal plus n I (the
    diagonal dominates, so the condition number stays small)."""
    n = shape[-1]
    x = np.random.default_rng(seed).standard_normal(shape) + n * np.eye(n)
    return x.astype(dtype)


def spd(seed: int, shape, dtype) -> np.ndarray:
    """Random symmetric positive definite matrices A A^T + n I."""
    n = shape[-1]
    a = np.random.default_rng(seed).standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def triangular_ok(seed: int, shape, dtype) -> np.ndarray:
    """Random matrices whose diagonal entries have magnitude in [1, 2] (so both triangles
    are well conditioned) and whose off-diagonal entries are standard normal."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    n = shape[-1]
    d = rng.choice([-1.0, 1.0], shape[:-1]) * rng.uniform(1.0, 2.0, shape[:-1])
    idx = np.arange(n)
    x[..., idx, idx] = d
    return x.astype(dtype)


def randn(seed: int, shape, dtype) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def identity_like(x: np.ndarray) -> np.ndarray:
    return np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape)


# ---------------------------------------------------------------------- solvers, inverse

@EXAMPLES
@given(batch=batches, n=sides, adjoint=st.booleans(), dtype=dtypes, seed=seeds)
def test_inv_matches_numpy(batch, n, adjoint, dtype, seed):
    x = general(seed, batch + (n, n), dtype)
    check_against_numpy(lambda a: tw.linalg.inv(a, adjoint=adjoint),
                        lambda a: np.linalg.inv(swap(a) if adjoint else a), x)
    y = np.asarray(tw.linalg.inv(x))
    np.testing.assert_allclose(x @ y, identity_like(x), **tol(dtype))


@EXAMPLES
@given(batch=batches, n=sides, k=st.integers(0, 3), adjoint=st.booleans(), dtype=dtypes,
       seed=seeds)
def test_solve_matches_numpy(batch, n, k, adjoint, dtype, seed):
    a, b = general(seed, batch + (n, n), dtype), randn(seed + 1, batch + (n, k), dtype)
    check_against_numpy(lambda x, y: tw.linalg.solve(x, y, adjoint=adjoint),
                        lambda x, y: np.linalg.solve(swap(x) if adjoint else x, y), a, b)
    sol = np.asarray(tw.linalg.solve(a, b, adjoint=adjoint))
    np.testing.assert_allclose((swap(a) if adjoint else a) @ sol, b, **tol(dtype))


def _scipy_triangular_solve(a, b, lower, adjoint):
    """The oracle: LAPACK's trtrs through SciPy, one matrix at a time, batch broadcast."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    out = np.empty(b.shape, b.dtype)
    for idx in np.ndindex(batch):
        out[idx] = scipy.linalg.solve_triangular(a[idx], b[idx], lower=lower,
                                                 trans="T" if adjoint else "N")
    return out


@EXAMPLES
@given(shapes=st.tuples(batches, batches).filter(
           lambda s: _broadcastable(s[0], s[1])),
       n=sides, k=st.integers(0, 3), lower=st.booleans(), adjoint=st.booleans(),
       dtype=dtypes, seed=seeds)
def test_triangular_solve_matches_scipy_and_ignores_the_other_triangle(shapes, n, k, lower,
                                                                      adjoint, dtype, seed):
    a = triangular_ok(seed, shapes[0] + (n, n), dtype)
    b = randn(seed + 1, shapes[1] + (n, k), dtype)
    check_against_numpy(
        lambda x, y: tw.linalg.triangular_solve(x, y, lower=lower, adjoint=adjoint),
        lambda x, y: _scipy_triangular_solve(x, y, lower, adjoint), a, b, **tol(dtype))


def _broadcastable(s1, s2) -> bool:
    try:
        np.broadcast_shapes(s1, s2)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------- Cholesky, determinants

@EXAMPLES
@given(batch=batches, n=sides, dtype=dtypes, seed=seeds)
def test_cholesky_matches_numpy_and_reads_only_the_lower_triangle(batch, n, dtype, seed):
    x = spd(seed, batch + (n, n), dtype)
    check_against_numpy(tw.linalg.cholesky, np.linalg.cholesky, x)
    # garbage above the diagonal changes nothing
    junk = x + np.triu(randn(seed + 1, x.shape, dtype), 1)
    check_against_numpy(tw.linalg.cholesky, lambda _: np.linalg.cholesky(x), junk)
    chol = np.asarray(tw.linalg.cholesky(x)).astype(np.float64)
    np.testing.assert_array_equal(np.triu(chol, 1), 0)
    np.testing.assert_allclose(chol @ swap(chol), x, **tol(dtype, 1e-4, 1e-10))


@EXAMPLES
@given(batch=batches, n=sides, dtype=dtypes, seed=seeds)
def test_det_slogdet_logdet_match_numpy(batch, n, dtype, seed):
    x = randn(seed, batch + (n, n), dtype)
    check_against_numpy(tw.linalg.det, np.linalg.det, x)
    check_against_numpy(tw.linalg.slogdet, lambda a: tuple(np.linalg.slogdet(a)), x)
    s = spd(seed, batch + (n, n), dtype)
    # logdet goes through the Cholesky factor; the oracle through LU
    check_against_numpy(tw.linalg.logdet, lambda a: np.linalg.slogdet(a)[1], s, **tol(dtype))


def test_slogdet_of_a_singular_matrix_is_zero_and_minus_inf():
    sign, log_abs = tw.linalg.slogdet(np.zeros((2, 2)))
    assert float(sign) == 0.0 and float(log_abs) == -np.inf
    assert float(tw.linalg.det(np.ones((3, 3)))) == 0.0


# --------------------------------------------------------------------- factorizations

matrix_dims = st.tuples(st.integers(0, 4), st.integers(0, 4))


@EXAMPLES
@given(batch=batches, mn=matrix_dims, full=st.booleans(), dtype=dtypes, seed=seeds)
def test_qr_matches_numpy_and_factors_the_input(batch, mn, full, dtype, seed):
    x = randn(seed, batch + mn, dtype)
    mode = "complete" if full else "reduced"
    check_against_numpy(lambda a: tw.linalg.qr(a, full_matrices=full),
                        lambda a: tuple(np.linalg.qr(a, mode=mode)), x)
    q, r = (np.asarray(t).astype(np.float64) for t in tw.linalg.qr(x, full_matrices=full))
    np.testing.assert_allclose(q @ r, x, **tol(dtype))
    np.testing.assert_allclose(swap(q) @ q, identity_like(swap(q) @ q), **tol(dtype))
    np.testing.assert_array_equal(np.tril(r, -1), 0)


def _np_svd(a, full):
    u, s, vh = np.linalg.svd(a, full_matrices=full)
    return s, u, swap(vh)


@EXAMPLES
@given(batch=batches, mn=matrix_dims, full=st.booleans(), dtype=dtypes, seed=seeds)
def test_svd_matches_numpy_in_tensorflow_order(batch, mn, full, dtype, seed):
    x = randn(seed, batch + mn, dtype)
    check_against_numpy(lambda a: tw.linalg.svd(a, full_matrices=full),
                        lambda a: _np_svd(a, full), x)
    check_against_numpy(lambda a: tw.linalg.svd(a, compute_uv=False),
                        lambda a: np.linalg.svd(a, compute_uv=False), x)
    s, u, v = (np.asarray(t).astype(np.float64) for t in tw.linalg.svd(x))
    # v, not v^T: x = u diag(s) v^T
    np.testing.assert_allclose((u * s[..., None, :]) @ swap(v), x, **tol(dtype))
    assert np.all(np.diff(s, axis=-1) <= 0)


@EXAMPLES
@given(batch=batches, n=sides, dtype=dtypes, seed=seeds)
def test_eigh_matches_numpy_and_reads_only_the_lower_triangle(batch, n, dtype, seed):
    a = randn(seed, batch + (n, n), dtype)
    sym = np.tril(a) + swap(np.tril(a, -1))
    check_against_numpy(tw.linalg.eigh, lambda _: tuple(np.linalg.eigh(sym)), a)
    check_against_numpy(tw.linalg.eigvalsh, lambda _: np.linalg.eigvalsh(sym), a)
    e, v = (np.asarray(t).astype(np.float64) for t in tw.linalg.eigh(a))
    np.testing.assert_allclose(sym @ v, v * e[..., None, :], **tol(dtype, 1e-4, 1e-9))
    assert np.all(np.diff(e, axis=-1) >= 0)


# -------------------------------------------------------------------------------- norms

def _np_norm(x, ord, axis, keepdims):
    """np.linalg.norm with tf.norm's conventions: axis None is the vector norm of all
    elements, 'euclidean' is 2 for vectors and 'fro' for matrices."""
    if axis is None:
        out = np.linalg.norm(x.reshape(-1), None if ord == "euclidean" else ord)
        return np.reshape(out, (1,) * x.ndim if keepdims else ()).astype(x.dtype)
    if ord == "euclidean":
        ord = "fro" if isinstance(axis, tuple) else None
    return np.asarray(np.linalg.norm(x, ord, axis=axis, keepdims=keepdims)).astype(x.dtype)


@EXAMPLES
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple), data=st.data(),
       keepdims=st.booleans(), dtype=dtypes, seed=seeds)
def test_vector_norms_match_numpy(shape, data, keepdims, dtype, seed):
    ord = data.draw(st.sampled_from(["euclidean", 1, 2, np.inf, 0.5, 3]))
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    x = randn(seed, shape, dtype)
    check_against_numpy(lambda a: tw.linalg.norm(a, ord=ord, axis=axis, keepdims=keepdims),
                        lambda a: _np_norm(a, ord, axis, keepdims), x, **tol(dtype))


@EXAMPLES
@given(shape=st.lists(st.integers(1, 3), min_size=2, max_size=4).map(tuple), data=st.data(),
       keepdims=st.booleans(), dtype=dtypes, seed=seeds)
def test_matrix_norms_match_numpy(shape, data, keepdims, dtype, seed):
    ord = data.draw(st.sampled_from(["euclidean", "fro", 1, 2, np.inf]))
    rank = len(shape)
    axis = tuple(data.draw(st.permutations(range(-rank, 0)))[:2])
    x = randn(seed, shape, dtype)
    check_against_numpy(lambda a: tw.linalg.norm(a, ord=ord, axis=axis, keepdims=keepdims),
                        lambda a: _np_norm(a, ord, axis, keepdims), x, **tol(dtype))


def test_norm_is_tw_norm_of_tensorflow():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    assert float(tw.linalg.norm(x)) == 5.0
    np.testing.assert_array_equal(tw.linalg.norm(x, axis=1), [5.0, 0.0])
    np.testing.assert_array_equal(tw.linalg.norm(x, ord=1, axis=[0, 1], keepdims=True), [[4.0]])


# ----------------------------------------------------------------- diagonals, bands, trace

@EXAMPLES
@given(batch=batches, mn=matrix_dims, data=st.data(),
       dtype=st.sampled_from([F32, F64, np.dtype(np.int32)]), seed=seeds)
def test_diag_part_set_diag_trace_transpose_match_numpy(batch, mn, data, dtype, seed):
    m, n = mn
    k = data.draw(st.integers(-m, n))
    x = (randn(seed, batch + mn, np.float64) * 5).astype(dtype)
    length = np.diagonal(np.zeros(mn), k).shape[-1]
    d = (randn(seed + 1, batch + (length,), np.float64) * 5).astype(dtype)

    def np_set_diag(a, b):
        out = a.copy()
        for i in range(length):
            r, c = (i, i + k) if k >= 0 else (i - k, i)
            out[..., r, c] = b[..., i]
        return out

    check_against_numpy(lambda a: tw.linalg.diag_part(a, k=k),
                        lambda a: np.ascontiguousarray(np.diagonal(a, k, axis1=-2, axis2=-1)), x)
    check_against_numpy(lambda a, b: tw.linalg.set_diag(a, b, k=k), np_set_diag, x, d)
    check_against_numpy(tw.linalg.trace,
                        lambda a: np.trace(a, axis1=-2, axis2=-1).astype(dtype), x)
    check_against_numpy(tw.linalg.transpose, swap, x)
    check_against_numpy(tw.linalg.adjoint, swap, x)


@EXAMPLES
@given(batch=batches, n=sides, k=st.integers(-2, 2), extra=st.integers(0, 2),
       rows_longer=st.booleans(), dtype=dtypes, seed=seeds)
def test_diag_matches_numpy(batch, n, k, extra, rows_longer, dtype, seed):
    d = randn(seed, batch + (n,), dtype)
    # TensorFlow's sizes: at least n + max(-k, 0) rows and n + max(k, 0) columns, one of
    # them exactly; the default is the smallest square
    least_rows, least_cols = n + max(-k, 0), n + max(k, 0)
    rows, cols = (least_rows + extra, least_cols) if rows_longer else \
        (least_rows, least_cols + extra)
    side = max(least_rows, least_cols)

    def np_diag(v, rows=rows, cols=cols, pad=0.0):
        out = np.full(v.shape[:-1] + (rows, cols), pad, v.dtype)
        for i in range(n):
            r, c = (i, i + k) if k >= 0 else (i - k, i)
            out[..., r, c] = v[..., i]
        return out

    check_against_numpy(lambda v: tw.linalg.diag(v, k=k), lambda v: np_diag(v, side, side), d)
    check_against_numpy(lambda v: tw.linalg.diag(v, k=k, num_rows=rows, num_cols=cols),
                        np_diag, d)
    given_one = {"num_rows": rows} if rows_longer else {"num_cols": cols}
    check_against_numpy(lambda v: tw.linalg.diag(v, k=k, padding_value=-1, **given_one),
                        lambda v: np_diag(v, pad=-1.0), d)


@EXAMPLES
@given(batch=batches, mn=matrix_dims, lower=st.integers(-1, 3), upper=st.integers(-1, 3),
       dtype=st.sampled_from([F32, F64, np.dtype(np.int32), np.dtype(np.bool_)]), seed=seeds)
def test_band_part_matches_numpy(batch, mn, lower, upper, dtype, seed):
    x = (randn(seed, batch + mn, np.float64) * 5).astype(dtype)

    def np_band(a):
        # tril(a, k) keeps j - i <= k; triu(a, k) keeps j - i >= k
        out = a if upper < 0 else np.tril(a, upper)
        return out if lower < 0 else np.triu(out, -lower)

    check_against_numpy(lambda a: tw.linalg.band_part(a, lower, upper), np_band, x)


def test_matmul_is_tw_matmul():
    assert tw.linalg.matmul is tw.matmul
    assert "linalg" in dir(tw) and "transpose" in dir(tw.linalg)


# ------------------------------------------------------------------------ unknown dims

def test_inference_with_unknown_dims():
    @tw.compile(input_signature=[tw.TensorSpec([None, None, None], tw.float64),
                                 tw.TensorSpec([None, 3, 2], tw.float64)])
    def f(x, b):
        s, u, v = tw.linalg.svd(b)
        q, r = tw.linalg.qr(b, full_matrices=True)
        return (tw.linalg.inv(x), tw.linalg.solve(x, b), tw.linalg.det(x), s, u, v, q, r,
                tw.linalg.diag_part(b), tw.linalg.eigh(x)[0])

    graph = f.get_concrete_function().graph
    shapes = [r.type.shape for r in graph.results]
    assert shapes == [(None, None, None), (None, 3, 2), (None,), (None, 2), (None, 3, 2),
                      (None, 2, 2), (None, 3, 3), (None, 3, 2), (None, 2), (None, None)]
    x = general(0, (2, 3, 3), F64)
    b = randn(1, (2, 3, 2), F64)
    got = f(x, b)
    np.testing.assert_allclose(got[1], np.linalg.solve(x, b), rtol=1e-12)
    assert_same(got[2], np.linalg.det(x))


def test_unknown_dims_that_are_not_square_fail_at_run_time():
    @tw.compile(input_signature=[tw.TensorSpec([None, None], tw.float32)])
    def f(x):
        return tw.linalg.inv(x)

    with pytest.raises(tw.errors.InvalidArgumentError, match=r"square.*\[2, 3\]") as err:
        f(np.ones((2, 3), np.float32))
    assert "MatrixInverse" in str(err.value)
    assert line_of(f.python_function, "tw.linalg.inv") in str(err.value)


# ------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("bad", ["inv-nonsquare", "inv-int", "det-rank1", "cholesky-f16",
                                 "solve-rows", "solve-batch", "solve-dtype", "tri-batch",
                                 "eigh-nonsquare", "set_diag-shape", "diag-size",
                                 "diag_part-k"])
def test_shape_and_dtype_errors_name_op_line_and_shape(bad):
    f32 = np.ones((2, 3), np.float32)
    sq = np.ones((3, 3), np.float32)
    cases = {
        "inv-nonsquare": (tw.errors.ShapeError, "MatrixInverse", r"f32\[2,3\]",
                          lambda: tw.linalg.inv(f32)),
        "inv-int": (tw.errors.DTypeError, "MatrixInverse", r"i32\[2,2\]",
                    lambda: tw.linalg.inv(np.ones((2, 2), np.int32))),
        "det-rank1": (tw.errors.ShapeError, "MatrixDeterminant", r"f32\[3\]",
                      lambda: tw.linalg.det(np.ones(3, np.float32))),
        "cholesky-f16": (tw.errors.DTypeError, "Cholesky", r"f16\[3,3\]",
                         lambda: tw.linalg.cholesky(sq.astype(np.float16))),
        "solve-rows": (tw.errors.ShapeError, "MatrixSolve", r"f32\[3,3\].*f32\[2,3\]",
                       lambda: tw.linalg.solve(sq, f32)),
        "solve-batch": (tw.errors.ShapeError, "MatrixSolve", r"f32\[2,3,3\].*f32\[3,3,1\]",
                        lambda: tw.linalg.solve(np.ones((2, 3, 3), np.float32),
                                                np.ones((3, 3, 1), np.float32))),
        "solve-dtype": (tw.errors.DTypeError, "MatrixSolve", r"f32\[3,3\].*f64\[3,1\]",
                        lambda: tw.linalg.solve(sq, np.ones((3, 1)))),
        "tri-batch": (tw.errors.ShapeError, "MatrixTriangularSolve",
                      r"f32\[2,3,3\].*f32\[3,3,1\]",
                      lambda: tw.linalg.triangular_solve(np.ones((2, 3, 3), np.float32),
                                                         np.ones((3, 3, 1), np.float32))),
        "eigh-nonsquare": (tw.errors.ShapeError, "SelfAdjointEigV2", r"f32\[2,3\]",
                           lambda: tw.linalg.eigh(f32)),
        "set_diag-shape": (tw.errors.ShapeError, "MatrixSetDiag", r"f32\[3\]",
                           lambda: tw.linalg.set_diag(f32, np.ones(3, np.float32))),
        "diag-size": (tw.errors.ShapeError, "MatrixDiag", "num_rows = 4, num_cols = 5",
                      lambda: tw.linalg.diag(np.ones(3, np.float32), num_rows=4, num_cols=5)),
        "diag_part-k": (tw.errors.ShapeError, "MatrixDiagPart", r"k = 5 .*f32\[2,3\]",
                        lambda: tw.linalg.diag_part(f32, k=5)),
    }
    error, op, shape, thunk = cases[bad]
    for run in (thunk, tw.compile(thunk)):  # eagerly and while tracing
        with pytest.raises(error, match=shape) as err:
            run()
        assert op in str(err.value)
        # the line of the lambda, where the op function was called
        assert f"test_linalg.py:{thunk.__code__.co_firstlineno}" in str(err.value)


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_singular_and_indefinite_matrices_are_invalid_argument_errors(target):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])

    def inverse(x):
        return tw.linalg.inv(x)

    def solve(x):
        return tw.linalg.solve(x, np.ones((2, 1)))

    def triangular(x):
        return tw.linalg.triangular_solve(x, np.ones((2, 1)), lower=False)

    def cholesky(x):
        return tw.linalg.cholesky(x)

    cases = [(inverse, "MatrixInverse", "not invertible", singular),
             (solve, "MatrixSolve", "not invertible", singular),
             (triangular, "MatrixTriangularSolve", "not invertible",
              np.array([[1.0, 5.0], [0.0, 0.0]])),
             (cholesky, "Cholesky", "not symmetric positive definite", -np.eye(2))]
    for fn, op, why, x in cases:
        for run in (fn, tw.compile(fn, target=target)):
            with pytest.raises(tw.errors.InvalidArgumentError, match=why) as err:
                run(x)
            assert op in str(err.value), str(err.value)
            assert line_of(fn, "return tw.linalg") in str(err.value), str(err.value)


def test_batched_singular_matrix_fails_and_nan_input_says_so():
    batch = np.stack([np.eye(2), np.zeros((2, 2))])
    with pytest.raises(tw.errors.InvalidArgumentError, match=r"not invertible.*\[2, 2, 2\]"):
        tw.linalg.inv(batch)
    with pytest.raises(tw.errors.InvalidArgumentError, match="NaN or Inf"):
        tw.linalg.inv(np.array([[np.nan, 1.0], [1.0, 1.0]]))


def test_python_level_misuse_is_reported_at_the_users_line():
    x = np.ones((2, 3))
    with pytest.raises(tw.errors.ShapeError, match="pair of distinct ints") as err:
        tw.linalg.norm(x, axis=(1, -1))
    assert line_of(test_python_level_misuse_is_reported_at_the_users_line,
                   "axis=(1, -1)") in str(err.value)
    with pytest.raises(tw.errors.ShapeError, match="matrix norm"):
        tw.linalg.norm(x, ord=3, axis=(0, 1))
    with pytest.raises(tw.errors.ShapeError, match="vector norm"):
        tw.linalg.norm(x, ord="fro")
    with pytest.raises(tw.errors.ShapeError, match="vector norm"):
        tw.linalg.norm(x, ord=-1, axis=1)
    with pytest.raises(tw.errors.ShapeError, match="rank >= 2"):
        tw.linalg.transpose(np.ones(3))
    with pytest.raises(NotImplementedError, match="single diagonal"):
        tw.linalg.diag_part(x, k=(0, 1))
    with pytest.raises(ValueError, match="align"):
        tw.linalg.diag(np.ones(2), align="UP")
    with pytest.raises(TypeError, match="known when the graph is built"):
        tw.compile(lambda a, k: tw.linalg.band_part(a, k, 0))(x, np.int32(1))
