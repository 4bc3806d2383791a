"""The special functions (tw.math.lgamma, digamma, polygamma, erfc, erfinv, ndtri,
bessel_i0e, bessel_i1e, xlogy, xlog1py, xdivy, log_sigmoid, lbeta): the reference kernels
against independent float64 references (Python's math.lgamma/erfc always, mpmath's
arbitrary precision where installed), TensorFlow's values at the poles and edges, every
target against the reference target (hypothesis), dtypes, errors and the v1 names.
Gradients: tests/test_special_math_grads.py; native cpu code: test_special_math_cpu.py."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorweave as tw
from tensorweave.errors import DTypeError
from tests.helpers import TARGETS, assert_same, line_of

# a sweep of [-30, 30] that misses the integers (the poles), plus the integers > 0
SWEEP = np.concatenate([np.linspace(-29.97, 29.97, 2000), np.arange(1.0, 31.0),
                        [1e-300, 1e-10, 0.1, 1.4616321449683622, 100.5, 1e5, 1e15]])


def _ref(fn, *arrays):
    return np.asarray(tw.compile(fn, target="reference")(*arrays))


def _vectorized(fn, x):
    return np.array([fn(float(v)) for v in np.ravel(x)]).reshape(np.shape(x))


def _mp():
    return pytest.importorskip("mpmath")


def _mp_vectorized(fn, *xs, dps=40):
    mp = _mp()
    with mp.workdps(dps):
        return np.array([float(fn(*(mp.mpf(float(v)) for v in vs)))
                         for vs in zip(*(np.ravel(x) for x in xs))])


# ------------------------------------------------------------ accuracy of the reference

def test_lgamma_and_erfc_exact_values():
    n = np.arange(1.0, 41.0)
    log_factorials = np.array([math.log(math.factorial(k - 1)) for k in range(1, 41)])
    half = np.array([0.5, -0.5, 1.5])  # gamma: sqrt(pi), -2 sqrt(pi), sqrt(pi) / 2
    want_half = np.log(np.sqrt(np.pi) * np.array([1.0, 2.0, 0.5]))
    assert_same(_ref(tw.math.lgamma, n), log_factorials, rtol=1e-15, atol=0)
    assert_same(_ref(tw.math.lgamma, half), want_half, rtol=1e-15, atol=0)
    assert_same(_ref(tw.math.erfc, np.array([0.0, -0.0])), np.array([1.0, 1.0]))


def _abs_near_zero(got, want, rtol):
    """Relative error `rtol` where |want| >= 1, absolute `rtol` below (next to zeros)."""
    err = np.abs(got - want)
    ok = (err <= rtol * np.maximum(np.abs(want), 1.0)) | (got == want)
    assert ok.all(), f"{err[~ok].max()} at {np.flatnonzero(~ok)[:5]}"


def test_lgamma_and_erfc_match_mpmath():
    mp = _mp()
    x = SWEEP[::3]
    _abs_near_zero(_ref(tw.math.lgamma, x),
                   _mp_vectorized(lambda v: mp.log(abs(mp.gamma(v))), x), 6e-16)
    e = np.concatenate([SWEEP / 3, [26.0, 26.5]])  # down to the smallest normal results
    assert_same(_ref(tw.math.erfc, e), _mp_vectorized(mp.erfc, e), rtol=5e-16, atol=0)


def test_digamma_and_polygamma_match_mpmath():
    mp = _mp()
    x = SWEEP[::7]
    assert_same(_ref(tw.math.digamma, x), _mp_vectorized(mp.digamma, x), rtol=1e-13,
                atol=1e-15)
    for n in (1, 2, 3):
        want = _mp_vectorized(lambda v, n=n: mp.polygamma(n, v), x)
        assert_same(_ref(lambda t, n=n: tw.math.polygamma(float(n), t), x), want,
                    rtol=1e-12, atol=0)


def test_erfinv_ndtri_and_bessel_match_mpmath():
    mp = _mp()
    u = np.concatenate([np.linspace(-0.999, 0.999, 401), [1e-20, -1e-10, 0.999999999]])
    assert_same(_ref(tw.math.erfinv, u), _mp_vectorized(mp.erfinv, u), rtol=1e-13, atol=0)
    p = (u + 1) / 2
    p = p[p > 0]
    assert_same(_ref(tw.math.ndtri, p),
                _mp_vectorized(lambda v: mp.sqrt(2) * mp.erfinv(2 * v - 1), p, dps=60),
                rtol=1e-13, atol=1e-300)
    x = np.concatenate([np.linspace(-50, 50, 301), [1e-8, 700.0, -1e4]])
    assert_same(_ref(tw.math.bessel_i0e, x),
                _mp_vectorized(lambda v: mp.exp(-abs(v)) * mp.besseli(0, v), x), rtol=1e-13)
    assert_same(_ref(tw.math.bessel_i1e, x),
                _mp_vectorized(lambda v: mp.exp(-abs(v)) * mp.besseli(1, v), x), rtol=1e-13)


def test_erfcinv_matches_mpmath():
    mp = _mp()
    c = np.concatenate([np.linspace(0.01, 1.99, 199), [1e-300, 1e-20, 1 + 1e-12, 2 - 1e-12]])
    want = _mp_vectorized(lambda v: mp.erfinv(1 - v), c, dps=400)
    for target in TARGETS:
        got = np.asarray(tw.compile(tw.math.erfcinv, target=target)(c))
        assert_same(got, want, rtol=4e-15, atol=0)


def test_xlogy_family_against_the_definition():
    x = np.array([0.0, -0.0, 1.0, -2.5, 3.0, 0.5, np.nan, 0.0, 0.0, 1.0])
    y = np.array([0.0, 5.0, 0.0, 2.0, 1e-300, np.inf, 1.0, np.nan, np.inf, -1.0])
    with np.errstate(all="ignore"):
        want_logy = np.where(x == 0, 0.0, x * np.log(y))
        want_log1py = np.where(x == 0, 0.0, x * np.log1p(y))
        want_divy = np.where(x == 0, 0.0, x / y)
    assert_same(_ref(tw.math.xlogy, x, y), want_logy, rtol=0, atol=0)
    assert_same(_ref(tw.math.xlog1py, x, y), want_log1py, rtol=0, atol=0)
    assert_same(_ref(tw.math.xdivy, x, y), want_divy, rtol=0, atol=0)


def test_log_sigmoid_is_stable_at_both_ends():
    x = np.array([-1000.0, -40.0, -1.0, 0.0, 1.0, 40.0, 100.0, 800.0])
    want = np.array([-1000.0, -40.0 - math.log1p(math.exp(-40.0)), -math.log1p(math.e),
                     -math.log(2.0), -math.log1p(math.exp(-1.0)), -math.exp(-40.0),
                     -math.exp(-100.0), -math.exp(-800.0)])
    for target in TARGETS:
        got = np.asarray(tw.compile(tw.math.log_sigmoid, target=target)(x))
        assert_same(got, want, rtol=1e-15, atol=0)


def test_lbeta_over_the_last_axis():
    x = np.array([[1.0, 2.0, 3.5], [0.5, 0.5, 1e-3], [30.0, 0.2, 7.0]])
    want = np.array([sum(math.lgamma(v) for v in row) - math.lgamma(sum(row)) for row in x])
    for target in TARGETS:
        assert_same(np.asarray(tw.compile(tw.math.lbeta, target=target)(x)), want,
                    rtol=1e-13, atol=1e-14)
    # an empty last axis: lgamma(0) = inf is subtracted from an empty sum, as TensorFlow
    assert_same(np.asarray(tw.math.lbeta(np.zeros((2, 0)))), np.full(2, -np.inf))


# ------------------------------------------------------------ TensorFlow's special values

NAN, INF = np.nan, np.inf
SPECIAL_VALUES = [  # function, inputs, expected (TensorFlow 2.x)
    (tw.math.lgamma, [0.0, -0.0, -1.0, -2.0, 1.0, 2.0, INF, -INF, NAN],
     [INF, INF, INF, INF, 0.0, 0.0, INF, INF, NAN]),
    (tw.math.digamma, [0.0, -0.0, -1.0, -7.0, 1.0, INF, -INF, NAN],
     [NAN, NAN, NAN, NAN, -0.5772156649015329, INF, NAN, NAN]),
    (tw.math.erfc, [0.0, INF, -INF, 30.0, NAN], [1.0, 0.0, 2.0, 0.0, NAN]),
    (tw.math.erfinv, [0.0, 1.0, -1.0, 1.5, -2.0, NAN], [0.0, INF, -INF, NAN, NAN, NAN]),
    (tw.math.ndtri, [0.0, 1.0, 0.5, -0.1, 1.1, NAN], [-INF, INF, 0.0, NAN, NAN, NAN]),
    (tw.math.erfcinv, [0.0, 2.0, 1.0, -0.1, 2.1, NAN], [INF, -INF, -0.0, NAN, NAN, NAN]),
    (tw.math.bessel_i0e, [0.0, INF, -INF, NAN], [1.0, 0.0, 0.0, NAN]),
    (tw.math.bessel_i1e, [0.0, INF, -INF, NAN], [0.0, 0.0, -0.0, NAN]),
    (tw.math.log_sigmoid, [INF, -INF, NAN], [-0.0, -INF, NAN]),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("fn, x, want", SPECIAL_VALUES, ids=[c[0].__name__ for c in SPECIAL_VALUES])
def test_special_values_on_every_target(fn, x, want, dtype):
    x = np.array(x, dtype)
    for target in TARGETS:
        with np.errstate(all="ignore"):
            got = np.asarray(tw.compile(fn, target=target)(x))
        assert_same(got, np.array(want, dtype), rtol=1e-7, atol=0)
        zeros = np.array(want) == 0
        np.testing.assert_array_equal(np.signbit(got[zeros]),
                                      np.signbit(np.array(want, dtype)[zeros]),
                                      err_msg=f"signs of zeros on {target}")


def test_polygamma_orders():
    x = np.array([0.5, 1.0, 3.0, -0.5, 0.0, -2.0])
    # order 0 is digamma; negative or fractional orders are NaN (TensorFlow); poles: inf
    for target in TARGETS:
        f = tw.compile(lambda n, x: tw.math.polygamma(n, x), target=target)
        assert_same(np.asarray(f(np.zeros(6), x)), _ref(tw.math.digamma, x))
        assert np.isnan(np.asarray(f(np.full(6, -1.0), x))).all()
        assert np.isnan(np.asarray(f(np.full(6, 1.5), x))).all()
        trigamma = np.asarray(f(np.ones(6), x))
        assert_same(trigamma[:3], np.array([math.pi ** 2 / 2, math.pi ** 2 / 6,
                                            math.pi ** 2 / 6 - 1 - 0.25]), rtol=1e-14)
        assert_same(trigamma[4:], np.array([INF, INF]))


def test_xlogy_family_x_zero_gives_zero_for_any_y():
    y = np.array([0.0, -1.0, NAN, INF, -INF, 2.0])
    for target in TARGETS:
        for fn in (tw.math.xlogy, tw.math.xlog1py, tw.math.xdivy):
            got = np.asarray(tw.compile(fn, target=target)(np.zeros(6), y))
            np.testing.assert_array_equal(got, np.zeros(6), err_msg=f"{fn.__name__} {target}")


# -------------------------------------------------- every target against the reference

UNARY = {  # name: (function, values drawn from)
    "lgamma": (tw.math.lgamma, (-20.0, 40.0)),
    "digamma": (tw.math.digamma, (-20.0, 40.0)),
    "erfc": (tw.math.erfc, (-6.0, 12.0)),
    "erfinv": (tw.math.erfinv, (-1.0, 1.0)),
    "ndtri": (tw.math.ndtri, (0.0, 1.0)),
    "erfcinv": (tw.math.erfcinv, (0.0, 2.0)),
    "bessel_i0e": (tw.math.bessel_i0e, (-30.0, 30.0)),
    "bessel_i1e": (tw.math.bessel_i1e, (-30.0, 30.0)),
    "log_sigmoid": (tw.math.log_sigmoid, (-50.0, 50.0)),
}


def _draw(data, lo, hi, dtype):
    n = data.draw(st.integers(1, 12))
    vals = data.draw(st.lists(st.floats(lo, hi, allow_nan=False, width=32), min_size=n,
                              max_size=n))
    return np.array(vals, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(UNARY))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_unary_targets_match_the_reference(name, dtype, data):
    fn, (lo, hi) = UNARY[name]
    x = _draw(data, lo, hi, dtype)
    with np.errstate(all="ignore"):
        want = _ref(fn, x)
        eager = np.asarray(fn(tw.constant(x)))
        assert_same(eager, want, rtol=0, atol=0)
        for target in TARGETS:
            # float32: native code is within a few ulp of the correctly rounded reference
            # (test_special_math_cpu.py states the bounds); float64: ~1e-14 relative
            assert_same(np.asarray(tw.compile(fn, target=target)(x)), want,
                        rtol=4e-7 if dtype == np.float32 else 1e-13,
                        atol=1e-30 if dtype == np.float32 else 1e-15)


BINARY = {"xlogy": tw.math.xlogy, "xlog1py": tw.math.xlog1py, "xdivy": tw.math.xdivy,
          "polygamma": lambda n, x: tw.math.polygamma(tw.floor(n), x)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(BINARY))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_binary_targets_match_the_reference_with_broadcasting(name, dtype, data):
    fn = BINARY[name]
    rows, cols = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))
    x = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.5, 3.0]),
                                    min_size=cols, max_size=cols)), dtype)
    y = np.array(data.draw(st.lists(st.floats(0.125, 20.0, width=32), min_size=rows * cols,
                                    max_size=rows * cols)), dtype).reshape(rows, cols)
    with np.errstate(all="ignore"):
        want = _ref(fn, x, y)
        assert want.shape == (rows, cols)
        for target in TARGETS:
            assert_same(np.asarray(tw.compile(fn, target=target)(x, y)), want,
                        rtol=4e-7 if dtype == np.float32 else 1e-13, atol=1e-30)


# ------------------------------------------------------------------- dtypes and errors

@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
def test_half_precision_is_the_float64_value_rounded_once(dtype):
    x = np.array([0.3, 1.5, 2.5, 7.0, -0.5], dtype)
    wide = x.astype(np.float64)
    for fn, exact in ((tw.math.lgamma, lambda v: _vectorized(math.lgamma, v)),
                      (tw.math.erfc, lambda v: _vectorized(math.erfc, v))):
        got = np.asarray(fn(tw.constant(x)))
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, exact(wide).astype(dtype))


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfc", "erfinv", "erfcinv", "ndtri",
                                  "bessel_i0e", "bessel_i1e", "log_sigmoid", "lbeta"])
def test_integers_are_refused_naming_the_function_and_line(name):
    fn = getattr(tw.math, name)
    with pytest.raises(DTypeError) as e:
        fn(tw.constant([1, 2]))  # the line
    msg = str(e.value)
    assert name in msg and "floating-point" in msg and "i32" in msg
    assert line_of(test_integers_are_refused_naming_the_function_and_line, "# the line") in msg


@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "xdivy", "polygamma"])
def test_binary_integers_and_mixed_dtypes_are_refused(name):
    fn = getattr(tw.math, name)
    with pytest.raises(DTypeError, match="floating-point"):
        fn(tw.constant([1, 2]), tw.constant([3, 4]))
    with pytest.raises(DTypeError):
        fn(tw.constant([1.0], tw.float32), tw.constant([3.0], tw.float64))


def test_names_in_tw_math_and_tensorflow_1():
    for name in ("lgamma", "digamma", "polygamma", "erfc", "erfinv", "erfcinv", "ndtri", "bessel_i0e",
                 "bessel_i1e", "xlogy", "xlog1py", "xdivy", "log_sigmoid", "lbeta"):
        assert callable(getattr(tw.math, name)) and callable(getattr(tw.compat.v1.math, name))
    v1 = tw.compat.v1
    for name in ("lgamma", "digamma", "polygamma", "erfc", "lbeta", "log_sigmoid"):
        assert getattr(v1, name).__wrapped__ is getattr(tw.math, name) or \
            getattr(v1, name).__name__ == name
    with v1.Graph().as_default():
        x = v1.placeholder(tw.float64, [3])
        y = v1.lgamma(x) + v1.digamma(x) + v1.erfc(x)
        with v1.Session() as sess:
            got = sess.run(y, {x: np.array([0.5, 1.0, 4.0])})
    want = [math.lgamma(v) + d + math.erfc(v) for v, d in
            zip([0.5, 1.0, 4.0], [-1.9635100260214235, -0.5772156649015329, 1.2561176684318])]
    assert_same(got, np.array(want), rtol=1e-12)
