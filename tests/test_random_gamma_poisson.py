"""tw.random.gamma / poisson and their stateless versions, and RandomGammaGrad.

- Values: an independent NumPy transcription of Marsaglia-Tsang, Knuth and PTRS fed the
  same stateless streams (tw.random.stateless_uniform/normal, checked against the Philox
  recipe in tests/ops/test_random.py), compared eagerly and on every target.
- Statistics with fixed seeds: mean and variance within bounds computed from n, and a
  Kolmogorov-Smirnov distance below the 1e-4 critical value.
- Gradients: RandomGammaGrad against finite differences (mpmath, 30 digits) of the CDF
  formula dx/dalpha = -(dP/dalpha) / p, and against TensorFlow 2.21's values
  (tests/data/tf_fixtures/bitcast_random.npz); the gradient of a sample with respect to
  beta against finite differences of the sampler itself. (Finite differences of the
  sampler in alpha are not a check: a rejection sampler's draws are not a smooth function
  of alpha for fixed random numbers; the implicit gradient is the CDF's.)
"""

import math
import os

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import tensorweave as tw
from tensorweave.compiler.ops.random_gamma_grad import gamma_sample_der_alpha
from tests.helpers import TARGETS, check_gradients

FIXTURES = np.load(os.path.join(os.path.dirname(__file__), "data", "tf_fixtures",
                                "bitcast_random.npz"))


@pytest.fixture(autouse=True)
def no_global_seed():
    tw.random.set_seed(None)
    yield
    tw.random.set_seed(None)


# ------------------------------------------------------------ the NumPy transcription

def streams(seed):
    """(uniform(stream, n), normal(stream, n)): the float64 draws of stream number s."""
    base = np.asarray(tw.random.stateless_uniform([2], seed, minval=None, maxval=None,
                                                  dtype=tw.int64))

    def seed_of(s):
        return np.array([base[0], base[1] + np.int64(s)], np.int64)

    return (lambda s, n: np.asarray(tw.random.stateless_uniform([n], seed_of(s),
                                                                dtype=tw.float64)),
            lambda s, n: np.asarray(tw.random.stateless_normal([n], seed_of(s),
                                                               dtype=tw.float64)))


def numpy_gamma(shape, seed, alpha, beta, dtype):
    """Marsaglia-Tsang, round by round, as documented in random_distributions.py."""
    uniform, normal = streams(seed)
    a0 = np.broadcast_to(np.asarray(alpha, np.float64), shape).reshape(-1)
    n = a0.size
    boosted = (a0 > 0) & (a0 < 1)
    valid = (a0 > 0) & np.isfinite(a0)
    a = np.where(valid, np.where(boosted, a0 + 1, a0), 1.0)
    d = a - 1 / 3
    c = 1 / np.sqrt(9 * d)
    done, x, k = ~valid, np.zeros(n), 0
    while not done.all():
        z, u = normal(2 * k + 2, n), uniform(2 * k + 3, n)
        v = (1 + c * z) ** 3
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = (v > 0) & (np.log(u) < 0.5 * z * z + d - d * v + d * np.log(np.where(v > 0, v, 1)))
        x = np.where(~done & ok, d * v, x)
        done |= ok
        k += 1
    with np.errstate(divide="ignore"):
        x = np.where(boosted, x * np.exp(np.log(uniform(1, n)) / np.where(boosted, a0, 1)), x)
    x = np.where(a0 == 0, 0.0, np.where(a0 == np.inf, np.inf, x))
    x = np.where(a0 >= 0, x, np.nan).reshape(shape)
    raw = x.astype(dtype)
    return np.maximum(np.finfo(dtype).tiny, raw / np.asarray(beta, dtype)).astype(dtype)


def numpy_poisson(shape, seed, lam, dtype):
    uniform, _ = streams(seed)
    rate = np.broadcast_to(np.asarray(lam, np.float64), shape).reshape(-1)
    n = rate.size
    special = ~(rate >= 0) | (rate == np.inf)
    # Knuth below 10
    done, prod, count, k = special | (rate >= 10), np.ones(n), np.zeros(n), 0
    while not done.all():
        prod = np.where(done, prod, prod * uniform(2 * k + 2, n))
        stop = prod <= np.exp(-rate)
        count += ~done & ~stop
        done |= stop
        k += 1
    # PTRS from 10
    r = np.where(special | (rate < 10), 10.0, rate)
    b = 0.931 + 2.53 * np.sqrt(r)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)
    done, x, k = special | (rate < 10), np.zeros(n), 0
    while not done.all():
        u, v = uniform(2 * k + 2, n) - 0.5, uniform(2 * k + 3, n)
        us = 0.5 - np.abs(u)
        kk = np.floor((2 * a / us + b) * u + r + 0.43)
        from scipy.special import gammaln
        t = -r + np.maximum(kk, 0) * np.log(r) - gammaln(np.maximum(kk, 0) + 1)
        accept = ((us >= 0.07) & (v <= v_r)) | (
            ~((kk < 0) | ((us < 0.013) & (v > us))) & (np.log(v * inv_alpha / (a / us**2 + b)) <= t))
        x = np.where(~done & accept, kk, x)
        done |= accept
        k += 1
    out = np.where(rate < 10, count, x)
    out = np.where(rate == np.inf, np.inf, np.where(rate >= 0, out, np.nan))
    return out.reshape(shape).astype(dtype)


