"""The special functions on the gpu target (numba's simulator here; the device on a GPU):
every special op runs as a GPU kernel (no host fallback) and matches the reference
target, poles, infinities, NaN and the tails included, alone and fused with others."""

from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tw
from tests.gpu.cases import tolerance
from tests.gpu.plans import plan_of

EDGES = [0.0, -0.0, -1.0, -2.5, 0.5, 1.0, 1.4616321449683622, 3.0, 30.0, 1e-30, -1e-30,
         1e30, np.inf, -np.inf, np.nan]
UNARY = {"lgamma": tw.math.lgamma, "digamma": tw.math.digamma, "erfc": tw.math.erfc,
         "bessel_i0e": tw.math.bessel_i0e, "bessel_i1e": tw.math.bessel_i1e}
PROBABILITIES = [0.0, 1e-300, 1e-20, 0.01, 0.25, 0.3, 0.5, 0.75, 0.9, 1 - 1e-12, 1.0, -0.5,
                 1.5, np.nan]
BINARY = {"xlogy": tw.math.xlogy, "xlog1py": tw.math.xlog1py, "xdivy": tw.math.xdivy}


def _same(got, want, dtype):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), equal_nan=True,
                               **tolerance(np.dtype(dtype)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_kernels_match_the_reference(name, dtype):
    x = np.array(EDGES, dtype)
    fn = UNARY[name]
    plan = plan_of(fn, [x])
    assert plan.kernels and not plan.fallbacks, plan.fallbacks
    with np.errstate(all="ignore"):
        want = tw.compile(fn, target="reference")(x)
    _same(tw.compile(fn, target="gpu")(x), want, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_kernels_match_the_reference(name, dtype):
    x = np.array([[0.0], [-0.0], [2.0], [-1.5], [np.nan], [0.0]], dtype)
    y = np.array([0.0, 3.0, -1.0, np.inf], dtype)
    fn = BINARY[name]
    plan = plan_of(fn, [x, y])
    assert plan.kernels and not plan.fallbacks, plan.fallbacks
    with np.errstate(all="ignore"):
        want = tw.compile(fn, target="reference")(x, y)
    _same(tw.compile(fn, target="gpu")(x, y), want, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["erfinv", "ndtri"])
def test_inverse_functions_match_the_reference(name, dtype):
    p = np.array(PROBABILITIES, dtype)
    fn = (lambda v: tw.math.erfinv(v * 2.0 - 1.0)) if name == "erfinv" else tw.math.ndtri
    plan = plan_of(fn, [p])
    assert plan.kernels and not plan.fallbacks, plan.fallbacks
    with np.errstate(all="ignore"):
        want = tw.compile(fn, target="reference")(p)
    _same(tw.compile(fn, target="gpu")(p), want, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_polygamma_matches_the_reference(dtype):
    x = np.array([0.5, 3.0, -2.5, 0.0, -1.0, 20.5, np.inf, np.nan], dtype)
    fn = tw.math.polygamma
    for n in (0.0, 1.0, 2.0, 4.0, -1.0, 1.5):
        order = np.full(x.shape, n, dtype)
        plan = plan_of(fn, [order, x])
        assert plan.kernels and not plan.fallbacks, plan.fallbacks
        with np.errstate(all="ignore"):
            want = tw.compile(fn, target="reference")(order, x)
        _same(tw.compile(fn, target="gpu")(order, x), want, dtype)


def test_fused_with_other_ops_in_one_step():
    def f(x):
        return (tw.math.lgamma(x * 2.0) + tw.math.digamma(x) - tw.math.xlogy(x, x + 1.0),
                tw.math.erfinv(x * 0.1) + tw.math.bessel_i1e(x)
                + tw.math.polygamma(tw.ones_like(x), x))

    x = np.array([0.3, 1.7, 4.0], np.float64)
    want = tw.compile(f, target="reference")(x)
    got = tw.compile(f, target="gpu")(x)
    for g, w in zip(got, want):
        _same(g, w, np.float64)