# ------------------------------------------------------------------ values and targets

def run_everywhere(fn, *args):
    """[eager, reference, cpu] results of fn(*args)."""
    out = [np.asarray(fn(*[tw.constant(a) for a in args]))]
    for target in TARGETS:
        out.append(np.asarray(tw.compile(fn, target=target)(*args)))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_stateless_gamma_matches_the_numpy_transcription(dtype):
    alpha = np.array([[0.05, 0.7, 1.0, 3.5, 80.0]], dtype)
    beta = np.array([[2.0], [0.5]], dtype)

    def fn(a, b):
        return tw.random.stateless_gamma([6, 2, 5], [17, 4], a, b, dtype=dtype)

    want = numpy_gamma((6, 2, 5), [17, 4], alpha, beta, dtype)
    for got in run_everywhere(fn, alpha, beta):
        assert got.dtype == dtype and got.shape == (6, 2, 5)
        # (the cpu target's log/exp may round differently in the last place)
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype != np.float16 else 1e-3)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_stateless_poisson_matches_the_numpy_transcription(dtype):
    lam = np.array([0.0, 0.3, 4.0, 9.99, 10.0, 63.0, 2500.0], np.float32)

    def fn(rate):
        return tw.random.stateless_poisson([5, 7], [3, 9], rate, dtype=dtype)

    want = numpy_poisson((5, 7), [3, 9], lam, dtype)
    for got in run_everywhere(fn, lam):
        assert got.dtype == dtype and got.shape == (5, 7)
        np.testing.assert_array_equal(got, want)


@settings(max_examples=12, deadline=None)
@given(shape=st.lists(st.integers(0, 3), min_size=0, max_size=2),
       alpha_shape=st.lists(st.integers(1, 3), min_size=0, max_size=2),
       beta_scalar=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_gamma_shapes_follow_tensorflow(shape, alpha_shape, beta_scalar, seed):
    alpha = np.full(alpha_shape, 1.5, np.float32)
    beta = np.float32(2.0) if beta_scalar else np.full(alpha_shape[-1:], 2.0, np.float32)
    params = np.broadcast_shapes(alpha.shape, np.shape(beta))
    # gamma: shape + broadcast(alpha, beta)
    x = np.asarray(tw.random.gamma(shape, alpha, beta, seed=seed))
    assert x.shape == tuple(shape) + params and x.dtype == np.float32 and (x > 0).all()
    # stateless_gamma: the parameters broadcast to the trailing dims of shape
    full = list(shape) + list(params)
    y = np.asarray(tw.random.stateless_gamma(full, [seed, 1], alpha, beta))
    np.testing.assert_array_equal(y, numpy_gamma(tuple(full), [seed, 1], alpha, beta,
                                                 np.float32))
    lam = np.full(alpha_shape, 3.0, np.float32)
    p = np.asarray(tw.random.poisson(shape, lam, seed=seed))
    assert p.shape == tuple(shape) + lam.shape and p.dtype == np.float32
    q = np.asarray(tw.random.stateless_poisson(list(shape) + alpha_shape, [seed, 2], lam))
    assert q.shape == tuple(shape) + lam.shape and q.dtype == np.int32


# ------------------------------------------------------------------------- statistics

def ks_bound(n):
    """The Kolmogorov-Smirnov distance exceeded with probability 1e-4 under the null."""
    return math.sqrt(-0.5 * math.log(1e-4 / 2)) / math.sqrt(n)


def check_mean_and_variance(x, mean, var, fourth_central):
    """The sample mean and variance within 5 standard errors computed from n (the
    variance's from the fourth central moment)."""
    n = x.size
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / n), (x.mean(), mean)
    se_var = math.sqrt((fourth_central - var**2 * (n - 3) / (n - 1)) / n)
    assert abs(x.var(ddof=1) - var) < 5 * se_var, (x.var(ddof=1), var)


def test_gamma_statistics():
    n = 20_000
    alpha = np.array([0.1, 0.7, 1.0, 3.5, 40.0])
    beta = np.array([1.0, 3.0, 0.5, 1.0, 7.0])
    x = np.asarray(tw.random.stateless_gamma([n, 5], [5, 6], alpha, beta,
                                             dtype=tw.float64))
    for j in range(5):
        a, b = alpha[j], beta[j]
        col = x[:, j]
        # Gamma(a, rate b): mean a/b, variance a/b^2, fourth central moment 3a(a+2)/b^4
        check_mean_and_variance(col, a / b, a / b**2, 3 * a * (a + 2) / b**4)
        d = stats.kstest(col, stats.gamma(a, scale=1 / b).cdf).statistic
        assert d < ks_bound(n), (a, d)


def test_stateful_gamma_statistics_float32():
    n = 20_000
    x = np.asarray(tw.random.gamma([n], [2.5], beta=[0.25], seed=3))[:, 0]
    assert x.dtype == np.float32
    check_mean_and_variance(x.astype(np.float64), 10.0, 40.0, 3 * 2.5 * 4.5 * 4**4)
    assert stats.kstest(x, stats.gamma(2.5, scale=4).cdf).statistic < ks_bound(n)


def discrete_ks(x, dist):
    """max |F_n(k) - F(k)| over the integers k (conservative for a discrete law)."""
    ks = np.arange(x.min(), x.max() + 1)
    empirical = np.searchsorted(np.sort(x), ks, side="right") / x.size
    return np.abs(empirical - dist.cdf(ks)).max()


def test_poisson_statistics():
    n = 20_000
    lam = np.array([0.3, 3.0, 9.9, 10.0, 45.0, 1000.0])
    x = np.asarray(tw.random.stateless_poisson([n, 6], [8, 1], lam, dtype=tw.int64))
    for j, r in enumerate(lam):
        col = x[:, j].astype(np.float64)
        # Poisson(r): mean r, variance r, fourth central moment r(1 + 3r)
        check_mean_and_variance(col, r, r, r * (1 + 3 * r))
        assert discrete_ks(x[:, j], stats.poisson(r)) < ks_bound(n), r


def test_stateful_poisson_statistics():
    n = 20_000
    x = np.asarray(tw.random.poisson([n], 6.5, seed=12))
    assert x.dtype == np.float32 and x.shape == (n,)
    check_mean_and_variance(x.astype(np.float64), 6.5, 6.5, 6.5 * (1 + 3 * 6.5))


# ----------------------------------------------------------------- seeds and edges

def test_seeds_determinism_and_fresh_draws():
    a = np.asarray(tw.random.stateless_gamma([50], [1, 2], 2.0))
    np.testing.assert_array_equal(a, np.asarray(tw.random.stateless_gamma([50], [1, 2], 2.0)))
    assert not np.array_equal(a, np.asarray(tw.random.stateless_gamma([50], [1, 3], 2.0)))
    # stateful: each run draws anew; the global and op seeds reproduce a program
    f = tw.compile(lambda: (tw.random.gamma([40], 2.0, seed=5),
                            tw.random.poisson([40], 3.0, seed=6)), target="cpu")
    first, second = f(), f()
    assert not np.array_equal(first[0], second[0])
    assert not np.array_equal(first[1], second[1])
    tw.random.set_seed(9)
    g1 = [np.asarray(tw.random.gamma([30], 0.5, seed=1)) for _ in range(2)]
    tw.random.set_seed(9)
    g2 = [np.asarray(tw.random.gamma([30], 0.5, seed=1)) for _ in range(2)]
    np.testing.assert_array_equal(g1[0], g2[0])
    np.testing.assert_array_equal(g1[1], g2[1])
    assert not np.array_equal(g1[0], g1[1])


def test_special_parameter_values():
    x = np.asarray(tw.random.stateless_gamma([4, 5], [1, 1],
                                             [0.0, -1.0, np.nan, np.inf, 1e-3]))
    tiny = np.finfo(np.float32).tiny
    assert (x[:, 0] == tiny).all() and np.isnan(x[:, 1:3]).all() and np.isinf(x[:, 3]).all()
    assert (x[:, 4] >= tiny).all()  # (alpha 1e-3: almost every sample underflows to tiny)
    p = np.asarray(tw.random.stateless_poisson([3, 4], [1, 1], [0.0, -1.0, np.nan, np.inf],
                                               dtype=tw.float32))
    assert (p[:, 0] == 0).all() and np.isnan(p[:, 1:3]).all() and np.isinf(p[:, 3]).all()
    # integer samples of an invalid rate: an error, not a number (TensorFlow never returns)
    for bad in (-1.0, np.nan, np.inf):
        with pytest.raises(tw.errors.InvalidArgumentError, match="lam must be finite"):
            tw.compile(lambda r: tw.random.stateless_poisson([2], [1, 1], r),
                       target="cpu")(np.float32(bad))


def test_bad_arguments_name_the_function():
    cases = [
        (lambda: tw.random.gamma([2], 1.0, dtype=tw.int32), "tw.random.gamma", "dtype must be"),
        (lambda: tw.random.gamma([2], [1.0, 2.0], beta=[1.0, 2.0, 3.0]), "tw.random.gamma",
         "cannot be broadcast"),
        (lambda: tw.random.stateless_gamma([2, 3], [1, 1], [1.0, 2.0]),
         "tw.random.stateless_gamma", "trailing dimensions"),
        (lambda: tw.random.poisson([2], 1.0, dtype=tw.uint8), "tw.random.poisson",
         "dtype must be"),
        (lambda: tw.random.poisson([2], [True]), "tw.random.poisson", "lam must be a number"),
        (lambda: tw.random.stateless_poisson([3], [1, 1], [1.0, 2.0]),
         "tw.random.stateless_poisson", "trailing dimensions"),
        (lambda: tw.random.stateless_gamma([2], None, 1.0), "", "need seed"),
    ]
    for call, fn, text in cases:
        with pytest.raises(tw.errors.TensorWeaveError) as info:
            call()
        assert fn in str(info.value) and text in str(info.value)
        assert "test_random_gamma_poisson.py" in str(info.value)


# -------------------------------------------------------------------------- gradients

def cdf_gradient(a, x):
    """dx/dalpha by the CDF formula, its alpha-derivative by mpmath's finite differences
    (of P where P < 1/2, else of Q = 1 - P, so the tail keeps its digits)."""
    with mpmath.workdps(30):
        a, x = mpmath.mpf(float(a)), mpmath.mpf(float(x))
        density = mpmath.exp((a - 1) * mpmath.log(x) - x - mpmath.loggamma(a))
        p = mpmath.gammainc(a, 0, x, regularized=True)
        if p < 0.5:
            return float(-mpmath.diff(lambda s: mpmath.gammainc(s, 0, x, regularized=True), a)
                         / density)
        return float(mpmath.diff(lambda s: mpmath.gammainc(s, x, mpmath.inf, regularized=True),
                                 a) / density)


@settings(max_examples=20, deadline=None)
@given(log_alpha=st.floats(-3, 3), q=st.floats(1e-6, 1 - 1e-6))
def test_gamma_grad_matches_finite_differences_of_the_cdf(log_alpha, q):
    a = 10.0**log_alpha
    x = float(stats.gamma(a).ppf(q))  # a sample at quantile q
    if not x > 0:
        return  # (tiny alpha: the quantile underflows to 0)
    got = np.asarray(gamma_grad_op(np.float64(a), np.float64(x)))
    np.testing.assert_allclose(got, cdf_gradient(a, x), rtol=1e-9)


def gamma_grad_op(alpha, sample):
    from tensorweave.frontend.building import apply_op1
    return apply_op1("RandomGammaGrad", [tw.convert_to_tensor(alpha),
                                         tw.convert_to_tensor(sample)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gamma_grad_op_matches_tensorflow_where_tensorflow_has_digits(dtype):
    a = FIXTURES[f"gamma_grad/{dtype}/alpha"]
    x = FIXTURES[f"gamma_grad/{dtype}/sample"]
    tf_out = FIXTURES[f"gamma_grad/{dtype}/out"]
    for got in run_everywhere(gamma_grad_op, a, x):
        assert got.dtype == a.dtype and got.shape == a.shape
        # TensorFlow divides by the density in floating point, so far in the tails its
        # result underflows to 0; there the finite differences of the CDF are the oracle
        has_digits = tf_out != 0
        np.testing.assert_allclose(got[has_digits], tf_out[has_digits],
                                   rtol=2e-5 if dtype == "float32" else 1e-9)
        zeros = list(zip(*np.nonzero(~has_digits)))
        assert len(zeros) > 5
        for i, j in zeros[::4]:
            np.testing.assert_allclose(got[i, j], cdf_gradient(a[i, j], x[i, j]),
                                       rtol=2e-6 if dtype == "float32" else 1e-9)


def test_gamma_grad_op_edges_and_broadcasting():
    got = np.asarray(gamma_grad_op(np.array([[1.0], [-1.0], [np.nan], [2.0]]),
                                   np.array([0.0, 1.0, np.inf])))
    assert got.shape == (4, 3)
    assert (got[[0, 3], 0] == 0).all()                  # a sample at 0 stays there
    assert np.isnan(got[1:3]).all() and np.isnan(got[:, 2]).all()
    with pytest.raises(tw.errors.DTypeError, match="alpha"):
        gamma_grad_op(np.array([1], np.int32), np.array([1], np.int32))


def test_gradient_of_samples_is_the_implicit_one():
    alpha = np.array([0.4, 2.0, 9.0])
    beta = np.array([[1.5], [0.25]])

    def loss(a, b):
        x = tw.random.stateless_gamma([5, 2, 3], [2, 7], a, b, dtype=tw.float64)
        return tw.reduce_sum(x * x)

    x = numpy_gamma((5, 2, 3), [2, 7], alpha, beta, np.float64)
    raw = x * beta
    dx_da = gamma_sample_der_alpha(np.broadcast_to(alpha, raw.shape), raw).reshape(raw.shape) / beta
    want_a = (2 * x * dx_da).sum(axis=(0, 1))
    want_b = (2 * x * (-x / beta)).sum(axis=(0, 2)).reshape(2, 1)
    for target in TARGETS:
        ga, gb = tw.compile(tw.grad(loss, argnums=(0, 1)), target=target)(alpha, beta)
        np.testing.assert_allclose(ga, want_a, rtol=1e-9)
        np.testing.assert_allclose(gb, want_b, rtol=1e-9)
    # with a GradientTape, eagerly, through the stateful sampler
    a = tw.constant(alpha)
    with tw.GradientTape() as tape:
        tape.watch(a)
        s = tw.random.gamma([4], a, dtype=tw.float64, seed=1)
    g = np.asarray(tape.gradient(s, a))
    assert g.shape == (3,) and np.isfinite(g).all() and (g > 0).all()


def test_gradient_in_beta_matches_finite_differences_of_the_sampler():
    # for fixed random numbers a sample is raw / beta, smooth in beta
    alpha = np.array([0.6, 3.0])
    check_gradients(lambda b: tw.random.stateless_gamma([3, 2], [4, 4], alpha, b,
                                                        dtype=tw.float64),
                    np.array([0.7, 2.0]))


def test_implicit_gradient_is_unbiased():
    # E[dx/dalpha] = dE[x]/dalpha = 1/beta: the mean of many sample gradients, within 5
    # standard errors estimated from the same samples
    n = 20_000
    for a, b in ((0.3, 1.0), (4.0, 2.0)):
        def per_sample(al):
            return tw.random.stateless_gamma([n], [6, 1], al, b, dtype=tw.float64)
        x = np.asarray(per_sample(np.float64(a)))
        g = gamma_sample_der_alpha(np.full(n, a), x * b) / b
        assert abs(g.mean() - 1 / b) < 5 * g.std() / math.sqrt(n), (a, g.mean())
        total = float(tw.grad(lambda al: tw.reduce_sum(per_sample(al)))(np.float64(a)))
        np.testing.assert_allclose(total, g.sum(), rtol=1e-9)


def test_poisson_is_not_differentiable():
    lam = tw.constant([3.0])
    with tw.GradientTape() as tape:
        tape.watch(lam)
        y = tw.random.poisson([5], lam, seed=2)
    assert tape.gradient(y, lam) is None


# ------------------------------------------------------------------- TensorFlow 1

def test_tensorflow1_names():
    import tensorweave.compat.v1 as tf
    with tf.Graph().as_default():
        p = tf.random_poisson([2.0, 30.0], [1000], seed=1)         # lam first
        q = tf.random.poisson(4.0, [1000], dtype=tf.int64, seed=2)
        g = tf.random_gamma([1000], 3.0, beta=2.0, seed=3)
        s = tf.random.stateless_gamma([5], [1, 2], 2.0)
        with tf.Session() as sess:
            pv, qv, gv, sv = sess.run([p, q, g, s])
    assert pv.shape == (1000, 2) and qv.dtype == np.int64 and gv.shape == (1000,)
    assert abs(pv[:, 1].mean() - 30) < 5 * math.sqrt(30 / 1000)
    assert abs(gv.mean() - 1.5) < 5 * math.sqrt(3 / 4 / 1000)
    np.testing.assert_array_equal(sv, np.asarray(tw.random.stateless_gamma([5], [1, 2], 2.0)))
